//! Running a request: each job takes its typed request, runs it in this process and gives
//! the result document (`wirebench.result/1`). Jobs do not print: progress and interval
//! rows go to a [`Watch`]; verdicts are in the document.

mod frames;
mod frer;
mod mesh;
mod nic;
mod record;
mod rfc2544;
mod rrul;
mod socket;
mod streams;

pub use frames::{analyze, gen};
pub(crate) use frer::estimate as frer_compare_estimate;
pub use frer::{frer_compare, relays};
pub use mesh::mesh;
pub use nic::nic_matrix;
pub(crate) use record::{recorded, server_side};
pub(crate) use rfc2544::estimate as rfc2544_estimate;
pub use rfc2544::rfc2544;
pub use rrul::rrul;
pub use socket::{blocksize, client, latency, sweep};
pub use streams::{shaping, streams};
