//! The test methods: every command that produces one result document and that a plan can
//! hold (`client`, `sweep`, `rfc2544`, ...). A method is one module that implements
//! [`Method`] once, and one line in [`ALL`]; everything else reaches it through that
//! trait:
//!
//! - a plan's `kind` is a method's [`Method::kind`], and what the plan needs to know
//!   about it (does it talk to a server, need root, name hosts; its command line against
//!   the plan's target) comes from the same implementation;
//! - [`run`] runs any request through [`Method::run`] and records the
//!   interfaces of [`Method::sides`];
//! - thresholds ([`crate::verdicts`]) take the metric names of [`Method::thresholds`],
//!   and `wirebench compare` the figures of [`Method::figures`], so a method that
//!   measures something can be checked and compared by construction;
//! - the binary prints [`Method::text`], stops on signals as [`Method::on_signal`] says
//!   and exits with 3 when a verdict failed and [`Method::failed_verdict`] names it.
//!
//! A request is typed inside its method ([`Method::Request`]) and travels as a
//! [`TestRequest`], which knows its method.
//!
//! A method's command-line arguments are its [`Method::Args`], a clap struct in its module
//! (the ones several share are in [`args`]); [`Method::request`] turns them into its
//! request. The binary's command line and a plan's test `args` go through the same two.
//!
//! What it does not do: lay out the campaign report's sections (`report` does, from the
//! results model).

pub mod args;
pub mod blocksize;
pub mod client;
pub mod frer_compare;
pub mod latency;
pub mod mesh;
pub mod nicmatrix;
pub mod rfc2544;
pub mod rfc2889;
pub mod rfc6349;
pub mod rrul;
pub mod shaping;
pub mod shared;
pub mod streams;
pub mod sweep;
pub mod y1564;

mod method;
mod registry;

pub use method::{Argv, Hosts, Method, OnSignal, Registered, TestRequest, ThresholdMetric};
pub use registry::{figures, find, run, Methods, ALL};

#[cfg(test)]
mod test;
