//! Checks against independent references. Provenance: scipy 1.17.1 in a throwaway venv
//! (scipy.stats.mannwhitneyu, ttest_ind, numpy median of pairwise differences); the
//! Hodges-Lehmann intervals from a brute-force Python enumeration of the exact U distribution
//! (small sets) and the normal-approximation C_alpha (large sets), per Hollander and Wolfe.

use super::*;

const A: [f64; 6] = [10.0, 11.0, 12.0, 11.5, 10.5, 11.2];
const B: [f64; 5] = [12.0, 13.5, 12.8, 14.1, 13.0];

const L1: [f64; 40] = [
    101.727921, 104.108091, 101.652185, 93.484214, 104.526779, 102.231873, 97.315234, 102.905591,
    101.822862, 101.470662, 100.142111, 102.733565, 96.31773, 99.18545, 97.589403, 102.994231,
    100.198611, 98.537716, 96.090458, 98.714039, 100.040711, 98.621985, 106.470319, 105.033622,
    86.444188, 90.554934, 99.12614, 97.889048, 101.068215, 101.08661, 110.589194, 94.439896,
    98.111975, 110.213858, 103.233515, 103.315317, 97.429968, 91.759624, 100.837324, 100.54507,
];
const L2: [f64; 45] = [
    96.86324, 99.583867, 102.639782, 98.276242, 102.50865, 103.477415, 103.177931, 100.468542,
    105.96874, 107.455835, 104.604242, 98.908849, 106.658261, 100.4928, 107.395803, 97.641063,
    107.572336, 102.899683, 96.756256, 101.430503, 103.270511, 104.363957, 98.089059, 97.463135,
    103.997923, 100.666252, 104.177528, 106.797598, 94.756063, 104.271941, 109.123235, 101.512366,
    98.945927, 106.761219, 104.267233, 107.479415, 101.273921, 95.590909, 102.449946, 100.770859,
    106.876619, 103.968164, 94.845754, 97.024185, 107.418945,
];

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

#[test]
fn mann_whitney_exact_matches_scipy_in_both_orders() {
    let x = [1.1, 2.2, 3.3, 4.4, 5.5, 6.6, 7.7];
    let y = [3.9, 8.1, 9.2];
    let r = rank::mann_whitney(&x, &y);
    assert_eq!(r.method, rank::Method::Exact);
    assert_eq!(r.u, 17.0);
    assert!(close(r.p, 0.18333333333333335, 1e-12), "{r:?}");
    let r = rank::mann_whitney(&y, &x);
    assert_eq!(r.u, 4.0);
    assert!(close(r.p, 0.18333333333333335, 1e-12), "{r:?}");
}

#[test]
fn mann_whitney_with_ties_matches_scipy_asymptotic() {
    let t1 = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0];
    let t2 = [3.0, 4.0, 4.0, 5.0, 6.0, 6.0, 7.0];
    let r = rank::mann_whitney(&t1, &t2);
    assert_eq!(r.method, rank::Method::NormalApproximation);
    assert_eq!(r.u, 49.0);
    assert!(close(r.p, 0.015984685125196244, 1e-9), "{r:?}");
}

#[test]
fn forty_by_forty_five_uses_the_exact_distribution() {
    // scipy: mannwhitneyu(L2, L1, method="exact"); C_alpha from scipy's exact _MWU cdf.
    let r = rank::mann_whitney(&L1, &L2);
    assert_eq!(r.method, rank::Method::Exact);
    assert_eq!(r.u, 1157.0);
    assert!(close(r.p, 0.023383612954421314, 1e-9), "{r:?}");
    let w = ttest::welch(&L1, &L2, 0.95);
    assert!(
        close(w.t, 2.3577807351180438, 1e-9) && close(w.p, 0.020954959881568657, 1e-8),
        "{w:?}"
    );
    assert!(close(w.df, 76.10172043245416, 1e-9));
    let hl = rank::hodges_lehmann(&L1, &L2, 0.95);
    assert!(close(hl.estimate, 2.287590999999992, 1e-12), "{hl:?}");
    assert!(
        close(hl.ci_low.unwrap(), 0.3258289999999988, 1e-12),
        "{hl:?}"
    );
    assert!(
        close(hl.ci_high.unwrap(), 4.085060999999996, 1e-12),
        "{hl:?}"
    );
}

#[test]
fn large_sets_with_ties_use_the_normal_approximation() {
    // The same formulas in Python give identical doubles; references from scipy
    // (mannwhitneyu asymptotic, ttest_ind Welch) and numpy's median of differences.
    let x: Vec<f64> = (0..120)
        .map(|i| 100.0 + ((i * 7919) % 1000) as f64 / 100.0)
        .collect();
    let y: Vec<f64> = (0..100)
        .map(|j| 102.0 + ((j * 104_729) % 997) as f64 / 100.0)
        .collect();
    let r = rank::mann_whitney(&x, &y);
    assert_eq!(r.method, rank::Method::NormalApproximation);
    assert_eq!(r.u, 7767.0);
    assert!(close(r.p, 0.00017150231006848445, 1e-9), "{r:?}");
    let w = ttest::welch(&x, &y, 0.95);
    assert!(
        close(w.t, 4.219544365233068, 1e-9) && close(w.df, 210.08060108351197, 1e-9),
        "{w:?}"
    );
    assert!(close(w.p, 3.6411890254670703e-05, 1e-6), "{w:?}");
    let hl = rank::hodges_lehmann(&x, &y, 0.95);
    assert!(close(hl.estimate, 1.6500000000000057, 1e-12), "{hl:?}");
    assert!(
        close(hl.ci_low.unwrap(), 0.8200000000000074, 1e-12),
        "{hl:?}"
    );
    assert!(
        close(hl.ci_high.unwrap(), 2.4399999999999977, 1e-12),
        "{hl:?}"
    );
}

#[test]
fn hodges_lehmann_small_exact_interval() {
    let hl = rank::hodges_lehmann(&A, &B, 0.95);
    assert_eq!(hl.estimate, 2.0);
    assert!(close(hl.ci_low.unwrap(), 0.8, 1e-12), "{hl:?}");
    assert!(close(hl.ci_high.unwrap(), 3.1, 1e-12), "{hl:?}");
}

#[test]
fn holm_adjusts_step_down() {
    // Hand-computed: sorted p 0.01, 0.02, 0.04 -> 0.03, 0.04, 0.04 (monotone).
    let adj = holm(&[0.04, 0.01, 0.02]);
    assert!(
        close(adj[1], 0.03, 1e-12) && close(adj[2], 0.04, 1e-12) && close(adj[0], 0.04, 1e-12),
        "{adj:?}"
    );
}

#[test]
fn runs_needed_matches_the_textbook_case() {
    // Detecting one standard deviation at 5% / 80%: about 17 per group with t quantiles
    // (16 with the normal approximation), e.g. G*Power gives 17.
    assert_eq!(runs_needed(1.0, 1.0, 0.95, 0.8), Some(17));
    assert_eq!(runs_needed(0.0, 1.0, 0.95, 0.8), Some(3));
    assert_eq!(runs_needed(1.0, 0.0, 0.95, 0.8), None);
}

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
    let a: Vec<f64> = (0..100_000)
        .map(|i| 1000.0 + ((i * 7919) % 1000) as f64 / 10.0)
        .collect();
    let b: Vec<f64> = (0..100_000)
        .map(|i| 1001.0 + ((i * 104_729) % 1000) as f64 / 10.0)
        .collect();
    let t0 = std::time::Instant::now();
    let r = analyze(&[("a".into(), a), ("b".into(), b)], &Config::default()).unwrap();
    let took = t0.elapsed();
    assert!(r.comparisons[0].significant);
    assert!(took < std::time::Duration::from_millis(900), "{took:?}");
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
