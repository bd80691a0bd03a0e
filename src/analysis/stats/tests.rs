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
fn runs_needed_with_unequal_variances_follows_welch() {
    // One set without noise leaves the other's: a one-sample t test's size, G*Power's
    // "difference from constant" at d = 1, 5% two-sided, 80%: 10.
    assert_eq!(runs_needed_welch((0.0, 1.0), 1.0, 0.95, 0.8), Some(10));
    assert_eq!(runs_needed_welch((1.0, 0.0), 1.0, 0.95, 0.8), Some(10));
    // Equal variances: Student's, as `runs_needed`.
    assert_eq!(runs_needed_welch((1.0, 1.0), 1.0, 0.95, 0.8), Some(17));
    // A trial's sets of SDs 1.15 and 200: Student's degrees of freedom (2n - 2) said one run
    // fewer than Welch's test needs (n - 1 here; the simulation below checks 5).
    let (a, b) = (1.15f64.powi(2), 200f64.powi(2));
    assert_eq!(
        runs_needed(((a + b) / 2.0).sqrt(), 350.0, 0.95, 0.8),
        Some(4)
    );
    assert_eq!(runs_needed_welch((a, b), 350.0, 0.95, 0.8), Some(5));
    // Few degrees of freedom: the answer falls as the difference grows, never below 3.
    let sizes: Vec<usize> = [200.0, 250.0, 300.0, 350.0, 400.0, 450.0, 500.0, 2000.0]
        .iter()
        .map(|d| runs_needed_welch((a, b), *d, 0.95, 0.8).unwrap())
        .collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
    assert_eq!(sizes.last(), Some(&3));
    assert_eq!(runs_needed_welch((f64::NAN, 1.0), 1.0, 0.95, 0.8), None);
    assert_eq!(runs_needed_welch((-1.0, 1.0), 1.0, 0.95, 0.8), None);
}

/// The runs Welch's test is said to need give it the power asked: seeded simulations of
/// normal sets with the variances and difference given, through the crate's own Welch test.
#[test]
fn runs_needed_welch_gives_the_power_asked_in_simulation() {
    use rand::{Rng, SeedableRng, rngs::StdRng};
    let mut rng = StdRng::seed_from_u64(40);
    let mut normal = move || {
        let u1: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
        let u2: f64 = rng.r#gen();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    for (sd_a, sd_b, delta) in [
        (1.0, 1.0, 1.0),
        (1.0, 5.0, 3.0),
        (0.1, 3.0, 2.0),
        (2.0, 0.5, 1.5),
        (1.15, 200.0, 350.0),
    ] {
        let n = runs_needed_welch((sd_a * sd_a, sd_b * sd_b), delta, 0.95, 0.8).unwrap();
        let power_at = |n: usize, normal: &mut dyn FnMut() -> f64| {
            let trials = 4000;
            let hits = (0..trials)
                .filter(|_| {
                    let a: Vec<f64> = (0..n).map(|_| sd_a * normal()).collect();
                    let b: Vec<f64> = (0..n).map(|_| delta + sd_b * normal()).collect();
                    ttest::welch(&a, &b, 0.95).significant
                })
                .count();
            hits as f64 / trials as f64
        };
        let at_n = power_at(n, &mut normal);
        let below = power_at(n - 1, &mut normal);
        // 4000 draws: a standard error of 0.6 points at 80%.
        assert!(
            (0.78..0.90).contains(&at_n),
            "{sd_a} {sd_b} {delta}: n {n}, power {at_n}"
        );
        assert!(
            below < 0.82,
            "{sd_a} {sd_b} {delta}: n - 1 = {} has {below}",
            n - 1
        );
    }
}
