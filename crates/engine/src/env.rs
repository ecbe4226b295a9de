//! Facts about the machine a result was measured on: host name, kernel, boot id, time.
//!
//! Read from `/proc`; nothing here is on a hot path.

use std::time::Duration;

use crate::clock::{Clock, RealClock};

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Host name (`/proc/sys/kernel/hostname`), or `unknown`.
pub fn hostname() -> String {
    read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
}

/// Kernel release (`uname -r`), or `unknown`.
pub fn kernel_release() -> String {
    read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`). Two programs that see the same
/// boot id share one CLOCK_REALTIME (network namespaces included), so one-way delays
/// measured between them are valid.
pub fn boot_id() -> Option<String> {
    read_trimmed("/proc/sys/kernel/random/boot_id")
}

/// The current UTC time in RFC 3339 form with millisecond precision.
pub fn now_rfc3339() -> String {
    let d = Duration::from_nanos(RealClock::new().wall().0);
    rfc3339(d.as_secs(), d.subsec_millis())
}

/// Formats seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm), valid for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        // 2000-02-29T12:34:56Z (a leap day)
        assert_eq!(rfc3339(951_827_696, 7), "2000-02-29T12:34:56.007Z");
        // 2026-11-29T20:40:40Z
        assert_eq!(rfc3339(1_795_984_840, 0), "2026-11-29T20:40:40.000Z");
    }
}
