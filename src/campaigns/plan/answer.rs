//! Reading `[answer]`: how a campaign's answer is judged. `change` is the smallest difference
//! that matters (the equivalence margin, default 5%, or `[repeat] change` when that is given),
//! `[answer.baseline]` names the value each unordered dimension is compared with, and
//! `keep_outliers` keeps runs far outside their siblings in the effects.

use super::options::parse_bool;
use super::{AnswerSettings, Dimension, Reader};
use toml_edit::Item;

pub(super) fn read_answer(
    r: &mut Reader,
    item: Option<&Item>,
    dimensions: &[Dimension],
    repeat_change: Option<f64>,
) -> AnswerSettings {
    let mut a = AnswerSettings {
        change: repeat_change.unwrap_or(crate::analysis::decide::DEFAULT_CHANGE),
        ..AnswerSettings::default()
    };
    let Some(table) = item.and_then(Item::as_table_like) else {
        return a;
    };
    r.unknown_keys(table, "answer", &["change", "baseline", "keep_outliers"]);
    if let Some((v, span)) = r.string(table, "change") {
        match crate::units::parse_percent(&v) {
            Ok(c) if c > 0.0 && c < 100.0 => a.change = c / 100.0,
            _ => r.issue(
                span,
                format!("answer change {v:?} must be a percentage such as \"5%\""),
            ),
        }
    }
    if let Some((v, span)) = r.string(table, "keep_outliers") {
        match parse_bool(&v) {
            Ok(b) => a.keep_outliers = b,
            Err(e) => r.issue(span, format!("answer keep_outliers: {e}")),
        }
    }
    if let Some(b) = table.get("baseline") {
        let Some(t) = b.as_table_like() else {
            r.issue(
                b.span(),
                "answer baseline must be a table: [answer.baseline] profile = \"default\"",
            );
            return a;
        };
        for (dim, value) in t.iter() {
            let span = value.span();
            let Some(v) = value.as_value().and_then(super::options::scalar) else {
                r.issue(
                    span,
                    format!("answer baseline {dim} must be one of its values"),
                );
                continue;
            };
            match dimensions.iter().find(|d| d.name == dim) {
                None => r.issue(
                    span,
                    format!("answer baseline {dim}: the plan has no dimension {dim:?}"),
                ),
                Some(d) if !d.values.iter().any(|x| x.label == v) => r.issue(
                    span,
                    format!(
                        "answer baseline {dim} = {v:?} is not one of its values ({})",
                        d.values
                            .iter()
                            .map(|x| x.label.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ),
                Some(_) => a.baselines.push((dim.to_string(), v)),
            }
        }
    }
    a
}
