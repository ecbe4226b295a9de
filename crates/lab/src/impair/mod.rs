//! The impairment stage: what a netem qdisc would do (this kernel has none): in user space,
//! or for loss, duplication and rate in the kernel.
//!
//! - [`model`]: the per-frame decisions and counters, pure and driven by a virtual clock in
//!   tests.
//! - [`spec`]: the TOML / inline form users write (`loss = "1%"`, `delay = "5ms"`, ...).
//! - [`stage`]: the forwarding loop between two interfaces over AF_PACKET, run by
//!   `wirebench lab` as a managed background process in a lab node.
//! - [`fast`]: the kernel fast path (`bpf/impair.c`) the stage uses when nothing holds
//!   frames back.

pub mod fast;
pub mod model;
pub mod spec;
pub mod stage;
