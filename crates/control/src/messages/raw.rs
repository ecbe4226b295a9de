//! The raw-port payloads of [`ClientMsg::RawStreams`](super::ClientMsg::RawStreams) and
//! [`ServerMsg::RawStreamsSent`](super::ServerMsg::RawStreamsSent): a stream a lent port is
//! to send, and what it sent.
//!
//! Data only, as the rest of [`super`]: how a port builds and checks these streams is
//! [`crate::rawport`]'s.

use std::time::Duration;

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
