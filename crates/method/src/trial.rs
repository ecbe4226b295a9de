//! The one Trial family: what a methodology asks of the network and what it gets back.
//!
//! A method never touches a socket. It asks a [`Trial`] runner for "offer this load of
//! this size for this long" ([`TrialRequest`]) and reads the [`TrialData`] it returns: the
//! runner's counts, rates and latency histogram, nothing assembled or encoded. Runners are
//! a wirebench server over TCP/UDP, two raw ports, or a simulated device in tests.
//! [`Dut`] changes a device's configured rate between trials. (A multi-stream profile
//! runs through `streams::StreamsTrial`, one [`TrialData`] per stream.)

use std::time::Duration;

use model::spec::{Direction, Protocol, Rate};
use model::stats::{Counters, LatencyHistogram};

/// Ethernet, IPv4, UDP headers and the FCS around a UDP payload: a frame of L bytes is a
/// datagram of L − 46 bytes of payload.
pub const UDP_FRAME_OVERHEAD: u64 = 46;

/// What one packet of a trial is, as the method counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// A datagram or write of this many payload bytes (iperf3's `-l`).
    Payload(usize),
    /// An Ethernet frame of this many bytes, FCS included (RFC 2544 §9).
    Frame(u64),
}

/// How much a trial offers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// A constant rate (bits/s of payload, packets/s, or unlimited) for a duration.
    Rate(Rate, Duration),
    /// A burst of this many frames at line rate (minimum gap), from idle.
    Burst(u64),
}

/// One trial a method asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialRequest {
    /// TCP or UDP (socket runners; raw ports send the frames of their template).
    pub protocol: Protocol,
    /// Client to server (`Forward`) or back (`Reverse`).
    pub direction: Direction,
    /// What one packet is.
    pub size: Size,
    /// The load.
    pub load: Load,
    /// Tag packets with transmit timestamps and return a latency histogram.
    pub latency: bool,
}

impl TrialRequest {
    /// Packets of `len` payload bytes at `rate` for `duration`.
    pub fn payload(
        protocol: Protocol,
        direction: Direction,
        len: usize,
        rate: Rate,
        duration: Duration,
    ) -> Self {
        Self {
            protocol,
            direction,
            size: Size::Payload(len),
            load: Load::Rate(rate, duration),
            latency: false,
        }
    }

    /// Frames of `len` bytes at `fps` frames per second for `duration`.
    pub fn frames(len: u64, fps: f64, duration: Duration) -> Self {
        Self {
            protocol: Protocol::Udp,
            direction: Direction::Forward,
            size: Size::Frame(len),
            load: Load::Rate(Rate::PacketsPerSec(fps), duration),
            latency: false,
        }
    }

    /// A line-rate burst of `frames` frames of `len` bytes.
    pub fn burst(len: u64, frames: u64) -> Self {
        Self {
            load: Load::Burst(frames),
            ..Self::frames(len, 0.0, Duration::ZERO)
        }
    }

    /// The same, with transmit timestamps and a latency histogram.
    pub fn with_latency(self) -> Self {
        Self {
            latency: true,
            ..self
        }
    }

    /// The frame size, for a frame trial.
    pub fn frame_len(&self) -> Option<u64> {
        match self.size {
            Size::Frame(l) => Some(l),
            Size::Payload(_) => None,
        }
    }

    /// How long the load lasts (0 for a burst).
    pub fn duration(&self) -> Duration {
        match self.load {
            Load::Rate(_, d) => d,
            Load::Burst(_) => Duration::ZERO,
        }
    }
}

/// What a trial measured. A value the runner could not measure is `None` (rates, the
/// receive span, latency) or 0 (counts of a protocol that has none, e.g. TCP packets).
#[derive(Debug, Clone, Default)]
pub struct TrialData {
    /// Packets (or frames) sent and, settled, what the receiver counted of them.
    pub counters: Counters,
    /// Bytes of the received packets as the receiver counts them (payload, or frames
    /// without their FCS).
    pub received_bytes: u64,
    /// What the sender actually offered, bits/s of payload.
    pub offered_bps: Option<f64>,
    /// What arrived, bits/s of payload.
    pub received_bps: Option<f64>,
    /// Packets (frames) per second actually offered.
    pub offered_pps: f64,
    /// How long the sender sent.
    pub duration: Duration,
    /// From the first to the last arrival (a shaper's queue delivers after the sender
    /// stopped), when the receiver stamps arrivals.
    pub rx_span: Option<Duration>,
    /// The sender could not keep its schedule (or a burst fell short of line rate).
    pub generator_limited: bool,
    /// Latency of the received packets, when asked for.
    pub latency: Option<LatencyHistogram>,
    /// The send/receive path that produced it (`udp-gso`, `xdp / ring`, ...).
    pub backend: Option<String>,
    /// Where latency stamps came from (`kernel-software`, `user`).
    pub timestamp_source: Option<String>,
    /// Sender CPU, % of one core (data-plane threads), when the sender measured it.
    pub sender_cpu: Option<f64>,
    /// Receiver CPU, % of one core (data-plane threads), when the receiver measured it.
    pub receiver_cpu: Option<f64>,
}

impl TrialData {
    /// `(sent − received) / sent`; 0 for a trial that sent nothing.
    pub fn loss_ratio(&self) -> f64 {
        let c = &self.counters;
        if c.sent == 0 {
            0.0
        } else {
            c.sent.saturating_sub(c.received) as f64 / c.sent as f64
        }
    }
}

/// Something that runs trials: a wirebench server, two raw ports, a simulated device.
pub trait Trial {
    /// Why a trial could not run at all.
    type Error;
    /// Runs one trial.
    fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Self::Error>;
}

/// A device under test whose rate a method sets (a shaper's class).
pub trait Dut {
    /// Why the rate could not be set.
    type Error;
    /// Configures `bps` (bits/s) on the device.
    fn set_bandwidth(&mut self, bps: f64) -> Result<(), Self::Error>;
    /// How the rate is set, for the report (`lab s1 shaper class 1:10`, a command).
    fn describe(&self) -> String;
    /// Waits until the device holds no frames of the previous trial (a shaper's queue is
    /// read, not guessed) and says how long that took; `None` when it cannot be read.
    fn drain(&mut self) -> Result<Option<Duration>, Self::Error> {
        Ok(None)
    }
    /// Puts back the rate the device had before the method changed it.
    fn restore(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
