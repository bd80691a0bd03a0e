//! Renders an `Analysis` as FreeBSD ministat prints it (legend, ASCII plot, vitals table,
//! pooled Student's t), followed by what ministat lacks (Welch, Mann-Whitney, Hodges-Lehmann,
//! Fieller's percent interval, outliers, runs needed, the verdict). Also parses ministat's
//! input format. Rendering only: every number comes from `stats`.
//!
//! Plot layout follows ministat.c (PlotSet/DumpPlot): overlapping points OR their set numbers
//! into one symbol, so `*` marks where sets 1 and 2 coincide.

use crate::analysis::sets::Analysis;
use crate::analysis::stats::{describe, ttest};
use std::fmt::Write;

/// ministat's symbols for sets 1..7 (index 0 is the empty cell).
pub const SYMBOLS: [char; 8] = [' ', 'x', '+', '*', '%', '#', '@', 'O'];

/// Symbol of set `i` (0-based); sets beyond the seventh get digits and letters.
pub fn symbol(i: usize) -> char {
    SYMBOLS
        .get(i + 1)
        .copied()
        .unwrap_or_else(|| char::from_digit((i + 1) as u32 % 36, 36).unwrap_or('?'))
}

/// C's `printf("%.*g", precision, v)`.
pub fn fmt_g(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let p = precision.max(1);
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let m = strip_zeros(mantissa);
        format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Plot options (`-w`, `-s`).
#[derive(Debug, Clone, Copy)]
pub struct PlotOptions {
    pub width: usize,
    pub separate_bars: bool,
}

/// Narrowest and widest plot accepted (`-w`).
pub const MIN_WIDTH: usize = 2;
pub const MAX_WIDTH: usize = 1000;
/// Most rows of stacked points drawn; a taller plot says so instead of drawing every row.
pub const MAX_PLOT_ROWS: usize = 500;

/// ministat's ASCII plot of up to seven sets.
pub fn plot(sets: &[Vec<f64>], opts: PlotOptions) -> String {
    let width = opts.width.clamp(MIN_WIDTH, MAX_WIDTH);
    let stats: Vec<(Vec<f64>, f64, f64, f64)> = sets
        .iter()
        .map(|v| {
            let s = describe::sorted(v);
            let m = describe::mean(&s);
            let sd = describe::stddev(&s);
            let med = describe::median_sorted(&s);
            (s, m, sd, med)
        })
        .collect();
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    for (s, m, sd, _) in &stats {
        for a in [s[0], s[s.len() - 1], m - sd, m + sd] {
            min = min.min(a);
            max = max.max(a);
        }
    }
    let span = max - min;
    if span.is_infinite() || span.is_nan() {
        return "[no plot, the values span more than a double can hold]\n".into();
    }
    if span <= 0.0 {
        return "[no plot, span is zero width]\n".into();
    }
    let dx = span / (width as f64 - 1.0);
    let x0 = min - 0.5 * dx;
    let col = |v: f64| (((v - x0) / dx) as usize).min(width - 1);
    let mut height = 0;
    let mut data: Vec<Vec<u8>> = Vec::new();
    let mut bars: Vec<Vec<u8>> = vec![Vec::new(); if opts.separate_bars { stats.len() } else { 1 }];
    for (k, (s, m, sd, med)) in stats.iter().enumerate() {
        let val = (k + 1) as u8;
        // Each point's column and stack level (sorted values: equal columns are adjacent).
        let mut last = usize::MAX;
        let mut level = 0;
        let points: Vec<(usize, usize)> = s
            .iter()
            .map(|&v| {
                let x = col(v);
                level = if x == last { level + 1 } else { 1 };
                last = x;
                (x, level)
            })
            .collect();
        let tallest = points.iter().map(|p| p.1).max().unwrap_or(1);
        if tallest > MAX_PLOT_ROWS {
            return format!(
                "[no plot, {tallest} values stack in one column, more than {MAX_PLOT_ROWS} rows: use -n or a wider -w]\n"
            );
        }
        // Tallest stack plus one (row 0 is never drawn); ministat sets the height to this
        // set's need even if it is smaller than before.
        height = points.iter().map(|p| p.1).max().unwrap_or(1) + 1;
        while data.len() < height {
            data.push(vec![0; width]);
        }
        for (x, level) in points {
            data[level][x] |= val;
        }
        let bar = &mut bars[if opts.separate_bars { k } else { 0 }];
        if bar.is_empty() {
            *bar = vec![0; width];
        }
        if !sd.is_nan() {
            let (a, b) = (col(m - sd), col(m + sd));
            bar[b] = b'|';
            bar[a] = b'|';
            for c in bar.iter_mut().take(b).skip(a + 1) {
                if *c == 0 {
                    *c = b'_';
                }
            }
        }
        bar[col(*med)] = b'M';
        bar[col(*m)] = b'A';
    }
    let border = format!("+{}+\n", "-".repeat(width));
    let mut out = border.clone();
    for i in 1..height {
        out.push('|');
        for &k in &data[height - i] {
            out.push(SYMBOLS.get(usize::from(k)).copied().unwrap_or('?'));
        }
        out.push_str("|\n");
    }
    for bar in bars.iter().filter(|b| !b.is_empty()) {
        out.push('|');
        out.extend(
            bar.iter()
                .map(|&c| if c == 0 { ' ' } else { char::from(c) }),
        );
        out.push_str("|\n");
    }
    out.push_str(&border);
    out
}

const TABLE_HEAD: &str =
    "    N           Min           Max        Median           Avg        Stddev\n";

/// One row of ministat's vitals table.
fn vitals(a: &Analysis, i: usize) -> String {
    let d = &a.sets[i].description;
    format!(
        "{} {:>3} {:>13} {:>13} {:>13} {:>13} {:>13}\n",
        symbol(i),
        d.n,
        fmt_g(d.min, 8),
        fmt_g(d.max, 8),
        fmt_g(d.median, 8),
        fmt_g(d.mean, 8),
        fmt_g(d.stddev, 8)
    )
}

/// ministat's vitals table alone (`-n`).
pub fn table(a: &Analysis) -> String {
    let mut out = String::from(TABLE_HEAD);
    for i in 0..a.sets.len() {
        out.push_str(&vitals(a, i));
    }
    out
}

/// ministat's "Difference at C% confidence" block for comparison `k`, with the percent
/// interval of current FreeBSD (which includes the baseline's variance).
pub fn student_block(a: &Analysis, k: usize, baseline: &[f64], other: &[f64]) -> String {
    let c = &a.comparisons[k];
    let conf = a.confidence * 100.0;
    if !c.student.significant {
        return format!("No difference proven at {conf:.1}% confidence\n");
    }
    let (nb, no) = (baseline.len() as f64, other.len() as f64);
    let (mb, mo) = (describe::mean(baseline), describe::mean(other));
    let t = ttest::t_critical(a.confidence, nb + no - 2.0);
    let re = ((no - 1.0) * describe::variance(other)
        + (nb - 1.0) * describe::variance(baseline) * (mo * mo) / (mb * mb))
        * (nb + no)
        / (nb * no * (nb + no - 2.0));
    let re = t * re.sqrt();
    format!(
        "Difference at {conf:.1}% confidence\n\t{} +/- {}\n\t{}% +/- {}%\n\t(Student's t, pooled s = {})\n",
        fmt_g(c.difference, 6),
        fmt_g(c.student.ci_half_width, 6),
        fmt_g(c.difference * 100.0 / mb, 6),
        fmt_g(re * 100.0 / mb, 6),
        fmt_g(c.student.pooled_s, 6)
    )
}

fn opt_range(lo: Option<f64>, hi: Option<f64>, unit: &str) -> String {
    match (lo, hi) {
        (Some(l), Some(h)) => format!("{}{unit} to {}{unit}", fmt_g(l, 6), fmt_g(h, 6)),
        _ => "unbounded".into(),
    }
}

/// A p-value as text: below double precision's resolution a bound, not a false zero.
fn p_value(p: f64) -> String {
    if p < 1e-16 {
        "p < 1e-16".into()
    } else {
        format!("p = {}", fmt_g(p, 4))
    }
}

/// A t statistic as text: with no variance in either set it is undefined, not "nan".
fn t_value(t: f64) -> String {
    if t.is_nan() {
        "t undefined (no variance in either set)".into()
    } else if t.is_infinite() {
        "t infinite (no variance, different means)".into()
    } else {
        format!("t = {}", fmt_g(t, 5))
    }
}

/// Why netsweep's interval differs from Debian's ministat at 99.5% (shown at that level only).
pub const MINISTAT_995_NOTE: &str = "Note: at 99.5% Debian's ministat prints a wider interval: its \
table's 99.5% column holds the t values of 99.8%. netsweep uses the exact 99.5% quantile.\n";

/// What ministat does not print, for comparison `k`.
pub fn extra_block(a: &Analysis, k: usize) -> String {
    let c = &a.comparisons[k];
    let conf = format!("{}%", fmt_g(a.confidence * 100.0, 6));
    let mut out = String::new();
    if let Some(line) = design_line(a, k) {
        // A campaign's comparison: one test, the design's, the verdict's own (no second test
        // of the same pair beside it). Where ministat's own line above says otherwise (a VM
        // trial read "No difference proven" over "Verdict: ... faster by 21.5%"), whose is which.
        use crate::analysis::decide::Outcome;
        let shown = matches!(
            c.decision.outcome,
            Outcome::Different | Outcome::SmallDifference
        );
        if shown != c.student.significant {
            let _ = writeln!(
                out,
                "	(ministat's line above is its pooled t on these runs alone; the verdict is \
                 the campaign's design, whose error is pooled over every configuration)"
            );
        }
        out.push_str(&line);
        let _ = writeln!(out, "Verdict: {}", c.verdict);
        return out;
    }
    let _ = writeln!(
        out,
        "\tWelch: {}, df = {}, {}{}; difference {} ({conf} CI {} to {})",
        t_value(c.welch.t),
        fmt_g(c.welch.df, 5),
        p_value(c.welch.p),
        if a.comparisons.len() > 1 {
            format!(" (Holm-adjusted {})", p_value(c.welch_p_holm))
        } else {
            String::new()
        },
        fmt_g(c.difference, 6),
        fmt_g(c.welch.ci_low, 6),
        fmt_g(c.welch.ci_high, 6)
    );
    let method = match c.mann_whitney.method {
        crate::analysis::stats::rank::Method::Exact => "exact",
        crate::analysis::stats::rank::Method::NormalApproximation => "normal approximation",
    };
    let _ = writeln!(
        out,
        "\tMann-Whitney: U = {}, {} ({method})",
        fmt_g(c.mann_whitney.u, 8),
        p_value(c.mann_whitney.p)
    );
    let hl = &c.hodges_lehmann;
    let _ = writeln!(
        out,
        "\tHodges-Lehmann shift: {} ({conf} CI {})",
        fmt_g(hl.estimate, 6),
        opt_range(hl.ci_low, hl.ci_high, "")
    );
    let _ = writeln!(
        out,
        "\tPercent: {}% ({conf} CI {}, Fieller, baseline uncertainty included)",
        fmt_g(c.percent, 6),
        opt_range(c.percent_ci_low, c.percent_ci_high, "%")
    );
    if let Some(n) = c.runs_needed {
        let _ = writeln!(
            out,
            "\tRuns per set to detect a {}% change (the configured change) at 80% power, planning a new experiment at this noise (Welch): about {n}",
            fmt_g(c.detect_change * 100.0, 4)
        );
    }
    let _ = writeln!(out, "Verdict: {}", c.verdict);
    out
}

/// The test of a comparison judged on a campaign's design (`decide::blocked`): its p, its
/// degrees of freedom and its interval, the verdict's; `None` for sets judged on their own.
fn design_line(a: &Analysis, k: usize) -> Option<String> {
    use crate::analysis::decide::{Design, words};
    let c = &a.comparisons[k];
    let d = &c.decision;
    let Design::Blocked {
        configurations,
        rounds,
        ..
    } = d.design
    else {
        return None;
    };
    let adjusted = if (d.p_adjusted - d.p).abs() > 1e-12 {
        format!(" (Holm-adjusted {})", p_value(d.p_adjusted))
    } else {
        String::new()
    };
    let size = match (d.ratio, d.difference) {
        (Some(r), _) => format!("ratio {}", fmt_g(r, 6)),
        (_, Some(x)) => format!("difference {}", fmt_g(x, 6)),
        _ => String::new(),
    };
    let blocks = if rounds > 1 {
        format!("{rounds} rounds as blocks")
    } else {
        "runs unpaired: no rounds".to_string()
    };
    Some(format!(
        "\tt on the campaign's design ({configurations} configurations, {blocks}, error \
         pooled): df = {}, {}{adjusted}; {size} ({} CI {} to {})\n",
        fmt_g(d.df, 5),
        p_value(d.p),
        words::interval_level(d.ci_level),
        fmt_g(d.ci_low, 6),
        fmt_g(d.ci_high, 6)
    ))
}

/// Notes on noise and outliers per set.
pub fn set_notes(a: &Analysis) -> String {
    let mut out = String::new();
    for (i, s) in a.sets.iter().enumerate() {
        let d = &s.description;
        if let Some(cv) = d.cv.filter(|cv| *cv > describe::HIGH_CV) {
            let _ = writeln!(
                out,
                "{} {}: high noise, CV {:.1}%",
                symbol(i),
                s.name,
                cv * 100.0
            );
        }
        if !d.outliers.is_empty() {
            let vals: Vec<String> = d.outliers.iter().map(|v| fmt_g(*v, 8)).collect();
            let _ = writeln!(
                out,
                "{} {}: outliers (kept) {}",
                symbol(i),
                s.name,
                vals.join(" ")
            );
        }
    }
    out
}

/// The full text of `netsweep stats`; `plot_opts` `None` leaves the plot out (`-A`).
pub fn render(a: &Analysis, values: &[Vec<f64>], plot_opts: Option<PlotOptions>) -> String {
    let mut out = String::new();
    for (i, s) in a.sets.iter().enumerate() {
        let _ = writeln!(out, "{} {}", symbol(i), s.name);
    }
    if let Some(opts) = plot_opts
        && values.len() <= 7
    {
        out.push_str(&plot(values, opts));
    }
    // As ministat: the baseline's row, then each set's row followed by its comparison, against
    // the first set or, stepwise (`Pairs::Steps`), the one before it: its percentages are of
    // that set's mean.
    out.push_str(TABLE_HEAD);
    out.push_str(&vitals(a, 0));
    for (k, c) in a.comparisons.iter().enumerate() {
        let base = a
            .sets
            .iter()
            .position(|s| s.name == c.baseline)
            .unwrap_or(0);
        out.push_str(&vitals(a, k + 1));
        out.push_str(&student_block(a, k, &values[base], &values[k + 1]));
        out.push_str(&extra_block(a, k));
    }
    out.push_str(&set_notes(a));
    if (a.confidence - 0.995).abs() < 1e-9 && !a.comparisons.is_empty() {
        out.push_str(MINISTAT_995_NOTE);
    }
    out
}

/// Why input was rejected: one line of it, or the whole file (too few values).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}{}: {reason}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct InputError {
    pub file: String,
    /// The 1-based line at fault; `None` when the file as a whole is (no line is wrong).
    pub line: Option<usize>,
    pub reason: String,
}

/// Reads ministat's input: one value per line from column `column` (1-based), fields split on
/// any of `delims`; blank lines and `#` comments are skipped.
pub fn parse_values(
    file: &str,
    text: &str,
    column: usize,
    delims: &str,
) -> Result<Vec<f64>, InputError> {
    let err = |line: Option<usize>, reason: String| InputError {
        file: file.to_string(),
        line,
        reason,
    };
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let fields: Vec<&str> = raw
            .split(|c| delims.contains(c))
            .filter(|f| !f.is_empty())
            .collect();
        let upto_comment: Vec<&str> = fields
            .iter()
            .take_while(|f| !f.starts_with('#'))
            .copied()
            .collect();
        if upto_comment.is_empty() {
            continue;
        }
        let Some(field) = upto_comment.get(column - 1) else {
            return Err(err(
                Some(line),
                format!("no column {column} (the line has {})", upto_comment.len()),
            ));
        };
        let v: f64 = field.parse().map_err(|_| {
            // A JSON document (iperf3 -J) is read by `import`, not as numbers.
            let json = if field.starts_with(['{', '[']) {
                " (a JSON document? iperf3 -J results go through `netsweep import`, then \
                 `netsweep compare`)"
            } else {
                ""
            };
            err(Some(line), format!("{field:?} is not a number{json}"))
        })?;
        if !v.is_finite() {
            return Err(err(Some(line), format!("{field:?} is not a finite number")));
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err(err(None, "no values (empty file?)".into()));
    }
    if out.len() < 3 {
        let n = out.len();
        let values = if n == 1 { "value" } else { "values" };
        return Err(err(
            None,
            format!("only {n} {values}; at least 3 are needed"),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the line said "the configured change" without saying what it was.
    #[test]
    fn runs_per_set_names_the_change_it_is_for() {
        let sets = vec![
            ("a".to_string(), vec![10.0, 11.0, 12.0, 10.5, 11.5]),
            ("b".to_string(), vec![10.2, 11.1, 12.3, 10.4, 11.7]),
        ];
        let cfg = crate::analysis::sets::Config {
            detect_change: 0.1,
            ..Default::default()
        };
        let a = crate::analysis::sets::analyze(&sets, &cfg).unwrap();
        let text = extra_block(&a, 0);
        assert!(
            text.contains("Runs per set to detect a 10% change (the configured change)"),
            "{text}"
        );
    }

    /// Regression (a trial's finding): with stepwise pairs (`compare` on a campaign's ordered
    /// values) each block's percentage was of the first set's mean: 1536K against 256K read
    /// "22.7979 +/- ... 365.594%" (of 64K's 6.24) where it is 89.6% (of 256K's 25.45).
    #[test]
    fn stepwise_differences_are_percentages_of_their_own_baseline() {
        let sets = vec![
            ("64K".to_string(), vec![6.22, 6.24, 6.25]),
            ("256K".to_string(), vec![25.4, 25.45, 25.5]),
            ("1536K".to_string(), vec![48.2, 48.25, 48.3]),
        ];
        let cfg = crate::analysis::sets::Config {
            pairs: crate::analysis::sets::Pairs::Steps,
            ..Default::default()
        };
        let a = crate::analysis::sets::analyze(&sets, &cfg).unwrap();
        let values: Vec<Vec<f64>> = sets.iter().map(|(_, v)| v.clone()).collect();
        let text = render(&a, &values, None);
        let percent = |block: &str| -> f64 {
            let line = block.lines().nth(2).expect("the percent line");
            line.trim().split('%').next().unwrap().parse().unwrap()
        };
        let blocks: Vec<&str> = text.split("Difference at").skip(1).collect();
        assert_eq!(blocks.len(), 2, "{text}");
        // 256K against 64K, then 1536K against 256K: (48.25 - 25.45) / 25.45 = 89.6%.
        assert!((percent(blocks[0]) - (25.45 - 6.236_667) / 6.236_667 * 100.0).abs() < 0.01);
        assert!(
            (percent(blocks[1]) - 22.8 / 25.45 * 100.0).abs() < 0.01,
            "{text}"
        );
        // Against the first (ministat's pairs), the percentages stay of the first's mean.
        let a = crate::analysis::sets::analyze(&sets, &Default::default()).unwrap();
        let text = render(&a, &values, None);
        let blocks: Vec<&str> = text.split("Difference at").skip(1).collect();
        assert!((percent(blocks[1]) - (48.25 - 6.236_667) / 6.236_667 * 100.0).abs() < 0.01);
    }

    /// Regression: one value read "one:0: only 1 values": a line 0 that no file has, and a
    /// plural for one.
    #[test]
    fn too_few_values_name_the_file_not_a_line() {
        let e = parse_values("one", "5\n", 1, " ").unwrap_err();
        assert_eq!(e.to_string(), "one: only 1 value; at least 3 are needed");
        let e = parse_values("two", "# c\n1\n2\n", 1, " ").unwrap_err();
        assert_eq!(e.to_string(), "two: only 2 values; at least 3 are needed");
        let e = parse_values("empty", "# c\n\n", 1, " ").unwrap_err();
        assert_eq!(e.to_string(), "empty: no values (empty file?)");
        let e = parse_values("bad", "1\n2\nx\n", 1, " ").unwrap_err();
        assert_eq!(e.to_string(), "bad:3: \"x\" is not a number");
        let e = parse_values("r.json", "{\n  \"start\": {}\n}\n", 1, " ").unwrap_err();
        assert!(e.to_string().contains("`netsweep import`"), "{e}");
    }

    #[test]
    fn g_formatting_matches_printf() {
        for (v, p, want) in [
            (0.0, 6, "0"),
            (1.0, 6, "1"),
            (1234567.0, 6, "1.23457e+06"),
            (123456.0, 6, "123456"),
            (0.0001, 6, "0.0001"),
            (0.00001234, 6, "1.234e-05"),
            (-2.5, 6, "-2.5"),
            (99999.95, 6, "99999.9"),
            (99999.96, 6, "100000"),
            (999999.5, 6, "1e+06"),
            (1.234567891, 8, "1.2345679"),
            (1e308, 8, "1e+308"),
            (20.5, 8, "20.5"),
        ] {
            assert_eq!(fmt_g(v, p), want, "{v} %.{p}g");
        }
    }

    #[test]
    fn input_errors_name_the_file_and_line() {
        assert_eq!(
            parse_values("f", "1\n# c\n\n2 x\n3\n", 1, " \t").unwrap(),
            vec![1.0, 2.0, 3.0]
        );
        assert_eq!(
            parse_values("f", "a,1\nb,2\nc,3\n", 2, ",").unwrap(),
            vec![1.0, 2.0, 3.0]
        );
        let e = parse_values("f", "1\nabc\n3\n", 1, " ").unwrap_err();
        assert_eq!((e.line, e.reason.contains("not a number")), (Some(2), true));
        let e = parse_values("f", "1\n2\nnan\n", 1, " ").unwrap_err();
        assert!(e.to_string().starts_with("f:3:"), "{e}");
        let e = parse_values("f", "1 2\n3\n4 5\n", 2, " ").unwrap_err();
        assert!(e.reason.contains("no column 2"), "{e}");
        assert!(
            parse_values("f", "", 1, " ")
                .unwrap_err()
                .reason
                .contains("empty")
        );
        assert!(
            parse_values("f", "1\n2\n", 1, " ")
                .unwrap_err()
                .reason
                .contains("at least 3")
        );
    }
}
