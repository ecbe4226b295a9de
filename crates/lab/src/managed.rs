//! What the lab's managed processes (impairment stages, FRER relays) share: where their
//! state files and logs live, and how a loop hands a batch of frames to a socket without
//! dying on a refused frame. Their state files are written by the project's one file
//! writer, [`engine::files`].

use std::io;
use std::path::{Path, PathBuf};

use engine::frameio::PacketSocket;
use engine::sys::SendBatch;
use serde::Deserialize;

/// The parent of every lab's run directory.
pub const RUN_ROOT: &str = "/run/wirebench/labs";

/// Where a lab keeps its managed processes' state and logs: `/run/wirebench/labs/LAB`.
pub fn run_dir(lab: &str) -> PathBuf {
    Path::new(RUN_ROOT).join(lab)
}

pub use engine::files::{read_json, write_atomic, write_json_atomic};

/// The two fields every managed process publishes first: whose state it is and whether
/// it still runs.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Liveness {
    /// Process id.
    pub pid: u32,
    /// False once it stopped.
    pub running: bool,
}

/// Sends slots `0..n` of `batch` on `sock`, resuming partial sends. A frame the interface
/// refuses (its link is down, it is too long) is counted in `errors` and skipped, never
/// fatal; the first error is returned for the caller to log once.
pub fn send_all(
    sock: &PacketSocket,
    batch: &mut SendBatch,
    n: usize,
    errors: &mut u64,
) -> Option<io::Error> {
    let mut sent = 0;
    let mut first = None;
    while sent < n {
        match batch.send_from(sock, sent, n, false) {
            Ok(k) => sent += k.max(1),
            Err(e) => {
                *errors += 1;
                first.get_or_insert(e);
                sent += 1;
            }
        }
    }
    first
}
