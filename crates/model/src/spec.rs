//! What a test asks for: protocol, rate, payload length, streams, direction and duration.
//!
//! These types travel in the control protocol (serde) and are what the data plane runs;
//! the CLI resolves its flags into them. Units live in the types: rates in bits or packets
//! per second, lengths in payload bytes (the UDP or TCP payload, as iperf3 counts).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A test request with a value that cannot run. The message names the field (or the
/// flag a user gave it with) and the range it must be in.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// A congestion control name with characters no algorithm has, or too long.
    #[error(
        "congestion control '{0}' is not an algorithm name (letters, digits, '_', '-'; at most 15)"
    )]
    BadCongestion(String),
    /// An MSS Linux does not take.
    #[error(
        "MSS {0} out of range {min}..={max} bytes",
        min = TcpOptions::MIN_MSS,
        max = TcpOptions::MAX_MSS
    )]
    MssOutOfRange(u32),
    /// A test of no time.
    #[error("duration must be greater than zero")]
    ZeroDuration,
    /// A test longer than [`TestSpec::MAX_DURATION`].
    #[error("duration {} s is longer than a week", .0.as_secs_f64())]
    DurationTooLong(Duration),
    /// No stream at all.
    #[error("streams must be at least 1")]
    NoStreams,
    /// More streams each way than a bidirectional test numbers.
    #[error("{0} streams each way is too many for --bidir (at most 127)")]
    TooManyBidirStreams(u8),
    /// A UDP payload shorter than the test header or longer than a datagram.
    #[error(
        "len {0} out of range for UDP: {min}..={max} bytes (the test header takes {min})",
        min = TestSpec::MIN_UDP_LEN,
        max = TestSpec::MAX_UDP_LEN
    )]
    UdpLenOutOfRange(usize),
    /// A TCP write size of zero or above [`TestSpec::MAX_TCP_LEN`].
    #[error("len {0} out of range for TCP: 1..={max} bytes", max = TestSpec::MAX_TCP_LEN)]
    TcpLenOutOfRange(usize),
    /// A rate that is zero, negative or not finite.
    #[error("rate must be a positive number, got {0}")]
    RateNotPositive(f64),
    /// A DSCP above 63.
    #[error("dscp {0} out of range 0..=63")]
    DscpOutOfRange(u8),
    /// TCP options on a UDP test.
    #[error("TCP options (-C, -M, -N, -Z) do not apply to a UDP test")]
    TcpOptionsOnUdp,
    /// A warm-up (`-O`) on a UDP test.
    #[error("-O is for TCP (its slow start): a UDP test counts every datagram it sends; give -t for the time to measure")]
    OmitOnUdp,
    /// A warm-up (`-O`) with an amount to send (`-n`, `-k`).
    #[error("-O and -n/-k do not go together: the amount counts from the start")]
    OmitWithAmount,
    /// A warm-up over an hour.
    #[error("-O {} s is longer than an hour", .0.as_secs_f64())]
    OmitTooLong(Duration),
    /// An amount to send of zero.
    #[error("the amount to send (-n, -k) must be more than 0")]
    ZeroAmount,
    /// An amount to send on a test where the server sends too.
    #[error("-n and -k count what the client sends; with -R or --bidir the server sends too: give -t instead")]
    AmountNotForward,
}

/// Transport protocol of a throughput test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// TCP streams (one connection per stream).
    Tcp,
    /// UDP streams carrying the wirebench test header.
    Udp,
}

impl Protocol {
    /// Lower-case name, as in the JSON results.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

/// Offered load of one stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Rate {
    /// As fast as the sender can go.
    Unlimited,
    /// Payload bits per second (iperf3's `-b`).
    BitsPerSec(f64),
    /// Packets (UDP datagrams or TCP writes) per second.
    PacketsPerSec(f64),
}

impl Rate {
    /// Packets per second for a given payload length, or `None` when unlimited.
    pub fn packets_per_sec(self, payload_len: usize) -> Option<f64> {
        match self {
            Rate::Unlimited => None,
            Rate::BitsPerSec(bps) => Some(bps / (payload_len.max(1) as f64 * 8.0)),
            Rate::PacketsPerSec(pps) => Some(pps),
        }
    }

    /// Payload bits per second for a given payload length, or `None` when unlimited.
    pub fn bits_per_sec(self, payload_len: usize) -> Option<f64> {
        match self {
            Rate::Unlimited => None,
            Rate::BitsPerSec(bps) => Some(bps),
            Rate::PacketsPerSec(pps) => Some(pps * payload_len as f64 * 8.0),
        }
    }
}

/// Which way the data flows, seen from the client (iperf3's `-R` and `--bidir`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Client sends, server receives.
    Forward,
    /// Server sends, client receives (`-R`).
    Reverse,
    /// Both at once, with `streams` streams each way (`--bidir`).
    Bidir,
}

/// How a UDP sender hands datagrams to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum UdpBackend {
    /// GSO for unlimited or very high rates, `sendmmsg` otherwise.
    #[default]
    Auto,
    /// One datagram per message, up to 64 per `sendmmsg` call, paced per packet.
    Sendmmsg,
    /// UDP generic segmentation offload: one `send` carries up to 64 datagrams.
    Gso,
}

impl UdpBackend {
    /// Packet rates above this use GSO in `Auto` mode: below it the per-packet gap
    /// (≥ 5 µs) is long enough that sending datagram by datagram keeps even spacing.
    pub const AUTO_GSO_ABOVE_PPS: f64 = 200_000.0;

    /// Resolves `Auto` for a given packet rate (`None` = unlimited).
    pub fn resolve(self, pps: Option<f64>) -> UdpBackend {
        match self {
            UdpBackend::Auto => match pps {
                None => UdpBackend::Gso,
                Some(p) if p > Self::AUTO_GSO_ABOVE_PPS => UdpBackend::Gso,
                Some(_) => UdpBackend::Sendmmsg,
            },
            other => other,
        }
    }

    /// The name recorded in results (`udp-sendmmsg`, `udp-gso`).
    pub fn result_name(self) -> &'static str {
        match self {
            UdpBackend::Auto => "udp-auto",
            UdpBackend::Sendmmsg => "udp-sendmmsg",
            UdpBackend::Gso => "udp-gso",
        }
    }
}

/// A complete throughput-test request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestSpec {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// How long senders send.
    pub duration: Duration,
    /// Offered load per stream.
    pub rate: Rate,
    /// Payload bytes per datagram (UDP) or per write (TCP).
    pub len: usize,
    /// Parallel streams (per direction with `Bidir`).
    pub streams: u8,
    /// Data direction.
    pub direction: Direction,
    /// UDP send path.
    pub udp_backend: UdpBackend,
    /// The user declares the two hosts' clocks synchronised (PTP/NTP): one-way latency
    /// is then reported even between different hosts.
    pub synced_clocks: bool,
    /// DSCP to mark data packets with (0..=63).
    pub dscp: Option<u8>,
    /// Socket buffer size in bytes (`-w`).
    pub window: Option<u32>,
    /// CPU the server pins its data-plane threads to (iperf3's `-A n,m` second part).
    pub server_cpu: Option<u16>,
    /// TCP options of the data connections, applied on both sides (`-C`, `-M`, `-N`, `-Z`).
    #[serde(default, skip_serializing_if = "TcpOptions::is_default")]
    pub tcp: TcpOptions,
    /// Bytes each of the client's senders sends before it stops (`-n`, `-k`); the duration
    /// is then the longest the test may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_stream: Option<u64>,
    /// A warm-up before the measured `duration` (`-O`, TCP only): sent, not counted, so
    /// that slow start is not in the figures. The test takes `omit + duration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omit: Option<Duration>,
}

/// TCP options of a test's data connections.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    /// Congestion control algorithm (`TCP_CONGESTION`, e.g. `cubic`, `bbr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
    /// Maximum segment size (`TCP_MAXSEG`), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mss: Option<u32>,
    /// No Nagle delay (`TCP_NODELAY`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nodelay: bool,
    /// Senders send with `sendfile` from one in-memory block instead of `write`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zerocopy: bool,
}

impl TcpOptions {
    /// Smallest MSS Linux takes (`TCP_MIN_MSS`).
    pub const MIN_MSS: u32 = 88;
    /// Largest MSS Linux takes (`MAX_TCP_WINDOW`).
    pub const MAX_MSS: u32 = 32_767;

    /// No option set.
    pub fn is_default(&self) -> bool {
        *self == TcpOptions::default()
    }

    /// Checks the options; the error names the bad one.
    ///
    /// # Errors
    /// [`SpecError::BadCongestion`] or [`SpecError::MssOutOfRange`].
    pub fn check(&self) -> Result<(), SpecError> {
        if let Some(c) = &self.congestion {
            let ok = !c.is_empty()
                && c.len() < 16
                && c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !ok {
                return Err(SpecError::BadCongestion(c.clone()));
            }
        }
        if let Some(m) = self.mss {
            if !(Self::MIN_MSS..=Self::MAX_MSS).contains(&m) {
                return Err(SpecError::MssOutOfRange(m));
            }
        }
        Ok(())
    }
}

impl TestSpec {
    /// One UDP or TCP stream, 1 s, unlimited, 1472 bytes, forward: a spec to be completed
    /// by the caller (`TestSpec { rate, ..TestSpec::base(Protocol::Udp) }`).
    pub fn base(protocol: Protocol) -> TestSpec {
        TestSpec {
            protocol,
            duration: Duration::from_secs(1),
            rate: Rate::Unlimited,
            len: TestSpec::DEFAULT_UDP_LEN,
            streams: 1,
            direction: Direction::Forward,
            udp_backend: UdpBackend::Auto,
            synced_clocks: false,
            dscp: None,
            window: None,
            server_cpu: None,
            tcp: TcpOptions::default(),
            bytes_per_stream: None,
            omit: None,
        }
    }

    /// Smallest UDP payload: the wirebench test header.
    pub const MIN_UDP_LEN: usize = wire::testhdr::HEADER_LEN;
    /// Largest UDP payload over IPv4 (65535 − 20 − 8).
    pub const MAX_UDP_LEN: usize = 65_507;
    /// Largest TCP write size accepted.
    pub const MAX_TCP_LEN: usize = 16 * 1024 * 1024;
    /// Default UDP payload: fills a 1500-byte MTU (1500 − 20 IPv4 − 8 UDP).
    pub const DEFAULT_UDP_LEN: usize = 1472;
    /// Default TCP write size (iperf3's).
    pub const DEFAULT_TCP_LEN: usize = 128 * 1024;
    /// Longest test any server runs (a week); servers set their own, shorter limit.
    pub const MAX_DURATION: Duration = Duration::from_secs(7 * 86_400);
    /// Default UDP rate when none is given, bit/s (iperf3's 1 Mbit/s).
    pub const DEFAULT_UDP_RATE: f64 = 1e6;

    /// Checks the request for values that cannot run; the error names the field.
    ///
    /// # Errors
    /// The first [`SpecError`] found, fields in declaration order.
    pub fn check(&self) -> Result<(), SpecError> {
        if self.duration.is_zero() {
            return Err(SpecError::ZeroDuration);
        }
        if self.duration > Self::MAX_DURATION {
            return Err(SpecError::DurationTooLong(self.duration));
        }
        if self.streams == 0 {
            return Err(SpecError::NoStreams);
        }
        if self.direction == Direction::Bidir && self.streams > 127 {
            return Err(SpecError::TooManyBidirStreams(self.streams));
        }
        match self.protocol {
            Protocol::Udp if self.len < Self::MIN_UDP_LEN || self.len > Self::MAX_UDP_LEN => {
                return Err(SpecError::UdpLenOutOfRange(self.len))
            }
            Protocol::Tcp if self.len == 0 || self.len > Self::MAX_TCP_LEN => {
                return Err(SpecError::TcpLenOutOfRange(self.len))
            }
            _ => {}
        }
        match self.rate {
            Rate::BitsPerSec(r) | Rate::PacketsPerSec(r) if !(r.is_finite() && r > 0.0) => {
                return Err(SpecError::RateNotPositive(r))
            }
            _ => {}
        }
        if let Some(d) = self.dscp {
            if d > 63 {
                return Err(SpecError::DscpOutOfRange(d));
            }
        }
        self.tcp.check()?;
        if self.protocol == Protocol::Udp && !self.tcp.is_default() {
            return Err(SpecError::TcpOptionsOnUdp);
        }
        if let Some(o) = self.omit {
            if self.protocol == Protocol::Udp {
                return Err(SpecError::OmitOnUdp);
            }
            if self.bytes_per_stream.is_some() {
                return Err(SpecError::OmitWithAmount);
            }
            if o > Duration::from_secs(3600) {
                return Err(SpecError::OmitTooLong(o));
            }
        }
        match self.bytes_per_stream {
            Some(0) => return Err(SpecError::ZeroAmount),
            Some(_) if self.direction != Direction::Forward => {
                return Err(SpecError::AmountNotForward)
            }
            _ => {}
        }
        Ok(())
    }

    /// The whole time the test takes: the warm-up (`-O`) and the measured duration.
    pub fn total_duration(&self) -> Duration {
        self.omit.unwrap_or_default().saturating_add(self.duration)
    }

    /// Total offered bits/s over all streams, both directions with `Bidir`
    /// (`None` = unlimited).
    pub fn total_bits_per_sec(&self) -> Option<f64> {
        let ways = if self.direction == Direction::Bidir {
            2.0
        } else {
            1.0
        };
        self.rate
            .bits_per_sec(self.len)
            .map(|r| r * f64::from(self.streams) * ways)
    }

    /// Buffer memory one side of the test needs: one payload buffer (TCP) or one batch of
    /// them (UDP) per stream. Servers bound it.
    pub fn buffer_bytes(&self) -> u64 {
        let ways = if self.direction == Direction::Bidir {
            2
        } else {
            1
        };
        let per_stream = match self.protocol {
            Protocol::Tcp => self.len as u64,
            Protocol::Udp => (self.len as u64 + 64) * 64,
        };
        per_stream * u64::from(self.streams) * ways
    }

    /// Socket buffer memory one side may hold with `-w`: the kernel doubles the size
    /// asked, for the send and the receive buffer of every stream's socket; 0 without
    /// `-w` (the system's defaults, bounded by its own limits).
    pub fn socket_buffer_bytes(&self) -> u64 {
        let ways = if self.direction == Direction::Bidir {
            2
        } else {
            1
        };
        let per_socket = u64::from(self.window.unwrap_or(0)) * 2 * 2;
        per_socket * u64::from(self.streams) * ways
    }
}

/// A ping-pong latency request: the server echoes every datagram back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EchoSpec {
    /// How long the client may keep the echo socket busy.
    pub duration: Duration,
    /// Largest message the client will send (payload bytes).
    pub max_len: usize,
    /// The server busy-polls its socket instead of sleeping in `recv`.
    pub spin: bool,
}

#[cfg(test)]
mod test {
    use super::*;

    fn udp() -> TestSpec {
        TestSpec {
            duration: Duration::from_secs(10),
            rate: Rate::BitsPerSec(1e6),
            ..TestSpec::base(Protocol::Udp)
        }
    }

    #[test]
    fn a_request_that_cannot_run_says_which_field_with_the_same_text() {
        assert_eq!(udp().check(), Ok(()));
        let cases: Vec<(TestSpec, SpecError, &str)> = vec![
            (
                TestSpec {
                    duration: Duration::ZERO,
                    ..udp()
                },
                SpecError::ZeroDuration,
                "duration must be greater than zero",
            ),
            (
                TestSpec { len: 4, ..udp() },
                SpecError::UdpLenOutOfRange(4),
                "len 4 out of range for UDP: 18..=65507 bytes (the test header takes 18)",
            ),
            (
                TestSpec {
                    rate: Rate::BitsPerSec(0.0),
                    ..udp()
                },
                SpecError::RateNotPositive(0.0),
                "rate must be a positive number, got 0",
            ),
            (
                TestSpec {
                    protocol: Protocol::Tcp,
                    len: 1000,
                    tcp: TcpOptions {
                        mss: Some(10),
                        ..TcpOptions::default()
                    },
                    ..udp()
                },
                SpecError::MssOutOfRange(10),
                "MSS 10 out of range 88..=32767 bytes",
            ),
            (
                TestSpec {
                    protocol: Protocol::Tcp,
                    omit: Some(Duration::from_secs(7200)),
                    ..udp()
                },
                SpecError::OmitTooLong(Duration::from_secs(7200)),
                "-O 7200 s is longer than an hour",
            ),
        ];
        for (spec, error, text) in cases {
            let e = spec.check().unwrap_err();
            assert_eq!(e.to_string(), text);
            assert_eq!(e, error);
        }
    }
}
