//! Pre-shared-key authentication: HMAC-SHA256 challenge/response, mutual, key never sent.
//!
//! The server sends a random 32-byte nonce `Ns`; the client answers with its own nonce
//! `Nc` and `HMAC(key, "wirebench-auth-v1 client" || Ns || Nc)`; the server checks it in
//! constant time and answers with `HMAC(key, "wirebench-auth-v1 server" || Nc || Ns)`, which
//! the client checks. Replaying an old answer fails because `Ns` is fresh.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const CLIENT_LABEL: &[u8] = b"wirebench-auth-v1 client";
const SERVER_LABEL: &[u8] = b"wirebench-auth-v1 server";
/// Shortest key accepted, bytes.
pub const MIN_KEY_LEN: usize = 16;

/// A fresh 32-byte random nonce.
pub fn nonce() -> Result<[u8; 32], getrandom::Error> {
    let mut n = [0u8; 32];
    getrandom::fill(&mut n)?;
    Ok(n)
}

fn mac(key: &[u8], label: &[u8], a: &[u8], b: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length, so new_from_slice cannot fail.
    let mut m = <HmacSha256 as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    m.update(label);
    m.update(a);
    m.update(b);
    m
}

/// The client's proof for server nonce `ns` and client nonce `nc`.
pub fn client_proof(key: &[u8], ns: &[u8], nc: &[u8]) -> Vec<u8> {
    mac(key, CLIENT_LABEL, ns, nc)
        .finalize()
        .into_bytes()
        .to_vec()
}

/// Constant-time check of a client proof.
pub fn verify_client(key: &[u8], ns: &[u8], nc: &[u8], proof: &[u8]) -> bool {
    mac(key, CLIENT_LABEL, ns, nc).verify_slice(proof).is_ok()
}

/// The server's proof.
pub fn server_proof(key: &[u8], ns: &[u8], nc: &[u8]) -> Vec<u8> {
    mac(key, SERVER_LABEL, nc, ns)
        .finalize()
        .into_bytes()
        .to_vec()
}

/// Constant-time check of a server proof.
pub fn verify_server(key: &[u8], ns: &[u8], nc: &[u8], proof: &[u8]) -> bool {
    mac(key, SERVER_LABEL, nc, ns).verify_slice(proof).is_ok()
}

/// Why a key file gives no key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileError {
    /// The file cannot be read.
    #[error("cannot read key file {}: {source}", .path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Group or others may read the file: the key is no secret.
    #[error(
        "key file {p} can be read by group or others (mode {mode:o}): chmod 600 {p}",
        p = .path.display()
    )]
    Exposed {
        /// The file.
        path: std::path::PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The key is shorter than [`MIN_KEY_LEN`].
    #[error("key file {} holds {len} bytes; at least {MIN_KEY_LEN} are needed", .path.display())]
    Short {
        /// The file.
        path: std::path::PathBuf,
        /// The key's length, bytes.
        len: usize,
    },
}

/// Reads a key file: its bytes with trailing whitespace removed; at least [`MIN_KEY_LEN`].
///
/// # Errors
/// The file cannot be read, others may read it, or the key is too short.
pub fn load_key(path: &std::path::Path) -> Result<Vec<u8>, KeyFileError> {
    use std::os::unix::fs::PermissionsExt;
    let unreadable = |source| KeyFileError::Read {
        path: path.to_owned(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    // As OpenSSH does with private keys: a key others can read is no secret.
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(KeyFileError::Exposed {
            path: path.to_owned(),
            mode: meta.permissions().mode() & 0o777,
        });
    }
    let mut key = std::fs::read(path).map_err(unreadable)?;
    while key.last().is_some_and(|b| b.is_ascii_whitespace()) {
        key.pop();
    }
    if key.len() < MIN_KEY_LEN {
        return Err(KeyFileError::Short {
            path: path.to_owned(),
            len: key.len(),
        });
    }
    Ok(key)
}

/// Lower-case hex.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses hex (either case); `None` for odd length or non-hex characters.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|p| u8::from_str_radix(p, 16).ok()))
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn proofs_verify_only_with_the_same_key_and_nonces() {
        let key = b"0123456789abcdef-secret";
        let (ns, nc) = (nonce().unwrap(), nonce().unwrap());
        let p = client_proof(key, &ns, &nc);
        assert!(verify_client(key, &ns, &nc, &p));
        assert!(!verify_client(b"another key of 16+", &ns, &nc, &p));
        assert!(
            !verify_client(key, &nc, &ns, &p),
            "swapped nonces must fail"
        );
        let s = server_proof(key, &ns, &nc);
        assert!(verify_server(key, &ns, &nc, &s));
        assert_ne!(s, p, "server and client proofs differ (labels)");
        assert!(
            !verify_client(key, &ns, &nc, &s),
            "a server proof is not a client proof"
        );
    }

    #[test]
    fn hex_round_trip_and_rejects() {
        let b = [0u8, 1, 0xab, 0xff];
        assert_eq!(to_hex(&b), "0001abff");
        assert_eq!(from_hex("0001ABff").unwrap(), b);
        assert!(from_hex("abc").is_none());
        assert!(from_hex("zz").is_none());
        assert!(from_hex("é1").is_none());
    }

    #[test]
    fn short_key_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("wb-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("k");
        let mode = |m: u32| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m)).unwrap();
        };
        std::fs::write(&p, "short\n").unwrap();
        mode(0o600);
        assert_eq!(
            load_key(&p).unwrap_err().to_string(),
            format!(
                "key file {} holds 5 bytes; at least 16 are needed",
                p.display()
            )
        );
        std::fs::write(&p, "a-long-enough-secret-key\n\n").unwrap();
        assert_eq!(load_key(&p).unwrap(), b"a-long-enough-secret-key");
        // Readable by group or others: refused with the fix.
        for m in [0o640, 0o604, 0o644] {
            mode(m);
            let e = load_key(&p).unwrap_err().to_string();
            let f = p.display();
            assert_eq!(
                e,
                format!("key file {f} can be read by group or others (mode {m:o}): chmod 600 {f}")
            );
        }
        mode(0o400);
        assert!(load_key(&p).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
        let e = load_key(&p).unwrap_err();
        assert!(matches!(e, KeyFileError::Read { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with(&format!("cannot read key file {}: ", p.display())),
            "{e}"
        );
    }
}
