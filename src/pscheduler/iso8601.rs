//! The ISO 8601 forms pScheduler writes: durations (`PT30S`, `P1DT2H`, `PT0.5S`, as its
//! `#/pScheduler/Duration` pattern allows: weeks, days, hours, minutes, seconds, no months or
//! years) and the timestamps of a run's schedule (`2026-11-23T19:50:00Z`, `...+01:00`,
//! fractions of a second). Pure parsing; used by `spec` and `run`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Why a duration or timestamp was not understood.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{text:?} is not an ISO 8601 {what} ({why})")]
pub struct Iso8601Error {
    pub text: String,
    pub what: &'static str,
    pub why: &'static str,
}

fn err(text: &str, what: &'static str, why: &'static str) -> Iso8601Error {
    Iso8601Error {
        text: text.to_string(),
        what,
        why,
    }
}

/// Parses `P[nW][nD][T[nH][nM][nS]]` (each number may have a fraction), pScheduler's duration.
pub fn parse_duration(text: &str) -> Result<Duration, Iso8601Error> {
    let what = "duration";
    let rest = text
        .strip_prefix('P')
        .ok_or_else(|| err(text, what, "it must start with P"))?;
    let (date, time) = match rest.split_once('T') {
        Some((_, "")) => return Err(err(text, what, "nothing follows T")),
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut seconds = 0.0;
    seconds += units(text, date, &[('W', 604_800.0), ('D', 86_400.0)])?;
    if let Some(t) = time {
        seconds += units(text, t, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)])?;
    }
    if !seconds.is_finite() || seconds > 1e12 {
        return Err(err(text, what, "too long"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Adds up `number unit` pairs whose units appear in the given order, each at most once.
fn units(text: &str, part: &str, order: &[(char, f64)]) -> Result<f64, Iso8601Error> {
    let what = "duration";
    let mut total = 0.0;
    let mut next = 0;
    let mut number = String::new();
    for c in part.chars() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let at = order[next..]
            .iter()
            .position(|(u, _)| *u == c)
            .ok_or_else(|| err(text, what, "a unit is unknown, repeated or out of order"))?;
        if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
            return Err(err(text, what, "a unit has no number before it"));
        }
        let n: f64 = number
            .parse()
            .map_err(|_| err(text, what, "a number is malformed"))?;
        total += n * order[next + at].1;
        next += at + 1;
        number.clear();
    }
    if !number.is_empty() {
        return Err(err(text, what, "a number has no unit after it"));
    }
    Ok(total)
}

/// Writes a duration as pScheduler does (`PT12S`), rounded up to whole seconds.
pub fn format_duration_ceil(d: Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    format!("PT{secs}S")
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM|-HH:MM|+HHMM]` (no zone means UTC).
pub fn parse_timestamp(text: &str) -> Result<SystemTime, Iso8601Error> {
    let what = "timestamp";
    let bad = |why| err(text, what, why);
    let (date, time) = text
        .split_once(['T', ' '])
        .ok_or_else(|| bad("no T between date and time"))?;
    let d: Vec<&str> = date.split('-').collect();
    let [y, mo, da] = d[..] else {
        return Err(bad("the date is not YYYY-MM-DD"));
    };
    let num = |s: &str| s.parse::<i64>().map_err(|_| bad("a field is not a number"));
    let (year, month, day) = (num(y)?, num(mo)?, num(da)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(bad("month or day out of range"));
    }
    // The zone: Z, or a sign after the seconds.
    let (clock, offset_s) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else if let Some(i) = time.rfind(['+', '-']) {
        let (c, z) = time.split_at(i);
        let sign = if z.starts_with('-') { -1 } else { 1 };
        let digits: String = z[1..].chars().filter(|c| *c != ':').collect();
        if digits.len() != 4 && digits.len() != 2 {
            return Err(bad("the zone offset is not +HH:MM"));
        }
        let h = num(&digits[..2])?;
        let m = if digits.len() == 4 {
            num(&digits[2..])?
        } else {
            0
        };
        (c, sign * (h * 3600 + m * 60))
    } else {
        (time, 0)
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((a, f)) => (a, format!("0.{f}")),
        None => (clock, "0".to_string()),
    };
    let t: Vec<&str> = hms.split(':').collect();
    let [h, mi, s] = t[..] else {
        return Err(bad("the time is not HH:MM:SS"));
    };
    let (hour, minute, second) = (num(h)?, num(mi)?, num(s)?);
    if hour > 23 || minute > 59 || second > 60 {
        return Err(bad("hour, minute or second out of range"));
    }
    let frac: f64 = frac.parse().map_err(|_| bad("the fraction is malformed"))?;
    let unix =
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    let unix = u64::try_from(unix).map_err(|_| bad("before 1970"))?;
    Ok(UNIX_EPOCH + Duration::from_secs(unix) + Duration::from_secs_f64(frac))
}

/// Writes a time as pScheduler's schedules do, in UTC with microseconds
/// (`2026-11-23T19:50:00.250000Z`).
pub fn format_timestamp(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX / 2);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_micros()
    )
}

/// The date of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    crate::units::civil_from_days(z)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_pscheduler_writes_them() {
        let s = |t: &str| parse_duration(t).map(|d| d.as_secs_f64());
        assert_eq!(s("PT30S"), Ok(30.0));
        assert_eq!(s("PT0.5S"), Ok(0.5));
        assert_eq!(s("PT1M5S"), Ok(65.0));
        assert_eq!(s("P1DT1H"), Ok(90_000.0));
        assert_eq!(s("P1W"), Ok(604_800.0));
        assert_eq!(s("P0D"), Ok(0.0));
        assert_eq!(s("PT0.200S"), Ok(0.2));
        for bad in [
            "", "30", "PT", "PT5", "PTS", "P5S", "PT5S5M", "PT5S5S", "P1Y", "PT.5S",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn durations_are_written_in_whole_seconds_rounded_up() {
        assert_eq!(format_duration_ceil(Duration::from_millis(12_000)), "PT12S");
        assert_eq!(format_duration_ceil(Duration::from_millis(12_001)), "PT13S");
    }

    #[test]
    fn timestamps_with_zones_and_fractions() {
        let t = |s: &str| {
            parse_timestamp(s).map(|t| {
                t.duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs_f64()
            })
        };
        assert_eq!(t("1970-01-01T00:00:00Z"), Ok(0.0));
        assert_eq!(t("2026-11-23T19:50:00Z"), Ok(1_795_463_400.0));
        assert_eq!(t("2026-11-23T20:50:00+01:00"), Ok(1_795_463_400.0));
        assert_eq!(t("2026-11-23T14:50:00-0500"), Ok(1_795_463_400.0));
        assert_eq!(t("2026-11-23T19:50:00.250000+00:00"), Ok(1_795_463_400.25));
        assert_eq!(t("2000-02-29T00:00:00"), Ok(951_782_400.0));
        for bad in [
            "2026-11-23",
            "2026-13-01T00:00:00Z",
            "2026-11-23T25:00:00Z",
            "x",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad:?} accepted");
        }
    }
}
