use super::anova::f_sf;
use super::*;

/// Deterministic noise in [-1, 1].
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

fn order(dims: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    dims.iter()
        .map(|(d, v)| (d.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect()
}

/// A full matrix of `dims`, `rounds` runs each, values from `f(config, round)` with `noise`
/// relative noise.
fn campaign(
    dims: &[(&str, &[&str])],
    rounds: u32,
    noise: f64,
    f: impl Fn(&[(String, String)], u32) -> f64,
) -> Vec<Observation> {
    let mut configs: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (d, values) in dims {
        configs = configs
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((d.to_string(), v.to_string()));
                    c
                })
            })
            .collect();
    }
    let mut rng = Noise(42);
    let mut out = Vec::new();
    for round in 1..=rounds {
        for c in &configs {
            out.push(Observation {
                dims: c.clone(),
                round,
                value: f(c, round) * (1.0 + noise * rng.next()),
            });
        }
    }
    out
}

fn get<'a>(c: &'a [(String, String)], d: &str) -> &'a str {
    &c.iter().find(|(k, _)| k == d).unwrap().1
}

const WINDOWS: &[&str] = &["64K", "128K", "512K", "1M", "1536K"];
const PROFILES: &[&str] = &["a", "b", "c"];

fn window_bytes(w: &str) -> f64 {
    match w {
        "64K" => 64e3,
        "128K" => 128e3,
        "512K" => 512e3,
        "1M" => 1e6,
        _ => 1.536e6,
    }
}

#[test]
fn a_dominant_dimension_is_named_first_and_a_null_one_is_bounded() {
    let dims = [("window", WINDOWS), ("profile", PROFILES)];
    // Window-limited: goodput = window / 20 ms; the profile does nothing.
    let obs = campaign(&dims, 5, 0.02, |c, _| {
        window_bytes(get(c, "window")) * 8.0 / 0.02
    });
    let e = analyze(&obs, &order(&dims), &Options::new(Scale::Log, "goodput"));
    assert_eq!(e.effects[0].dimension, "window");
    assert!(e.effects[0].share > 0.99, "{}", e.effects[0].share);
    assert!(e.effects[0].p.unwrap() < 1e-6);
    assert!(
        e.effects[0]
            .comparisons
            .iter()
            .all(|s| s.outcome == crate::analysis::decide::Outcome::Different)
    );
    let profile = e.effects.iter().find(|x| x.dimension == "profile").unwrap();
    assert!(profile.p.unwrap() > 0.05, "{profile:?}");
    let first = e.answer.lines().next().unwrap();
    assert!(
        first.starts_with("window matters most: 64K→1536K raises goodput 24."),
        "{first}"
    );
    assert!(
        first.contains("steps: 64K→128K 2.00x, 128K→512K 4.00x, 512K→1M 1.95x, 1M→1536K 1.54x"),
        "{first}"
    );
    // 2% noise, 5 rounds: the null profile is shown to make no difference beyond 5%.
    assert!(
        e.answer
            .contains("profile makes no difference larger than 5% to goodput (equivalence shown for every pair"),
        "{}",
        e.answer
    );
    assert!(
        e.answer.contains("Holm-adjusted as one family"),
        "{}",
        e.answer
    );
    assert!(
        e.answer.contains("no drift over the rounds"),
        "{}",
        e.answer
    );
    assert!(e.interactions.is_empty(), "{:?}", e.interactions);
    // The geometric means come back on the metric's scale, with CIs around them.
    let w64 = &e.effects[0].means[0];
    assert!(
        (w64.mean / (64e3 * 8.0 / 0.02) - 1.0).abs() < 0.01,
        "{w64:?}"
    );
    assert!(w64.ci_low < w64.mean && w64.mean < w64.ci_high);
}

#[test]
fn an_interaction_is_found_and_said_where_it_is() {
    let dims = [
        ("congestion", &["cubic", "bbr"][..]),
        ("window", &["64K", "4M"][..]),
    ];
    // bbr is 35% faster only at window=4M.
    let obs = campaign(&dims, 4, 0.02, |c, _| {
        let base = if get(c, "window") == "4M" {
            800e6
        } else {
            100e6
        };
        if get(c, "congestion") == "bbr" && get(c, "window") == "4M" {
            base * 1.35
        } else {
            base
        }
    });
    let e = analyze(&obs, &order(&dims), &Options::new(Scale::Log, "goodput"));
    assert_eq!(e.interactions.len(), 1, "{:?}", e.interactions);
    let i = &e.interactions[0];
    assert_eq!((i.a.as_str(), i.b.as_str()), ("congestion", "window"));
    assert!(
        i.text.contains("bbr/cubic 1.3") && i.text.contains("at window=4M"),
        "{}",
        i.text
    );
    assert!(e.answer.contains("depends on window"), "{}", e.answer);
    // The same at 64K (noise may put either ahead there): no highest value flips.
    assert!(i.crossing.is_empty(), "{i:?}");
}

/// A trial's NIC campaign: reverse 19% slower on virtio and 49% faster on rtl8139 averaged to
/// "reverse raises goodput 1.10x", true of neither NIC. The average is said to be one.
#[test]
fn a_main_effect_that_goes_opposite_ways_is_called_an_average() {
    let dims = [
        ("nic", &["virtio", "rtl8139"][..]),
        ("direction", &["forward", "reverse"][..]),
    ];
    let obs = campaign(&dims, 4, 0.02, |c, _| {
        match (get(c, "nic"), get(c, "direction")) {
            ("virtio", "forward") => 910e6,
            ("virtio", _) => 735e6,
            (_, "forward") => 482e6,
            _ => 720e6,
        }
    });
    let e = analyze(&obs, &order(&dims), &Options::new(Scale::Log, "goodput"));
    assert_eq!(e.interactions.len(), 1, "{:?}", e.interactions);
    // The NIC's best is virtio either way; the direction's best flips.
    assert_eq!(e.interactions[0].crossing, ["direction"]);
    let line = e
        .answer
        .lines()
        .find(|l| l.starts_with("direction"))
        .expect("direction's line");
    assert!(
        line.ends_with("an average over nic: which direction is highest depends on nic (below)"),
        "{}",
        e.answer
    );
    let nic = e
        .answer
        .lines()
        .find(|l| l.starts_with("nic"))
        .expect("nic's line");
    assert!(!nic.contains("an average over"), "{}", e.answer);
}

#[test]
fn drift_over_the_rounds_is_reported() {
    let dims = [("streams", &["1", "2"][..])];
    let obs = campaign(&dims, 6, 0.01, |c, round| {
        let base = if get(c, "streams") == "2" { 2e9 } else { 1e9 };
        base * (1.0 + 0.05 * f64::from(round))
    });
    let e = analyze(&obs, &order(&dims), &Options::new(Scale::Log, "goodput"));
    let d = e.drift.as_ref().unwrap();
    assert!(d.p.unwrap() < 0.01, "{d:?}");
    assert!(e.answer.contains("drift over the rounds"), "{}", e.answer);
}

#[test]
fn without_repeated_runs_nothing_is_called_significant() {
    let dims = [("window", WINDOWS)];
    let obs = campaign(&dims, 1, 0.0, |c, _| window_bytes(get(c, "window")));
    let e = analyze(&obs, &order(&dims), &Options::new(Scale::Log, "goodput"));
    assert!(e.effects.iter().all(|x| x.p.is_none()));
    assert!(
        e.answer.contains("no test: no repeated runs"),
        "{}",
        e.answer
    );
    // Regression: it began "no dimension makes a difference", a finding no test supported.
    assert!(
        e.answer
            .starts_with("nothing is decided yet: no dimension is shown to make a difference to goodput that matters, and window is not shown to make none"),
        "{}",
        e.answer
    );
}

#[test]
fn one_configuration_says_nothing_was_compared() {
    let obs = campaign(&[], 3, 0.05, |_, _| 1e9);
    let e = analyze(&obs, &order(&[]), &Options::new(Scale::Log, "goodput"));
    assert!(e.effects.is_empty());
    assert!(
        e.answer
            .starts_with("one configuration, so nothing was compared"),
        "{}",
        e.answer
    );
    assert!(
        !e.answer.contains("makes a difference to goodput that"),
        "{}",
        e.answer
    );
}

#[test]
fn linear_metrics_speak_in_differences_and_failed_runs_are_said() {
    let dims = [("loss", &["0%", "1%"][..])];
    let mut obs = campaign(&dims, 5, 0.05, |c, _| {
        if get(c, "loss") == "1%" { 40.0 } else { 2.0 }
    });
    obs.pop();
    let e = analyze(
        &obs,
        &order(&dims),
        &Options::new(Scale::Linear, "retransmits"),
    );
    assert!(e.unbalanced);
    assert!(e.method.contains("type II sums of squares"));
    assert!(
        e.answer
            .starts_with("loss matters most: 0%→1% raises retransmits by 37."),
        "{}",
        e.answer
    );
    assert!(f_sf(f64::NAN, 1.0, 2.0).is_none());
    assert!((f_sf(0.0, 3.0, 10.0).unwrap() - 1.0).abs() < 1e-12);
}

/// Regression: with very quiet runs (CV 0.3%) a 0.2% profile difference was significant and the
/// answer said "profile matters too: small→large raises goodput 1.00x", beside "profile cannot
/// matter here by construction".
#[test]
fn a_significant_but_tiny_effect_is_said_not_to_matter() {
    let dims = [
        ("window", &["64K", "4M"][..]),
        ("profile", &["small", "large"][..]),
    ];
    let obs = campaign(&dims, 6, 0.001, |c, _| {
        let base = if get(c, "window") == "4M" {
            965e6
        } else {
            31e6
        };
        if get(c, "profile") == "large" {
            base * 1.003
        } else {
            base
        }
    });
    let e = analyze(&obs, &order(&dims), &Options::new(Scale::Log, "goodput"));
    let profile = e.effects.iter().find(|x| x.dimension == "profile").unwrap();
    assert!(
        profile.p.unwrap() < 0.05,
        "the test needs a significant effect: {profile:?}"
    );
    assert!(!e.answer.contains("profile matters"), "{}", e.answer);
    assert!(
        e.answer.contains("profile makes no practical difference"),
        "{}",
        e.answer
    );
    // The real difference cited with its own test, and the claim for the whole dimension.
    assert!(
        e.answer
            .contains("real (small→large p < 0.001), but within the 5% that matters"),
        "{}",
        e.answer
    );
    assert!(
        e.answer.contains("(small→large 1.00x (within 5%))"),
        "{}",
        e.answer
    );
    assert!(e.answer.starts_with("window matters most"), "{}", e.answer);
}

/// Failed runs that fall unevenly (most `x` runs at the slow window, most `y` runs at the fast
/// one) make the raw means of a null dimension differ 2.4x; the least-squares sums and the
/// configuration-weighted means see through it.
#[test]
fn failed_runs_that_confound_a_null_dimension_do_not_make_it_matter() {
    let dims = [("window", &["64K", "4M"][..]), ("profile", &["x", "y"][..])];
    let all = campaign(&dims, 6, 0.02, |c, _| {
        if get(c, "window") == "4M" { 1e9 } else { 1e8 }
    });
    // Keep 6 runs of (64K, x) and (4M, y), 2 of the other two.
    let mut kept = std::collections::HashMap::new();
    let obs: Vec<Observation> = all
        .into_iter()
        .filter(|o| {
            let key = (
                get(&o.dims, "window").to_string(),
                get(&o.dims, "profile").to_string(),
            );
            let limit = if (key.0 == "64K") == (key.1 == "x") {
                6
            } else {
                2
            };
            let n = kept.entry(key).or_insert(0);
            *n += 1;
            *n <= limit
        })
        .collect();
    assert_eq!(obs.len(), 16);
    let raw = |p: &str| {
        let v: Vec<f64> = obs
            .iter()
            .filter(|o| get(&o.dims, "profile") == p)
            .map(|o| o.value)
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    assert!(raw("y") / raw("x") > 2.0, "the raw means are confounded");
    let e = analyze(&obs, &order(&dims), &Options::new(Scale::Log, "goodput"));
    assert!(e.unbalanced);
    let profile = e.effects.iter().find(|x| x.dimension == "profile").unwrap();
    assert!(profile.p.unwrap() > 0.05, "{profile:?}");
    assert!(profile.share < 0.01, "{profile:?}");
    let (x, y) = (profile.means[0].mean, profile.means[1].mean);
    assert!((y / x - 1.0).abs() < 0.03, "marginal means {x} and {y}");
    assert_eq!((profile.means[0].n, profile.means[1].n), (8, 8));
    assert!(e.answer.starts_with("window matters most"), "{}", e.answer);
    assert!(!e.answer.contains("profile matters"), "{}", e.answer);
}

/// One dimension, unequal groups: the least-squares sum of squares is the textbook weighted
/// between-groups sum.
#[test]
fn an_unbalanced_one_way_design_gives_the_textbook_sums() {
    let ys = [1.0, 2.0, 3.0, 10.0, 12.0, 20.0];
    let levels = ["a", "a", "a", "b", "b", "c"];
    let obs: Vec<Observation> = ys
        .iter()
        .zip(levels)
        .enumerate()
        .map(|(i, (y, l))| Observation {
            dims: vec![("d".into(), l.into())],
            round: i as u32,
            value: *y,
        })
        .collect();
    let e = analyze(
        &obs,
        &order(&[("d", &["a", "b", "c"][..])]),
        &Options::new(Scale::Linear, "x"),
    );
    let grand = ys.iter().sum::<f64>() / 6.0;
    let total: f64 = ys.iter().map(|y| (y - grand).powi(2)).sum();
    let between =
        3.0 * (2.0 - grand).powi(2) + 2.0 * (11.0 - grand).powi(2) + (20.0 - grand).powi(2);
    let d = &e.effects[0];
    assert!((d.share - between / total).abs() < 1e-9, "{d:?}");
    let means: Vec<f64> = d.means.iter().map(|m| m.mean).collect();
    assert_eq!(means, vec![2.0, 11.0, 20.0]);
}

/// Regression (time-to-answer bench, fixed protocol): one profile comparison shown real but
/// small, another undecided only after Holm's correction, every pair within 5% by the
/// intersection-union test. The dimension is decided ("no practical difference"), its real
/// difference is cited with its own p (not the F test's 0.541 as "real"), and the undecided
/// comparison does not say "up to 3.4% not ruled out" as if that were more than the change.
#[test]
fn a_null_dimension_shown_within_the_change_as_a_whole_is_decided_and_worded_right() {
    use crate::analysis::decide::{Outcome, Scale};
    let settings = Options::new(Scale::Log, "goodput").settings;
    let decision = |to: &str, outcome, p: f64, eq_p_adj: f64, not_ruled_out: f64| {
        let mut d = crate::analysis::decide::too_few("small", to, 5, 5, &settings);
        d.ratio = Some(1.0);
        (d.ci_low, d.ci_high) = (0.98, 1.02);
        (d.p, d.p_adjusted) = (p, p);
        (d.equivalence_p, d.equivalence_p_adjusted) = (0.01, eq_p_adj);
        d.equivalent = outcome != Outcome::Undecided;
        d.outcome = outcome;
        d.not_ruled_out = not_ruled_out;
        d.rounds_needed = (outcome == Outcome::Undecided).then_some(2);
        d
    };
    let small = decision("medium", Outcome::SmallDifference, 0.036, 0.0004, 0.016);
    let undecided = decision("large", Outcome::Undecided, 0.58, 0.097, 0.034);
    let profile = Effect {
        dimension: "profile".into(),
        share: 0.0,
        p: Some(0.541),
        means: Vec::new(),
        ordered: false,
        baseline: Some("small".into()),
        comparisons: vec![small.clone(), undecided.clone()],
        span: None,
        equivalence_p: Some(0.030),
        best: Vec::new(),
        pairs: vec![small, undecided],
    };
    let opts = Options::new(Scale::Log, "goodput");
    let mut e = Effects {
        scale: Scale::Log,
        runs: 75,
        configurations: 15,
        effects: vec![profile],
        interactions: Vec::new(),
        drift: None,
        unbalanced: false,
        change: 0.05,
        confidence: 0.95,
        rounds_needed: None,
        pooled_df: None,
        unequal_noise_p: None,
        method: String::new(),
        answer: String::new(),
    };
    assert!(e.decided());
    e.answer = super::words::answer(&e, &opts);
    let line = e.answer.lines().find(|l| l.starts_with("profile")).unwrap();
    assert!(
        line.starts_with("profile makes no practical difference"),
        "{line}"
    );
    assert!(line.contains("real (small→medium p = 0.036)"), "{line}");
    assert!(!line.contains("real (p = 0.541)"), "{line}");
    assert!(
        line.contains("every pair of values within it: p = 0.030"),
        "{line}"
    );
    assert!(
        line.contains("not after Holm's correction: equivalence Holm-adjusted p = 0.097"),
        "{line}"
    );
    assert!(!line.contains("3.4% not ruled out"), "{line}");
}

/// Two rounds of a NIC sweep both ways, as measured on a libvirt domain (tests/libvirt.rs):
/// the F test sees the model's effect at once. Judged per pair with two paired rounds (1 degree
/// of freedom) no comparison of two models was decided; judged as a contrast of the whole
/// design, on the same pooled error as the F test (3 degrees of freedom), the comparison
/// decides what the F test finds, and the answer says so.
#[test]
fn an_effect_the_f_test_finds_is_decided_by_the_comparison_on_the_same_pooled_error() {
    let dims = [
        ("nic", &["virtio", "rtl8139"][..]),
        ("reverse", &["false", "true"][..]),
    ];
    let obs = campaign(&dims, 2, 0.01, |c, round| {
        match (get(c, "nic"), get(c, "reverse")) {
            ("virtio", "false") if round == 1 => 3000e6,
            ("virtio", "false") => 2000e6,
            ("virtio", _) => 1200e6,
            _ => 1000e6,
        }
    });
    let e = analyze(&obs, &order(&dims), &Options::new(Scale::Log, "goodput"));
    let nic = e.effects.iter().find(|x| x.dimension == "nic").unwrap();
    assert!(nic.p.unwrap() < 0.05, "{nic:?}");
    let d = &nic.comparisons[0];
    // One effect, one error: the contrast's p is the F test's (two values: F = t squared).
    assert!((d.p - nic.p.unwrap()).abs() < 1e-9, "{nic:?}");
    assert_eq!(d.df, 3.0);
    assert_eq!(
        d.outcome,
        crate::analysis::decide::Outcome::Different,
        "{nic:?}"
    );
    assert!(d.ci_high < 1.0, "{d:?}");
    assert!(!e.answer.contains("nic: no difference"), "{}", e.answer);
    assert!(e.answer.contains("depends on reverse"), "{}", e.answer);
}

/// Regression (issue 42, audit): a plan whose every run failed was answered "no dimension makes
/// a difference to goodput that matters beyond the noise of repeated runs".
#[test]
fn with_no_successful_run_the_answer_says_so_not_that_nothing_matters() {
    let opts = Options::new(Scale::Log, "goodput");
    let e = analyze(&[], &order(&[("disk", &["a", "b"])]), &opts);
    assert_eq!(e.runs, 0);
    let first = e.answer.lines().next().unwrap_or("");
    assert!(first.starts_with("no run succeeded"), "{}", e.answer);
    assert!(
        !e.answer.contains("no dimension makes a difference"),
        "{}",
        e.answer
    );
}
