//! A request/response result as text: the rate, the latency percentiles, the bytes each way
//! and the histogram as bars. Renders the values it is given (`RrResult`).

use crate::traffic::rr::RrMode;
use crate::traffic::rr::result::RrResult;
use crate::traffic::spec::Protocol;
use std::fmt::Write;

/// Widest histogram bar, characters.
const BAR: u64 = 40;

pub fn render(r: &RrResult, server: &str) -> String {
    let mut s = String::new();
    let proto = match r.protocol {
        Protocol::Tcp => "TCP",
        Protocol::Udp => "UDP",
    };
    let spin = r.spin_us.map_or(String::new(), |us| {
        format!(", polling up to {us} us per wait")
    });
    let _ = writeln!(
        s,
        "{proto} {} with {server}: {}-byte requests, {}-byte responses, {} concurrent{spin}",
        r.test.name(),
        r.request_bytes,
        r.response_bytes,
        r.concurrency
    );
    let _ = writeln!(
        s,
        "transactions   {} in {:.2} s: {:.1} transactions/s",
        r.transactions, r.duration_s, r.transactions_per_second
    );
    if r.test == RrMode::Crr {
        let _ = writeln!(
            s,
            "connections    {:.1} connections/s (server accepted {})",
            r.connections_per_second.unwrap_or(0.0),
            r.server.accepted_connections
        );
    }
    let l = &r.latency_us;
    let _ = writeln!(
        s,
        "latency (us)   min {:.1}  mean {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
        l.min, l.mean, l.p50, l.p90, l.p99, l.p99_9, l.max
    );
    let _ = writeln!(
        s,
        "bytes          sent {}, received {} (server: received {}, sent {})",
        r.bytes_sent, r.bytes_received, r.server.bytes_received, r.server.bytes_sent
    );
    if let Some(words) = r.affinity.words() {
        let _ = writeln!(s, "CPU affinity   (-A) {words}");
    }
    if r.protocol == Protocol::Udp {
        let _ = writeln!(s, "lost           {} requests sent again", r.lost);
    }
    let top = r.histogram.bins().map(|b| b.2).max().unwrap_or(0);
    if top > 0 {
        // The bins up to p99.9's, then the tail in one line (the JSON has every bin).
        let _ = writeln!(s, "histogram (us)");
        let (mut tail, mut tail_from) = (0u64, None);
        for (lo, hi, c) in r.histogram.bins() {
            if lo > l.p99_9 {
                tail += c;
                tail_from.get_or_insert(lo);
                continue;
            }
            let bar = (c * BAR).div_ceil(top) as usize;
            let _ = writeln!(s, "  {lo:>10.1} - {hi:<10.1} {c:>10}  {}", "#".repeat(bar));
        }
        if let Some(from) = tail_from {
            let _ = writeln!(
                s,
                "  {from:>10.1} - {:<10.1} {tail:>10}  (above p99.9)",
                l.max
            );
        }
    }
    for e in &r.errors {
        let _ = writeln!(s, "error: {e}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::rr::engine::Outcome;
    use crate::traffic::rr::{RrSpec, ServerCounts};
    use std::time::Duration;

    #[test]
    fn the_text_names_the_rate_the_percentiles_and_folds_the_tail() {
        let spec = RrSpec::tcp(RrMode::Crr, Duration::from_secs(1));
        let mut o = Outcome::default();
        for i in 0..10_000u64 {
            o.latency.record_ns(20_000 + i % 7 * 1_000);
            o.transactions += 1;
        }
        o.latency.record_ns(5_000_000);
        o.transactions += 1;
        let server = ServerCounts {
            accepted_connections: 10_001,
            ..ServerCounts::default()
        };
        let r = RrResult::new(&spec, &[o], Duration::from_secs(1), server);
        let text = render(&r, "127.0.0.1:5310");
        assert!(
            text.contains("10001 in 1.00 s: 10001.0 transactions/s"),
            "{text}"
        );
        assert!(
            text.contains("10001.0 connections/s (server accepted 10001)"),
            "{text}"
        );
        assert!(text.contains("p99.9"), "{text}");
        // The one 5 ms transaction is past p99.9: folded into the last line.
        assert!(
            text.lines().last().unwrap().contains("(above p99.9)"),
            "{text}"
        );
        assert!(!text.contains("error:"), "{text}");
    }
}
