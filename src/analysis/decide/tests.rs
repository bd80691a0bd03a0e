//! Reference values from scipy 1.17.1 (`ttest_rel`, `ttest_ind(equal_var=False)`) and
//! statsmodels 0.15.0 (`ttost_paired`, `ttost_ind(usevar="unequal")` with margins
//! -ln 1.05 and ln 1.05 on the logs).

use super::*;

fn logs(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.ln()).collect()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

const S: Settings = Settings {
    confidence: 0.95,
    change: 0.05,
    scale: Scale::Log,
};

fn paired_of(a: &[f64], b: &[f64]) -> Estimate {
    let d: Vec<f64> = logs(b).iter().zip(logs(a)).map(|(y, x)| y - x).collect();
    paired(&d).unwrap()
}

#[test]
fn paired_difference_matches_scipy_and_statsmodels() {
    let a = [100.0, 101.0, 99.0, 100.5, 100.2];
    let b = [108.0, 109.5, 106.9, 108.4, 108.0];
    let d = decide("a", "b", paired_of(&a, &b), mean(&logs(&a)), &S);
    assert!(close(d.p, 1.7765567006266917e-07, 1e-6), "{}", d.p);
    assert!(
        close(d.equivalence_p, 0.9999951206235209, 1e-9),
        "{}",
        d.equivalence_p
    );
    assert!(close(d.ratio.unwrap(), 0.07703448828554098f64.exp(), 1e-12));
    assert_eq!(d.outcome, Outcome::Different);
    assert!(d.ci_low > 1.07 && d.ci_high < 1.09, "{d:?}");
}

#[test]
fn paired_equivalence_matches_statsmodels() {
    let a = [100.0, 97.0, 104.0, 99.0, 102.0];
    let b = [101.0, 99.0, 103.0, 102.0, 100.0];
    let d = decide("a", "b", paired_of(&a, &b), mean(&logs(&a)), &S);
    assert!(close(d.p, 0.5416270165863369, 1e-6), "{}", d.p);
    assert!(
        close(d.equivalence_p, 0.004937743171084863, 1e-5),
        "{}",
        d.equivalence_p
    );
    assert_eq!(d.outcome, Outcome::Equivalent);
    assert!(d.equivalent);
}

#[test]
fn welch_and_its_tost_match_scipy_and_statsmodels() {
    let x = [100.0, 93.0, 108.0, 99.0, 104.0];
    let y = [103.0, 96.0, 110.0, 97.0, 107.0];
    let e = independent(&logs(&x), &logs(&y)).unwrap();
    assert!(close(e.df, 7.972066349312677, 1e-9), "{}", e.df);
    let d = decide("x", "y", e, mean(&logs(&x)), &S);
    assert!(close(d.p, 0.644705616989224, 1e-6), "{}", d.p);
    assert!(
        close(d.equivalence_p, 0.20904470039642137, 1e-5),
        "{}",
        d.equivalence_p
    );
    // Neither shown: undecided, with a bound and a number of runs that would settle it.
    assert_eq!(d.outcome, Outcome::Undecided);
    assert!(
        d.not_ruled_out > 0.05 && d.not_ruled_out < 0.2,
        "{}",
        d.not_ruled_out
    );
    let more = d.rounds_needed.expect("a practical number of runs");
    assert!((1..60).contains(&more), "{more}");
    // The linear scale: scipy's Welch interval of the difference.
    let lin = Settings {
        scale: Scale::Linear,
        ..S
    };
    let d = decide("x", "y", independent(&x, &y).unwrap(), mean(&x), &lin);
    assert!(close(d.p, 0.6410712707223057, 1e-6), "{}", d.p);
    assert!(close(d.ci_low, -6.776256766489869, 1e-6), "{}", d.ci_low);
    assert!(close(d.ci_high, 10.376256766489863, 1e-6), "{}", d.ci_high);
}

/// What `rounds_needed` plans with is the estimate's own error at today's runs: the per-run
/// variance over n, and Satterthwaite's degrees of freedom, for one context and several.
#[test]
fn the_independent_design_predicts_its_own_error() {
    let a = [100.0, 93.0, 108.0, 99.0];
    let b = [103.0, 96.0, 110.0, 97.0];
    let c = [50.0, 50.5, 49.0, 51.0];
    let d = [70.0, 71.0, 69.5, 70.5];
    for contexts in [
        vec![(&a[..], &b[..])],
        vec![(&a[..], &b[..]), (&c[..], &d[..])],
    ] {
        let e = combined(&contexts).unwrap();
        let Design::Independent {
            n_from,
            var_sum,
            df_per_run,
            ..
        } = e.design
        else {
            panic!("{e:?}")
        };
        assert_eq!(n_from, 4);
        assert!(close((var_sum / 4.0).sqrt(), e.se, 1e-12), "{e:?}");
        assert!(close(df_per_run * 3.0, e.df, 1e-12), "{e:?}");
    }
}

#[test]
fn a_null_measured_tightly_is_equivalent_and_noisily_is_not() {
    let a = [100.0, 100.2, 99.9, 100.1];
    let b = [100.1, 99.8, 100.0, 100.2];
    let e = independent(&logs(&a), &logs(&b)).unwrap();
    let d = decide("a", "b", e, mean(&logs(&a)), &S);
    assert!(
        close(d.equivalence_p, 1.0996582269814322e-08, 1e-4),
        "{}",
        d.equivalence_p
    );
    assert!(close(d.p, 0.8233773111108418, 1e-6), "{}", d.p);
    assert_eq!(d.outcome, Outcome::Equivalent);
    let noisy_a = [80.0, 120.0, 100.0];
    let noisy_b = [90.0, 125.0, 95.0];
    let e = independent(&logs(&noisy_a), &logs(&noisy_b)).unwrap();
    let d = decide("a", "b", e, mean(&logs(&noisy_a)), &S);
    assert_eq!(d.outcome, Outcome::Undecided, "{d:?}");
}

#[test]
fn an_eight_percent_difference_with_enough_rounds_is_found() {
    // 2% noise per run, 8 rounds, paired: 1.08x shown.
    let a: Vec<f64> = (0..8)
        .map(|i| 100.0 * (1.0 + 0.02 * ((i * 7 % 5) as f64 - 2.0) / 2.0))
        .collect();
    let b: Vec<f64> = a
        .iter()
        .enumerate()
        .map(|(i, x)| x * 1.08 * (1.0 + 0.01 * ((i % 3) as f64 - 1.0)))
        .collect();
    let d = decide("a", "b", paired_of(&a, &b), mean(&logs(&a)), &S);
    assert_eq!(d.outcome, Outcome::Different, "{d:?}");
    assert!(d.ci_low > 1.05 && d.ci_high < 1.11, "{d:?}");
}

#[test]
fn holm_corrects_the_family_and_judges_again() {
    let a = [100.0, 97.0, 104.0, 99.0, 102.0];
    let b = [101.0, 99.0, 103.0, 102.0, 100.0];
    let one = decide("a", "b", paired_of(&a, &b), mean(&logs(&a)), &S);
    let mut family = vec![one.clone(), one.clone(), one.clone()];
    adjust(&mut family, &S);
    // Three equal p-values: Holm multiplies the smallest by 3, then keeps the running max.
    assert!(close(
        family[0].equivalence_p_adjusted,
        3.0 * one.equivalence_p,
        1e-12
    ));
    assert!(close(family[0].p_adjusted, 1.0, 1e-12));
    assert_eq!(family[0].outcome, Outcome::Equivalent);
}

#[test]
fn a_small_real_difference_is_said_to_be_too_small_to_matter() {
    let a = [100.0, 100.1, 99.9, 100.0, 100.05];
    let b = [101.0, 101.1, 100.9, 101.0, 101.04];
    let d = decide("a", "b", paired_of(&a, &b), mean(&logs(&a)), &S);
    assert_eq!(d.outcome, Outcome::SmallDifference, "{d:?}");
    let text = words::sentence(&d, "goodput", &|x| format!("{x:.1}"), false);
    assert!(text.contains("within the 5% that matters"), "{text}");
}

#[test]
fn identical_runs_get_exact_answers_and_single_runs_none() {
    let e = paired(&[0.0, 0.0, 0.0]).unwrap();
    let d = decide("a", "b", e, 0.0, &S);
    assert_eq!(d.outcome, Outcome::Equivalent);
    assert!(paired(&[0.1]).is_none());
    assert!(independent(&[1.0], &[2.0, 3.0]).is_none());
}

#[test]
fn words_say_the_level_asked_and_the_rounds_needed() {
    assert_eq!(words::level(0.995), "99.5%");
    assert_eq!(words::level(0.95), "95%");
    assert_eq!(words::level(0.999), "99.9%");
    let x = [100.0, 93.0, 108.0, 99.0, 104.0];
    let y = [103.0, 96.0, 110.0, 97.0, 107.0];
    let d = decide(
        "x",
        "y",
        independent(&logs(&x), &logs(&y)).unwrap(),
        mean(&logs(&x)),
        &S,
    );
    let text = words::sentence(&d, "goodput", &|v| format!("{v:.1}"), false);
    assert!(
        text.starts_with("x→y: no difference in goodput shown (p = 0.645), but the data cannot rule out a change of up to"),
        "{text}"
    );
    assert!(text.contains("more runs of each would settle it"), "{text}");
    let s995 = Settings {
        confidence: 0.995,
        ..S
    };
    let d = decide(
        "a",
        "b",
        paired_of(&[100.0, 101.0, 99.0], &[200.0, 201.0, 199.5]),
        4.6,
        &s995,
    );
    let text = words::sentence(&d, "goodput", &|v| format!("{v:.1}"), false);
    assert!(text.contains("(99.5% CI "), "{text}");
}
