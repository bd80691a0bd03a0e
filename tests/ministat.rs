//! `netsweep stats` against Debian's `ministat` binary on the same files: the vitals table and
//! the pooled Student's t difference and +/- must agree, with every flag a ministat user types
//! (`-A -n -s -c -C -d -w`). What differs on purpose, and why:
//!
//! | what | ministat (Debian) | netsweep | why |
//! |---|---|---|---|
//! | median of an even N | the upper middle value | mean of the middle pair | current FreeBSD's ministat |
//! | percent +/- | older formula | current FreeBSD's, with the baseline's variance | the older one is too narrow |
//! | t quantile | 3-decimal table, normal beyond 100 df | exact for any df | table rounding |
//! | `-c 99.5` | its column holds t of 99.8% (+/- about 15% wider) | the exact 99.5% quantile, with a note | a table bug |
//! | `-c` values | 80 90 95 98 99 99.5 only | any, `99.5%` too | |
//! | after each comparison | nothing | Welch, Mann-Whitney, Hodges-Lehmann, percent CI, verdict | ministat never says which test to trust |
//! | more than 7 sets | refused | compared, no plot | |

mod common;

use std::process::Command;

fn write_sets(dir: &tempfile::TempDir, sets: &[Vec<f64>]) -> Vec<String> {
    sets.iter()
        .enumerate()
        .map(|(i, s)| {
            let p = dir.path().join(format!("set{i}"));
            let text: String = s.iter().map(|v| format!("{v}\n")).collect();
            std::fs::write(&p, text).unwrap();
            p.to_string_lossy().to_string()
        })
        .collect()
}

fn run(program: &str, args: &[String]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Vitals rows: symbol -> [N, Min, Max, Median, Avg, Stddev].
fn vitals(text: &str) -> Vec<Vec<f64>> {
    text.lines()
        .filter(|l| {
            l.len() > 2
                && "x+*%#@O".contains(&l[..1])
                && l[1..]
                    .trim_start()
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
        })
        .map(|l| {
            l[1..]
                .split_whitespace()
                .map(|v| v.parse().unwrap())
                .collect()
        })
        .collect()
}

/// The "d +/- e" lines of each comparison (None for "No difference proven").
fn differences(text: &str) -> Vec<Option<(f64, f64)>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("No difference proven") {
            out.push(None);
        } else if l.starts_with("Difference at") {
            let parts: Vec<f64> = lines[i + 1]
                .split("+/-")
                .map(|v| v.trim().parse().unwrap())
                .collect();
            out.push(Some((parts[0], parts[1])));
        }
    }
    out
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-300)
}

fn compare(sets: &[Vec<f64>], conf: &str, e_tolerance: f64) {
    let dir = tempfile::tempdir().unwrap();
    let files = write_sets(&dir, sets);
    let mut args = vec!["-c".to_string(), conf.to_string()];
    args.extend(files.iter().cloned());
    let theirs = run("ministat", &args);
    let mut ours_args = vec!["stats".to_string()];
    ours_args.extend(args.iter().cloned());
    let ours = run(env!("CARGO_BIN_EXE_netsweep"), &ours_args);
    let (tv, ov) = (vitals(&theirs), vitals(&ours));
    assert_eq!(tv.len(), sets.len(), "{theirs}");
    assert_eq!(ov.len(), sets.len(), "{ours}");
    for (k, (t, o)) in tv.iter().zip(&ov).enumerate() {
        for col in [0, 1, 2, 4, 5] {
            assert!(
                close(t[col], o[col], 1e-7),
                "set {k} column {col}: ministat {} netsweep {}\n{theirs}\n{ours}",
                t[col],
                o[col]
            );
        }
        if sets[k].len() % 2 == 1 {
            assert_eq!(t[3], o[3], "odd-N median of set {k}");
        }
    }
    let (td, od) = (differences(&theirs), differences(&ours));
    assert_eq!(td.len(), od.len());
    for (t, o) in td.iter().zip(&od) {
        match (t, o) {
            (Some((td, te)), Some((od, oe))) => {
                assert!(close(*td, *od, 1e-5), "difference {td} vs {od}");
                assert!(
                    close(*te, *oe, e_tolerance),
                    "+/- {te} vs {oe} (conf {conf})"
                );
            }
            (None, None) => {}
            _ => panic!("verdicts differ at {conf}%:\n{theirs}\n{ours}"),
        }
    }
}

fn series(n: usize, base: f64, step: f64, wobble: f64) -> Vec<f64> {
    (0..n)
        .map(|i| base + step * i as f64 + wobble * ((i * 37 % 11) as f64 - 5.0))
        .collect()
}

#[test]
fn table_and_pooled_t_match_ministat() {
    if !common::tool_or_skip("table_and_pooled_t_match_ministat", "ministat") {
        return;
    }
    // ministat's t table has three decimals: agreement within 0.1% on the +/-.
    let iperf_like = vec![
        vec![941.2, 938.7, 940.1, 939.9, 941.0],
        vec![951.3, 949.8, 950.7, 952.1, 950.2],
        vec![940.8, 939.5, 941.7, 940.2, 939.9, 940.4],
    ];
    for conf in ["80", "90", "95", "98", "99"] {
        compare(&iperf_like, conf, 1e-3);
    }
    compare(
        &[series(3, 10.0, 1.0, 0.3), series(3, 10.5, 1.0, 0.2)],
        "95",
        1e-3,
    );
    compare(
        &[
            series(20, 1e9, 1e6, 3e5),
            series(30, 1.01e9, 1e6, 4e5),
            series(25, 0.99e9, 2e6, 1e5),
        ],
        "95",
        1e-3,
    );
    compare(
        &[series(7, -50.0, 0.5, 0.1), series(9, -49.0, 0.5, 0.2)],
        "99",
        1e-3,
    );
    compare(
        &[vec![5.0, 5.0, 5.0, 5.0], vec![5.0, 6.0, 5.0, 6.0]],
        "95",
        1e-3,
    );
    // Seven sets: every symbol, plot and all.
    let seven: Vec<Vec<f64>> = (0..7)
        .map(|k| series(5, 100.0 + k as f64, 0.3, 0.1))
        .collect();
    compare(&seven, "95", 1e-3);
}

#[test]
fn beyond_100_degrees_of_freedom_netsweep_uses_exact_quantiles() {
    if !common::tool_or_skip(
        "beyond_100_degrees_of_freedom_netsweep_uses_exact_quantiles",
        "ministat",
    ) {
        return;
    }
    // ministat falls back to the normal quantile (1.960); exact t(198) is 1.972: 0.6% wider.
    let sets = [series(100, 500.0, 0.01, 2.0), series(100, 501.0, 0.01, 2.0)];
    compare(&sets, "95", 1e-2);
}

#[test]
fn stats_json_has_the_documented_names() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_sets(
        &dir,
        &[series(6, 100.0, 1.0, 0.5), series(6, 110.0, 1.0, 0.5)],
    );
    let mut args = vec!["stats".to_string(), "--json".to_string()];
    args.extend(files);
    let v: serde_json::Value =
        serde_json::from_str(&run(env!("CARGO_BIN_EXE_netsweep"), &args)).unwrap();
    for key in [
        "name", "n", "min", "max", "median", "mean", "stddev", "cv", "outliers",
    ] {
        assert!(!v["sets"][0][key].is_null(), "sets[0].{key}");
    }
    let c = &v["comparisons"][0];
    for path in [
        "/baseline",
        "/other",
        "/difference",
        "/percent",
        "/student/t",
        "/student/df",
        "/student/ci_half_width",
        "/student/pooled_s",
        "/student/significant",
        "/welch/t",
        "/welch/df",
        "/welch/p",
        "/welch/ci_low",
        "/welch/ci_high",
        "/welch/significant",
        "/mann_whitney/u",
        "/mann_whitney/p",
        "/mann_whitney/method",
        "/hodges_lehmann/estimate",
        "/hodges_lehmann/ci_low",
        "/hodges_lehmann/ci_high",
        "/runs_needed",
        "/verdict",
    ] {
        assert!(
            c.pointer(path).is_some_and(|x| !x.is_null()),
            "comparisons[0]{path}"
        );
    }
    assert!(c["verdict"].as_str().unwrap().contains("higher than"));
}

#[test]
fn bad_input_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_sets(&dir, &[series(4, 1.0, 1.0, 0.0)]).remove(0);
    for (content, expect) in [
        ("1\n2\nfoo\n", ":3: \"foo\" is not a number"),
        ("1\n2\n", "bad: only 2 values; at least 3 are needed"),
        ("5\n", "bad: only 1 value; at least 3 are needed"),
        ("", "bad: no values"),
        ("1\ninf\n3\n", ":2:"),
    ] {
        let bad = dir.path().join("bad");
        std::fs::write(&bad, content).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
            .args(["stats", &good, bad.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            err.contains("bad") && err.contains(expect),
            "{content:?}: {err}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_netsweep"))
        .args(["stats", "-C", "2", &good])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no column 2"));
}

#[test]
fn the_plot_matches_ministat_for_odd_sets() {
    if !common::tool_or_skip("the_plot_matches_ministat_for_odd_sets", "ministat") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let files = write_sets(
        &dir,
        &[
            vec![941.2, 938.7, 940.1, 939.9, 941.0],
            vec![951.3, 949.8, 950.7, 952.1, 950.2],
            vec![940.8, 939.5, 941.7, 940.2, 939.9],
        ],
    );
    let plot = |text: &str| -> String {
        text.lines()
            .filter(|l| l.starts_with('|') || l.starts_with('+'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for flags in [vec!["-w", "60"], vec!["-s"], vec![]] {
        let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        args.extend(files.iter().cloned());
        let theirs = run("ministat", &args);
        let mut ours_args = vec!["stats".to_string()];
        ours_args.extend(args);
        let ours = run(env!("CARGO_BIN_EXE_netsweep"), &ours_args);
        assert_eq!(plot(&theirs), plot(&ours), "flags {flags:?}");
    }
}

#[test]
fn more_than_seven_sets_are_compared_without_the_plot() {
    let dir = tempfile::tempdir().unwrap();
    let sets: Vec<Vec<f64>> = (1..=9)
        .map(|k| vec![k as f64 + 0.1, k as f64 + 0.2, k as f64 + 0.3])
        .collect();
    let mut args = vec!["stats".to_string()];
    args.extend(write_sets(&dir, &sets));
    let out = run(env!("CARGO_BIN_EXE_netsweep"), &args);
    assert!(!out.contains("+-----"), "no plot beyond seven sets:\n{out}");
    assert_eq!(
        vitals(&out).len(),
        7,
        "rows of the first seven symbols are parsed as ministat's"
    );
    assert_eq!(
        out.matches("Verdict:").count(),
        8,
        "every set is compared with the baseline"
    );
    assert!(out.contains("Holm-adjusted"));
}

/// Both "d +/- e" lists agree: the difference exactly, the +/- within ministat's table
/// rounding.
fn same_differences(theirs: &str, ours: &str, what: &str) {
    let (t, o) = (differences(theirs), differences(ours));
    assert_eq!(t.len(), o.len(), "{what}:\n{theirs}\n{ours}");
    for (a, b) in t.iter().zip(&o) {
        match (a, b) {
            (Some((td, te)), Some((od, oe))) => {
                assert!(
                    close(*td, *od, 1e-5) && close(*te, *oe, 1e-3),
                    "{what}: {a:?} {b:?}"
                )
            }
            (None, None) => {}
            _ => panic!("{what}: verdicts differ:\n{theirs}\n{ours}"),
        }
    }
}

/// Each flag a ministat user types, on both programs with the same files.
#[test]
fn every_ministat_flag_agrees_or_differs_as_documented() {
    if !common::tool_or_skip(
        "every_ministat_flag_agrees_or_differs_as_documented",
        "ministat",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let sets = [
        vec![941.2, 938.7, 940.1, 939.9, 941.0],
        vec![951.3, 949.8, 950.7, 952.1, 950.2],
    ];
    let files = write_sets(&dir, &sets);
    // The same numbers in column 2 of comma-separated lines, for -C and -d.
    let csv: Vec<String> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let p = dir.path().join(format!("csv{i}"));
            let text: String = s.iter().map(|v| format!("run,{v},x\n")).collect();
            std::fs::write(&p, text).unwrap();
            p.to_string_lossy().to_string()
        })
        .collect();
    let both = |flags: &[&str], inputs: &[String]| -> (String, String) {
        let mut args: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        args.extend(inputs.iter().cloned());
        let theirs = run("ministat", &args);
        let mut ours_args = vec!["stats".to_string()];
        ours_args.extend(args);
        (theirs, run(env!("CARGO_BIN_EXE_netsweep"), &ours_args))
    };
    // -A: statistics and comparisons, no plot, in both.
    let (t, o) = both(&["-A"], &files);
    assert!(!t.contains("+---") && !o.contains("+---"), "{t}\n{o}");
    assert_eq!(vitals(&t), vitals(&o));
    same_differences(&t, &o, "-A");
    // -n: the table only.
    let (t, o) = both(&["-n"], &files);
    assert_eq!(vitals(&t), vitals(&o));
    assert!(!o.contains("Difference") && !o.contains("Verdict"), "{o}");
    // -s and -w: the plot.
    for flags in [&["-s"][..], &["-w", "50"][..], &["-s", "-w", "90"][..]] {
        let (t, o) = both(flags, &files);
        let plot = |x: &str| -> Vec<String> {
            x.lines()
                .filter(|l| l.starts_with('|') || l.starts_with('+'))
                .map(String::from)
                .collect()
        };
        assert_eq!(plot(&t), plot(&o), "{flags:?}");
    }
    // -C and -d.
    let (t, o) = both(&["-C", "2", "-d", ","], &csv);
    assert_eq!(vitals(&t), vitals(&o));
    same_differences(&t, &o, "-C 2 -d ,");
    // -c at every level ministat knows: the same up to its three-decimal table, except 99.5.
    for conf in ["80", "90", "95", "98", "99"] {
        compare(&sets, conf, 1e-3);
    }
    let (t, o) = both(&["-c", "99.5"], &files);
    let (td, od) = (differences(&t), differences(&o));
    let (Some((_, te)), Some((_, oe))) = (td[0], od[0]) else {
        panic!("both find a difference:\n{t}\n{o}")
    };
    // ministat's "99.5" column is t(0.999, 8) = 4.501; the exact t(0.9975, 8) is 3.833.
    assert!(close(te / oe, 4.501 / 3.833, 2e-3), "{te} vs {oe}");
    assert!(
        o.contains("its table's 99.5% column holds the t values of 99.8%"),
        "{o}"
    );
    // `-c 99.5%`, as ministat's usage text spells it (ministat itself refuses the %), is
    // `-c 99.5`.
    let mut args = vec!["stats".to_string(), "-c".into(), "99.5%".into()];
    args.extend(files.iter().cloned());
    assert_eq!(differences(&run(env!("CARGO_BIN_EXE_netsweep"), &args)), od);
}

/// Regression: constant sets printed `t = nan`, and tiny p-values `p = 0`.
#[test]
fn undefined_t_and_tiny_p_are_said_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_sets(&dir, &[vec![5.0, 5.0, 5.0], vec![5.0, 5.0, 5.0]]);
    let mut args = vec!["stats".to_string()];
    args.extend(files);
    let out = run(env!("CARGO_BIN_EXE_netsweep"), &args);
    assert!(!out.contains("nan"), "{out}");
    assert!(
        out.contains("t undefined (no variance in either set)"),
        "{out}"
    );
    let files = write_sets(
        &dir,
        &[series(40, 100.0, 0.0, 0.01), series(40, 200.0, 0.0, 0.01)],
    );
    let mut args = vec!["stats".to_string()];
    args.extend(files);
    let out = run(env!("CARGO_BIN_EXE_netsweep"), &args);
    assert!(out.contains("p < 1e-16"), "{out}");
    assert!(!out.contains("p = 0,") && !out.contains("p = 0 "), "{out}");
}
