//! The raw-port payloads: how a lent port is to send one stream
//! ([`ClientMsg::RawSend`](super::ClientMsg::RawSend)'s [`RawSendLoad`]) or several
//! ([`ClientMsg::RawStreams`](super::ClientMsg::RawStreams)' [`RawStream`]), and what it
//! sent ([`RawSending`], [`RawStreamSent`]), counted ([`RawReception`]) or reflected
//! ([`RawReflected`]).
//!
//! These are the protocol's own types, converted with `From` (both ways) from and to the
//! engine's where a port hands its figures over, so that a change in the engine cannot
//! change the wire unnoticed (the golden tests of [`super`] pin their JSON). The figures
//! inside them that belong to the results model (counters, latency, timestamps) are
//! `model`'s.
//!
//! Data only, as the rest of [`super`]: how a port builds and checks these streams is
//! [`crate::rawport`]'s.

use std::time::Duration;

use engine::raw::{RawLoad, ReceivedStream, Reception, Reflected, Sending};
use model::clock::UnixNanos;
use model::stats::histogram::{LatencyHistogram, LatencySummary};
use model::stats::Counters;

/// One stream of a [`ClientMsg::RawStreams`](super::ClientMsg::RawStreams): an example
/// frame (the port builds its own of each size from its headers), the sizes and their
/// order, the rate and when it runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RawStream {
    /// Stream id (unique in the test).
    pub stream_id: u8,
    /// A frame of the stream, hex: its headers are taken, its length and test header not.
    pub frame: String,
    /// The stream's frame sizes with FCS, each once.
    pub sizes: Vec<u64>,
    /// Frame n has size `sizes[pattern[n % len]]`.
    pub pattern: Vec<u16>,
    /// Frames per second.
    pub pps: f64,
    /// Seconds after the streams' start when it starts.
    pub start_s: f64,
    /// ... and when it stops.
    pub stop_s: f64,
}

/// What one stream of a [`ClientMsg::RawStreams`](super::ClientMsg::RawStreams) sent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RawStreamSent {
    /// Stream id.
    pub stream_id: u8,
    /// Frames sent.
    pub sent: u64,
    /// Their bytes (no FCS).
    pub bytes: u64,
    /// Seconds from its start to its stop (or to when it was stopped).
    pub active_s: f64,
    /// Share of its schedule it was behind at the end.
    pub behind_ratio: f64,
    /// It fell behind its schedule.
    pub generator_limited: bool,
}

impl From<engine::multi::StreamSent> for RawStreamSent {
    fn from(x: engine::multi::StreamSent) -> Self {
        Self {
            stream_id: x.stream_id,
            sent: x.sent,
            bytes: x.bytes,
            active_s: x.active.as_secs_f64(),
            behind_ratio: x.behind_ratio,
            generator_limited: x.generator_limited,
        }
    }
}

impl RawStreamSent {
    /// As the engine reports a local stream (no slots: no interval rows).
    pub fn into_sent(self) -> engine::multi::StreamSent {
        engine::multi::StreamSent {
            stream_id: self.stream_id,
            sent: self.sent,
            bytes: self.bytes,
            active: Duration::from_secs_f64(self.active_s.clamp(0.0, 1e9)),
            behind_ratio: self.behind_ratio,
            generator_limited: self.generator_limited,
            slots: Default::default(),
        }
    }
}

/// What one [`ClientMsg::RawSend`](super::ClientMsg::RawSend) sends.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RawSendLoad {
    /// `pps` frames per second for `duration` (or until `count` frames, if given).
    Rate {
        /// Frames per second.
        pps: f64,
        /// How long at most.
        duration: Duration,
        /// How many frames at most.
        count: Option<u64>,
    },
    /// `frames` frames back to back, as fast as the backend takes them; `target_pps` is the
    /// line rate the burst should reach (to tell whether the generator kept up).
    Burst {
        /// Burst length.
        frames: u64,
        /// Line rate for this frame size, frames/s.
        target_pps: f64,
    },
}

impl From<RawLoad> for RawSendLoad {
    fn from(l: RawLoad) -> Self {
        match l {
            RawLoad::Rate {
                pps,
                duration,
                count,
            } => Self::Rate {
                pps,
                duration,
                count,
            },
            RawLoad::Burst { frames, target_pps } => Self::Burst { frames, target_pps },
        }
    }
}

impl From<RawSendLoad> for RawLoad {
    fn from(l: RawSendLoad) -> Self {
        match l {
            RawSendLoad::Rate {
                pps,
                duration,
                count,
            } => Self::Rate {
                pps,
                duration,
                count,
            },
            RawSendLoad::Burst { frames, target_pps } => Self::Burst { frames, target_pps },
        }
    }
}

/// What a lent port's sender sent of one [`ClientMsg::RawSend`](super::ClientMsg::RawSend)
/// (its receiver runs elsewhere).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RawSending {
    /// Frames the backend took.
    pub sent: u64,
    /// From the first to the last frame sent.
    pub elapsed: Duration,
    /// Frames/s actually offered.
    pub offered_pps: f64,
    /// The generator fell behind its schedule.
    pub generator_limited: bool,
    /// Share of the schedule it was behind at the end.
    pub behind_ratio: f64,
    /// Lateness of frames against their schedule.
    pub pacing_error: Option<LatencySummary>,
    /// Batches the backend refused.
    pub send_errors: u64,
    /// The generator's CPU time.
    pub tx_cpu: Duration,
    /// The wall clock when the generator started.
    pub t0_wall: UnixNanos,
}

impl From<Sending> for RawSending {
    fn from(s: Sending) -> Self {
        let Sending {
            sent,
            elapsed,
            offered_pps,
            generator_limited,
            behind_ratio,
            pacing_error,
            send_errors,
            tx_cpu,
            t0_wall,
        } = s;
        Self {
            sent,
            elapsed,
            offered_pps,
            generator_limited,
            behind_ratio,
            pacing_error,
            send_errors,
            tx_cpu,
            t0_wall,
        }
    }
}

impl From<RawSending> for Sending {
    fn from(s: RawSending) -> Self {
        let RawSending {
            sent,
            elapsed,
            offered_pps,
            generator_limited,
            behind_ratio,
            pacing_error,
            send_errors,
            tx_cpu,
            t0_wall,
        } = s;
        Self {
            sent,
            elapsed,
            offered_pps,
            generator_limited,
            behind_ratio,
            pacing_error,
            send_errors,
            tx_cpu,
            t0_wall,
        }
    }
}

/// What a lent port's receiver counted of a trial's streams (their sender runs
/// elsewhere).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RawReception {
    /// Per stream id: what arrived.
    pub streams: Vec<RawReceivedStream>,
    /// Per stream id, what arrived of the test's other streams (flooded here, or addressed
    /// elsewhere). Since version 10.
    pub strays: Vec<RawReceivedStream>,
    /// Frames not of this test.
    pub foreign: u64,
    /// Frames the receive socket's kernel buffer dropped.
    pub drops: u64,
}

/// What arrived of one stream (its counters not yet settled against what was sent).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RawReceivedStream {
    /// Stream id.
    pub id: u8,
    /// Received, duplicates, reordered, late.
    pub counters: Counters,
    /// Bytes of the distinct frames (without FCS).
    pub bytes: u64,
    /// Transmit-to-receive latency of the distinct frames with a receive stamp.
    pub latency: LatencyHistogram,
    /// Distinct frames without a receive stamp.
    pub unstamped: u64,
    /// First and last receive stamp.
    pub span: Option<(UnixNanos, UnixNanos)>,
}

impl From<ReceivedStream> for RawReceivedStream {
    fn from(r: ReceivedStream) -> Self {
        let ReceivedStream {
            id,
            counters,
            bytes,
            latency,
            unstamped,
            span,
        } = r;
        Self {
            id,
            counters,
            bytes,
            latency,
            unstamped,
            span,
        }
    }
}

impl From<RawReceivedStream> for ReceivedStream {
    fn from(r: RawReceivedStream) -> Self {
        let RawReceivedStream {
            id,
            counters,
            bytes,
            latency,
            unstamped,
            span,
        } = r;
        Self {
            id,
            counters,
            bytes,
            latency,
            unstamped,
            span,
        }
    }
}

impl From<Reception> for RawReception {
    fn from(r: Reception) -> Self {
        let Reception {
            streams,
            strays,
            foreign,
            drops,
        } = r;
        Self {
            streams: streams.into_iter().map(Into::into).collect(),
            strays: strays.into_iter().map(Into::into).collect(),
            foreign,
            drops,
        }
    }
}

impl From<RawReception> for Reception {
    fn from(r: RawReception) -> Self {
        let RawReception {
            streams,
            strays,
            foreign,
            drops,
        } = r;
        Self {
            streams: streams.into_iter().map(Into::into).collect(),
            strays: strays.into_iter().map(Into::into).collect(),
            foreign,
            drops,
        }
    }
}

/// What a lent port's reflector did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RawReflected {
    /// Frames of the test turned around and handed back to the port.
    pub reflected: u64,
    /// Frames of the test the port did not take back (its queue full, a send error).
    pub not_sent: u64,
    /// Other frames (not of the test, or not over IP), left alone.
    pub foreign: u64,
    /// Frames the port's receive buffer dropped before the reflector read them.
    pub rx_drops: u64,
    /// Batches the port's sender refused.
    #[serde(default)]
    pub send_errors: u64,
}

impl From<Reflected> for RawReflected {
    fn from(r: Reflected) -> Self {
        let Reflected {
            reflected,
            not_sent,
            foreign,
            rx_drops,
            send_errors,
        } = r;
        Self {
            reflected,
            not_sent,
            foreign,
            rx_drops,
            send_errors,
        }
    }
}

impl From<RawReflected> for Reflected {
    fn from(r: RawReflected) -> Self {
        let RawReflected {
            reflected,
            not_sent,
            foreign,
            rx_drops,
            send_errors,
        } = r;
        Self {
            reflected,
            not_sent,
            foreign,
            rx_drops,
            send_errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw payloads go into the protocol's types and back unchanged.
    #[test]
    fn raw_payloads_convert_both_ways_without_loss() {
        for load in [
            RawLoad::Rate {
                pps: 10.0,
                duration: Duration::from_millis(5),
                count: Some(3),
            },
            RawLoad::Burst {
                frames: 4,
                target_pps: 1e6,
            },
        ] {
            assert_eq!(RawLoad::from(RawSendLoad::from(load)), load);
        }
        let sending = Sending {
            sent: 5,
            offered_pps: 2.5,
            t0_wall: UnixNanos(9),
            ..Sending::default()
        };
        assert_eq!(Sending::from(RawSending::from(sending.clone())), sending);
        let mut latency = LatencyHistogram::new();
        latency.record_ns(1_000);
        let stream = ReceivedStream {
            id: 2,
            counters: Counters {
                received: 7,
                ..Counters::default()
            },
            bytes: 70,
            latency,
            unstamped: 1,
            span: Some((UnixNanos(1), UnixNanos(2))),
        };
        let reception = Reception {
            strays: vec![ReceivedStream {
                id: 5,
                bytes: 7,
                ..stream.clone()
            }],
            streams: vec![stream],
            foreign: 3,
            drops: 4,
        };
        assert_eq!(
            Reception::from(RawReception::from(reception.clone())),
            reception
        );
        let reflected = Reflected {
            reflected: 1,
            not_sent: 2,
            foreign: 3,
            rx_drops: 4,
            send_errors: 5,
        };
        assert_eq!(Reflected::from(RawReflected::from(reflected)), reflected);
    }
}
