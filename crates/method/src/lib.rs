//! Benchmark methodologies as pure logic over one Trial family ([`trial`]).
//!
//! A method never touches a socket: it asks its runner for "offer this load of this size
//! for this long" and reads what came back. Unit tests drive every method with a
//! simulated device (known capacity, seeded loss), so decisions are tested
//! deterministically; the `campaign` crate plugs in runners over a wirebench server, raw
//! ports and a lab's shaper.
//!
//! - [`sweep`]: a UDP rate staircase with the FRER report's zero-loss / marginal / loss
//!   classes and the maximum sustained zero-loss rate;
//! - [`blocksize`]: netio-style TCP throughput per write size, each direction measured at
//!   its receiver;
//! - [`nicmatrix`]: the MTU x feature combinations of a NIC review and the best MTU;
//! - [`rfc2544`]: throughput (binary search, MLRsearch), latency, frame loss rate and
//!   back-to-back per frame size;
//! - [`streams`]: multi-stream profiles (SmartBits style) and their table;
//! - [`shaping`]: the shaper accuracy matrix (passed rate per frame size and bandwidth);
//! - [`overhead`]: the cost of FRER against a control group;
//! - [`rrul`]: latency under load, idle pings against loaded ones;
//! - [`mesh`]: the order of a mesh's tests between every ordered pair of hosts;
//! - [`rfc2889`]: RFC 2889's traffic patterns over N switch ports, each port's forwarding
//!   rate, loss and flood count, head-of-line blocking, and the address searches;
//! - [`rfc6349`]: RFC 6349's path MTU search, baseline RTT, bottleneck bandwidth, BDP and
//!   windows, and its three metrics;
//! - [`y1564`]: Y.1564's EMIX sizes, configuration test steps, their verdicts against the
//!   service acceptance criteria, and availability;
//! - [`rehearsal`]: a method's time, from the trials it asks of a stand-in device.
//!
//! What it does not do: no I/O, no clock, no threads, no printing.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod blocksize;
pub mod mesh;
pub mod nicmatrix;
pub mod overhead;
pub mod rehearsal;
pub mod rfc2544;
pub mod rfc2889;
pub mod rfc6349;
pub mod rrul;
pub mod shaping;
pub mod streams;
pub mod sweep;
pub mod trial;
pub mod y1564;

pub use streams::{StreamsData, StreamsTrial};
pub use trial::{Dut, Load, Size, Trial, TrialData, TrialRequest};

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
    use std::time::Duration;

    use model::stats::Counters;

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

        fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Self::Error> {
            self.log.push(*req);
            let (Size::Payload(len), Load::Rate(rate, duration)) = (req.size, req.load) else {
                unreachable!("the simulated host runs payload trials at a rate")
            };
            let secs = duration.as_secs_f64();
            let bits_per_write = len as f64 * 8.0;
            // The writer's own ceiling: each write costs `write_cost`.
            let write_ceiling = if self.write_cost.is_zero() {
                f64::INFINITY
            } else {
                bits_per_write / self.write_cost.as_secs_f64()
            };
            let asked = rate.bits_per_sec(len).unwrap_or(f64::INFINITY);
            let offered = asked.min(self.generator_max_bps).min(write_ceiling);
            let received = offered.min(self.capacity_bps);
            let sent = (offered * secs / bits_per_write).round() as u64;
            let got = (received * secs / bits_per_write).round() as u64;
            Ok(TrialData {
                counters: Counters {
                    received: got,
                    ..Counters::default()
                }
                .settle(sent),
                offered_bps: Some(offered),
                received_bps: Some(received),
                duration,
                generator_limited: offered < asked * 0.99,
                ..TrialData::default()
            })
        }
    }
}
