//! Runs as CSV (RFC 4180): a header, then one line per run with one column per dimension.
//! A field holding a comma, a quote, a line feed or a carriage return is quoted, quotes
//! doubled, so error messages and dimension values read back whole.

use super::Exporter;
use crate::campaigns::store::RunRow;

pub struct CsvExporter;

/// The header's fixed columns after the dimensions.
const MEASURES: [&str; 6] = [
    "status",
    "bits_per_second",
    "retransmits",
    "lost_percent",
    "jitter_ms",
    "error",
];

impl Exporter for CsvExporter {
    fn serialize(&self, runs: &[RunRow], dims: &[String]) -> anyhow::Result<Vec<u8>> {
        let mut header: Vec<String> = vec!["run".into(), "sequence".into(), "round".into()];
        header.extend(dims.iter().cloned());
        header.extend(MEASURES.map(String::from));
        let mut out = line(&header);
        let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        for r in runs {
            let mut row = vec![
                r.id.to_string(),
                r.sequence.to_string(),
                r.round.to_string(),
            ];
            row.extend(dims.iter().map(|d| value_of(&r.dims, d)));
            row.extend([
                r.status.clone(),
                opt(r.bits_per_second),
                r.retransmits.map(|v| v.to_string()).unwrap_or_default(),
                opt(r.lost_percent),
                opt(r.jitter_ms),
                r.error.clone().unwrap_or_default(),
            ]);
            out.push_str(&line(&row));
        }
        Ok(out.into_bytes())
    }
}

fn value_of(dims: &[(String, String)], k: &str) -> String {
    dims.iter()
        .find(|(d, _)| d == k)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// One CSV line, every field quoted where it needs it, ended by a line feed.
fn line(fields: &[String]) -> String {
    let mut s = fields
        .iter()
        .map(|f| field(f))
        .collect::<Vec<_>>()
        .join(",");
    s.push('\n');
    s
}

/// `s` as one CSV field (RFC 4180 section 2).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a field holding a carriage return was written bare, so a reader split the
    /// run's line in two at it.
    #[test]
    fn a_carriage_return_is_quoted() {
        assert_eq!(field("refused\r\nby peer"), "\"refused\r\nby peer\"");
        assert_eq!(field("a\rb"), "\"a\rb\"");
    }

    #[test]
    fn commas_quotes_and_line_feeds_are_quoted_and_plain_text_is_not() {
        assert_eq!(field("plain 1.5"), "plain 1.5");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(field(""), "");
    }

    #[test]
    fn runs_become_a_header_and_one_line_each_with_their_dimensions() {
        let run = RunRow {
            id: 7,
            configuration: "cc=bbr, v2".into(),
            config_position: 0,
            dims: vec![("cc".into(), "bbr, v2".into())],
            round: 1,
            started_unix: None,
            sequence: 2,
            status: "failed".into(),
            error: Some("timeout\r".into()),
            bits_per_second: None,
            retransmits: None,
            lost_percent: None,
            jitter_ms: None,
            cpu_local_percent: None,
            cpu_remote_percent: None,
            loaded_p50_ms: None,
            loaded_p99_ms: None,
            added_latency_ms: None,
            transfer_time_ratio: None,
            tcp_efficiency_percent: None,
            buffer_delay_percent: None,
            transactions_per_second: None,
            latency_p99_us: None,
        };
        let text = String::from_utf8(CsvExporter.serialize(&[run], &["cc".into()]).expect("csv"))
            .expect("utf-8");
        assert_eq!(
            text,
            "run,sequence,round,cc,status,bits_per_second,retransmits,lost_percent,jitter_ms,error\n\
             7,2,1,\"bbr, v2\",failed,,,,,\"timeout\r\"\n"
        );
    }
}
