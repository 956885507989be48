//! What every table of the config file shares: one syntax of durations,
//! which the command's flags take too.

use std::time::Duration;

/// The longest duration a config may give (a timeout, a grace period, a CPU
/// deadline): 30 days. Longer ones are refused rather than overflow a clock.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Reads a duration, the one syntax of the config file and the command:
/// `"30s"`, `"5m"`, `"1h 30m"`, or a plain number of seconds (`"90"`,
/// `"0.5"`); at most [`MAX_DURATION`]. Zero is a duration (a grace period
/// of `"0s"` passes on at once); a caller that needs more says so.
pub fn duration(text: &str) -> Result<Duration, String> {
    let not_one = |e: &dyn std::fmt::Display| {
        format!("{text:?} is not a duration such as \"30s\", \"5m\" or 90 (seconds) ({e})")
    };
    let duration = match text.trim().parse::<f64>() {
        Ok(seconds) => Duration::try_from_secs_f64(seconds).map_err(|e| {
            if seconds.is_finite() && seconds > 0.0 {
                format!("{text:?} is longer than the longest duration allowed, 30 days")
            } else {
                not_one(&e)
            }
        })?,
        Err(_) => humantime::parse_duration(text).map_err(|e| not_one(&e))?,
    };
    if duration > MAX_DURATION {
        return Err(format!(
            "{text:?} is longer than the longest duration allowed, 30 days"
        ));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_is_humane_or_plain_seconds() {
        assert_eq!(duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("0.5"), Ok(Duration::from_millis(500)));
        for zero in ["0", "0s", "0.0"] {
            assert_eq!(duration(zero), Ok(Duration::ZERO), "{zero}");
        }
        for bad in ["-3", "NaN", "inf", "soon", ""] {
            assert!(
                duration(bad).unwrap_err().contains("not a duration"),
                "{bad}"
            );
        }
        assert!(duration("1e300").unwrap_err().contains("30 days"));
    }
}
