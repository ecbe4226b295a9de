//! Whether a request fits a server's limits, decided before any socket of the test is
//! opened: duration, streams, rate, buffer memory ([`check_limits`], [`test_memory`]),
//! the interval period and an echo session's duration. Every refusal names the limit
//! (the flag) it met.
//!
//! Pure: no socket, no clock, no counters. Whether the server has room for a test now
//! (tests running, per address, memory in use) is [`crate::session`]'s.

use model::spec::{EchoSpec, TestSpec};

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

/// Checks a request against the server's limits; the message names the limit.
pub fn check_limits(spec: &TestSpec, limits: &Limits) -> Result<(), String> {
    spec.validate()?;
    if spec.total_duration().as_secs_f64() > limits.max_duration_s {
        return Err(format!(
            "duration {:.1} s exceeds this server's --max-duration of {:.1} s",
            spec.total_duration().as_secs_f64(),
            limits.max_duration_s
        ));
    }
    if spec.buffer_bytes() > MAX_TEST_BUFFER_BYTES {
        return Err(format!(
            "{} streams of {}-byte payloads need {} MiB of buffers; this server allows {} MiB per test",
            streams::total_streams(spec),
            spec.len,
            spec.buffer_bytes() >> 20,
            MAX_TEST_BUFFER_BYTES >> 20
        ));
    }
    if test_memory(spec) > MAX_TEST_BUFFER_BYTES {
        return Err(format!(
            "-w {} KiB on {} streams needs {} MiB of socket buffers (the kernel doubles each, send and receive); this server allows {} MiB per test: ask for a smaller window",
            spec.window.unwrap_or(0) >> 10,
            streams::total_streams(spec),
            spec.socket_buffer_bytes() >> 20,
            MAX_TEST_BUFFER_BYTES >> 20
        ));
    }
    let n = streams::total_streams(spec);
    if n > limits.max_streams {
        return Err(format!(
            "{n} streams exceed this server's --max-streams of {}",
            limits.max_streams
        ));
    }
    if let Some(max) = limits.max_rate_bps {
        match spec.total_bits_per_sec() {
            None => {
                return Err(format!(
                    "this server limits tests to {max:.0} bit/s (--max-rate); give a rate with -b"
                ))
            }
            Some(total) if total > max * 1.000_001 => {
                return Err(format!(
                    "{total:.0} bit/s exceeds this server's --max-rate of {max:.0} bit/s"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks a test's interval period (0: no intervals).
pub(crate) fn check_interval(interval_ms: u32) -> Result<(), String> {
    if (1..MIN_INTERVAL_MS).contains(&interval_ms) {
        return Err(format!(
            "intervals of {interval_ms} ms: the shortest is {MIN_INTERVAL_MS} ms"
        ));
    }
    Ok(())
}

/// Checks an echo session's duration against the server's limits.
pub(crate) fn check_echo(spec: &EchoSpec, limits: &Limits) -> Result<(), String> {
    if spec.duration.as_secs_f64() > limits.max_duration_s {
        return Err(format!(
            "duration exceeds this server's --max-duration of {:.1} s",
            limits.max_duration_s
        ));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod test {
    use super::*;
    use model::spec::{Direction, Protocol, Rate, UdpBackend};
    use std::time::Duration;

    /// A UDP test of 2 streams each way at 100 Mbit/s, 1000-byte payloads, 10 s.
    pub(crate) fn spec() -> TestSpec {
        TestSpec {
            protocol: Protocol::Udp,
            duration: Duration::from_secs(10),
            rate: Rate::BitsPerSec(100e6),
            len: 1000,
            streams: 2,
            direction: Direction::Bidir,
            udp_backend: UdpBackend::Auto,
            synced_clocks: false,
            dscp: None,
            window: None,
            server_cpu: None,
            tcp: Default::default(),
            bytes_per_stream: None,
            omit: None,
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
        let e = check_limits(&spec(), &l).unwrap_err();
        assert!(e.contains("--max-duration"), "{e}");
        let l = Limits {
            max_duration_s: 60.0,
            ..l
        };
        let e = check_limits(&spec(), &l).unwrap_err();
        assert!(
            e.contains("4 streams") && e.contains("--max-streams"),
            "{e}"
        );
        let l = Limits {
            max_streams: 8,
            ..l
        };
        let e = check_limits(&spec(), &l).unwrap_err();
        assert!(e.contains("--max-rate"), "{e}");
        let l = Limits {
            max_rate_bps: Some(400e6), // 2 streams each way at 100 Mbit/s
            ..l
        };
        assert!(check_limits(&spec(), &l).is_ok());
        let mut unlimited = spec();
        unlimited.rate = Rate::Unlimited;
        assert!(check_limits(&unlimited, &l).unwrap_err().contains("-b"));
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
        let e = check_limits(&tcp, &Limits::default()).unwrap_err();
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
            check_interval(9).unwrap_err(),
            "intervals of 9 ms: the shortest is 10 ms"
        );
        let echo = |s| EchoSpec {
            duration: Duration::from_secs(s),
            max_len: 64,
            spin: false,
        };
        let l = Limits::default();
        assert!(check_echo(&echo(3600), &l).is_ok());
        assert!(check_echo(&echo(3601), &l)
            .unwrap_err()
            .contains("--max-duration of 3600.0 s"));
    }
}
