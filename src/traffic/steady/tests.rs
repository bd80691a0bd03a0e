//! The stopping rule against reference values (scipy 1.17.1: MSER's `d` as in `truncation`,
//! then `stats.t.ppf(0.975, m - 1) * std(ddof=1) / sqrt(m) / mean` over what it keeps) and the
//! shapes it must tell apart: slow start then steady, a rising trend, a stalled flow.

use super::*;

const HALF: Duration = Duration::from_millis(500);

/// The rule at γ = 2%: the tests' reference values are judged against it.
fn rule() -> Steady {
    Steady {
        precision: 0.02,
        ..Steady::default()
    }
}

#[test]
fn the_half_width_matches_scipy_over_what_mser_keeps() {
    let r = read(&rule(), HALF, &[100.0, 101.0, 99.0, 100.0, 100.5, 99.5]).unwrap();
    assert_eq!((r.intervals, r.used), (6, 6));
    assert!((r.mean_bps - 100.0).abs() < 1e-12);
    assert!((r.half_width - 0.0074206305738929446).abs() < 1e-9, "{r:?}");
    let r = read(
        &rule(),
        Duration::from_secs(1),
        &[940e6, 950e6, 945e6, 948e6],
    )
    .unwrap();
    assert!((r.half_width - 0.007317741178618332).abs() < 1e-9, "{r:?}");
    // A rising trend: MSER deletes the most it may (half), and the rest still rises.
    let trend: Vec<f64> = (1..=8).map(|k| f64::from(k) * 10.0).collect();
    assert_eq!(truncation(&trend), 4);
    let r = read(&rule(), HALF, &trend).unwrap();
    assert!((r.half_width - 0.3160400395016186).abs() < 1e-9, "{r:?}");
    assert!(!r.steady);
}

#[test]
fn mser_deletes_the_ramp_and_nothing_of_a_flat_series() {
    let ramp = [50e6, 400e6, 900e6, 940e6, 942e6, 941e6, 939e6, 940e6];
    assert_eq!(truncation(&ramp), 3);
    let r = read(&rule(), HALF, &ramp).unwrap();
    assert_eq!(r.used, 5);
    assert!((r.half_width - 0.0015054389376672394).abs() < 1e-9, "{r:?}");
    // Noise spread evenly is kept whole (scipy/numpy reference: d = 0).
    assert_eq!(truncation(&[5.0, 5.0, 5.1, 4.9, 5.05, 4.95, 5.0]), 0);
    // Never fewer than four intervals kept.
    assert_eq!(truncation(&[1.0, 2.0, 3.0, 4.0, 5.0]), 1);
}

#[test]
fn fewer_than_four_intervals_are_not_judged() {
    assert_eq!(read(&rule(), HALF, &[1.0, 1.0, 1.0]), None);
}

#[test]
fn steady_rates_end_at_the_floor_and_not_before() {
    // 4 intervals of 0.5 s = 2 s: the floor.
    let flat = [500e6, 501e6, 499e6, 500e6];
    assert!(read(&rule(), HALF, &flat).unwrap().steady);
    // The same rates over 0.25 s intervals are 1 s: under the floor.
    assert!(!read(&rule(), HALF / 2, &flat).unwrap().steady);
}

#[test]
fn slow_start_is_left_behind_once_the_later_half_is_flat() {
    let mut rates = vec![50e6, 400e6, 900e6];
    rates.extend([940e6, 942e6, 941e6, 939e6, 940e6]);
    // 8 intervals: the later 4 are flat.
    assert!(read(&rule(), HALF, &rates).unwrap().steady);
    // 5 intervals: what may be kept reaches back into the ramp (scipy: ±52.9%).
    let r = read(&rule(), HALF, &rates[..5]).unwrap();
    assert!((r.half_width - 0.5288248911587763).abs() < 1e-9, "{r:?}");
    assert!(!r.steady);
}

#[test]
fn a_stalled_flow_is_steady_at_zero_and_a_restarting_one_is_not() {
    assert!(read(&rule(), HALF, &[0.0; 5]).unwrap().steady);
    let r = read(&rule(), HALF, &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1e6]).unwrap();
    assert!(!r.steady);
}

#[test]
fn the_precision_is_relative_error_over_one_plus_it() {
    // Half-width 1.20% (scipy 0.0119654...): steady at gamma 2% (target 1.96%), not at
    // gamma 1% (0.99%).
    let rates = [100.0, 101.5, 98.5, 100.0, 101.0, 99.0];
    let r = read(&rule(), HALF, &rates).unwrap();
    assert!((r.half_width - 0.0119654072683259).abs() < 1e-9, "{r:?}");
    assert!(read(&rule(), HALF, &rates).unwrap().steady);
    let tight = Steady {
        precision: 0.01,
        ..rule()
    };
    assert!(!read(&tight, HALF, &rates).unwrap().steady);
}

#[test]
fn durations_read_auto_with_a_ceiling_and_a_precision_in_any_order() {
    let d = Steady::default();
    assert_eq!(d.precision, 0.05);
    assert_eq!(parse_duration("auto").unwrap(), (DEFAULT_CEILING, Some(d)));
    let sixty = Duration::from_secs(60);
    assert_eq!(parse_duration("auto:60s").unwrap(), (sixty, Some(d)));
    assert_eq!(
        parse_duration("AUTO:2%").unwrap(),
        (DEFAULT_CEILING, Some(rule()))
    );
    assert_eq!(
        parse_duration("auto:60s:2%").unwrap(),
        (sixty, Some(rule()))
    );
    assert_eq!(
        parse_duration("auto:2%:60s").unwrap(),
        (sixty, Some(rule()))
    );
    assert_eq!(
        parse_duration("10").unwrap(),
        (Duration::from_secs(10), None)
    );
    assert!(
        parse_duration("automatic")
            .unwrap_err()
            .contains("auto:60s")
    );
    assert!(parse_duration("10s:2%").unwrap_err().contains("auto:60s"));
    assert!(parse_duration("auto:1s").unwrap_err().contains("ceiling"));
    assert!(parse_duration("auto:0%").unwrap_err().contains("above 0"));
    assert!(parse_duration("auto:fast").is_err());
}

#[test]
fn the_sentence_says_how_the_test_ended() {
    let steady = Ending {
        rule: rule(),
        measured_s: 3.5,
        transient_s: 0.0,
        ceiling_s: 30.0,
        reading: read(
            &rule(),
            HALF,
            &[100.0, 101.0, 99.0, 100.0, 100.5, 99.5, 100.0],
        ),
    };
    assert!(
        steady
            .sentence()
            .starts_with("ended after 3.50 s of its 30 s ceiling")
    );
    let ramp = Ending {
        measured_s: 3.0,
        transient_s: 0.5,
        ..steady.clone()
    };
    assert!(ramp.sentence().starts_with("ended after 3.50 s"));
    assert!(
        ramp.sentence()
            .ends_with("its first 0.50 s were the initial transient (MSER), left out like -O"),
        "{}",
        ramp.sentence()
    );
    let never = Ending {
        reading: read(&rule(), HALF, &[10.0, 20.0, 30.0, 40.0]),
        ..steady
    };
    assert!(
        never.sentence().starts_with("ran to its 30 s ceiling"),
        "{}",
        never.sentence()
    );
}

#[test]
fn a_spec_with_a_rule_that_cannot_end_is_refused() {
    let mut spec = crate::traffic::spec::TestSpec::tcp(Duration::from_secs(1));
    spec.steady = Some(rule());
    assert!(spec.validate().unwrap_err().to_string().contains("floor"));
    spec.duration = Duration::from_secs(10);
    assert!(spec.validate().is_ok());
    spec.steady = Some(Steady {
        precision: f64::NAN,
        ..rule()
    });
    assert!(spec.validate().is_err());
}
