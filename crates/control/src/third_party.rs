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

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use model::spec::TestSpec;

use crate::client::{ClientConfig, Session};
use crate::frame::{read_msg_within, write_msg};
use crate::messages::{ErrorCode, ServerMsg};
use crate::server::{admit, check_limits, refuse, test_memory, watch_controller, Ctx};
use crate::ProtoError;

/// How long this server tries to reach the other one.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Time past the test's own length for the handshake, the results and a slow end.
const SLACK: Duration = Duration::from_secs(30);

/// The other server's address: `HOST:PORT`, `[IPV6]:PORT`.
fn resolve(to: &str) -> Result<SocketAddr, String> {
    to.to_socket_addrs()
        .map_err(|e| format!("cannot resolve '{to}' (HOST:PORT): {e}"))?
        .next()
        .ok_or_else(|| format!("'{to}' has no address"))
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
    if let Err(msg) = spec
        .validate()
        .and_then(|()| check_limits(spec, &ctx.limits))
    {
        return Err(refuse(&mut ctrl, ErrorCode::Limit, msg));
    }
    let server = resolve(to).map_err(|m| refuse(&mut ctrl, ErrorCode::BadRequest, m))?;
    let _admitted = admit(&mut ctrl, ctx, test_memory(spec))?;
    let stop = Arc::new(AtomicBool::new(false));
    let cfg = ClientConfig {
        server,
        key: Some(key),
        connect_timeout: CONNECT_TIMEOUT,
        bind: None,
        cport: None,
        cpu: None,
        force_round_trip: false,
        stop: Some(Arc::clone(&stop)),
        // A server of the fleet that asks for no key is not one of it.
        allow_unauthenticated_server: false,
    };
    let (done, gone) = (AtomicBool::new(false), AtomicBool::new(false));
    let watch = ctrl.try_clone().map_err(ProtoError::Io)?;
    let wait = spec.duration + spec.omit.unwrap_or_default() + SLACK;
    let outcome = std::thread::scope(|s| {
        s.spawn(|| watch_controller(&watch, &done, &stop, &gone, wait));
        let r = Session::connect(&cfg).and_then(|session| session.run_test(spec, None, |_| {}));
        done.store(true, Ordering::Release);
        r
    });
    if gone.load(Ordering::Relaxed) {
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
    let _ = read_msg_within::<crate::messages::ClientMsg>(&ctrl, Duration::from_millis(200));
    Ok(())
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
    ) -> Result<Result<model::results::RunResult, String>, ProtoError> {
        write_msg(
            &mut self.ctrl,
            &crate::messages::ClientMsg::RunClient {
                to: to.to_owned(),
                spec: spec.clone(),
            },
        )?;
        let wait = spec.duration + spec.omit.unwrap_or_default() + SLACK + CONNECT_TIMEOUT;
        match read_msg_within::<ServerMsg>(&self.ctrl, wait)? {
            ServerMsg::ClientRan {
                result: Some(r), ..
            } => Ok(serde_json::from_value(r)
                .map_err(|e| format!("the server's result is not a result document: {e}"))),
            ServerMsg::ClientRan { error, .. } => Ok(Err(
                error.unwrap_or_else(|| "no result and no reason".into())
            )),
            ServerMsg::Error { code, message } => Err(ProtoError::Refused { code, message }),
            other => Err(ProtoError::Unexpected(format!("{other:?}"))),
        }
    }
}
