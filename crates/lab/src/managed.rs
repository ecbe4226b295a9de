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

/// Writes `bytes` to `path` through a temporary file beside it (`.NAME.PID.tmp`) and a
/// rename, so a reader never sees half a file and a crash leaves the old file or the new
/// one. The temporary file is created new (`O_EXCL`) and never through a symbolic link
/// (`O_NOFOLLOW`; one planted there is removed, not followed); the file and then its
/// directory are synced before this returns. A symbolic link at `path` itself is
/// replaced by the file, not written through.
///
/// # Errors
/// The file cannot be written.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(name);
    // A leftover of a killed writer of this pid (or anything planted there): unlinked.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return written;
    }
    // The rename is done: the directory's sync is for a crash, and its failure does not
    // undo the write.
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_replaces_links_instead_of_following_them() {
        let dir = std::env::temp_dir().join(format!("wb-atomic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        // A link where the file goes, and one where the temporary file goes.
        let path = dir.join("state.json");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let tmp = dir.join(format!(".state.json.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert!(!std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(!tmp.exists() && std::fs::symlink_metadata(&tmp).is_err());
        // And again over the regular file.
        write_atomic(&path, b"newer").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "newer");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
