//! Third-party tests: an authenticated controller asks this server to run a client test
//! toward another wirebench server ([`ClientMsg::RunClient`]), the way perfSONAR's
//! pScheduler runs a mesh's tests at their sources. Only a server started with
//! `--allow-third-party` (which needs a key) does it; it authenticates to the other
//! server with its own key (a fleet shares one) and refuses one that asks for none. The
//! test runs within this server's limits and admission like any test it serves; it
//! stops when the controller aborts or goes away.
//!
//! This module runs throughput tests only (no echo, tuning or raw ports), and reports
//! what this server's client assembled: the destination's figures come through its own
//! protocol, as for any client.

use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use model::spec::TestSpec;
use model::stop::{RaiseOnDrop, Stop};

use crate::cidr::in_block;
use crate::client::{ClientConfig, Session};
use crate::conn::{closing_on_stop, watch_controller};
use crate::frame::{read_msg_within, write_msg};
use crate::limits::{check_limits, test_memory};
use crate::messages::{ErrorCode, ServerMsg};
use crate::session::{admit, refuse, Ctx};
use crate::ProtoError;

/// How long this server tries to reach the other one.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Time past the test's own length for the handshake, the results and a slow end.
const SLACK: Duration = Duration::from_secs(30);
/// What a client waits for a server's results after a test.
const RESULTS_WAIT: Duration = Duration::from_secs(15);

/// Why this server runs no test toward the address a controller named (the message is
/// the controller's refusal).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PeerError {
    /// The name does not resolve.
    #[error("cannot resolve '{to}' (HOST:PORT): {source}")]
    Resolve {
        /// `HOST:PORT` as given.
        to: String,
        /// The resolver's error.
        source: std::io::Error,
    },
    /// The name resolves to no address.
    #[error("'{0}' has no address")]
    NoAddress(String),
    /// An unspecified, multicast, broadcast or link-local address.
    #[error("{0}: not toward an unspecified, multicast, broadcast or link-local address")]
    Special(IpAddr),
    /// Loopback, for a controller on another host.
    #[error("{0}: toward loopback only for a controller on this host")]
    Loopback(IpAddr),
    /// Outside the blocks of `--third-party-peers`.
    #[error("{0} is outside this server's --third-party-peers")]
    NotAPeer(IpAddr),
}

/// The other server's address: `HOST:PORT`, `[IPV6]:PORT`.
fn resolve(to: &str) -> Result<SocketAddr, PeerError> {
    to.to_socket_addrs()
        .map_err(|source| PeerError::Resolve {
            to: to.to_owned(),
            source,
        })?
        .next()
        .ok_or_else(|| PeerError::NoAddress(to.to_owned()))
}

/// Whether this server may test toward `to` for a controller at `controller`: never
/// toward an unspecified, multicast, broadcast or link-local address (cloud metadata
/// services live there); toward loopback only for a controller on this host; and, with
/// `--third-party-peers`, only inside those blocks.
///
/// Both addresses are compared in canonical form: `::ffff:127.0.0.1` is 127.0.0.1, so an
/// IPv4-mapped IPv6 address cannot slip past a check written for IPv4.
fn allowed(to: IpAddr, controller: IpAddr, peers: &[(IpAddr, u8)]) -> Result<(), PeerError> {
    let (to, controller) = (to.to_canonical(), controller.to_canonical());
    let special = match to {
        IpAddr::V4(a) => {
            a.is_unspecified() || a.is_multicast() || a.is_broadcast() || a.is_link_local()
        }
        IpAddr::V6(a) => {
            a.is_unspecified() || a.is_multicast() || (a.segments()[0] & 0xffc0) == 0xfe80
        }
    };
    if special {
        return Err(PeerError::Special(to));
    }
    if to.is_loopback() && !controller.is_loopback() {
        return Err(PeerError::Loopback(to));
    }
    if !peers.is_empty() && !peers.iter().any(|b| in_block(to, *b)) {
        return Err(PeerError::NotAPeer(to));
    }
    Ok(())
}

/// Serves a [`ClientMsg::RunClient`](crate::messages::ClientMsg::RunClient): runs the test
/// toward `to` and answers with [`ServerMsg::ClientRan`].
pub(crate) fn serve(
    mut ctrl: TcpStream,
    ctx: &Ctx,
    to: &str,
    spec: &TestSpec,
) -> Result<(), ProtoError> {
    let Some(key) = ctx.key.clone().filter(|_| ctx.third_party) else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::BadRequest,
            "this server runs no tests toward other servers (start it with --allow-third-party and --auth-key-file)".into(),
        ));
    };
    if let Err(e) = check_limits(spec, &ctx.limits) {
        return Err(refuse(&mut ctrl, ErrorCode::Limit, e.to_string()));
    }
    let _admitted = admit(&mut ctrl, ctx, test_memory(spec))?;
    let _ended = ctx.finished.as_ref().map(RaiseOnDrop::new);
    let controller = ctrl.peer_addr().map_err(ProtoError::Io)?.ip();
    let server = resolve(to)
        .and_then(|a| allowed(a.ip(), controller, &ctx.third_party_peers).map(|()| a))
        .map_err(|e| refuse(&mut ctrl, ErrorCode::BadRequest, e.to_string()))?;
    let stop = Stop::new();
    let cfg = ClientConfig {
        server,
        key: Some(key),
        connect_timeout: CONNECT_TIMEOUT,
        bind: None,
        cport: None,
        cpu: None,
        force_round_trip: false,
        stop: Some(stop.clone()),
        // A server of the fleet that asks for no key is not one of it.
        allow_unauthenticated_server: false,
    };
    let (done, gone) = (Stop::new(), Stop::new());
    let watch = ctrl.try_clone().map_err(ProtoError::Io)?;
    let wait = spec.total_duration() + SLACK;
    let outcome = std::thread::scope(|s| {
        s.spawn(|| watch_controller(&watch, &done, &stop, &gone, wait, &*ctx.clock));
        let r = Session::connect_with_clock(&cfg, Arc::clone(&ctx.clock))
            .and_then(|session| session.run_test(spec, None, |_| {}));
        done.raise();
        r
    });
    if gone.is_raised() {
        // The controller aborted or went away: nobody wants the result.
        return Ok(());
    }
    let _ = ctrl.set_read_timeout(None);
    let answer = match outcome {
        Ok(o) => {
            let params = serde_json::json!({ "server": to, "test": spec, "from": "third-party" });
            let r = crate::assemble::throughput_result(&o, "client", params);
            match serde_json::to_value(&r) {
                Ok(v) => ServerMsg::ClientRan {
                    result: Some(v),
                    error: None,
                },
                Err(e) => ServerMsg::ClientRan {
                    result: None,
                    error: Some(format!("the result did not encode: {e}")),
                },
            }
        }
        Err(e) => ServerMsg::ClientRan {
            result: None,
            error: Some(format!("the test toward {to} failed: {e}")),
        },
    };
    write_msg(&mut ctrl, &answer)?;
    // The controller closes first; a message it sends is not waited for long.
    let _ = read_msg_within::<crate::messages::ClientMsg>(
        &ctrl,
        Duration::from_millis(200),
        &*ctx.clock,
    );
    Ok(())
}

/// Why a third-party test has no result ([`Session::run_client_from`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientRanError {
    /// The test failed, or the other server could not be reached or refused: the
    /// server's reason.
    #[error("{0}")]
    Failed(String),
    /// The server said neither a result nor why.
    #[error("no result and no reason")]
    NoReason,
    /// The server's result does not decode as a result document.
    #[error("the server's result is not a result document: {0}")]
    NotAResult(String),
}

impl Session {
    /// Has the server run `spec` as a client toward the wirebench server at `to`
    /// (`HOST:PORT`, as the server reaches it), authenticated with that server's own key,
    /// and returns the result or why there is none. `Err` is a refusal or a broken
    /// control connection; `Ok(Err(..))` the test itself failing.
    ///
    /// # Errors
    /// The server refuses (no `--allow-third-party`, a limit) or the connection breaks.
    pub fn run_client_from(
        mut self,
        to: &str,
        spec: &TestSpec,
    ) -> Result<Result<model::results::RunResult, ClientRanError>, ProtoError> {
        write_msg(
            &mut self.ctrl,
            &crate::messages::ClientMsg::RunClient {
                to: to.to_owned(),
                spec: spec.clone(),
            },
        )?;
        // The server's own bound (the test, its slack), reaching the other server, and the
        // client's wait for the other server's results.
        let wait = spec.total_duration() + SLACK + CONNECT_TIMEOUT + RESULTS_WAIT;
        // A stop (Ctrl-C) closes the connection: the server stops the test.
        let stop = self.stop.clone();
        let answer = closing_on_stop(&self.ctrl, stop.as_ref(), || {
            read_msg_within::<ServerMsg>(&self.ctrl, wait, &*self.clock)
        });
        match answer? {
            ServerMsg::ClientRan {
                result: Some(r), ..
            } => Ok(
                serde_json::from_value(r).map_err(|e| ClientRanError::NotAResult(e.to_string()))
            ),
            ServerMsg::ClientRan { error, .. } => Ok(Err(
                error.map_or(ClientRanError::NoReason, ClientRanError::Failed)
            )),
            ServerMsg::Error { code, message } => Err(ProtoError::Refused { code, message }),
            other => Err(ProtoError::Unexpected(format!("{other:?}"))),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cidr::parse_cidr;

    #[test]
    fn a_controller_cannot_aim_a_server_anywhere() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let far = ip("198.18.40.254");
        assert!(allowed(ip("198.18.40.2"), far, &[]).is_ok());
        for to in [
            "169.254.169.254",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "fe80::1",
            "ff02::1",
            "::",
        ] {
            assert!(allowed(ip(to), far, &[]).is_err(), "{to}");
        }
        // Loopback only for a controller that is on this host already.
        assert_eq!(
            allowed(ip("127.0.0.1"), far, &[]).unwrap_err().to_string(),
            "127.0.0.1: toward loopback only for a controller on this host"
        );
        assert!(allowed(ip("127.0.0.1"), ip("127.0.0.1"), &[]).is_ok());
        let peers = [parse_cidr("198.18.40.0/24").unwrap()];
        assert!(allowed(ip("198.18.40.9"), far, &peers).is_ok());
        assert_eq!(
            allowed(ip("10.0.0.1"), far, &peers)
                .unwrap_err()
                .to_string(),
            "10.0.0.1 is outside this server's --third-party-peers"
        );
        assert_eq!(
            allowed(ip("169.254.169.254"), far, &[])
                .unwrap_err()
                .to_string(),
            "169.254.169.254: not toward an unspecified, multicast, broadcast or link-local address"
        );
        // IPv4-mapped IPv6 addresses are their IPv4 addresses, for the target and for the
        // controller (a dual-stack listener sees IPv4 peers so).
        for to in [
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:0.0.0.0",
        ] {
            assert!(allowed(ip(to), far, &[]).is_err(), "{to}");
        }
        assert!(allowed(ip("127.0.0.1"), ip("::ffff:127.0.0.1"), &[]).is_ok());
        assert!(allowed(ip("::ffff:198.18.40.9"), far, &peers).is_ok());
        assert!(allowed(ip("::ffff:10.0.0.1"), far, &peers).is_err());
        assert_eq!(
            resolve("nowhere").unwrap_err().to_string(),
            "cannot resolve 'nowhere' (HOST:PORT): invalid socket address"
        );
    }
}
