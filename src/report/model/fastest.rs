//! The report's headline: the fastest configuration, or the fastest group when the fastest is
//! not shown faster than the next. Each configuration is compared with the fastest by a contrast
//! of the campaign's whole design (`decide::blocked`: configurations with rounds as blocks, the
//! error pooled over all of them; as `compare` and `explain` judge), Holm-adjusted together. No
//! configuration is in the group when a comparison the report states shows it slower than one
//! in the group, or when every one of its runs is below every run of one in the group.

use super::{ConfigView, ReportModel, mbit};
use crate::analysis::decide::{self, blocked};
use crate::campaigns::campaign::{self, context_of};

/// A comparison of two configurations that the report states (its comparisons by one
/// dimension): the pair, and whether it shows `slower` below `faster`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Stated {
    pub slower: String,
    pub faster: String,
    pub shown: bool,
}

/// Every comparison of two configurations the report states.
pub(super) fn stated_comparisons(m: &ReportModel) -> Vec<Stated> {
    let Some(by) = &m.compared_by else {
        return Vec::new();
    };
    let label_of = |context: &str, set: &str| -> Option<String> {
        let v = set.strip_prefix(&format!("{by}="))?;
        m.configs
            .iter()
            .find(|c| {
                context_of(&c.dims, by) == context
                    && c.dims.iter().any(|(k, dv)| k == by && dv == v)
            })
            .map(|c| c.label.clone())
    };
    let mut out = Vec::new();
    for g in &m.groups {
        for c in g.analysis.iter().flat_map(|a| a.comparisons.iter()) {
            let d = &c.decision;
            let (Some(from), Some(to)) =
                (label_of(&g.context, &d.from), label_of(&g.context, &d.to))
            else {
                continue;
            };
            let up = d
                .ratio
                .map_or(d.difference.is_some_and(|x| x > 0.0), |r| r > 1.0);
            let (slower, faster) = if up { (from, to) } else { (to, from) };
            out.push(Stated {
                slower,
                faster,
                shown: d.outcome == decide::Outcome::Different,
            });
        }
    }
    out
}

/// Every run of `low` below every run of `high` (at least two runs each).
fn below_every_run(low: &ConfigView, high: &ConfigView) -> bool {
    let max = low.values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = high.values.iter().copied().fold(f64::INFINITY, f64::min);
    low.values.len() >= 2 && high.values.len() >= 2 && max < min
}

/// Each of `others` against `best`, Holm-adjusted together: contrasts of the design of `all`
/// when it leaves error to pool, else each pair's own runs (paired by round).
fn against_best(
    all: &[&ConfigView],
    others: &[&ConfigView],
    best: &ConfigView,
    s: &decide::Settings,
) -> Vec<decide::Decision> {
    let (labels, fit) = blocked::fit_keyed(all.iter().flat_map(|c| {
        c.values
            .iter()
            .zip(&c.rounds)
            .filter_map(|(v, r)| Some((c.label.as_str(), *r, s.scale.to(*v)?)))
    }));
    let cell = |c: &ConfigView| labels.iter().position(|l| *l == c.label);
    let mut against: Vec<decide::Decision> = others
        .iter()
        .map(|c| {
            let e = fit
                .as_ref()
                .zip(cell(c).zip(cell(best)))
                .and_then(|(f, (i, j))| f.difference(&[i], &[j]));
            let logs: Option<Vec<f64>> = c.values.iter().map(|v| s.scale.to(*v)).collect();
            match (e, logs) {
                (Some(e), Some(l)) if !l.is_empty() => decide::decide(
                    &c.label,
                    &best.label,
                    e,
                    l.iter().sum::<f64>() / l.len() as f64,
                    s,
                ),
                _ => decide::between(
                    (&c.label, &c.values, Some(&c.rounds)),
                    (&best.label, &best.values, Some(&best.rounds)),
                    s,
                ),
            }
        })
        .collect();
    decide::adjust(&mut against, s);
    against
}

/// "Fastest" only when the fastest is shown faster than the next; else the fastest group. A CI
/// reaching beyond the path's rate is said to be too wide to mean more. `stated` are the
/// comparisons the report states: a pair it compares is judged by its verdict, so the
/// headline never contradicts it.
pub(super) fn fastest(
    ok: &[&ConfigView],
    link: Option<f64>,
    judging: &campaign::Judging,
    stated: &[Stated],
) -> Vec<String> {
    let s = decide::Settings {
        confidence: judging.confidence,
        change: judging.change,
        scale: decide::Scale::Log,
    };
    let lvl = decide::words::level(judging.confidence);
    let mean_of = |c: &ConfigView| c.summary.description.as_ref().map_or(0.0, |d| d.mean);
    let mut ranked: Vec<&ConfigView> = ok.to_vec();
    ranked.sort_by(|a, b| mean_of(b).total_cmp(&mean_of(a)));
    let Some(best) = ranked.first() else {
        return Vec::new();
    };
    let ci = |c: &ConfigView| {
        c.mean_ci
            .map(|(lo, hi)| {
                let beyond = link
                    .filter(|l| hi > *l)
                    .map(|l| {
                        format!(
                            "; its upper end is beyond the path's {}: the runs are too noisy for a tighter bound",
                            mbit(l)
                        )
                    })
                    .unwrap_or_default();
                format!(" (95% CI {} to {}{beyond})", mbit(lo.max(0.0)), mbit(hi))
            })
            .unwrap_or_default()
    };
    if ranked.len() == 1 {
        return vec![format!(
            "Configuration {} at {} mean goodput{}, {} runs.",
            best.label,
            mbit(mean_of(best)),
            ci(best),
            best.values.len()
        )];
    }
    // The group of configurations not shown slower than the best.
    let against = against_best(&ranked, &ranked[1..], best, &s);
    let pair = |a: &str, b: &str| {
        stated
            .iter()
            .find(|x| (x.slower == a && x.faster == b) || (x.slower == b && x.faster == a))
    };
    let mut group: Vec<&ConfigView> = vec![*best];
    for (c, d) in ranked[1..].iter().zip(&against) {
        let slower = match pair(&c.label, &best.label) {
            Some(x) => x.shown && x.slower == c.label,
            None => d.outcome == decide::Outcome::Different,
        };
        if !slower {
            group.push(*c);
        }
    }
    // Nothing in it that a stated comparison, or every run, shows below a member.
    let members: Vec<&ConfigView> = group.clone();
    let mut left_out: Vec<String> = Vec::new();
    group.retain(|c| {
        let shown = stated.iter().find(|x| {
            x.shown && x.slower == c.label && members.iter().any(|m| m.label == x.faster)
        });
        let under = members.iter().find(|m| below_every_run(c, m));
        if let Some(x) = shown {
            left_out.push(format!(
                "{} is not among the fastest: its comparison with {} shows it slower",
                c.label, x.faster
            ));
        } else if let Some(m) = under {
            left_out.push(format!(
                "{} is not among the fastest: each of its runs is below every run of {}",
                c.label, m.label
            ));
        }
        shown.is_none() && under.is_none()
    });
    let mut lines = if group.len() == 1 && members.len() > 1 {
        vec![format!(
            "Fastest configuration: {} at {} mean goodput{}, {} runs.",
            best.label,
            mbit(mean_of(best)),
            ci(best),
            best.values.len()
        )]
    } else if group.len() == 1 {
        vec![format!(
            "Fastest configuration: {} at {} mean goodput{}, {} runs; faster than the next ({}) \
             at {lvl} confidence.",
            best.label,
            mbit(mean_of(best)),
            ci(best),
            best.values.len(),
            ranked[1].label
        )]
    } else {
        let names: Vec<String> = group
            .iter()
            .map(|c| format!("{} ({})", c.label, mbit(mean_of(c))))
            .collect();
        vec![format!(
            "The fastest group: {} (none shown slower than the fastest at {lvl} confidence; the highest mean{})",
            names.join(", "),
            ci(best)
        )]
    };
    if !left_out.is_empty() {
        lines.push(format!("{}.", left_out.join("; ")));
    }
    lines
}
