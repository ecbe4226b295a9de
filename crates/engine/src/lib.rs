//! The wirebench data plane.
//!
//! Pure parts (no I/O, time passed in, tested with a virtual clock):
//! - [`clock`]: the `Clock` trait, a real clock and a virtual clock for tests;
//! - [`pacing`]: absolute packet schedules (packet n is due at t0 + n/rate) and pacing-error stats;
//! - [`stats`]: exact per-stream loss / duplicate / reorder accounting, RFC 3550 jitter, HDR histograms;
//! - [`spec`]: what a test asks for; [`results`]: the results model every renderer reads.
//!
//! I/O parts, each run on a dedicated OS thread (no async on the hot path):
//! - [`udp`]: paced UDP sender (`sendmmsg` or GSO) and accounting receiver with kernel timestamps;
//! - [`frameio`]: whole Ethernet frames over `AF_PACKET` (batched send/receive);
//! - [`tcp`]: block writer and byte-counting reader with `TCP_INFO`;
//! - [`live`]: lock-free counters the data threads publish and the controller samples;
//! - [`sys`]: the only module with `unsafe` (batch syscalls, cmsg, socket options).
//!
//! The engine does not know about the control protocol, clients or servers: callers hand
//! it connected sockets and a stop flag.
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

pub mod clock;
pub mod env;
pub mod frameio;
pub mod live;
pub mod multi;
pub mod pacing;
pub mod raw;
pub mod results;
pub mod spec;
pub mod stats;
pub mod sys;
pub mod tcp;
pub mod udp;
