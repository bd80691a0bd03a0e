//! Verdicts of `analyze` in plain words, and its bounds on time and bad input.

use super::*;
use crate::analysis::stats::runs_needed;

const A: [f64; 6] = [10.0, 11.0, 12.0, 11.5, 10.5, 11.2];
const B: [f64; 5] = [12.0, 13.5, 12.8, 14.1, 13.0];

#[test]
fn verdict_says_faster_with_interval_and_p() {
    let cfg = Config {
        more: "faster".into(),
        less: "slower".into(),
        ..Config::default()
    };
    let a = analyze(
        &[("e1000".into(), A.to_vec()), ("vtnet".into(), B.to_vec())],
        &cfg,
    )
    .unwrap();
    let v = &a.comparisons[0].verdict;
    assert!(v.starts_with("vtnet is faster than e1000 by 1"), "{v}");
    assert!(
        v.contains("95% CI") && v.contains("Welch p = 0.002") && v.contains("6 and 5 runs"),
        "{v}"
    );
}

/// Regression (a trial's finding): the verdict's percent interval was Welch's difference over
/// the baseline's mean (339.6% to 343.7%) beside the block's Fieller interval (334.5% to
/// 348.9%) for the same pair. It is Fieller's, at the verdict's level.
#[test]
fn the_verdicts_percent_interval_is_the_blocks_fieller_interval() {
    let a = analyze(
        &[("a".into(), A.to_vec()), ("b".into(), B.to_vec())],
        &Config::default(),
    )
    .unwrap();
    let c = &a.comparisons[0];
    let (lo, hi) = (c.percent_ci_low.unwrap(), c.percent_ci_high.unwrap());
    let want = format!("(95% CI {lo:.1}% to {hi:.1}%, Fieller)");
    assert!(c.verdict.contains(&want), "{} against {want}", c.verdict);
}

#[test]
fn no_difference_says_how_many_runs_would_settle_it() {
    let a = [100.0, 108.0, 92.0, 101.0];
    let b = [101.0, 94.0, 106.0, 97.0];
    let r = analyze(
        &[("a".into(), a.to_vec()), ("b".into(), b.to_vec())],
        &Config::default(),
    )
    .unwrap();
    let c = &r.comparisons[0];
    assert!(!c.significant);
    assert!(
        c.verdict.starts_with("no difference shown"),
        "{}",
        c.verdict
    );
    assert!(
        c.verdict.contains("cannot rule out a change of up to")
            && c.verdict.contains("more runs of each would settle it"),
        "{}",
        c.verdict
    );
}

/// Regression: with 3 runs each the pooled power calculation said "a 5% change would likely
/// have shown" next to a Welch CI of -5.6% to 3.4%, which does not exclude 5%.
#[test]
fn no_difference_claims_a_change_is_ruled_out_only_when_the_ci_excludes_it() {
    let verdict = |a: &[f64], b: &[f64]| {
        let r = analyze(
            &[("a".into(), a.to_vec()), ("b".into(), b.to_vec())],
            &Config::default(),
        )
        .unwrap();
        let c = r.comparisons[0].clone();
        assert!(!c.significant, "{}", c.verdict);
        c
    };
    // The quickstart's 256K runs (Mbit/s): few runs, Welch df near 2.
    // Its 95% CI reaches -5.7%, but the 90% interval the equivalence test uses lies inside
    // ±5%: equivalence is shown, and the verdict says which interval it rests on.
    let c = verdict(&[118.1, 121.5, 122.8], &[118.5, 119.5, 119.7]);
    assert!(c.percent_ci_low.is_some_and(|lo| lo < -5.0), "{c:?}");
    assert!(
        c.verdict
            .starts_with("no difference larger than 5% between b and a (equivalence shown")
            && c.verdict.contains("the 90% CI"),
        "{}",
        c.verdict
    );
    // Noisier: neither a difference nor an equivalence.
    let c = verdict(&[110.1, 121.5, 130.8], &[108.5, 119.5, 131.7]);
    assert!(c.verdict.contains("cannot rule out"), "{}", c.verdict);
    // Many quiet runs: the interval is far inside +/-5%.
    let a: Vec<f64> = (0..12).map(|i| 100.0 + f64::from(i % 4) * 0.2).collect();
    let b: Vec<f64> = (0..12).map(|i| 100.1 + f64::from(i % 3) * 0.2).collect();
    let c = verdict(&a, &b);
    assert!(
        c.verdict.contains("no difference larger than 5%"),
        "{}",
        c.verdict
    );
}

#[test]
fn identical_sets_and_bad_input() {
    let s = vec![1.0, 2.0, 3.0];
    let r = analyze(
        &[("a".into(), s.clone()), ("b".into(), s.clone())],
        &Config::default(),
    )
    .unwrap();
    assert!(!r.comparisons[0].significant);
    assert_eq!(r.comparisons[0].difference, 0.0);
    let err = analyze(&[("a".into(), vec![1.0, 2.0])], &Config::default()).unwrap_err();
    assert!(err.to_string().contains("at least 3"));
    let err = analyze(
        &[("a".into(), vec![1.0, f64::NAN, 2.0])],
        &Config::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("not finite"));
}

#[test]
fn a_hundred_thousand_values_are_fast() {
    let a: Vec<f64> = (0..100_000u64)
        .map(|i| 1000.0 + ((i * 7919) % 1000) as f64 / 10.0)
        .collect();
    let b: Vec<f64> = (0..100_000u64)
        .map(|i| 1001.0 + ((i * 104_729) % 1000) as f64 / 10.0)
        .collect();
    let t0 = std::time::Instant::now();
    let r = analyze(&[("a".into(), a), ("b".into(), b)], &Config::default()).unwrap();
    let took = t0.elapsed();
    assert!(r.comparisons[0].significant);
    // The bound is for optimised builds; a debug build on a shared machine gets ten times it.
    let limit = std::time::Duration::from_millis(if cfg!(debug_assertions) { 9000 } else { 900 });
    assert!(took < limit, "{took:?}");
}

/// Regression: `netsweep stats` never returned for these sets. The runs-needed estimate asked
/// statrs for a t quantile at about 10^8 degrees of freedom, where its inverse loops for ever.
#[test]
fn runs_needed_at_huge_df_returns_at_once() {
    for (a, b) in [
        (vec![0.0, 1.0, 0.0], vec![50.0, 2.0, 1.0]),
        (vec![1.0, 2.0, 3.0], vec![1000.0, 5.0, 6.0]),
    ] {
        let t0 = std::time::Instant::now();
        let sets = vec![("a".to_string(), a), ("b".to_string(), b)];
        let analysis = analyze(&sets, &Config::default()).expect("analysis");
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(analysis.comparisons.len(), 1);
    }
    let t0 = std::time::Instant::now();
    assert_eq!(runs_needed(1e300, 1e-300, 0.95, 0.8), None);
    assert!(runs_needed(1.0, 1e-3, 0.95, 0.8).is_some_and(|n| n > 10_000_000));
    assert_eq!(runs_needed(1.0, 1.0, f64::NAN, 0.8), None);
    assert_eq!(runs_needed(1.0, 1.0, 0.95, 1.0), None);
    assert!(t0.elapsed() < std::time::Duration::from_secs(1));
}

/// Regression: "Mann-Whitney p = 0.100 disagrees, look at the outliers" with 3 runs against 3,
/// where 0.1 is the smallest p the exact test can give: not a disagreement.
#[test]
fn a_mann_whitney_test_that_cannot_reach_significance_is_not_said_to_disagree() {
    let sets = vec![
        ("a".to_string(), vec![100.0, 100.2, 100.1]),
        ("b".to_string(), vec![110.0, 110.3, 110.1]),
    ];
    let a = analyze(&sets, &Config::default()).unwrap();
    let v = &a.comparisons[0].verdict;
    assert!(a.comparisons[0].significant, "{v}");
    assert!(!v.contains("disagrees"), "{v}");
    assert!(
        v.contains("Mann-Whitney cannot reach p < 0.05 with 3 runs each (its smallest p is 0.100; 4 runs each could)"),
        "{v}"
    );
    // With enough runs a real disagreement is still reported as one.
    let b = analyze(
        &[
            (
                "a".to_string(),
                vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            ),
            (
                "b".to_string(),
                vec![1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 80.0],
            ),
        ],
        &Config::default(),
    )
    .unwrap();
    let w = &b.comparisons[0];
    assert_eq!(
        w.verdict.contains("disagrees"),
        (w.mann_whitney.p < 0.05) != w.significant,
        "{}",
        w.verdict
    );
}

/// Regression (a trial's finding): a baseline whose mean is 0 or below has no percent (0 -> 6
/// read "lower by NaN%", -2.5 -> -11.5 "higher by 360%"): the difference itself, its
/// direction its own sign.
#[test]
fn a_baseline_not_above_zero_gets_the_difference_not_a_percent() {
    let verdict = |a: &[f64], b: &[f64]| {
        let r = analyze(
            &[("before".into(), a.to_vec()), ("after".into(), b.to_vec())],
            &Config::default(),
        )
        .unwrap();
        r.comparisons[0].verdict.clone()
    };
    let v = verdict(&[0.0, 0.0, 0.0], &[5.0, 6.0, 7.0]);
    assert!(
        v.starts_with("after is higher than before by 6 (95% CI "),
        "{v}"
    );
    assert!(
        v.contains("no percent: before's mean, 0, is not clearly above 0"),
        "{v}"
    );
    assert!(!v.contains("NaN") && !v.contains("by 6%"), "{v}");
    let v = verdict(&[-1.0, -2.0, -3.0, -4.0], &[-10.0, -12.0, -11.0, -13.0]);
    assert!(
        v.starts_with("after is lower than before by 9 (95% CI -11.2"),
        "{v}"
    );
    // A positive baseline keeps its percent.
    let v = verdict(&[100.0, 101.0, 99.0], &[90.0, 91.0, 89.0]);
    assert!(
        v.starts_with("after is lower than before by 10.0% (95% CI"),
        "{v}"
    );
}

#[test]
fn plain_values_print_to_six_significant_digits() {
    use crate::analysis::decide::words::value_text;
    assert_eq!(value_text(6.0), "6");
    assert_eq!(value_text(35.158_634), "35.1586");
    assert_eq!(value_text(-11.233_71), "-11.2337");
    assert_eq!(value_text(1_234_567.0), "1234567");
    assert_eq!(value_text(0.000_123_456_7), "0.000123457");
    assert_eq!(value_text(0.0), "0");
}

/// Regression (a trial's finding): at 99.5% the note read "cannot reach p < 0.01 ... its
/// smallest p is 0.008", the level's 0.005 rounded.
#[test]
fn the_mann_whitney_floor_names_the_levels_own_threshold() {
    let a = [9400.0, 9420.0, 9390.0, 9410.0, 9405.0];
    let b: Vec<f64> = a.iter().map(|x| x + 100.0).collect();
    let r = analyze(
        &[("a".into(), a.to_vec()), ("b".into(), b)],
        &Config {
            confidence: 0.995,
            ..Config::default()
        },
    )
    .unwrap();
    let v = &r.comparisons[0].verdict;
    assert!(
        v.contains("Mann-Whitney cannot reach p < 0.005 with 5 runs each (its smallest p is 0.008"),
        "{v}"
    );
}

/// Regression (a trial's finding): rounded figures (9.41 x5 against 9.42 x5) gave "p < 1e-16,
/// 95% CI 0.1% to 0.1%" without a word; the verdict now says the sets have no spread.
#[test]
fn sets_without_spread_are_named_as_probably_rounded() {
    let r = analyze(
        &[("g1".into(), vec![9.41; 5]), ("g2".into(), vec![9.42; 5])],
        &Config::default(),
    )
    .unwrap();
    let v = &r.comparisons[0].verdict;
    assert!(
        v.contains("g1 and g2 have no spread at all (rounded figures?)"),
        "{v}"
    );
    let r = analyze(
        &[("a".into(), A.to_vec()), ("b".into(), B.to_vec())],
        &Config::default(),
    )
    .unwrap();
    assert!(!r.comparisons[0].verdict.contains("no spread"));
}
