//! wirebench's pure core: the data every layer fills and the arithmetic on it.
//!
//! - [`results`]: the results model (schema `wirebench.result/1` and `wirebench.campaign/1`),
//!   plain serde data that the engine, the methods and the runner fill and the reports only
//!   read;
//! - [`spec`]: what a test asks for (protocol, rate, payload, streams, direction);
//! - [`units`]: the one parser of the units people type (rates, sizes, frame loads, times);
//! - [`stats`]: exact per-stream accounting (one [`stats::Counters`] struct that the others
//!   embed), RFC 3550 jitter, HDR latency histograms and their V2 + deflate encoding;
//! - [`pacing`]: absolute packet schedules and the sans-I/O pacer;
//! - [`clock`]: the `Clock` trait, realtime timestamps and a virtual clock for tests;
//! - [`stop`]: the stop token passed down to everything that should end on a stop;
//! - [`wait`]: the one waiting loop (poll, pause on a clock, until a deadline or a stop);
//! - [`time`]: RFC 3339 formatting.
//!
//! What it does not do: no sockets, no files, no clock reads, no threads (STYLE §1: time and
//! bytes are inputs). `RunResult::new` takes the start time and the environment as
//! arguments; `engine::env` reads them.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod clock;
pub mod pacing;
pub mod results;
pub mod spec;
pub mod stats;
pub mod stop;
pub mod time;
pub mod units;
pub mod wait;
