//! The project's one way of writing a file that others read: results, reports, JUnit,
//! manual pages, lab state files. A file is replaced whole (a temporary file beside it
//! and a rename), never through a symbolic link, and synced. What it does not do: choose
//! paths or formats (its callers do).

use std::io;
use std::path::Path;

use serde::{de::DeserializeOwned, Serialize};

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
