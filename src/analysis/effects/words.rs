//! The effects in words, first line first: what matters most and by how much (the largest
//! difference, with its interval), the steps or the comparisons with the baseline, the best
//! group; what makes no difference (shown, or bounded with the rounds that would settle it);
//! interactions; drift; and, once, how the comparisons were corrected.

use super::{Effect, Effects, Options, Scale};
use crate::analysis::decide::words::{self as say, percent_text, ratio_text};
use crate::analysis::decide::{Decision, Outcome};

pub(super) fn fmt_num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// "78%", or "under 1%" for a share that rounds to nothing but is not.
fn share_text(share: f64) -> String {
    if share > 0.0 && share < 0.005 {
        "under 1%".into()
    } else {
        format!("{:.0}%", share * 100.0)
    }
}

fn p_text(p: Option<f64>) -> String {
    p.map_or("no test: no repeated runs".into(), say::p_text)
}

/// "raises goodput 30.9x" / "lowers goodput to 0.13x" / "raises retransmits by +12".
fn change_words(d: &Decision, what: &str, unit: &dyn Fn(f64) -> String) -> String {
    match (d.ratio, d.difference) {
        (Some(r), _) if r >= 1.0 => format!("raises {what} {}", ratio_text(r)),
        (Some(r), _) => format!("lowers {what} to {}", ratio_text(r)),
        (_, Some(x)) if x >= 0.0 => format!("raises {what} by {}", unit(x)),
        (_, Some(x)) => format!("lowers {what} by {}", unit(-x)),
        _ => format!("changes {what}"),
    }
}

/// A comparison in a few words, for lists: "2.03x", "1.01x (within 5%)", "no difference
/// larger than 5%", "not shown yet".
fn short(d: &Decision, unit: &dyn Fn(f64) -> String) -> String {
    let change = percent_text(d.change);
    match d.outcome {
        Outcome::Different => say::size_text(d, unit),
        Outcome::SmallDifference => format!("{} (within {change})", say::size_text(d, unit)),
        Outcome::Equivalent => format!("no difference larger than {change}"),
        // Within the change at its own level, but not after Holm's correction over the family.
        Outcome::Undecided if d.not_ruled_out < d.change => format!(
            "not shown either way (within {change} at its own level, not after Holm's correction: \
             equivalence {})",
            p_adj_equivalence(d)
        ),
        Outcome::Undecided => format!(
            "not shown either way (up to {} not ruled out)",
            percent_text(d.not_ruled_out)
        ),
        Outcome::TooFew => "too few runs".into(),
    }
}

fn matters(x: &Effect) -> bool {
    x.comparisons
        .iter()
        .chain(x.span.iter())
        .any(|d| d.outcome == Outcome::Different)
}

/// An effect the F test finds (at `alpha`) that no comparison of two of its values decides.
fn f_only(x: &Effect, alpha: f64) -> bool {
    !matters(x) && !small(x, alpha) && x.p.is_some_and(|p| p < alpha)
}

/// Real differences, all too small to matter: none matters, one is shown small, and the rest
/// are decided (or every pair of values is shown within the change).
fn small(x: &Effect, alpha: f64) -> bool {
    !matters(x)
        && x.comparisons
            .iter()
            .any(|d| d.outcome == Outcome::SmallDifference)
        && (x.comparisons.iter().all(|d| d.outcome.decided())
            || x.equivalence_p.is_some_and(|p| p < alpha))
}

/// The comparison a headline names: the span (lowest to highest) of an ordered dimension, the
/// largest difference from the baseline of an unordered one.
pub fn headline(x: &Effect) -> Option<&Decision> {
    if x.ordered {
        return x.span.as_ref().or(x.comparisons.first());
    }
    x.comparisons
        .iter()
        .filter(|d| d.outcome == Outcome::Different)
        .max_by(|a, b| size(a).total_cmp(&size(b)))
}

fn size(d: &Decision) -> f64 {
    match (d.ratio, d.difference) {
        (Some(r), _) => r.ln().abs(),
        (_, Some(x)) => x.abs(),
        _ => 0.0,
    }
}

fn matter_line(x: &Effect, first: bool, opts: &Options) -> String {
    let unit = &|v: f64| (opts.unit)(v);
    let what = &opts.what;
    let rank = if first { "matters most" } else { "matters too" };
    let Some(h) = headline(x) else {
        return format!("{} {rank}", x.dimension);
    };
    let stats = format!(
        "{}, {}; {} of the variation",
        say::ci_text(h, unit),
        p_adj(h),
        share_text(x.share)
    );
    let mut line = if x.ordered {
        format!(
            "{} {rank}: {}→{} {} ({stats})",
            x.dimension,
            h.from,
            h.to,
            change_words(h, what, unit)
        )
    } else {
        let base = x.baseline.as_deref().unwrap_or(&h.from);
        let of = if h.ratio.is_some() {
            format!(" of {base}")
        } else {
            format!(" against {base}")
        };
        format!(
            "{} {rank}: {} {}{of} ({stats})",
            x.dimension,
            h.to,
            change_words(h, what, unit)
        )
    };
    if x.ordered && x.comparisons.len() > 1 {
        let steps: Vec<String> = x
            .comparisons
            .iter()
            .map(|d| format!("{}→{} {}", d.from, d.to, short(d, unit)))
            .collect();
        line.push_str(&format!("; steps: {}", steps.join(", ")));
    } else if !x.ordered {
        let others: Vec<String> = x
            .comparisons
            .iter()
            .filter(|d| !std::ptr::eq(*d, h))
            .map(|d| format!("{} {}", d.to, short(d, unit)))
            .collect();
        if !others.is_empty() {
            line.push_str(&format!(
                "; against {}: {}",
                x.baseline.as_deref().unwrap_or("the baseline"),
                others.join(", ")
            ));
        }
    }
    match x.best.as_slice() {
        [] => {}
        [one] => line.push_str(&format!("; highest at {}={one}", x.dimension)),
        [one, rest @ ..] => line.push_str(&format!(
            "; highest at {}={one}, with {} not shown below it",
            x.dimension,
            rest.join(", ")
        )),
    }
    line
}

fn p_adj_equivalence(d: &Decision) -> String {
    if (d.equivalence_p_adjusted - d.equivalence_p).abs() > 1e-12 {
        format!("Holm-adjusted {}", say::p_text(d.equivalence_p_adjusted))
    } else {
        say::p_text(d.equivalence_p)
    }
}

fn p_adj(d: &Decision) -> String {
    if (d.p_adjusted - d.p).abs() > 1e-12 {
        format!("Holm-adjusted {}", say::p_text(d.p_adjusted))
    } else {
        say::p_text(d.p)
    }
}

fn null_line(x: &Effect, opts: &Options) -> String {
    let change = percent_text(opts.settings.change);
    let alpha = opts.settings.alpha();
    let what = &opts.what;
    if let Some(p) = x.equivalence_p.filter(|p| *p < alpha) {
        let every = if x.pairs.len() > 1 {
            " for every pair of its values"
        } else {
            ""
        };
        return format!(
            "{} makes no difference larger than {change} to {what} (equivalence shown{every}, {}; F test {})",
            x.dimension,
            say::p_text(p),
            p_text(x.p)
        );
    }
    if x.pairs.iter().any(|d| d.outcome == Outcome::TooFew) || x.pairs.is_empty() {
        return format!(
            "{} makes no difference shown ({}); too few runs of some values to bound it",
            x.dimension,
            p_text(x.p)
        );
    }
    let bound = x.pairs.iter().map(|d| d.not_ruled_out).fold(0.0, f64::max);
    let needed = x
        .pairs
        .iter()
        .filter(|d| !d.equivalent)
        .map(|d| d.rounds_needed)
        .try_fold(0usize, |m, r| r.map(|r| m.max(r)));
    // Why it is undecided, in terms a user can act on: the test's degrees of freedom.
    let why = x
        .pairs
        .first()
        .map(|d| format!(": {}", say::degrees_text(d)))
        .unwrap_or_default();
    let more = match needed {
        Some(n) if n > 0 => format!(
            "{why}; about {n} more round{} would settle it at this noise",
            if n == 1 { "" } else { "s" }
        ),
        Some(_) => why,
        None => format!(
            "{why}; a change this close to the {change} threshold would take more rounds than are practical"
        ),
    };
    if f_only(x, alpha) {
        return format!(
            "{}: the F test finds an effect on {what} ({}) that no comparison of two of its \
             values decides yet; the data cannot rule out a change of up to {}{more}",
            x.dimension,
            p_text(x.p),
            percent_text(bound)
        );
    }
    format!(
        "{}: no difference in {what} shown ({}), but the data cannot rule out a change of up to {}{more}",
        x.dimension,
        p_text(x.p),
        percent_text(bound)
    )
}

/// A dimension whose differences are real but too small to matter: every comparison decided,
/// or every pair of values shown within the change.
fn small_line(x: &Effect, opts: &Options) -> String {
    let unit = &|v: f64| (opts.unit)(v);
    let sizes: Vec<String> = x
        .comparisons
        .iter()
        .map(|d| format!("{}→{} {}", d.from, d.to, short(d, unit)))
        .collect();
    let real: Vec<String> = x
        .comparisons
        .iter()
        .filter(|d| d.outcome == Outcome::SmallDifference)
        .map(|d| format!("{}→{} {}", d.from, d.to, p_adj(d)))
        .collect();
    let every = match x.equivalence_p.filter(|p| *p < opts.settings.alpha()) {
        Some(p) => format!("; every pair of values within it: {}", say::p_text(p)),
        None => String::new(),
    };
    format!(
        "{} makes no practical difference to {}: real ({}), but within the {} that matters{every} ({})",
        x.dimension,
        opts.what,
        real.join(", "),
        percent_text(opts.settings.change),
        sizes.join(", ")
    )
}

/// The answer, first line first.
pub(super) fn answer(e: &Effects, opts: &Options) -> String {
    if e.runs == 0 {
        // Nothing was measured: "no dimension makes a difference" would be a finding.
        return format!(
            "no run succeeded, so nothing can be said about what makes a difference to {}: \
             every run failed (each configuration's failure is below); fix that and run again",
            opts.what
        );
    }
    let mut lines = Vec::new();
    let matter: Vec<&Effect> = e.effects.iter().filter(|x| matters(x)).collect();
    for (i, x) in matter.iter().enumerate() {
        let mut line = matter_line(x, i == 0, opts);
        // An average of effects that go opposite ways is true of no context: said at once (a
        // trial's "reverse raises goodput 1.10x" was -19% on virtio and +49% on rtl8139).
        if let Some(i) = e
            .interactions
            .iter()
            .find(|i| i.crossing.contains(&x.dimension))
        {
            let other = if i.a == x.dimension { &i.b } else { &i.a };
            line.push_str(&format!(
                "; an average over {other}: which {} is highest depends on {other} (below)",
                x.dimension
            ));
        }
        lines.push(line);
    }
    let alpha = opts.settings.alpha();
    // Effects the F test finds that no comparison of two values decides (few rounds, or an
    // effect that depends on another dimension): not "no difference".
    let found: Vec<String> = e
        .effects
        .iter()
        .filter(|x| f_only(x, alpha))
        .map(|x| format!("{} changes {} ({})", x.dimension, opts.what, p_text(x.p)))
        .collect();
    if matter.is_empty() && !found.is_empty() {
        lines.push(format!(
            "no comparison of two values is decided yet, though the F test finds that {}: more \
             rounds would say which values differ and by how much",
            found.join(", and that ")
        ));
    } else if matter.is_empty() {
        // "No difference" is a finding too: said only when every dimension is shown to make
        // none that matters (equivalence, or a decided small difference).
        let open: Vec<&str> = e
            .effects
            .iter()
            .filter(|x| !small(x, alpha) && !x.equivalence_p.is_some_and(|p| p < alpha))
            .map(|x| x.dimension.as_str())
            .collect();
        lines.push(if e.effects.is_empty() {
            format!(
                "one configuration, so nothing was compared: nothing can be said about what \
                 makes a difference to {}; sweep a setting (the plan's [matrix]) to ask",
                opts.what
            )
        } else if open.is_empty() {
            format!(
                "no dimension makes a difference to {} that matters beyond the noise of repeated runs",
                opts.what
            )
        } else {
            format!(
                "nothing is decided yet: no dimension is shown to make a difference to {} that \
                 matters, and {} not shown to make none (below: what more rounds would settle)",
                opts.what,
                match open.as_slice() {
                    [one] => format!("{one} is"),
                    many => format!("{} are", many.join(", ")),
                }
            )
        });
    }
    for x in e.effects.iter().filter(|x| small(x, alpha)) {
        lines.push(small_line(x, opts));
    }
    for x in e.effects.iter().filter(|x| !matters(x) && !small(x, alpha)) {
        lines.push(null_line(x, opts));
    }
    for i in &e.interactions {
        lines.push(format!("{} ({})", i.text, p_text(i.p)));
    }
    match &e.drift {
        Some(d) if d.p.is_some_and(|p| p < super::ALPHA) => lines.push(format!(
            "drift over the rounds: the round explains {} of the variation ({}); the machine or path changed during the campaign",
            share_text(d.share),
            p_text(d.p)
        )),
        Some(d) => lines.push(format!("no drift over the rounds ({})", p_text(d.p))),
        None => {}
    }
    let family: usize = e
        .effects
        .iter()
        .map(|x| x.comparisons.len() + usize::from(x.span.is_some()))
        .sum();
    if family > 0 {
        let design = match e.pooled_df {
            Some(df) => format!(
                "a contrast of the whole design, configurations with rounds as blocks and the \
                 error pooled over all of them ({}; Montgomery ch. 4)",
                crate::analysis::decide::words::dof_text(df)
            ),
            None => match e.unequal_noise_p {
                Some(p) => format!(
                    "each pair's own runs, runs of one round paired where they can be: the \
                     configurations are not equally noisy (Brown and Forsythe 1974, {}), so \
                     one noisy configuration does not decide the others' comparisons",
                    say::p_text(p)
                ),
                None => "runs of one round paired where they can be".to_string(),
            },
        };
        lines.push(format!(
            "(each comparison: {design}, a difference by t test at {}, 'no difference larger than \
             {}' by two one-sided tests (Schuirmann 1987){})",
            say::level(opts.settings.confidence),
            percent_text(opts.settings.change),
            if e.effects
                .iter()
                .any(|x| x.comparisons.len() + usize::from(x.span.is_some()) > 1)
            {
                "; each dimension's comparisons Holm-adjusted as one family (Holm 1979), each \
                 interval at the level that correction gives its test"
            } else {
                ""
            }
        ));
    }
    lines.join("\n")
}

/// How the analysis was made, in one sentence.
pub(super) fn method(
    opts: &Options,
    n: usize,
    cells: usize,
    unbalanced: bool,
    (pooled_df, unequal): (Option<f64>, Option<f64>),
) -> String {
    let comparisons = match (pooled_df, unequal) {
        (Some(df), _) => format!(
            "contrasts of the whole design, configurations with rounds as blocks (randomized \
             complete block design, Montgomery ch. 4), the error pooled over every configuration \
             ({df:.0} degrees of freedom)"
        ),
        (None, Some(p)) => format!(
            "t tests on each pair's own runs, runs of one round paired (the configurations are \
             not equally noisy, Brown and Forsythe 1974 {}: no error pooled)",
            say::p_text(p)
        ),
        (None, None) => "t tests, runs of one round paired (one run per configuration leaves \
                         no error to pool)"
            .to_string(),
    };
    format!(
        "factorial analysis of variance (Montgomery, Design and Analysis of Experiments, ch. 5) \
         of {}{} over {n} runs in {cells} configurations; F tests against the variation between \
         repeated runs of one configuration; comparisons of values judged at {} with a practical \
         change of {} ({comparisons}; equivalence by two one-sided tests, Schuirmann 1987; Holm \
         1979 over each dimension's comparisons, each comparison's interval at the level \
         Holm's correction gives its test, so it excludes no change exactly when a difference is \
         shown); each value's interval from its own configurations' spread (Satterthwaite \
         1946); rounds as blocks for drift{}",
        opts.what,
        if opts.settings.scale == Scale::Log {
            " on a log scale"
        } else {
            ""
        },
        say::level(opts.settings.confidence),
        percent_text(opts.settings.change),
        if unbalanced {
            "; unequal runs per configuration (failed runs or outliers): type II sums of squares \
             by least squares (Langsrud 2003) and marginal means that weigh every configuration \
             equally, both exact"
        } else {
            ""
        }
    )
}

/// How much a dimension's effect (its largest over its smallest mean, or their difference)
/// differs between the values of another: the practical size of an interaction.
pub(super) fn interaction_size(
    b_values: &[String],
    joint: &[((String, String), f64)],
    scale: Scale,
    grand: f64,
) -> f64 {
    let effects: Vec<f64> = b_values
        .iter()
        .filter_map(|bv| {
            let here: Vec<f64> = joint
                .iter()
                .filter(|((_, jb), _)| jb == bv)
                .map(|(_, m)| *m)
                .collect();
            let hi = here.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lo = here.iter().copied().fold(f64::INFINITY, f64::min);
            (here.len() > 1).then_some(hi - lo)
        })
        .collect();
    let hi = effects.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lo = effects.iter().copied().fold(f64::INFINITY, f64::min);
    match scale {
        // Differences of logs: their spread is the ratio of the ratios.
        Scale::Log => (hi - lo).exp() - 1.0,
        Scale::Linear if grand.abs() > 0.0 => (hi - lo) / grand.abs(),
        Scale::Linear => f64::INFINITY,
    }
}

/// "congestion's effect depends on window: bbr over cubic 1.01x at 64K, 1.35x at 4M".
pub(super) fn interaction_text(
    a: &str,
    b: &str,
    b_values: &[String],
    joint: &[((String, String), f64)],
    scale: Scale,
    what: &str,
) -> String {
    let mut parts = Vec::new();
    for bv in b_values {
        let here: Vec<(&String, f64)> = joint
            .iter()
            .filter(|((_, jb), _)| jb == bv)
            .map(|((ja, _), m)| (ja, *m))
            .collect();
        let (Some(hi), Some(lo)) = (
            here.iter().max_by(|x, y| x.1.total_cmp(&y.1)),
            here.iter().min_by(|x, y| x.1.total_cmp(&y.1)),
        ) else {
            continue;
        };
        parts.push(match scale {
            Scale::Log => format!("{}/{} {:.2}x at {b}={bv}", hi.0, lo.0, (hi.1 - lo.1).exp()),
            Scale::Linear => format!(
                "{} over {} by {} at {b}={bv}",
                hi.0,
                lo.0,
                fmt_num(hi.1 - lo.1)
            ),
        });
    }
    format!(
        "{a}'s effect on {what} depends on {b}: {}",
        parts.join(", ")
    )
}
