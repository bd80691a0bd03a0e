//! A decision in words, the same sentence wherever it is printed: "4M vs 64K: 30.9x goodput
//! (95% CI 29.8-32.0x, p < 0.001)", "no difference larger than 5% (equivalence shown, p =
//! 0.003)", "no difference shown (p = 0.31), but the data cannot rule out up to 18%: about 6
//! more rounds would settle it".

use super::{Decision, Design, Outcome, Scale};

/// A confidence level as asked: "95%", "99.5%", never "100%" for 0.995.
pub fn level(confidence: f64) -> String {
    let pct = confidence * 100.0;
    let mut s = format!("{pct:.3}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    format!("{s}%")
}

/// The level of an interval, which Holm's correction may have raised: "95%", "98.3%", with
/// one decimal (two when one would round up to 100%).
pub fn interval_level(confidence: f64) -> String {
    let pct = confidence * 100.0;
    if (pct - pct.round()).abs() < 0.005 {
        return level(confidence);
    }
    let one = format!("{pct:.1}");
    let s = if one.starts_with("100") {
        format!("{pct:.2}")
    } else {
        one
    };
    format!("{s}%")
}

/// "p < 0.001" or "p = 0.031".
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// A ratio with the digits it deserves: "30.9x", "1.10x", "0.13x".
pub fn ratio_text(r: f64) -> String {
    if !r.is_finite() {
        "-".into()
    } else if r >= 10.0 {
        format!("{r:.1}x")
    } else if r >= 0.01 {
        format!("{r:.2}x")
    } else {
        format!("{r:.4}x")
    }
}

/// A relative change as a percentage: "5%", "2.5%".
pub fn percent_text(x: f64) -> String {
    let pct = x * 100.0;
    if !pct.is_finite() {
        "any size".into()
    } else if pct >= 10.0 || (pct - pct.round()).abs() < 0.05 {
        format!("{pct:.0}%")
    } else {
        format!("{pct:.1}%")
    }
}

/// A plain value to six significant digits, trailing zeros dropped: "6", "35.1586", "-0.002".
pub fn value_text(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    let digits = 5 - x.abs().log10().floor() as i32;
    let s = format!("{x:.*}", digits.clamp(0, 15) as usize);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The size of the change: "30.9x", "0.13x" or "+12.5".
pub fn size_text(d: &Decision, unit: &dyn Fn(f64) -> String) -> String {
    match (d.ratio, d.difference) {
        (Some(r), _) => ratio_text(r),
        (_, Some(x)) => signed_plus(x, unit),
        _ => "-".into(),
    }
}

/// Its interval: "95% CI 29.8-32.0x" or "95% CI -3.1 to +21.9".
pub fn ci_text(d: &Decision, unit: &dyn Fn(f64) -> String) -> String {
    interval(d.ci_level, d.ci_low, d.ci_high, d.scale, unit)
}

/// The interval the equivalence test uses (1 - 2 alpha: "90% CI 0.98-1.01x").
pub fn equivalence_ci_text(d: &Decision, unit: &dyn Fn(f64) -> String) -> String {
    interval(
        d.equivalence_ci_level,
        d.equivalence_ci_low,
        d.equivalence_ci_high,
        d.scale,
        unit,
    )
}

fn interval(conf: f64, lo: f64, hi: f64, scale: Scale, unit: &dyn Fn(f64) -> String) -> String {
    let lvl = interval_level(conf);
    match scale {
        Scale::Log => format!(
            "{lvl} CI {}-{}",
            ratio_text(lo).trim_end_matches('x'),
            ratio_text(hi)
        ),
        Scale::Linear => format!(
            "{lvl} CI {} to {}",
            signed_plus(lo, unit),
            signed_plus(hi, unit)
        ),
    }
}

fn signed_plus(x: f64, unit: &dyn Fn(f64) -> String) -> String {
    if x < 0.0 {
        format!("-{}", unit(-x))
    } else {
        format!("+{}", unit(x))
    }
}

/// The adjusted p-value when a correction applied, else the raw one, with its name.
fn p_of(d: &Decision, adjusted: bool, equivalence: bool) -> String {
    let (raw, adj) = if equivalence {
        (d.equivalence_p, d.equivalence_p_adjusted)
    } else {
        (d.p, d.p_adjusted)
    };
    if adjusted && (adj - raw).abs() > 1e-12 {
        format!("Holm-adjusted {}", p_text(adj))
    } else {
        p_text(if adjusted { adj } else { raw })
    }
}

/// "6 and 5 runs" / "5 rounds paired".
pub fn runs_text(d: &Decision) -> String {
    match d.design {
        Design::Paired { pairs, .. } => format!("{pairs} rounds paired"),
        Design::Independent { n_from, n_to, .. } if n_from == n_to => format!("{n_from} runs each"),
        Design::Independent { n_from, n_to, .. } => format!("{n_from} and {n_to} runs"),
        // No rounds (imported runs): the configurations' runs, unpaired.
        Design::Blocked {
            configurations,
            rounds: 0 | 1,
            ..
        } => format!(
            "{configurations} configurations' runs, unpaired, error pooled: {}",
            dof_text(d.df)
        ),
        Design::Blocked {
            configurations,
            rounds,
            ..
        } => format!(
            "{rounds} round{} of {configurations} configurations, error pooled: {}",
            plural(rounds),
            dof_text(d.df)
        ),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// "2 degrees of freedom", "7.4 degrees of freedom", "1 degree of freedom".
pub fn dof_text(df: f64) -> String {
    let dfs = if (df - df.round()).abs() < 0.05 {
        format!("{df:.0}")
    } else {
        format!("{df:.1}")
    };
    format!(
        "{dfs} degree{} of freedom",
        if dfs == "1" { "" } else { "s" }
    )
}

/// Why a test could not decide, in terms a user can act on: "3 rounds of 4 configurations give
/// the test 6 degrees of freedom".
pub fn degrees_text(d: &Decision) -> String {
    let dof = dof_text(d.df);
    match d.design {
        Design::Paired { pairs, .. } => {
            format!("{pairs} paired round{} give the test {dof}", plural(pairs))
        }
        Design::Independent { n_from, n_to, .. } => {
            format!("{n_from} and {n_to} runs give Welch's test {dof}")
        }
        Design::Blocked {
            configurations,
            rounds: 0 | 1,
            ..
        } => format!("{configurations} configurations' runs, unpaired, give the test {dof}"),
        Design::Blocked {
            configurations,
            rounds,
            ..
        } => format!(
            "{rounds} round{} of {configurations} configurations give the test {dof}",
            plural(rounds)
        ),
    }
}

/// The verdict on its own, without the pair's names: "30.9x goodput (95% CI 29.8-32.0x,
/// p < 0.001)". `what` names the metric; `unit` formats a difference on the linear scale;
/// `adjusted` says whether the family was corrected.
pub fn verdict(d: &Decision, what: &str, unit: &dyn Fn(f64) -> String, adjusted: bool) -> String {
    let change = percent_text(d.change);
    match d.outcome {
        Outcome::Different => format!(
            "{} {what} ({}, {})",
            size_text(d, unit),
            ci_text(d, unit),
            p_of(d, adjusted, false)
        ),
        Outcome::SmallDifference => format!(
            "{} {what} ({}, {}): real, but within the {change} that matters",
            size_text(d, unit),
            ci_text(d, unit),
            p_of(d, adjusted, false)
        ),
        Outcome::Equivalent => format!(
            "no difference in {what} larger than {change} (equivalence shown, {}; {}, {})",
            p_of(d, adjusted, true),
            size_text(d, unit),
            equivalence_ci_text(d, unit)
        ),
        Outcome::Undecided => {
            let bound = if d.not_ruled_out.is_finite() {
                format!(
                    "the data cannot rule out a change of up to {}",
                    percent_text(d.not_ruled_out)
                )
            } else {
                "the data cannot bound the change".into()
            };
            let more = settle_text(d);
            format!(
                "no difference in {what} shown ({}), but {bound}: {}{more}",
                p_of(d, adjusted, false),
                degrees_text(d)
            )
        }
        Outcome::TooFew => format!("too few runs to compare {what} ({})", runs_text(d)),
    }
}

/// What would settle an undecided comparison: "; about 4 more runs of each would settle it at
/// this noise" (unpaired runs), "; about 3 more rounds ..." (rounds paired or as blocks).
pub fn settle_text(d: &Decision) -> String {
    let unpaired = matches!(
        d.design,
        Design::Independent { .. } | Design::Blocked { rounds: 0 | 1, .. }
    );
    match d.rounds_needed {
        // A projection from this noise, not a promise (a trial's "4 more" became "8 more" when
        // the added rounds were noisier).
        Some(n) if unpaired => format!(
            "; about {n} more run{} of each would settle it at this noise",
            plural(n)
        ),
        Some(n) => format!(
            "; about {n} more round{} would settle it at this noise",
            plural(n)
        ),
        None => format!(
            "; a change this close to the {} threshold would take more runs than are practical",
            percent_text(d.change)
        ),
    }
}

/// The whole sentence for a pair: "64K→4M: 30.9x goodput (95% CI 29.8-32.0x, p < 0.001)".
pub fn sentence(d: &Decision, what: &str, unit: &dyn Fn(f64) -> String, adjusted: bool) -> String {
    format!("{}→{}: {}", d.from, d.to, verdict(d, what, unit, adjusted))
}
