//! What a test asks for: protocol, rate, payload length, streams, direction and duration.
//!
//! These types travel in the control protocol (serde) and are what the data plane runs;
//! the CLI resolves its flags into them. Units live in the types: rates in bits or packets
//! per second, lengths in payload bytes (the UDP or TCP payload, as iperf3 counts).

use std::time::Duration;

use serde::{Deserialize, Serialize};

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

    /// Checks the options; the message names the bad one.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(c) = &self.congestion {
            let ok = !c.is_empty()
                && c.len() < 16
                && c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !ok {
                return Err(format!(
                    "congestion control '{c}' is not an algorithm name (letters, digits, '_', '-'; at most 15)"
                ));
            }
        }
        if let Some(m) = self.mss {
            if !(Self::MIN_MSS..=Self::MAX_MSS).contains(&m) {
                return Err(format!(
                    "MSS {m} out of range {}..={} bytes",
                    Self::MIN_MSS,
                    Self::MAX_MSS
                ));
            }
        }
        Ok(())
    }
}

impl TestSpec {
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

    /// Checks the request for values that cannot run; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.duration.is_zero() {
            return Err("duration must be greater than zero".into());
        }
        if self.duration > Self::MAX_DURATION {
            return Err(format!(
                "duration {} s is longer than a week",
                self.duration.as_secs_f64()
            ));
        }
        if self.streams == 0 {
            return Err("streams must be at least 1".into());
        }
        if self.direction == Direction::Bidir && self.streams > 127 {
            return Err(format!(
                "{} streams each way is too many for --bidir (at most 127)",
                self.streams
            ));
        }
        match self.protocol {
            Protocol::Udp if self.len < Self::MIN_UDP_LEN || self.len > Self::MAX_UDP_LEN => {
                return Err(format!(
                    "len {} out of range for UDP: {}..={} bytes (the test header takes {})",
                    self.len,
                    Self::MIN_UDP_LEN,
                    Self::MAX_UDP_LEN,
                    Self::MIN_UDP_LEN
                ))
            }
            Protocol::Tcp if self.len == 0 || self.len > Self::MAX_TCP_LEN => {
                return Err(format!(
                    "len {} out of range for TCP: 1..={} bytes",
                    self.len,
                    Self::MAX_TCP_LEN
                ))
            }
            _ => {}
        }
        match self.rate {
            Rate::BitsPerSec(r) | Rate::PacketsPerSec(r) if !(r.is_finite() && r > 0.0) => {
                return Err(format!("rate must be a positive number, got {r}"))
            }
            _ => {}
        }
        if let Some(d) = self.dscp {
            if d > 63 {
                return Err(format!("dscp {d} out of range 0..=63"));
            }
        }
        self.tcp.validate()?;
        if self.protocol == Protocol::Udp && !self.tcp.is_default() {
            return Err("TCP options (-C, -M, -N, -Z) do not apply to a UDP test".into());
        }
        if let Some(o) = self.omit {
            if self.protocol == Protocol::Udp {
                return Err("-O is for TCP (its slow start): a UDP test counts every datagram it sends; give -t for the time to measure".into());
            }
            if self.bytes_per_stream.is_some() {
                return Err(
                    "-O and -n/-k do not go together: the amount counts from the start".into(),
                );
            }
            if o > Duration::from_secs(3600) {
                return Err(format!("-O {} s is longer than an hour", o.as_secs_f64()));
            }
        }
        match self.bytes_per_stream {
            Some(0) => return Err("the amount to send (-n, -k) must be more than 0".into()),
            Some(_) if self.direction != Direction::Forward => {
                return Err("-n and -k count what the client sends; with -R or --bidir the server sends too: give -t instead".into())
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
