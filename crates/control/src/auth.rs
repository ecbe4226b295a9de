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

/// Reads a key file: its bytes with trailing whitespace removed; at least [`MIN_KEY_LEN`].
pub fn load_key(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("cannot read key file {}: {e}", path.display()))?;
    // As OpenSSH does with private keys: a key others can read is no secret.
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "key file {0} can be read by group or others (mode {1:o}): chmod 600 {0}",
            path.display(),
            meta.permissions().mode() & 0o777
        ));
    }
    let mut key =
        std::fs::read(path).map_err(|e| format!("cannot read key file {}: {e}", path.display()))?;
    while key.last().is_some_and(|b| b.is_ascii_whitespace()) {
        key.pop();
    }
    if key.len() < MIN_KEY_LEN {
        return Err(format!(
            "key file {} holds {} bytes; at least {MIN_KEY_LEN} are needed",
            path.display(),
            key.len()
        ));
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
        assert!(load_key(&p).unwrap_err().contains("at least 16"));
        std::fs::write(&p, "a-long-enough-secret-key\n\n").unwrap();
        assert_eq!(load_key(&p).unwrap(), b"a-long-enough-secret-key");
        // Readable by group or others: refused with the fix.
        for m in [0o640, 0o604, 0o644] {
            mode(m);
            let e = load_key(&p).unwrap_err();
            assert!(
                e.contains("chmod 600") && e.contains(&format!("{m:o}")),
                "{e}"
            );
        }
        mode(0o400);
        assert!(load_key(&p).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
