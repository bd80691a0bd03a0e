//! A served test's account as it happens, for a server that writes its tests on stdout
//! (`netsweep -s`, as iperf3's server does): the test's `start` when its streams start, each
//! interval once every stream has reported it (`intervals::Live`), rendered as the document
//! renders it (`json::interval_of`), and the document when the test has ended. Netsweep's
//! own server and its iperf3 server feed it alike.

use super::document::{Ends, start_section};
use super::intervals::Live;
use crate::traffic::iperf3::json::{self, Writer};
use crate::traffic::measure::IntervalReport;
use crate::traffic::spec::TestSpec;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// What the server's owner does with one test's account as it goes.
pub trait LiveReport: Send {
    /// One of this end's intervals, as the test's document has it.
    fn interval(&mut self, interval: &Value);
    /// The test's document once it ended (`{"error": ...}` when it failed); `shown`: how many
    /// of its intervals `interval` was given.
    fn ended(&mut self, document: &Value, shown: usize);
}

/// Makes a test's `LiveReport` from the test's `start` section.
pub type MakeLiveReport = dyn Fn(&Value) -> Box<dyn LiveReport> + Send + Sync;

/// Where each test's account goes: called when a test's streams start.
#[derive(Clone)]
pub struct LiveSink(pub Arc<MakeLiveReport>);

impl std::fmt::Debug for LiveSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveSink")
    }
}

/// One test's account under way.
pub struct LiveTest {
    live: Live,
    report: Box<dyn LiveReport>,
    shown: usize,
    /// When the streams started: the clock of their slots.
    start: Instant,
}

impl LiveTest {
    /// The test between `ends` running `spec` has started its streams at `start`.
    pub fn start(sink: &LiveSink, ends: &Ends, (spec, start): (&TestSpec, Instant)) -> LiveTest {
        LiveTest {
            live: Live::new(spec),
            report: (sink.0)(&start_section(ends, spec)),
            shown: 0,
            start,
        }
    }

    /// A stream's interval report, as the engine gave it.
    pub fn interval(&mut self, report: &IntervalReport) {
        for iv in self.live.add(report, self.start.elapsed()) {
            if let Some(v) = json::interval_of(Writer::Server, self.live.spec(), &iv) {
                self.report.interval(&v);
                self.shown += 1;
            }
        }
    }

    /// The test has ended with `document`.
    pub fn ended(mut self, document: &Value) {
        self.report.ended(document, self.shown);
    }
}
