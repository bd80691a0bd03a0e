//! Units as types: byte counts, bit rates and durations, with the parsers for what users type
//! (`64K`, `1.5M`, `10G`, `500mbit`, `1.6ms`) and the human formatting used in output.
//!
//! Sizes use binary multipliers (`64K` = 65,536 bytes, as iperf3 does for `-w` and `-l`);
//! rates use decimal ones (`500mbit` = 500,000,000 bit/s). Units appear in field names only at
//! the JSON and database boundary (`bits_per_second`, `duration_us`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Why a size, rate or duration given by a user did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {input:?} is not valid: {reason} (examples: {examples})")]
pub struct ParseError {
    what: &'static str,
    input: String,
    reason: String,
    examples: &'static str,
}

impl ParseError {
    fn new(
        what: &'static str,
        input: &str,
        reason: impl Into<String>,
        examples: &'static str,
    ) -> Self {
        ParseError {
            what,
            input: input.to_string(),
            reason: reason.into(),
            examples,
        }
    }
}

/// A number of bytes (a buffer size, a write length, a transfer total).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

/// A bit rate in bits per second. Zero means "unlimited" where a rate is a target.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct BitRate(pub f64);

/// Splits `"1.5Mbit"` into `(1.5, "mbit")`.
fn split_number(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let value: f64 = num.parse().ok()?;
    if !value.is_finite() {
        return None;
    }
    Some((value, unit.trim().to_ascii_lowercase()))
}

const SIZE_EXAMPLES: &str = "1400, 64K, 1.5M, 4MiB, 1G";

impl FromStr for Bytes {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (value, unit) = split_number(s).ok_or_else(|| {
            ParseError::new(
                "size",
                s,
                "expected a number with an optional unit",
                SIZE_EXAMPLES,
            )
        })?;
        let mult: f64 = match unit.as_str() {
            "" | "b" => 1.0,
            "k" | "kb" | "kib" => 1024.0,
            "m" | "mb" | "mib" => 1024.0 * 1024.0,
            "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
            "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
            _ => {
                return Err(ParseError::new(
                    "size",
                    s,
                    format!("unknown unit {unit:?}"),
                    SIZE_EXAMPLES,
                ));
            }
        };
        let bytes = (value * mult).round();
        if bytes > u64::MAX as f64 / 2.0 {
            return Err(ParseError::new("size", s, "too large", SIZE_EXAMPLES));
        }
        Ok(Bytes(bytes as u64))
    }
}

const RATE_EXAMPLES: &str = "0 (unlimited), 100M, 500mbit, 1.5G, 10gbit";

impl FromStr for BitRate {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (value, unit) = split_number(s).ok_or_else(|| {
            ParseError::new(
                "rate",
                s,
                "expected a number with an optional unit",
                RATE_EXAMPLES,
            )
        })?;
        let unit = unit
            .strip_suffix("/s")
            .or_else(|| unit.strip_suffix("ps"))
            .unwrap_or(&unit);
        let unit = ["bits", "bit", "b"]
            .iter()
            .find_map(|s| unit.strip_suffix(s))
            .unwrap_or(unit);
        let mult = match unit {
            "" => 1.0,
            "k" => 1e3,
            "m" => 1e6,
            "g" => 1e9,
            "t" => 1e12,
            _ => return Err(ParseError::new("rate", s, "unknown unit", RATE_EXAMPLES)),
        };
        Ok(BitRate(value * mult))
    }
}

const DURATION_EXAMPLES: &str = "10 (seconds), 2s, 500ms, 1.6ms, 250us, 1m";

/// Parses a duration; a bare number is seconds, as in iperf3's `-t 10`.
pub fn parse_duration(s: &str) -> Result<Duration, ParseError> {
    let (value, unit) = split_number(s).ok_or_else(|| {
        ParseError::new(
            "duration",
            s,
            "expected a number with an optional unit",
            DURATION_EXAMPLES,
        )
    })?;
    let secs = match unit.as_str() {
        "" | "s" | "sec" | "secs" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "ns" => value / 1e9,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(ParseError::new(
                "duration",
                s,
                format!("unknown unit {unit:?}"),
                DURATION_EXAMPLES,
            ));
        }
    };
    if secs > 1e9 {
        return Err(ParseError::new(
            "duration",
            s,
            "too long",
            DURATION_EXAMPLES,
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a percentage such as `1%`, `0.5` (meaning 0.5%).
pub fn parse_percent(s: &str) -> Result<f64, ParseError> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(ParseError::new(
            "percentage",
            s,
            "expected a number from 0 to 100",
            "1%, 0.5, 10%",
        )),
    }
}

impl BitRate {
    /// Rate of `bytes` moved in `elapsed`; zero when no time passed.
    pub fn from_bytes(bytes: u64, elapsed: Duration) -> BitRate {
        let secs = elapsed.as_secs_f64();
        if secs <= 0.0 {
            BitRate(0.0)
        } else {
            BitRate(bytes as f64 * 8.0 / secs)
        }
    }

    pub fn bits_per_second(self) -> f64 {
        self.0
    }

    pub fn is_unlimited(self) -> bool {
        self.0 <= 0.0
    }
}

impl fmt::Display for BitRate {
    /// iperf3's style: `941 Mbits/sec`, `25.3 Gbits/sec`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        // Choose the unit after rounding, so 999.9e6 prints as 1.00 Gbits/sec.
        let v = if (999.5e6..1e9).contains(&v) { 1e9 } else { v };
        let (scaled, unit) = if v >= 1e9 {
            (v / 1e9, "Gbits/sec")
        } else if v >= 1e6 {
            (v / 1e6, "Mbits/sec")
        } else if v >= 1e3 {
            (v / 1e3, "Kbits/sec")
        } else {
            (v, "bits/sec")
        };
        write!(f, "{} {unit}", three_digits(scaled))
    }
}

impl fmt::Display for Bytes {
    /// iperf3's style: `1.10 GBytes`, `112 MBytes`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 as f64;
        let (scaled, unit) = if v >= 1024.0 * 1024.0 * 1024.0 {
            (v / (1024.0 * 1024.0 * 1024.0), "GBytes")
        } else if v >= 1024.0 * 1024.0 {
            (v / (1024.0 * 1024.0), "MBytes")
        } else if v >= 1024.0 {
            (v / 1024.0, "KBytes")
        } else {
            (v, "Bytes")
        };
        write!(f, "{} {unit}", three_digits(scaled))
    }
}

/// The unit of the text output's columns (iperf3's `-f`): automatic, or fixed to kilo, mega,
/// giga or tera bits per second (`k m g t`) or bytes per second (`K M G T`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateFormat {
    #[default]
    Auto,
    Bits(char),
    Bytes(char),
}

impl FromStr for RateFormat {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<RateFormat, ParseError> {
        match s {
            "k" | "m" | "g" | "t" => Ok(RateFormat::Bits(s.chars().next().unwrap_or('m'))),
            "K" | "M" | "G" | "T" => Ok(RateFormat::Bytes(s.chars().next().unwrap_or('M'))),
            "a" | "auto" => Ok(RateFormat::Auto),
            _ => Err(ParseError::new(
                "format",
                s,
                "expected one unit letter",
                "k m g t for bits/sec, K M G T for Bytes/sec",
            )),
        }
    }
}

impl RateFormat {
    /// The power of the unit letter (k 1, m 2, g 3, t 4) and its prefix.
    fn scale(c: char) -> (i32, &'static str) {
        match c.to_ascii_lowercase() {
            'k' => (1, "K"),
            'g' => (3, "G"),
            't' => (4, "T"),
            _ => (2, "M"),
        }
    }

    /// A rate in this format: `941 Mbits/sec`, or `112 MBytes/sec` with `-f M`. As iperf3's
    /// unit_snprintf: bits in powers of 1000, bytes in powers of 1024. (The Transfer column
    /// keeps its adaptive unit whatever `-f` says, as iperf3's: `Bytes`.)
    pub fn rate(self, bps: f64) -> String {
        match self {
            RateFormat::Auto => BitRate(bps).to_string(),
            RateFormat::Bits(c) => {
                let (n, p) = Self::scale(c);
                format!("{} {p}bits/sec", three_digits(bps / 1000f64.powi(n)))
            }
            RateFormat::Bytes(c) => {
                let (n, p) = Self::scale(c);
                format!("{} {p}Bytes/sec", three_digits(bps / 8.0 / 1024f64.powi(n)))
            }
        }
    }
}

/// `v` as C's `printf("%.2g")`, iperf3's format of a loss percentage (`0`, `0.052`, `1.2`,
/// `12`, `1e+02`): two significant digits, trailing zeros dropped, the exponent form where
/// the exponent is below -4 or at least 2.
pub fn c_g2(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        // C's spelling: nan, inf, -inf.
        return format!("{v}").to_lowercase();
    }
    // Rounded to two significant digits first: the exponent is the rounded value's.
    let sci = format!("{v:.1e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if !(-4..2).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa.to_string()), exp.abs())
    } else {
        let decimals = usize::try_from(1 - exp).unwrap_or(0);
        trim(format!("{v:.decimals$}"))
    }
}

/// Three significant digits, as iperf3's `unit_snprintf` (units.c): the thresholds are where
/// rounding would add a digit, so 99.97 prints as `100`, not `100.0`.
fn three_digits(v: f64) -> String {
    if v >= 99.95 {
        format!("{v:.0}")
    } else if v >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The sum of `xs`, 0 (not -0) when there are none: Rust's `Sum` for floats starts from -0.0
/// (since 1.83), so an empty sum of seconds printed "0.00--0.00 sec" and `"seconds": -0.0`
/// for a test that failed before its first interval.
#[allow(clippy::unnecessary_fold)]
pub fn total(xs: impl IntoIterator<Item = f64>) -> f64 {
    xs.into_iter().fold(0.0, |a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values from C's printf("%.2g") (glibc).
    #[test]
    fn loss_percentages_are_printed_as_cs_g() {
        for (v, c) in [
            (0.0, "0"),
            (0.052, "0.052"),
            (0.05249, "0.052"),
            (1.2, "1.2"),
            (1.25, "1.2"),
            (1.26, "1.3"),
            (12.0, "12"),
            (9.96, "10"),
            (99.4, "99"),
            (99.6, "1e+02"),
            (100.0, "1e+02"),
            (0.00012, "0.00012"),
            (0.00001234, "1.2e-05"),
            (0.5, "0.5"),
        ] {
            assert_eq!(c_g2(v), c, "{v}");
        }
    }

    #[test]
    fn fixed_formats_follow_iperf3s_letters() {
        let m: RateFormat = "m".parse().unwrap();
        assert_eq!(m.rate(941e6), "941 Mbits/sec");
        assert_eq!(m.rate(25.3e9), "25300 Mbits/sec");
        // Bytes per second in powers of 1024, as iperf3's -f M: 100 Mbit/s is 11.9 MBytes/sec.
        let big_m: RateFormat = "M".parse().unwrap();
        assert_eq!(big_m.rate(100e6), "11.9 MBytes/sec");
        let g: RateFormat = "G".parse().unwrap();
        assert_eq!(g.rate(8.0 * 1024f64.powi(3)), "1.00 GBytes/sec");
        assert_eq!(g.rate(8e9), "0.93 GBytes/sec");
        let k: RateFormat = "K".parse().unwrap();
        assert_eq!(k.rate(8.0 * 1024.0 * 500.0), "500 KBytes/sec");
        assert_eq!(RateFormat::Auto.rate(941e6), "941 Mbits/sec");
        assert!("x".parse::<RateFormat>().is_err());
    }

    #[test]
    fn sizes_use_binary_multipliers() {
        assert_eq!("64K".parse::<Bytes>().unwrap(), Bytes(65536));
        assert_eq!("1.5M".parse::<Bytes>().unwrap(), Bytes(1_572_864));
        assert_eq!("4MiB".parse::<Bytes>().unwrap(), Bytes(4 << 20));
        assert_eq!("1400".parse::<Bytes>().unwrap(), Bytes(1400));
        assert_eq!("1g".parse::<Bytes>().unwrap(), Bytes(1 << 30));
        assert!("".parse::<Bytes>().is_err());
        assert!("12Q".parse::<Bytes>().is_err());
        assert!("-5K".parse::<Bytes>().is_err());
        assert!("K".parse::<Bytes>().is_err());
        assert!("1e400".parse::<Bytes>().is_err());
    }

    #[test]
    fn rates_use_decimal_multipliers() {
        assert_eq!("500mbit".parse::<BitRate>().unwrap(), BitRate(500e6));
        assert_eq!("10G".parse::<BitRate>().unwrap(), BitRate(10e9));
        assert_eq!("1.5M".parse::<BitRate>().unwrap(), BitRate(1.5e6));
        assert_eq!("100kbps".parse::<BitRate>().unwrap(), BitRate(100e3));
        assert_eq!("2gbit/s".parse::<BitRate>().unwrap(), BitRate(2e9));
        assert_eq!("0".parse::<BitRate>().unwrap(), BitRate(0.0));
        assert!("fast".parse::<BitRate>().is_err());
        assert!("10X".parse::<BitRate>().is_err());
    }

    #[test]
    fn durations_default_to_seconds() {
        assert_eq!(parse_duration("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(
            parse_duration("1.6ms").unwrap(),
            Duration::from_micros(1600)
        );
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        let err = parse_duration("10x").unwrap_err().to_string();
        assert!(err.contains("10x") && err.contains("examples"), "{err}");
    }

    #[test]
    fn percentages_are_bounded() {
        assert_eq!(parse_percent("1%").unwrap(), 1.0);
        assert_eq!(parse_percent("0.5").unwrap(), 0.5);
        assert!(parse_percent("101").is_err());
        assert!(parse_percent("-1").is_err());
    }

    #[test]
    fn human_formatting_matches_iperf3_style() {
        assert_eq!(BitRate(941e6).to_string(), "941 Mbits/sec");
        assert_eq!(BitRate(25.34e9).to_string(), "25.3 Gbits/sec");
        assert_eq!(Bytes(1_181_116_006).to_string(), "1.10 GBytes");
        assert_eq!(
            BitRate::from_bytes(125_000_000, Duration::from_secs(1)),
            BitRate(1e9)
        );
        assert_eq!(BitRate::from_bytes(1, Duration::ZERO), BitRate(0.0));
    }
}

/// The proleptic Gregorian date (year, month 1-12, day 1-31) of a day count since 1970-01-01
/// (Howard Hinnant's `civil_from_days`, chrono-compatible algorithms). One copy for every
/// timestamp netsweep writes (reports, iperf3's JSON, pScheduler's ISO 8601).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod civil_tests {
    #[test]
    fn civil_dates_of_known_days() {
        assert_eq!(super::civil_from_days(0), (1970, 1, 1));
        assert_eq!(super::civil_from_days(20_415), (2025, 11, 23));
        assert_eq!(super::civil_from_days(-1), (1969, 12, 31));
        assert_eq!(super::civil_from_days(11_016), (2000, 2, 29));
    }
}
