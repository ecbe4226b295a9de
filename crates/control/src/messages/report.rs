//! What the streams of a throughput test report over the protocol: each side's final
//! report per stream (in [`ClientMsg::Finish`](super::ClientMsg::Finish) and
//! [`ServerMsg::Results`](super::ServerMsg::Results), inside
//! [`StreamReport`](super::StreamReport)) and the live counts of an interval
//! ([`ServerMsg::Interval`](super::ServerMsg::Interval)).
//!
//! These are the protocol's own types: the engine's reports convert into them where a
//! data-plane thread hands its report over (and back, with `From`), so that a change in
//! the engine is a compile error here rather than a silent change of the wire. Their JSON
//! is pinned by the golden tests of [`super`]. The figures inside them that are part of
//! the results model (counters, latency summaries and histograms, send-time slots,
//! timestamps) are `model`'s, whose serialised form is a contract of its own.
//!
//! Data only: no socket, no clock.

use std::time::Duration;

use engine::live::{LiveSnapshot, TcpNow};
use engine::tcp::{TcpReceiverReport, TcpSenderReport};
use engine::udp::{UdpReceiverReport, UdpSenderReport};
use model::clock::UnixNanos;
use model::results::{TcpBytes, XdpFrameCheck};
use model::stats::buckets::BucketCounts;
use model::stats::histogram::{LatencyHistogram, LatencySummary};
use model::stats::slots::TxSlots;
use model::stats::Counters;
use serde::{Deserialize, Serialize};

/// What a UDP sender did (`kind: udp_tx`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpTxReport {
    /// Stream id.
    pub stream_id: u8,
    /// Datagrams the kernel accepted.
    pub packets: u64,
    /// Payload bytes the kernel accepted.
    pub bytes: u64,
    /// From the first send to the end of sending.
    pub elapsed: Duration,
    /// Scheduled packet rate (`None` = unlimited).
    pub target_pps: Option<f64>,
    /// Share of due packets not sent by the end (0..1).
    pub behind_ratio: f64,
    /// `behind_ratio` above the 1 % threshold.
    pub generator_limited: bool,
    /// How late packets left against their deadlines.
    pub pacing_error: Option<LatencySummary>,
    /// Round-trip time of echoed probes.
    pub rtt: Option<LatencySummary>,
    /// The raw round-trip histogram.
    pub rtt_histogram: Option<LatencyHistogram>,
    /// Echo replies whose timestamp came from the kernel.
    pub kernel_timestamps: bool,
    /// CPU time of the sending thread.
    pub cpu_time: Duration,
    /// Backend actually used (`udp-sendmmsg`, `udp-gso`).
    pub backend: String,
    /// Send calls that failed (buffer full, peer gone).
    pub send_errors: u64,
    /// Datagrams sent per slot of send time.
    #[serde(default)]
    pub slots: TxSlots,
    /// The send time of the first datagram (the sender's clock).
    #[serde(default)]
    pub first_tx: Option<UnixNanos>,
}

/// What a UDP receiver measured (`kind: udp_rx`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpRxReport {
    /// Stream id.
    pub stream_id: u8,
    /// Received, duplicates, reordered, late, and the numbers missing below the highest
    /// seen (flattened into the report).
    #[serde(flatten)]
    pub counters: Counters,
    /// Payload bytes of unique packets.
    pub bytes: u64,
    /// RFC 3550 jitter, µs.
    pub jitter_us: f64,
    /// One-way latency (when the clocks are shared or synchronised).
    pub latency: Option<LatencySummary>,
    /// The raw one-way histogram.
    pub latency_histogram: Option<LatencyHistogram>,
    /// One-way samples dropped because receive time preceded transmit time.
    pub clock_skew_samples: u64,
    /// Inter-arrival gap percentiles.
    pub gaps: Option<LatencySummary>,
    /// First arrival to last arrival.
    pub active: Duration,
    /// Datagrams of other tests or not wirebench at all.
    pub foreign: u64,
    /// Datagrams echoed back.
    pub echoed: u64,
    /// Receive timestamps came from the kernel.
    pub kernel_timestamps: bool,
    /// `spin` (busy-polling) or `blocking`, and why AF_XDP was not used where asked.
    pub mode: String,
    /// CPU time of the receiving thread.
    pub cpu_time: Duration,
    /// How long the receiving thread ran.
    pub wall_time: Duration,
    /// Unique datagrams received per slot of send time.
    #[serde(default)]
    pub slots: TxSlots,
    /// An AF_XDP receiver's frames as its program, the kernel and it counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub af_xdp_frames: Option<XdpFrameCheck>,
}

/// What a TCP sender did (`kind: tcp_tx`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpTxReport {
    /// Stream id.
    pub stream_id: u8,
    /// Bytes the kernel accepted.
    pub bytes: u64,
    /// First write to the end of sending.
    pub elapsed: Duration,
    /// Retransmitted segments (TCP_INFO).
    pub retransmits: Option<u64>,
    /// Smoothed RTT at the end, µs.
    pub rtt_us: Option<u32>,
    /// Share of scheduled blocks not written (paced tests only).
    pub behind_ratio: f64,
    /// Behind by more than 1 %.
    pub generator_limited: bool,
    /// CPU time of the sending thread.
    pub cpu_time: Duration,
    /// Sent with `sendfile` (zero copy, `-Z`).
    #[serde(default)]
    pub sendfile: bool,
    /// Bytes sent in the warm-up (`-O`), not in `bytes`.
    #[serde(default)]
    pub omitted_bytes: u64,
    /// What the connection put on the wire and retransmitted (TCP_INFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_bytes: Option<TcpBytes>,
}

/// What a TCP receiver measured (`kind: tcp_rx`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpRxReport {
    /// Stream id.
    pub stream_id: u8,
    /// Bytes read.
    pub bytes: u64,
    /// Bytes the first read returned (not timed; excluded from the rate).
    pub first_read_bytes: u64,
    /// From the end of the first read to the end of the last (end of stream).
    pub elapsed: Duration,
    /// CPU time of the receiving thread.
    pub cpu_time: Duration,
    /// Bytes read before this side's warm-up (`-O`) ended, included in `bytes`.
    #[serde(default)]
    pub omitted_bytes: u64,
}

/// One stream's totals at the end of an interval, as [`ServerMsg::Interval`] carries
/// them: one `packets` count, a sender's sent or a receiver's received (the engine's
/// [`LiveSnapshot`] has both; read back, it has this count in both, and a reader takes the
/// one of the stream's side).
///
/// [`ServerMsg::Interval`]: super::ServerMsg::Interval
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveCounts {
    /// Packets sent (a sender) or received (a receiver).
    pub packets: u64,
    /// Payload bytes sent or received.
    pub bytes: u64,
    /// Receiver: numbers not yet seen below the highest seen.
    pub lost: u64,
    /// Receiver: extra copies.
    pub duplicates: u64,
    /// Receiver: packets that came after a higher number.
    pub reordered: u64,
    /// Receiver: current RFC 3550 jitter in nanoseconds.
    pub jitter_ns: u64,
    /// TCP sender: retransmitted segments so far.
    pub retransmits: u64,
    /// TCP sender: the connection's state (absent when unknown).
    #[serde(default, skip_serializing_if = "TcpState::is_empty")]
    pub tcp: TcpState,
    /// Latency samples so far per bucket (absent when the stream measures none).
    #[serde(default, skip_serializing_if = "BucketCounts::is_empty")]
    pub latency: BucketCounts,
}

/// A TCP sender's connection state at one moment, from `TCP_INFO` (all 0 when unknown).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpState {
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// The peer's advertised receive window, bytes.
    pub snd_wnd: u64,
    /// Smoothed round-trip time, µs.
    pub rtt_us: u64,
    /// Round-trip time variation, µs.
    pub rttvar_us: u64,
    /// Path MTU, bytes.
    pub pmtu: u64,
}

impl TcpState {
    /// No reading (not sent).
    pub fn is_empty(&self) -> bool {
        *self == TcpState::default()
    }
}

impl From<UdpSenderReport> for UdpTxReport {
    fn from(r: UdpSenderReport) -> Self {
        let UdpSenderReport {
            stream_id,
            packets,
            bytes,
            elapsed,
            target_pps,
            behind_ratio,
            generator_limited,
            pacing_error,
            rtt,
            rtt_histogram,
            kernel_timestamps,
            cpu_time,
            backend,
            send_errors,
            slots,
            first_tx,
        } = r;
        Self {
            stream_id,
            packets,
            bytes,
            elapsed,
            target_pps,
            behind_ratio,
            generator_limited,
            pacing_error,
            rtt,
            rtt_histogram,
            kernel_timestamps,
            cpu_time,
            backend,
            send_errors,
            slots,
            first_tx,
        }
    }
}

impl From<UdpTxReport> for UdpSenderReport {
    fn from(r: UdpTxReport) -> Self {
        let UdpTxReport {
            stream_id,
            packets,
            bytes,
            elapsed,
            target_pps,
            behind_ratio,
            generator_limited,
            pacing_error,
            rtt,
            rtt_histogram,
            kernel_timestamps,
            cpu_time,
            backend,
            send_errors,
            slots,
            first_tx,
        } = r;
        Self {
            stream_id,
            packets,
            bytes,
            elapsed,
            target_pps,
            behind_ratio,
            generator_limited,
            pacing_error,
            rtt,
            rtt_histogram,
            kernel_timestamps,
            cpu_time,
            backend,
            send_errors,
            slots,
            first_tx,
        }
    }
}

impl From<UdpReceiverReport> for UdpRxReport {
    fn from(r: UdpReceiverReport) -> Self {
        let UdpReceiverReport {
            stream_id,
            counters,
            bytes,
            jitter_us,
            latency,
            latency_histogram,
            clock_skew_samples,
            gaps,
            active,
            foreign,
            echoed,
            kernel_timestamps,
            mode,
            cpu_time,
            wall_time,
            slots,
            af_xdp_frames,
        } = r;
        Self {
            stream_id,
            counters,
            bytes,
            jitter_us,
            latency,
            latency_histogram,
            clock_skew_samples,
            gaps,
            active,
            foreign,
            echoed,
            kernel_timestamps,
            mode,
            cpu_time,
            wall_time,
            slots,
            af_xdp_frames,
        }
    }
}

impl From<UdpRxReport> for UdpReceiverReport {
    fn from(r: UdpRxReport) -> Self {
        let UdpRxReport {
            stream_id,
            counters,
            bytes,
            jitter_us,
            latency,
            latency_histogram,
            clock_skew_samples,
            gaps,
            active,
            foreign,
            echoed,
            kernel_timestamps,
            mode,
            cpu_time,
            wall_time,
            slots,
            af_xdp_frames,
        } = r;
        Self {
            stream_id,
            counters,
            bytes,
            jitter_us,
            latency,
            latency_histogram,
            clock_skew_samples,
            gaps,
            active,
            foreign,
            echoed,
            kernel_timestamps,
            mode,
            cpu_time,
            wall_time,
            slots,
            af_xdp_frames,
        }
    }
}

impl From<TcpSenderReport> for TcpTxReport {
    fn from(r: TcpSenderReport) -> Self {
        let TcpSenderReport {
            stream_id,
            bytes,
            elapsed,
            retransmits,
            rtt_us,
            behind_ratio,
            generator_limited,
            cpu_time,
            sendfile,
            omitted_bytes,
            tcp_bytes,
        } = r;
        Self {
            stream_id,
            bytes,
            elapsed,
            retransmits,
            rtt_us,
            behind_ratio,
            generator_limited,
            cpu_time,
            sendfile,
            omitted_bytes,
            tcp_bytes,
        }
    }
}

impl From<TcpTxReport> for TcpSenderReport {
    fn from(r: TcpTxReport) -> Self {
        let TcpTxReport {
            stream_id,
            bytes,
            elapsed,
            retransmits,
            rtt_us,
            behind_ratio,
            generator_limited,
            cpu_time,
            sendfile,
            omitted_bytes,
            tcp_bytes,
        } = r;
        Self {
            stream_id,
            bytes,
            elapsed,
            retransmits,
            rtt_us,
            behind_ratio,
            generator_limited,
            cpu_time,
            sendfile,
            omitted_bytes,
            tcp_bytes,
        }
    }
}

impl From<TcpReceiverReport> for TcpRxReport {
    fn from(r: TcpReceiverReport) -> Self {
        let TcpReceiverReport {
            stream_id,
            bytes,
            first_read_bytes,
            elapsed,
            cpu_time,
            omitted_bytes,
        } = r;
        Self {
            stream_id,
            bytes,
            first_read_bytes,
            elapsed,
            cpu_time,
            omitted_bytes,
        }
    }
}

impl From<TcpRxReport> for TcpReceiverReport {
    fn from(r: TcpRxReport) -> Self {
        let TcpRxReport {
            stream_id,
            bytes,
            first_read_bytes,
            elapsed,
            cpu_time,
            omitted_bytes,
        } = r;
        Self {
            stream_id,
            bytes,
            first_read_bytes,
            elapsed,
            cpu_time,
            omitted_bytes,
        }
    }
}

impl From<TcpNow> for TcpState {
    fn from(t: TcpNow) -> Self {
        let TcpNow {
            cwnd_bytes,
            snd_wnd,
            rtt_us,
            rttvar_us,
            pmtu,
        } = t;
        Self {
            cwnd_bytes,
            snd_wnd,
            rtt_us,
            rttvar_us,
            pmtu,
        }
    }
}

impl From<TcpState> for TcpNow {
    fn from(t: TcpState) -> Self {
        let TcpState {
            cwnd_bytes,
            snd_wnd,
            rtt_us,
            rttvar_us,
            pmtu,
        } = t;
        Self {
            cwnd_bytes,
            snd_wnd,
            rtt_us,
            rttvar_us,
            pmtu,
        }
    }
}

/// One `packets` count, the larger of sent and received (a side keeps the other at 0);
/// `late` does not travel.
impl From<LiveSnapshot> for LiveCounts {
    fn from(s: LiveSnapshot) -> Self {
        let LiveSnapshot {
            counters,
            bytes,
            jitter_ns,
            retransmits,
            tcp,
            latency,
        } = s;
        Self {
            packets: counters.sent.max(counters.received),
            bytes,
            lost: counters.lost,
            duplicates: counters.duplicates,
            reordered: counters.reordered,
            jitter_ns,
            retransmits,
            tcp: tcp.into(),
            latency,
        }
    }
}

/// The `packets` count as both sent and received; `late` 0.
impl From<LiveCounts> for LiveSnapshot {
    fn from(w: LiveCounts) -> Self {
        Self {
            counters: Counters {
                sent: w.packets,
                received: w.packets,
                lost: w.lost,
                duplicates: w.duplicates,
                reordered: w.reordered,
                late: 0,
            },
            bytes: w.bytes,
            jitter_ns: w.jitter_ns,
            retransmits: w.retransmits,
            tcp: w.tcp.into(),
            latency: w.latency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report goes into the protocol's type and back unchanged.
    #[test]
    fn reports_convert_both_ways_without_loss() {
        let udp = UdpSenderReport {
            stream_id: 3,
            packets: 9,
            backend: "udp-gso".into(),
            first_tx: Some(UnixNanos(5)),
            ..UdpSenderReport::default()
        };
        assert_eq!(UdpSenderReport::from(UdpTxReport::from(udp.clone())), udp);
        let rx = UdpReceiverReport {
            stream_id: 4,
            counters: Counters {
                received: 8,
                late: 1,
                ..Counters::default()
            },
            mode: "af_xdp".into(),
            af_xdp_frames: Some(model::results::XdpFrameCheck {
                redirected: 9,
                read: 8,
                dropped: 1,
            }),
            ..UdpReceiverReport::default()
        };
        assert_eq!(UdpReceiverReport::from(UdpRxReport::from(rx.clone())), rx);
        // and through the wire's JSON
        let json = serde_json::to_string(&UdpRxReport::from(rx.clone())).unwrap();
        assert!(
            json.contains(r#""af_xdp_frames":{"redirected":9,"read":8,"dropped":1}"#),
            "{json}"
        );
        let back: UdpRxReport = serde_json::from_str(&json).unwrap();
        assert_eq!(UdpReceiverReport::from(back), rx);
        let tx = TcpSenderReport {
            stream_id: 1,
            retransmits: Some(2),
            sendfile: true,
            ..TcpSenderReport::default()
        };
        assert_eq!(TcpSenderReport::from(TcpTxReport::from(tx.clone())), tx);
        let trx = TcpReceiverReport {
            stream_id: 2,
            first_read_bytes: 7,
            ..TcpReceiverReport::default()
        };
        assert_eq!(TcpReceiverReport::from(TcpRxReport::from(trx.clone())), trx);
    }

    /// A live snapshot travels with one packet count and no `late`, as version 2 of the
    /// protocol defined it.
    #[test]
    fn live_counts_carry_one_packet_count() {
        let sender = LiveSnapshot {
            counters: Counters {
                sent: 10,
                ..Counters::default()
            },
            bytes: 100,
            tcp: TcpNow {
                cwnd_bytes: 1,
                ..TcpNow::default()
            },
            ..LiveSnapshot::default()
        };
        let w = LiveCounts::from(sender);
        assert_eq!((w.packets, w.tcp.cwnd_bytes), (10, 1));
        let back = LiveSnapshot::from(w);
        assert_eq!((back.counters.sent, back.counters.received), (10, 10));
        let receiver = LiveSnapshot {
            counters: Counters {
                received: 6,
                lost: 2,
                late: 3,
                ..Counters::default()
            },
            ..LiveSnapshot::default()
        };
        let back = LiveSnapshot::from(LiveCounts::from(receiver));
        assert_eq!(
            (
                back.counters.received,
                back.counters.lost,
                back.counters.late
            ),
            (6, 2, 0)
        );
    }
}
