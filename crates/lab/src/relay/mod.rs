//! The software FRER relay (IEEE 802.1CB): a managed lab process, or a standalone one
//! (`wirebench frer relay`), that replicates streams onto several ports with an R-TAG and
//! eliminates the duplicates arriving from several ports, with every 802.1CB counter.
//!
//! - [`config`]: what the user writes (TOML) or the lab hands over (JSON): streams,
//!   their identification and the ports that replicate or eliminate them.
//! - [`flags`]: the same for one stream from command-line flags.
//! - [`options`]: a lab relay pair's settings (`--frer`, a topology file's `frer`).
//! - [`core`]: the per-frame decisions, pure (the `frer` crate does the 802.1CB parts).
//! - [`fast`]: the kernel fast path (`bpf/frer.c` on every port), filled from the same
//!   configuration and read back into the same counters.
//! - [`process`]: the AF_PACKET loop and the state file `wirebench frer stats` reads.
//! - [`state`]: finding running relays by their state files, and what their counters
//!   say about a test: one delta between two snapshots, the per-path figures and the merge
//!   relay's frames per frame delivered.
//!
//! It does not do HSR or PRP tags, autoconfiguration (7.11) or stream identification by
//! source MAC; it runs on one thread (a few hundred thousand frames per second).

pub mod config;
pub mod core;
pub mod fast;
pub mod flags;
pub mod options;
pub mod process;
pub mod state;
