//! Whether a request fits a server's limits, decided before any socket of the test is
//! opened: duration, streams, rate, buffer memory ([`check_limits`], [`test_memory`]),
//! the interval period and an echo session's duration. Every refusal names the limit
//! (the flag) it met.
//!
//! Pure: no socket, no clock, no counters. Whether the server has room for a test now
//! (tests running, per address, memory in use) is [`crate::session`]'s.

use model::spec::{EchoSpec, SpecError, TestSpec};

use crate::messages::Limits;
use crate::streams;

/// Most buffer memory one test may make the server allocate.
pub const MAX_TEST_BUFFER_BYTES: u64 = 512 << 20;

/// Shortest interval a client may ask for (the client's `-i` takes no less).
const MIN_INTERVAL_MS: u32 = 10;

/// Memory a test may make the server hold: its buffers and its socket buffers.
pub fn test_memory(spec: &TestSpec) -> u64 {
    spec.buffer_bytes()
        .saturating_add(spec.socket_buffer_bytes())
}

/// Why a request does not fit a server's limits; the message names the limit (the flag)
/// it met, and is what the client is told.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// The request itself is invalid (the spec's own check).
    #[error("{0}")]
    Invalid(SpecError),
    /// Longer than `--max-duration` (warm-up included), seconds.
    #[error("duration {secs:.1} s exceeds this server's --max-duration of {max:.1} s")]
    Duration {
        /// The test's duration with its warm-up, s.
        secs: f64,
        /// `--max-duration`, s.
        max: f64,
    },
    /// Its payload buffers exceed what one test may hold.
    #[error(
        "{streams} streams of {len}-byte payloads need {mib} MiB of buffers; this server allows {max_mib} MiB per test"
    )]
    Buffers {
        /// Streams of the test (both directions).
        streams: u16,
        /// Payload length.
        len: usize,
        /// Buffers needed, MiB.
        mib: u64,
        /// Most per test, MiB.
        max_mib: u64,
    },
    /// Its socket buffers (`-w`) exceed what one test may hold.
    #[error(
        "-w {window_kib} KiB on {streams} streams needs {mib} MiB of socket buffers (the kernel doubles each, send and receive); this server allows {max_mib} MiB per test: ask for a smaller window"
    )]
    SocketBuffers {
        /// The window asked for, KiB.
        window_kib: u32,
        /// Streams of the test (both directions).
        streams: u16,
        /// Socket buffers needed, MiB.
        mib: u64,
        /// Most per test, MiB.
        max_mib: u64,
    },
    /// More streams than `--max-streams`.
    #[error("{streams} streams exceed this server's --max-streams of {max}")]
    Streams {
        /// Streams of the test (both directions).
        streams: u16,
        /// `--max-streams`.
        max: u16,
    },
    /// No rate given to a server with `--max-rate`.
    #[error("this server limits tests to {max:.0} bit/s (--max-rate); give a rate with -b")]
    NoRate {
        /// `--max-rate`, bits/s.
        max: f64,
    },
    /// A rate above `--max-rate`.
    #[error("{bps:.0} bit/s exceeds this server's --max-rate of {max:.0} bit/s")]
    Rate {
        /// The test's rate over all streams, bits/s.
        bps: f64,
        /// `--max-rate`, bits/s.
        max: f64,
    },
    /// Intervals shorter than the shortest a server reports.
    #[error("intervals of {ms} ms: the shortest is {min} ms", min = MIN_INTERVAL_MS)]
    Interval {
        /// The period asked for, ms.
        ms: u32,
    },
    /// An echo session longer than `--max-duration`.
    #[error("duration exceeds this server's --max-duration of {max:.1} s")]
    EchoDuration {
        /// `--max-duration`, s.
        max: f64,
    },
}

/// Checks a request against the server's limits.
///
/// # Errors
/// The first limit the request exceeds, or why it is invalid.
pub fn check_limits(spec: &TestSpec, limits: &Limits) -> Result<(), LimitError> {
    spec.check().map_err(LimitError::Invalid)?;
    let secs = spec.total_duration().as_secs_f64();
    if secs > limits.max_duration_s {
        return Err(LimitError::Duration {
            secs,
            max: limits.max_duration_s,
        });
    }
    let streams = streams::total_streams(spec);
    if spec.buffer_bytes() > MAX_TEST_BUFFER_BYTES {
        return Err(LimitError::Buffers {
            streams,
            len: spec.len,
            mib: spec.buffer_bytes() >> 20,
            max_mib: MAX_TEST_BUFFER_BYTES >> 20,
        });
    }
    if test_memory(spec) > MAX_TEST_BUFFER_BYTES {
        return Err(LimitError::SocketBuffers {
            window_kib: spec.window.unwrap_or(0) >> 10,
            streams,
            mib: spec.socket_buffer_bytes() >> 20,
            max_mib: MAX_TEST_BUFFER_BYTES >> 20,
        });
    }
    if streams > limits.max_streams {
        return Err(LimitError::Streams {
            streams,
            max: limits.max_streams,
        });
    }
    if let Some(max) = limits.max_rate_bps {
        match spec.total_bits_per_sec() {
            None => return Err(LimitError::NoRate { max }),
            Some(bps) if bps > max * 1.000_001 => return Err(LimitError::Rate { bps, max }),
            _ => {}
        }
    }
    Ok(())
}

/// Checks a test's interval period (0: no intervals).
pub(crate) fn check_interval(interval_ms: u32) -> Result<(), LimitError> {
    if (1..MIN_INTERVAL_MS).contains(&interval_ms) {
        return Err(LimitError::Interval { ms: interval_ms });
    }
    Ok(())
}

/// Checks an echo session's duration against the server's limits.
pub(crate) fn check_echo(spec: &EchoSpec, limits: &Limits) -> Result<(), LimitError> {
    if spec.duration.as_secs_f64() > limits.max_duration_s {
        return Err(LimitError::EchoDuration {
            max: limits.max_duration_s,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod test {
    use super::*;
    use model::spec::{Direction, Protocol, Rate};
    use std::time::Duration;

    /// A UDP test of 2 streams each way at 100 Mbit/s, 1000-byte payloads, 10 s.
    pub(crate) fn spec() -> TestSpec {
        TestSpec {
            duration: Duration::from_secs(10),
            rate: Rate::BitsPerSec(100e6),
            len: 1000,
            streams: 2,
            direction: Direction::Bidir,
            ..TestSpec::base(Protocol::Udp)
        }
    }

    #[test]
    fn limits_name_the_limit() {
        let l = Limits {
            max_rate_bps: Some(150e6),
            max_duration_s: 5.0,
            max_streams: 3,
            max_tests: 1,
        };
        let e = check_limits(&spec(), &l).unwrap_err().to_string();
        assert!(e.contains("--max-duration"), "{e}");
        let l = Limits {
            max_duration_s: 60.0,
            ..l
        };
        let e = check_limits(&spec(), &l).unwrap_err().to_string();
        assert!(
            e.contains("4 streams") && e.contains("--max-streams"),
            "{e}"
        );
        let l = Limits {
            max_streams: 8,
            ..l
        };
        let e = check_limits(&spec(), &l).unwrap_err().to_string();
        assert!(e.contains("--max-rate"), "{e}");
        let l = Limits {
            max_rate_bps: Some(400e6), // 2 streams each way at 100 Mbit/s
            ..l
        };
        assert!(check_limits(&spec(), &l).is_ok());
        let mut unlimited = spec();
        unlimited.rate = Rate::Unlimited;
        assert!(check_limits(&unlimited, &l)
            .unwrap_err()
            .to_string()
            .contains("-b"));
    }

    #[test]
    fn socket_buffers_count_against_a_test() {
        let tcp = TestSpec {
            protocol: Protocol::Tcp,
            rate: Rate::Unlimited,
            streams: 1,
            direction: Direction::Forward,
            len: 128 << 10,
            window: Some(1 << 30),
            ..spec()
        };
        let e = check_limits(&tcp, &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("-w 1048576 KiB") && e.contains("socket buffers"),
            "{e}"
        );
        let small = TestSpec {
            window: Some(4 << 20),
            ..tcp
        };
        assert!(check_limits(&small, &Limits::default()).is_ok());
        assert_eq!(test_memory(&small), (128 << 10) + (16 << 20));
    }

    #[test]
    fn intervals_and_echo_sessions_have_their_limits() {
        assert!(check_interval(0).is_ok());
        assert!(check_interval(10).is_ok());
        assert_eq!(
            check_interval(9).unwrap_err().to_string(),
            "intervals of 9 ms: the shortest is 10 ms"
        );
        let echo = |s| EchoSpec {
            duration: Duration::from_secs(s),
            max_len: 64,
            spin: false,
        };
        let l = Limits::default();
        assert!(check_echo(&echo(3600), &l).is_ok());
        assert_eq!(
            check_echo(&echo(3601), &l).unwrap_err().to_string(),
            "duration exceeds this server's --max-duration of 3600.0 s"
        );
    }

    /// The refusals a client reads are the messages servers have always sent.
    #[test]
    fn refusals_read_as_before() {
        let l = Limits {
            max_rate_bps: Some(150e6),
            max_duration_s: 5.0,
            max_streams: 3,
            max_tests: 1,
        };
        let said = |spec: &TestSpec, l: &Limits| check_limits(spec, l).unwrap_err().to_string();
        assert_eq!(
            said(&spec(), &l),
            "duration 10.0 s exceeds this server's --max-duration of 5.0 s"
        );
        let l = Limits {
            max_duration_s: 60.0,
            ..l
        };
        assert_eq!(
            said(&spec(), &l),
            "4 streams exceed this server's --max-streams of 3"
        );
        let l = Limits {
            max_streams: 8,
            ..l
        };
        assert_eq!(
            said(&spec(), &l),
            "400000000 bit/s exceeds this server's --max-rate of 150000000 bit/s"
        );
        let unlimited = TestSpec {
            rate: Rate::Unlimited,
            ..spec()
        };
        assert_eq!(
            said(&unlimited, &l),
            "this server limits tests to 150000000 bit/s (--max-rate); give a rate with -b"
        );
        let big = TestSpec {
            len: 65_000,
            streams: 100,
            ..spec()
        };
        assert_eq!(
            said(&big, &Limits::default()),
            "200 streams of 65000-byte payloads need 794 MiB of buffers; this server allows 512 MiB per test"
        );
        let windows = TestSpec {
            protocol: Protocol::Tcp,
            window: Some(1 << 30),
            ..spec()
        };
        assert_eq!(
            said(&windows, &Limits::default()),
            "-w 1048576 KiB on 4 streams needs 16384 MiB of socket buffers (the kernel doubles each, send and receive); this server allows 512 MiB per test: ask for a smaller window"
        );
        let invalid = TestSpec {
            streams: 0,
            ..spec()
        };
        assert!(matches!(
            check_limits(&invalid, &Limits::default()),
            Err(LimitError::Invalid(_))
        ));
    }
}
