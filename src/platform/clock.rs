//! Wall clock readings as Unix time, for what is stored or journaled with a date.

/// Seconds since 1970 (UTC), with their fraction; 0 on a clock set before 1970.
pub fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
