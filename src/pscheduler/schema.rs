//! The throughput test's result schema (`RESULT_SCHEMA` in pscheduler-test-throughput's
//! `validate.py`), written out as checks, plus what its `result-format` needs to render a
//! successful result (every interval's `summary.start`, every block's `throughput-bits`,
//! `start` and `end`, `stream-id` on every stream). `run` and `merged-results` check their
//! output with it before writing; the tests check every output with it.

use serde_json::{Map, Value};

/// Fields of the schema's `#/local/throughput-data`, with their JSON types.
const THROUGHPUT_DATA: &[(&str, Kind)] = &[
    ("throughput-bits", Kind::Number),
    ("throughput-bytes", Kind::Number),
    ("receiver-throughput-bits", Kind::Number),
    ("sent", Kind::IntegerOrNull),
    ("lost", Kind::IntegerOrNull),
    ("jitter", Kind::NumberOrNull),
    ("stream-id", Kind::StringOrInteger),
    ("start", Kind::Number),
    ("end", Kind::Number),
    ("rtt", Kind::NumberOrNull),
    ("tcp-window-size", Kind::IntegerOrNull),
    ("retransmits", Kind::IntegerOrNull),
    ("omitted", Kind::Boolean),
];

/// Top-level fields of a result.
const TOP: &[(&str, Kind)] = &[
    ("schema", Kind::Cardinal),
    ("succeeded", Kind::Boolean),
    ("error", Kind::String),
    ("diags", Kind::String),
    ("mss", Kind::Integer),
    ("mtu", Kind::Integer),
    ("tcp-window-size", Kind::Integer),
    ("requested-tcp-window-size", Kind::Integer),
    ("intervals", Kind::Array),
    ("summary", Kind::Object),
];

const REQUIRED: &[&str] = &["succeeded", "diags", "intervals", "summary"];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Number,
    NumberOrNull,
    Integer,
    IntegerOrNull,
    /// pScheduler's Cardinal: an integer of at least 1.
    Cardinal,
    StringOrInteger,
    String,
    Boolean,
    Array,
    Object,
}

fn is_integer(v: &Value) -> bool {
    v.is_i64() || v.is_u64()
}

fn fits(kind: Kind, v: &Value) -> bool {
    match kind {
        Kind::Number => v.is_number(),
        Kind::NumberOrNull => v.is_number() || v.is_null(),
        Kind::Integer => is_integer(v),
        Kind::IntegerOrNull => is_integer(v) || v.is_null(),
        Kind::Cardinal => v.as_u64().is_some_and(|n| n >= 1),
        Kind::StringOrInteger => v.is_string() || is_integer(v),
        Kind::String => v.is_string(),
        Kind::Boolean => v.is_boolean(),
        Kind::Array => v.is_array(),
        Kind::Object => v.is_object(),
    }
}

/// Checks an object's fields against a table; `closed` refuses fields not in it.
fn fields(at: &str, map: &Map<String, Value>, table: &[(&str, Kind)], out: &mut Vec<String>) {
    for (key, value) in map {
        match table.iter().find(|(k, _)| k == key) {
            Some((_, kind)) if !fits(*kind, value) => {
                out.push(format!("{at}.{key}: {value} is not of type {kind:?}"))
            }
            Some(_) => {}
            None => out.push(format!("{at}: additional property {key:?} is not allowed")),
        }
    }
}

fn throughput_data(at: &str, v: &Value, out: &mut Vec<String>) {
    match v.as_object() {
        Some(map) => fields(at, map, THROUGHPUT_DATA, out),
        None => out.push(format!("{at}: {v} is not an object")),
    }
}

fn throughput_list(at: &str, v: &Value, out: &mut Vec<String>) {
    match v.as_array() {
        Some(items) => {
            for (i, item) in items.iter().enumerate() {
                throughput_data(&format!("{at}[{i}]"), item, out);
            }
        }
        None => out.push(format!("{at}: {v} is not an array")),
    }
}

/// Everything in `result` that `RESULT_SCHEMA` refuses, one line each (empty: valid).
pub fn schema_problems(result: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(top) = result.as_object() else {
        return vec![format!("the result is not an object: {result}")];
    };
    for key in REQUIRED {
        if !top.contains_key(*key) {
            out.push(format!("required property {key:?} is missing"));
        }
    }
    fields("result", top, TOP, &mut out);
    if let Some(intervals) = top.get("intervals").and_then(Value::as_array) {
        for (i, iv) in intervals.iter().enumerate() {
            let at = format!("intervals[{i}]");
            let Some(iv) = iv.as_object() else {
                out.push(format!("{at}: not an object"));
                continue;
            };
            if let Some(s) = iv.get("streams") {
                throughput_list(&format!("{at}.streams"), s, &mut out);
            }
            if let Some(s) = iv.get("summary") {
                throughput_data(&format!("{at}.summary"), s, &mut out);
            }
        }
    }
    if let Some(summary) = top.get("summary").and_then(Value::as_object) {
        if let Some(s) = summary.get("streams") {
            throughput_list("summary.streams", s, &mut out);
        }
        if let Some(s) = summary.get("summary") {
            throughput_data("summary.summary", s, &mut out);
        }
    }
    out
}

/// What `result-format` reads of a successful result that the schema leaves optional.
pub fn format_problems(result: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let block = |at: &str, v: Option<&Value>, stream: bool, out: &mut Vec<String>| {
        let Some(v) = v else {
            out.push(format!("{at} is missing"));
            return;
        };
        let mut keys = vec!["throughput-bits", "start", "end"];
        if stream {
            keys.push("stream-id");
        }
        for k in keys {
            if v.get(k).is_none_or(Value::is_null) {
                out.push(format!("{at} has no {k}"));
            }
        }
    };
    let list =
        |at: &str, v: Option<&Value>, out: &mut Vec<String>| match v.and_then(Value::as_array) {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    block(&format!("{at}[{i}]"), Some(item), true, out);
                }
            }
            None => out.push(format!("{at} is not an array")),
        };
    for (i, iv) in result
        .get("intervals")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        list(
            &format!("intervals[{i}].streams"),
            iv.get("streams"),
            &mut out,
        );
        block(
            &format!("intervals[{i}].summary"),
            iv.get("summary"),
            false,
            &mut out,
        );
    }
    let summary = result.get("summary");
    list(
        "summary.streams",
        summary.and_then(|s| s.get("streams")),
        &mut out,
    );
    block(
        "summary.summary",
        summary.and_then(|s| s.get("summary")),
        false,
        &mut out,
    );
    out
}

/// Schema problems, and for a result that claims success with figures, rendering problems too.
/// (The server participant's result claims success with no figures of its own: they are in
/// participant 0's result, and pScheduler renders the merged one.)
pub fn problems(result: &Value) -> Vec<String> {
    let mut out = schema_problems(result);
    let has_figures = result
        .get("intervals")
        .and_then(Value::as_array)
        .is_some_and(|i| !i.is_empty());
    if result.get("succeeded") == Some(&Value::Bool(true)) && has_figures {
        out.extend(format_problems(result));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn minimal() -> Value {
        json!({
            "succeeded": true,
            "diags": "",
            "intervals": [{
                "streams": [{"stream-id": 1, "start": 0.0, "end": 1.0, "throughput-bits": 8e6,
                             "throughput-bytes": 1_000_000, "retransmits": 0, "rtt": 25,
                             "tcp-window-size": 65536, "omitted": false}],
                "summary": {"start": 0.0, "end": 1.0, "throughput-bits": 8e6, "omitted": false}
            }],
            "summary": {
                "streams": [{"stream-id": 1, "start": 0.0, "end": 1.0, "throughput-bits": 8e6}],
                "summary": {"start": 0.0, "end": 1.0, "throughput-bits": 8e6,
                            "receiver-throughput-bits": 7.9e6, "sent": null, "jitter": null}
            }
        })
    }

    #[test]
    fn a_result_of_the_schema_passes() {
        assert_eq!(problems(&minimal()), Vec::<String>::new());
    }

    #[test]
    fn each_rule_of_the_schema_is_enforced() {
        type Change = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(&str, Change)> = vec![
            (
                "\"diags\" is missing",
                Box::new(|v| {
                    v.as_object_mut().map(|o| o.remove("diags"));
                }),
            ),
            (
                "additional property \"bits\"",
                Box::new(|v| v["bits"] = json!(1)),
            ),
            (
                "summary.summary.rtt",
                Box::new(|v| v["summary"]["summary"]["rtt"] = json!("x")),
            ),
            (
                "intervals[0].streams[0].retransmits",
                Box::new(|v| v["intervals"][0]["streams"][0]["retransmits"] = json!(1.5)),
            ),
            (
                "intervals[0].summary: additional property \"seconds\"",
                Box::new(|v| v["intervals"][0]["summary"]["seconds"] = json!(1.0)),
            ),
            ("result.mss", Box::new(|v| v["mss"] = json!(1448.5))),
            ("result.schema", Box::new(|v| v["schema"] = json!(0))),
            (
                "stream-id",
                Box::new(|v| v["summary"]["streams"][0]["stream-id"] = json!(true)),
            ),
            (
                "omitted",
                Box::new(|v| v["intervals"][0]["summary"]["omitted"] = json!(0)),
            ),
        ];
        for (needle, change) in cases {
            let mut v = minimal();
            change(&mut v);
            let p = problems(&v);
            assert!(p.iter().any(|l| l.contains(needle)), "{needle}: {p:?}");
        }
    }

    #[test]
    fn success_needs_what_result_format_reads() {
        let mut v = minimal();
        v["intervals"][0]["streams"][0]
            .as_object_mut()
            .map(|o| o.remove("stream-id"));
        v["summary"]["summary"]
            .as_object_mut()
            .map(|o| o.remove("throughput-bits"));
        let p = problems(&v);
        assert!(
            p.iter().any(|l| l.contains("streams[0] has no stream-id")),
            "{p:?}"
        );
        assert!(
            p.iter()
                .any(|l| l.contains("summary.summary has no throughput-bits"))
        );
        // A failure only has to match the schema.
        v["succeeded"] = json!(false);
        assert_eq!(problems(&v), Vec::<String>::new());
        // So does a success without figures (the server participant's).
        let served = json!({"succeeded": true, "diags": "", "intervals": [],
                            "summary": {"streams": [], "summary": {}}});
        assert_eq!(problems(&served), Vec::<String>::new());
    }
}
