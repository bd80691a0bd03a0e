//! Reading `[repeat]`: count, pause, order, seed, profile grouping, and `until` with its
//! `min`, `max` and `change`.

use super::options::parse_bool;
use super::{Order, Reader, Repeat, Until};
use crate::units::parse_duration;
use std::time::Duration;
use toml_edit::Item;

pub(super) fn read_repeat(r: &mut Reader, item: Option<&Item>) -> Repeat {
    let mut rep = Repeat {
        count: 3,
        pause: Duration::ZERO,
        order: Order::Interleaved,
        seed: None,
        group_profiles: false,
        until: None,
        min: 3,
    };
    let Some(table) = item.and_then(Item::as_table) else {
        return rep;
    };
    r.unknown_keys(
        table,
        "repeat",
        &[
            "count",
            "pause",
            "order",
            "seed",
            "group_profiles",
            "until",
            "min",
            "max",
            "change",
        ],
    );
    if let Some((v, span)) = r.string(table, "group_profiles") {
        match parse_bool(&v) {
            Ok(b) => rep.group_profiles = b,
            Err(e) => r.issue(span, format!("repeat group_profiles: {e}")),
        }
    }
    if let Some((v, span)) = r.string(table, "count") {
        match v.parse::<u32>() {
            Ok(n) if (1..=100_000).contains(&n) => rep.count = n,
            _ => r.issue(
                span,
                format!("repeat count {v:?} must be a whole number from 1 to 100000"),
            ),
        }
    }
    if let Some((v, span)) = r.string(table, "pause") {
        match parse_duration(&v) {
            Ok(d) => rep.pause = d,
            Err(e) => r.issue(span, format!("repeat pause: {e}")),
        }
    }
    if let Some((v, span)) = r.string(table, "order") {
        match v.as_str() {
            "interleaved" => rep.order = Order::Interleaved,
            "sequential" => rep.order = Order::Sequential,
            _ => r.issue(
                span,
                format!("repeat order {v:?} is not interleaved or sequential"),
            ),
        }
    }
    if let Some((v, span)) = r.string(table, "seed") {
        match v.parse::<u64>() {
            Ok(s) => rep.seed = Some(s),
            Err(_) => r.issue(span, format!("repeat seed {v:?} is not a whole number")),
        }
    }
    read_until(r, table, &mut rep);
    rep
}

/// `until`, `min`, `max` and `change` of `[repeat]`: `max` is the count when `until` is set.
fn read_until(r: &mut Reader, table: &toml_edit::Table, rep: &mut Repeat) {
    let change = match r.string(table, "change") {
        Some((v, span)) => match crate::units::parse_percent(&v) {
            Ok(c) if c > 0.0 && c < 100.0 => c / 100.0,
            _ => {
                r.issue(
                    span,
                    format!("repeat change {v:?} must be a percentage such as \"5%\""),
                );
                0.05
            }
        },
        None => 0.05,
    };
    let Some((v, span)) = r.string(table, "until") else {
        for key in ["min", "max", "change"] {
            if table.contains_key(key) {
                r.issue(
                    table.get(key).and_then(Item::span),
                    format!("repeat {key} applies with until = \"2%\" or until = \"decided\""),
                );
            }
        }
        return;
    };
    rep.until = match v.as_str() {
        "decided" => Some(Until::Decided(change)),
        // Any positive precision up to 1000% (wide ones suit noisy paths and quick checks).
        p => match p
            .strip_suffix('%')
            .and_then(|t| t.trim().parse::<f64>().ok())
        {
            Some(x) if x > 0.0 && x <= 1000.0 => Some(Until::Precision(x / 100.0)),
            _ => {
                r.issue(
                    span.clone(),
                    format!("repeat until {v:?} is not a precision such as \"2%\" or \"decided\""),
                );
                None
            }
        },
    };
    if table.contains_key("count") {
        r.issue(
            span.clone(),
            "repeat until sets the number of rounds itself: give min and max instead of count",
        );
    }
    let whole = |r: &mut Reader, key: &str, default: u32| match r.string(table, key) {
        Some((v, s)) => match v.parse::<u32>() {
            Ok(n) if (1..=100_000).contains(&n) => n,
            _ => {
                r.issue(
                    s,
                    format!("repeat {key} {v:?} must be a whole number from 1 to 100000"),
                );
                default
            }
        },
        None => default,
    };
    rep.min = whole(r, "min", 3);
    rep.count = whole(r, "max", 20);
    if rep.min > rep.count {
        r.issue(
            span.clone(),
            format!("repeat min {} is above max {}", rep.min, rep.count),
        );
    }
    if rep.order == Order::Sequential && rep.until.is_some() {
        r.issue(
            span,
            "repeat until needs order = \"interleaved\": rounds end only then",
        );
    }
}
