//! The runners the methods' trials run on, one file per kind of device:
//!
//! - `server.rs`: a wirebench server ([`ServerTrial`]): a trial is one test of the control
//!   protocol; also how to reach a server ([`client_config`]) and a test's defaults;
//! - `raw.rs`: two raw ports ([`RawTrial`]), of this host or lent by servers;
//! - `agents.rs`: the servers that lend their raw ports (`HOST/IFACE`, [`Agents`]);
//! - `shaper.rs`: a shaper whose rate a method sets between trials ([`ShaperDut`]);
//! - `streams.rs`: every stream of a profile at once ([`StreamsRun`], given in
//!   `streams_run.rs` with its streams' rules), with its ends and frames in
//!   `streams_ends.rs`.
//!
//! Each returns the method's trial data directly from what the engine and the control
//! client measured. Where a runner meets I/O there is one narrow seam ([`TestServer`] for a
//! server's session, the engine's `FrameTx`/`FrameRx` and a lent port's session for raw
//! ports, `lab::Runner` for the shaper's commands), so that the unit tests beside each
//! runner drive it over fakes, without root.
//!
//! What it does not do: choose loads or judge results (the methods in `method` do), or
//! build the frames' addresses from interfaces (`crate::frames` does).

mod agents;
mod raw;
mod server;
mod shaper;
mod streams;
mod streams_ends;
mod streams_run;

#[cfg(test)]
pub(crate) mod fakes;

pub use crate::request::Agents;
pub use raw::RawTrial;
pub use server::{
    base_spec, client_config, client_config_with, ServerOutcome, ServerTrial, TestServer,
    UDP_FRAME_OVERHEAD,
};
pub use shaper::ShaperDut;
pub use streams_run::{check_server_stream, server_of, StreamsRun};
