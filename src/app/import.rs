//! `netsweep import`: iperf3 JSON results into a store, as runs of a configuration. Every file
//! is read and checked before any is stored, and they are stored in one transaction: an import
//! keeps all its files or none.

use crate::campaigns::store::{NewRun, RunnerLock, Store};
use crate::cli::{ImportArgs, pairs};
use crate::platform::clock::now_unix;
use crate::traffic::iperf3::{self, import::Imported};
use crate::traffic::result::TestResult;
use crate::traffic::spec::{Direction, Protocol};
use anyhow::{Context, bail};
use std::path::Path;
use std::process::ExitCode;

/// One file's numbers (and netsweep's own result, for its intervals), or why it cannot be
/// imported (the file named).
fn checked(f: &Path) -> Result<(Imported, Option<TestResult>), String> {
    let text = crate::inputs::read_file(f, iperf3::MAX_JSON_BYTES)
        .map_err(|e| format!("cannot read {}: {e}", f.display()))?;
    // netsweep's own document, read once; anything else goes to iperf3's reader as text.
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && v.get("netsweep_version").is_some()
    {
        return netsweep_result(v, &text).map_err(|e| format!("{}: {e}", f.display()));
    }
    iperf3::parse_json_result(&text)
        .map(|i| (i, None))
        .map_err(|e| format!("{}: {e}", f.display()))
}

/// netsweep's own `--json` document: its figures as an import's, checked as the client
/// checked them (a test that failed or whose figures contradicted each other is refused).
fn netsweep_result(
    doc: serde_json::Value,
    text: &str,
) -> Result<(Imported, Option<TestResult>), String> {
    let t: TestResult =
        serde_json::from_value(doc).map_err(|e| format!("not a netsweep --json document: {e}"))?;
    if let Some(e) = &t.error {
        return Err(format!(
            "the test ended early: {}",
            crate::inputs::peer_text(e)
        ));
    }
    if let Some(first) = t.inconsistencies.first() {
        return Err(format!(
            "its figures contradict each other: {}",
            crate::inputs::peer_text(first)
        ));
    }
    // A --bidir test's forward direction, as iperf3's documents are taken (its summary is of
    // both directions).
    let bidir = t.spec.direction == Direction::Bidir;
    let summary = if bidir {
        &t.directions
            .iter()
            .find(|d| d.flow == crate::traffic::spec::Flow::ClientToServer)
            .ok_or("a --bidir test without its forward direction: the document is damaged")?
            .summary
    } else {
        &t.summary
    };
    let bps = summary.bits_per_second;
    if !(bps.is_finite() && (0.0..=1e13).contains(&bps)) {
        return Err(format!(
            "summary.bits_per_second is {bps}: the document is damaged"
        ));
    }
    if t.rr.is_some() {
        return Err("a request/response test: import takes throughput tests".into());
    }
    let s = &t.spec;
    let streams = s.streams.max(1);
    let direction = match s.direction {
        Direction::Forward => "forward",
        Direction::Reverse => "reverse",
        Direction::Bidir => "bidir",
    };
    let kind = iperf3::import::kind_words(
        if s.protocol == Protocol::Udp {
            "UDP"
        } else {
            "TCP"
        },
        u64::from(streams),
        direction,
        Some(s.bitrate_bps / f64::from(streams)),
    );
    let imported = Imported {
        bits_per_second: bps,
        retransmits: summary
            .retransmits
            .map(|r| i64::try_from(r).unwrap_or(i64::MAX)),
        lost_percent: summary.lost_percent,
        jitter_ms: summary.jitter_ms,
        cpu_local_percent: Some(t.cpu.local_percent),
        cpu_remote_percent: Some(t.cpu.remote_percent),
        cookie: t.start.cookie.clone().filter(|c| !c.is_empty()),
        started_unix: Some(t.start.timestamp_unix_s).filter(|x| x.is_finite() && *x > 0.0),
        kind: Some(kind),
        bidir,
        raw_json: text.to_string(),
    };
    // The store takes a result's figures before an import's: a --bidir test's (of both
    // directions) stays out, its numbers above being the forward direction's.
    Ok((imported, (!bidir).then_some(t)))
}

pub fn import(a: &ImportArgs) -> anyhow::Result<ExitCode> {
    let dims = pairs(&a.set, "--set")?;
    let mut numbers = Vec::with_capacity(a.files.len());
    let mut results = Vec::with_capacity(a.files.len());
    let mut refused = Vec::new();
    for f in &a.files {
        match checked(f) {
            Ok((n, t)) => {
                numbers.push(n);
                results.push(t);
            }
            Err(e) => refused.push(e),
        }
    }
    // One test imported twice counts its runs twice and narrows every interval (a trial
    // imported the same files again and got "equivalence shown" from no new data).
    for (i, (f, n)) in a.files.iter().zip(&numbers).enumerate() {
        if let Some(first) = numbers[..i]
            .iter()
            .position(|m| m.identity() == n.identity())
        {
            refused.push(format!(
                "{}: the same test as {} (one iperf3 result, given twice)",
                f.display(),
                a.files[first].display()
            ));
        }
    }
    if !refused.is_empty() {
        bail!(
            "{}\nnothing was imported: {} of {} file(s) refused, and an import stores all its \
             files or none; leave out or fix the file(s) named and import again",
            refused.join("\n"),
            refused.len(),
            a.files.len()
        );
    }
    for w in kind_warnings(&a.files, &numbers) {
        crate::errln!("warning: {w}");
    }
    let _lock = RunnerLock::acquire(&a.db)?;
    let mut store = Store::open(&a.db)?;
    let campaign = store
        .all_or_nothing(|store| store_runs(store, a, &dims, numbers, results))
        .with_context(|| {
            format!(
                "nothing was imported into {}: the import is one transaction",
                a.db.display()
            )
        })?;
    crate::outln!(
        "imported {} runs into campaign {campaign} as {} ({})",
        a.files.len(),
        crate::campaigns::plan::label(&dims),
        a.db.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// What the files of one set are, when they are not all one kind of test (a trial's set held
/// TCP, UDP, -P 3 and -R tests, compared as one without a word), and the `--bidir` tests of
/// which only one direction is taken.
fn kind_warnings(files: &[std::path::PathBuf], numbers: &[Imported]) -> Vec<String> {
    let mut kinds: Vec<(&str, Vec<String>)> = Vec::new();
    for (f, n) in files.iter().zip(numbers) {
        let kind = n
            .kind
            .as_deref()
            .unwrap_or("a test whose kind the file does not say");
        let name = f.display().to_string();
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, names)) => names.push(name),
            None => kinds.push((kind, vec![name])),
        }
    }
    let mut out = Vec::new();
    if kinds.len() > 1 {
        let listed: Vec<String> = kinds
            .iter()
            .map(|(k, names)| {
                let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
                let more = names.len().saturating_sub(shown.len());
                format!(
                    "{} x {k} ({}{})",
                    names.len(),
                    shown.join(", "),
                    if more > 0 {
                        format!(", {more} more")
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        out.push(format!(
            "the files are of different tests: {}; one set's runs are compared as one kind: \
             import each kind under its own --set value",
            listed.join("; ")
        ));
    }
    let bidir: Vec<String> = files
        .iter()
        .zip(numbers)
        .filter(|(_, n)| n.bidir)
        .map(|(f, _)| f.display().to_string())
        .collect();
    if !bidir.is_empty() {
        out.push(format!(
            "{} {} --bidir: only the forward direction (end.sum_received) is imported",
            bidir.join(", "),
            if bidir.len() == 1 { "is" } else { "are" }
        ));
    }
    out
}

/// Stores the runs (creating the campaign and configuration as needed); the campaign's id.
fn store_runs(
    store: &mut Store,
    a: &ImportArgs,
    dims: &[(String, String)],
    numbers: Vec<Imported>,
    results: Vec<Option<TestResult>>,
) -> anyhow::Result<i64> {
    let campaign = match a.campaign {
        Some(id) => {
            store.campaign(id)?;
            id
        }
        None => {
            // Named by the dimensions, not their values: each value's files join the others.
            let keys: Vec<&str> = dims.iter().map(|(k, _)| k.as_str()).collect();
            let name = format!("imported: {}", keys.join(", "));
            match store.newest_import_campaign(&name)?.filter(|_| !a.new) {
                Some(id) => id,
                None => store.create_import_campaign(&name)?,
            }
        }
    };
    let stored = store.imported_identities(campaign)?;
    let again: Vec<String> = a
        .files
        .iter()
        .zip(&numbers)
        .filter(|(_, n)| stored.iter().any(|s| s == n.identity()))
        .map(|(f, _)| f.display().to_string())
        .collect();
    if !again.is_empty() {
        bail!(
            "already imported into campaign {campaign}: {} (each test is imported once; \
             give only the new files)",
            again.join(", ")
        );
    }
    let config = store.configuration_for(campaign, dims)?;
    for (imported, result) in numbers.into_iter().zip(results) {
        // Numbered for the store's key only: the store reads an imported campaign's runs as of
        // no round (`Store::runs`), so nothing pairs one file with another by its place.
        let (round, sequence) = store.next_slot(campaign, config)?;
        let now = now_unix();
        let started = imported.started_unix.unwrap_or(now);
        store.insert_run(
            campaign,
            &NewRun {
                configuration_id: config,
                round,
                sequence,
                started_unix: started,
                finished_unix: started,
                imported: Some(imported),
                // netsweep's own result: stored as a campaign's run is, intervals and all.
                result,
                ..NewRun::default()
            },
        )?;
    }
    Ok(campaign)
}
