//! wirebench's command line: [`args`] holds the clap definitions (syntax and per-value
//! checks), [`requests`] turns them into the campaign's typed requests. A plan's tests go
//! through the same two, so a flag means the same on a terminal and in a plan.
//!
//! It does not run anything: the binary runs the requests.

pub mod args;
pub mod requests;
