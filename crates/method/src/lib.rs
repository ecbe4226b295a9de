//! Benchmark methodologies as pure logic over a [`Trial`] runner.
//!
//! A method never touches a socket: it asks its `Trial` for "offer this load of this
//! payload for this long" and reads the [`TrialResult`]. Unit tests drive the methods with
//! a simulated device, so their decisions are tested deterministically; the binary plugs
//! in a runner that talks to a real wirebench server.
//!
//! - [`sweep`]: a UDP rate staircase with the FRER report's zero-loss / marginal / loss
//!   classes and the maximum sustained zero-loss rate;
//! - [`blocksize`]: netio-style TCP throughput per write size, each direction measured at
//!   its receiver.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod blocksize;
pub mod rfc2544;
pub mod streams;
pub mod sweep;

use std::time::Duration;

use model::spec::{Direction, Protocol, Rate};

/// One trial a method asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialRequest {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// Client-to-server (`Forward`) or server-to-client (`Reverse`).
    pub direction: Direction,
    /// Offered load.
    pub rate: Rate,
    /// Payload bytes per datagram or write.
    pub len: usize,
    /// Trial length.
    pub duration: Duration,
}

/// What a trial measured. Values that the trial could not measure are `None`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrialResult {
    /// Rate the sender actually offered, bits/s of payload.
    pub offered_bps: Option<f64>,
    /// Rate that arrived, bits/s of payload.
    pub received_bps: Option<f64>,
    /// Packets sent (UDP).
    pub sent_packets: Option<u64>,
    /// Packets lost (UDP).
    pub lost_packets: Option<u64>,
    /// How long the trial sent.
    pub duration: Duration,
    /// The sender could not keep its schedule.
    pub generator_limited: bool,
}

/// Something that can run trials: a real client, or a simulated device in tests.
pub trait Trial {
    /// Why a trial could not run at all.
    type Error;
    /// Runs one trial.
    fn run(&mut self, req: &TrialRequest) -> Result<TrialResult, Self::Error>;
}

/// Errors of a method's plan (before any trial runs).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A rate range that is empty or not positive.
    #[error("bad rate range: {0}")]
    Range(String),
    /// More steps than a sweep allows.
    #[error("{steps} steps is more than the {max} a sweep allows; use a larger --step")]
    TooManySteps {
        /// Steps asked for.
        steps: usize,
        /// The cap.
        max: usize,
    },
    /// An empty or invalid list of sizes.
    #[error("bad sizes: {0}")]
    Sizes(String),
}

#[cfg(test)]
pub(crate) mod test_device {
    //! A simulated device under test: a capacity, a generator ceiling and a per-write cost.
    use super::*;

    pub(crate) struct Device {
        capacity_bps: f64,
        generator_max_bps: f64,
        write_cost: Duration,
        pub(crate) log: Vec<TrialRequest>,
    }

    impl Device {
        pub(crate) fn new(capacity_bps: f64, generator_max_bps: f64) -> Self {
            Self {
                capacity_bps,
                generator_max_bps,
                write_cost: Duration::ZERO,
                log: Vec::new(),
            }
        }

        pub(crate) fn with_write_cost(mut self, c: Duration) -> Self {
            self.write_cost = c;
            self
        }
    }

    impl Trial for Device {
        type Error = std::convert::Infallible;

        fn run(&mut self, req: &TrialRequest) -> Result<TrialResult, Self::Error> {
            self.log.push(req.clone());
            let secs = req.duration.as_secs_f64();
            let bits_per_write = req.len as f64 * 8.0;
            // The writer's own ceiling: each write costs `write_cost`.
            let write_ceiling = if self.write_cost.is_zero() {
                f64::INFINITY
            } else {
                bits_per_write / self.write_cost.as_secs_f64()
            };
            let asked = req.rate.bits_per_sec(req.len).unwrap_or(f64::INFINITY);
            let offered = asked.min(self.generator_max_bps).min(write_ceiling);
            let received = offered.min(self.capacity_bps);
            let sent = (offered * secs / bits_per_write).round() as u64;
            let got = (received * secs / bits_per_write).round() as u64;
            Ok(TrialResult {
                offered_bps: Some(offered),
                received_bps: Some(received),
                sent_packets: Some(sent),
                lost_packets: Some(sent - got),
                duration: req.duration,
                generator_limited: offered < asked * 0.99,
            })
        }
    }
}
