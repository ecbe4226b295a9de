//! Running a request: each job takes its typed request, runs it in this process and gives
//! the result document (`wirebench.result/1`). Jobs do not print: progress and interval
//! rows go to a [`Watch`]; verdicts are in the document.

mod frames;
mod frer;
mod rfc2544;
mod socket;
mod streams;

pub use frames::{analyze, gen};
pub use frer::{frer_compare, relays};
pub use rfc2544::rfc2544;
pub use socket::{blocksize, client, latency, sweep};
pub use streams::{shaping, streams};

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use model::results::RunResult;

use crate::request::TestRequest;
use crate::{Error, Watch};

/// Runs any test a plan can hold.
///
/// # Errors
/// The job's.
pub fn run(
    req: &TestRequest,
    watch: &mut dyn Watch,
    stop: &Arc<AtomicBool>,
) -> Result<RunResult, Error> {
    match req {
        TestRequest::Client(r) => client(r, watch, stop),
        TestRequest::Sweep(r) => sweep(r, watch, stop),
        TestRequest::Blocksize(r) => blocksize(r, stop),
        TestRequest::Latency(r) => latency(r, stop),
        TestRequest::Rfc2544(r) => rfc2544(r, watch, stop),
        TestRequest::Streams(r) => streams(r, watch, stop),
        TestRequest::Shaping(r) => shaping(r, watch, stop),
        TestRequest::FrerCompare(r) => frer_compare(r, watch, stop),
    }
}
