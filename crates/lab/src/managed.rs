//! What the lab's managed processes (impairment stages, FRER relays) share: where their
//! state files and logs live, how a state file is replaced atomically, and how a loop
//! hands a batch of frames to a socket without dying on a refused frame.

use std::io;
use std::path::{Path, PathBuf};

use engine::frameio::PacketSocket;
use engine::sys::SendBatch;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

/// The parent of every lab's run directory.
pub const RUN_ROOT: &str = "/run/wirebench/labs";

/// Where a lab keeps its managed processes' state and logs: `/run/wirebench/labs/LAB`.
pub fn run_dir(lab: &str) -> PathBuf {
    Path::new(RUN_ROOT).join(lab)
}

/// Writes `bytes` to `path` through a temporary file beside it (`NAME.tmp`) and a
/// rename, so a reader never sees half a file.
///
/// # Errors
/// The file cannot be written.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// [`write_atomic`] of `value` as pretty JSON.
///
/// # Errors
/// The file cannot be written.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    write_atomic(
        path,
        &serde_json::to_vec_pretty(value).map_err(io::Error::other)?,
    )
}

/// Reads a JSON state file.
///
/// # Errors
/// Missing, unreadable or not the expected JSON.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> io::Result<T> {
    let text = std::fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

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
