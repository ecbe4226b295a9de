//! The server's side of the handshake (hello, authentication, then the request), decided
//! without I/O: the one deadline of the whole handshake ([`Deadline`], time passed in),
//! whether the client's hello is ours ([`check_hello`]), what the server's hello tells an
//! unauthenticated peer ([`hello`]), whether the client proved the key ([`check_auth`]),
//! and which failures count against the address at the gate ([`penalises`]).
//!
//! It reads no socket and no clock, and draws no nonce: the server's connection thread
//! does, and sends what these return. Refusals are [`ProtoError::Refused`] values.

use std::time::Duration;

use crate::auth;
use crate::messages::{ClientMsg, ErrorCode, Limits, ServerMsg};
use crate::{ProtoError, MAGIC, VERSION};

/// The end of a handshake that started at some `now` and may take `timeout` (on the
/// monotonic axis of the server's clock).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline(Duration);

impl Deadline {
    /// A handshake starting at `now`, with `timeout` for all of it.
    pub(crate) fn new(now: Duration, timeout: Duration) -> Deadline {
        Deadline(now.saturating_add(timeout))
    }

    /// Time left at `now` for the next read: at least 1 ms, so that a read past the
    /// deadline times out rather than waits without a limit.
    pub(crate) fn left(&self, now: Duration) -> Duration {
        self.0.saturating_sub(now).max(Duration::from_millis(1))
    }

    /// Whether the deadline has passed at `now`.
    pub(crate) fn passed(&self, now: Duration) -> bool {
        now >= self.0
    }
}

fn refused(code: ErrorCode, message: String) -> ProtoError {
    ProtoError::Refused { code, message }
}

/// Whether a handshake that failed with `e` counts against its address: a failed
/// authentication or a handshake out of time does; a peer that went away, a wrong
/// version or a garbled message does not.
pub(crate) fn penalises(e: &ProtoError) -> bool {
    matches!(
        e,
        ProtoError::Refused {
            code: ErrorCode::Auth | ErrorCode::Timeout,
            ..
        } | ProtoError::Timeout
    )
}

/// Checks the client's first message: a hello with our magic and version.
pub(crate) fn check_hello(msg: &ClientMsg) -> Result<(), ProtoError> {
    match msg {
        ClientMsg::Hello { magic, version } if magic == MAGIC && *version == VERSION => Ok(()),
        ClientMsg::Hello { magic, version } => Err(refused(
            ErrorCode::Version,
            format!("this server speaks {MAGIC} protocol version {VERSION}; client sent {magic:?} version {version}"),
        )),
        other => Err(refused(
            ErrorCode::Protocol,
            format!("expected hello, got {}", other.kind()),
        )),
    }
}

/// The server's hello. With a `challenge` (a server with a key), an unauthenticated peer
/// learns the protocol version and nothing else: the boot id and limits come with the
/// proof of the key ([`check_auth`]).
pub(crate) fn hello(
    challenge: Option<&[u8]>,
    host_id: Option<String>,
    limits: Limits,
) -> ServerMsg {
    let open = challenge.is_none();
    ServerMsg::Hello {
        version: VERSION,
        host_id: host_id.filter(|_| open),
        challenge: challenge.map(auth::to_hex),
        limits: open.then_some(limits),
    }
}

/// Checks the client's answer to challenge `ns` against `key`: the server's own proof,
/// with the boot id and limits, or the refusal (each one [`penalises`]).
pub(crate) fn check_auth(
    key: &[u8],
    ns: &[u8],
    msg: &ClientMsg,
    host_id: Option<String>,
    limits: Limits,
) -> Result<ServerMsg, ProtoError> {
    let ClientMsg::Auth { client_nonce, mac } = msg else {
        return Err(refused(
            ErrorCode::Auth,
            "this server requires authentication (--auth-key-file)".into(),
        ));
    };
    let (Some(nc), Some(mac)) = (auth::from_hex(client_nonce), auth::from_hex(mac)) else {
        return Err(refused(
            ErrorCode::Auth,
            "authentication fields are not hex".into(),
        ));
    };
    if nc.len() != 32 || !auth::verify_client(key, ns, &nc, &mac) {
        return Err(refused(
            ErrorCode::Auth,
            "authentication failed: wrong key".into(),
        ));
    }
    Ok(ServerMsg::AuthOk {
        mac: auth::to_hex(&auth::server_proof(key, ns, &nc)),
        host_id,
        limits: Some(limits),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"a key of more than sixteen bytes";

    fn code(r: Result<impl std::fmt::Debug, ProtoError>) -> ErrorCode {
        match r {
            Err(ProtoError::Refused { code, .. }) => code,
            other => panic!("not refused: {other:?}"),
        }
    }

    /// One deadline for the whole handshake, on a virtual clock: each read gets what is
    /// left of it, and a read past it gets 1 ms (it times out, it does not wait forever).
    #[test]
    fn the_handshake_has_one_deadline() {
        let t0 = Duration::from_secs(1_000);
        let d = Deadline::new(t0, Duration::from_secs(10));
        assert_eq!(d.left(t0), Duration::from_secs(10));
        assert_eq!(d.left(t0 + Duration::from_secs(7)), Duration::from_secs(3));
        assert_eq!(
            d.left(t0 + Duration::from_secs(10)),
            Duration::from_millis(1)
        );
        assert_eq!(
            d.left(t0 + Duration::from_secs(60)),
            Duration::from_millis(1)
        );
        assert!(!d.passed(t0 + Duration::from_millis(9_999)));
        assert!(d.passed(t0 + Duration::from_secs(10)));
    }

    #[test]
    fn only_auth_failures_and_timeouts_are_penalised() {
        let r = |code| refused(code, String::new());
        assert!(penalises(&r(ErrorCode::Auth)));
        assert!(penalises(&r(ErrorCode::Timeout)));
        assert!(penalises(&ProtoError::Timeout));
        for e in [
            r(ErrorCode::Version),
            r(ErrorCode::Protocol),
            ProtoError::Closed,
            ProtoError::Truncated,
            ProtoError::Malformed("x".into()),
        ] {
            assert!(!penalises(&e), "{e}");
        }
    }

    #[test]
    fn a_hello_of_another_protocol_or_version_is_refused() {
        let hi = |magic: &str, version| ClientMsg::Hello {
            magic: magic.into(),
            version,
        };
        assert!(check_hello(&hi(MAGIC, VERSION)).is_ok());
        assert_eq!(
            code(check_hello(&hi(MAGIC, VERSION - 1))),
            ErrorCode::Version
        );
        assert_eq!(code(check_hello(&hi("iperf", VERSION))), ErrorCode::Version);
        let e = check_hello(&ClientMsg::Start).unwrap_err();
        assert!(e.to_string().contains("expected hello, got start"), "{e}");
    }

    #[test]
    fn with_a_key_the_hello_tells_only_the_version() {
        let l = Limits::default();
        let ServerMsg::Hello {
            host_id,
            challenge,
            limits,
            version,
        } = hello(Some(&[7; 32]), Some("boot".into()), l)
        else {
            unreachable!()
        };
        assert_eq!(version, VERSION);
        assert_eq!(challenge, Some("07".repeat(32)));
        assert_eq!((host_id, limits), (None, None));
        let open = hello(None, Some("boot".into()), l);
        assert!(matches!(
            open,
            ServerMsg::Hello {
                host_id: Some(_),
                challenge: None,
                limits: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn the_client_proves_the_key_and_the_server_proves_it_back() {
        let ns = [1u8; 32];
        let nc = [2u8; 32];
        let answer = |key: &[u8], nc: &[u8]| ClientMsg::Auth {
            client_nonce: auth::to_hex(nc),
            mac: auth::to_hex(&auth::client_proof(key, &ns, nc)),
        };
        let ok = check_auth(
            KEY,
            &ns,
            &answer(KEY, &nc),
            Some("b".into()),
            Limits::default(),
        );
        let Ok(ServerMsg::AuthOk {
            mac,
            host_id,
            limits,
        }) = ok
        else {
            panic!("{ok:?}")
        };
        let mac = auth::from_hex(&mac).unwrap();
        assert!(auth::verify_server(KEY, &ns, &nc, &mac));
        assert_eq!(
            (host_id.as_deref(), limits),
            (Some("b"), Some(Limits::default()))
        );
        let refused = |m: &ClientMsg| {
            let e = check_auth(KEY, &ns, m, None, Limits::default()).unwrap_err();
            assert!(penalises(&e));
            e.to_string()
        };
        assert!(refused(&answer(b"another key of sixteen bytes", &nc)).contains("wrong key"));
        // A short client nonce is refused, even with a correct proof over it.
        assert!(refused(&answer(KEY, &nc[..8])).contains("wrong key"));
        let not_hex = ClientMsg::Auth {
            client_nonce: "zz".into(),
            mac: "00".into(),
        };
        assert!(refused(&not_hex).contains("not hex"));
        assert!(refused(&ClientMsg::Start).contains("requires authentication"));
    }
}
