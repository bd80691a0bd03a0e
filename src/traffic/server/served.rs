//! Counting a server's ended tests: callers that serve a set number of tests (`-1`, a
//! pScheduler server participant) stop when it is reached, or when no test has been under
//! way for their idle timeout; `-1 --json` prints the last test's document. A server that
//! writes its tests (`netsweep -s`, as iperf3's server on its stdout) is handed each test's
//! account as it goes (`live`) or each document as its test ends (`on_document`, `-J`).

use crate::traffic::iperf3::server::{LiveSink, LiveTest};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How many admitted tests have ended, and how (`run_observed`): pScheduler's server
/// participant and `netsweep server -1` stop after their one test. A refused iperf3 login
/// is not a test (iperf3's `-1` waits on for the next client too).
#[derive(Debug, Default)]
pub struct Served {
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    /// Connections being served now (admitted or not yet through their login).
    pub busy: AtomicU64,
    /// The last ended test's iperf3-style JSON document (`{"error": ...}` when it failed).
    pub last_document: Mutex<Option<serde_json::Value>>,
    /// The server writes its tests as JSON (`-J`): an iperf3 client's `--get-server-output`
    /// then gets the test's document (`server_output_json`), as from iperf3's `-s -J`, instead
    /// of its text.
    pub json_output: bool,
    /// Handed each ended test's document as the test ends (refused logins are not tests).
    pub on_document: Option<DocumentSink>,
    /// Makes each test's account as it goes, from the start of its streams to its document.
    pub live: Option<LiveSink>,
}

/// Where a server's ended tests' documents go, one call a test, from the test's thread.
#[derive(Clone)]
pub struct DocumentSink(pub Arc<dyn Fn(&serde_json::Value) + Send + Sync>);

impl std::fmt::Debug for DocumentSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DocumentSink")
    }
}

impl Served {
    /// Tests ended either way.
    pub fn ended(&self) -> u64 {
        self.ok.load(Ordering::SeqCst) + self.failed.load(Ordering::SeqCst)
    }

    /// Whether a connection is being served now.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst) > 0
    }

    /// The document of the last ended test, if one has ended.
    pub fn last_document(&self) -> Option<serde_json::Value> {
        self.last_document.lock().ok().and_then(|d| d.clone())
    }
}

/// How a served connection ended, for `Served`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Ok,
    Failed,
    /// Refused at its login: not counted as a test.
    NotATest,
}

/// Counts one connection as busy while it lives, and its test in `Served` when it ends, as
/// failed unless `outcome` was changed.
pub(super) struct Ending<'a> {
    served: &'a Served,
    pub(super) outcome: Outcome,
    pub(super) document: Option<serde_json::Value>,
    /// The test's account under way, once its streams started (`Served::live`).
    pub(super) live: Option<LiveTest>,
}

impl<'a> Ending<'a> {
    pub(super) fn new(served: &'a Served) -> Ending<'a> {
        served.busy.fetch_add(1, Ordering::SeqCst);
        Ending {
            served,
            outcome: Outcome::Failed,
            document: None,
            live: None,
        }
    }

    /// Ends the test's account under way with its document now (the text's last interval and
    /// summary): what is logged after this comes after it.
    pub(super) fn write_live(&mut self) {
        if let (Some(live), Some(doc)) = (self.live.take(), &self.document) {
            live.ended(doc);
        }
    }
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        if self.outcome != Outcome::NotATest {
            self.write_live();
            if let Some(doc) = self.document.take() {
                if let Some(sink) = &self.served.on_document {
                    (sink.0)(&doc);
                }
                if let Ok(mut last) = self.served.last_document.lock() {
                    *last = Some(doc);
                }
            }
            let c = match self.outcome {
                Outcome::Ok => &self.served.ok,
                _ => &self.served.failed,
            };
            c.fetch_add(1, Ordering::SeqCst);
        }
        self.served.busy.fetch_sub(1, Ordering::SeqCst);
    }
}
