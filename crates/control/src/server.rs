//! The wirebench server: the listener and the dispatcher. Many tests run at once, each on
//! its own control connection thread.
//!
//! Every read has a deadline; a connection that sends bad bytes, an oversized length, an
//! unknown version or nothing at all gets an error message (when it can still be sent) and
//! is closed, and no other connection or test notices. Before a thread is started for a
//! connection, the [`crate::gate`] decides whether its address may open another handshake
//! (per-address shares, penalties after failures); the whole handshake has one deadline
//! (`handshake` decides it). The request is then dispatched: a throughput test
//! (`throughput`), an echo session (`echo`), tuning ([`crate::tuning`]), a lent raw port
//! ([`crate::rawport`]) or a third-party test ([`crate::third_party`]). Each checks its
//! limits (rate, duration, streams, concurrent tests, tests per address) before any socket
//! of a test is opened; a running test is metered: one that sends more than 10 % above
//! `--max-rate` over a second, or whose client falls silent for the idle timeout (clients
//! say they are alive every second), is ended (`watch`). Control connections have
//! TCP keepalive and a user timeout, so a vanished host ends its test within 10 s.
//!
//! Every deadline and watch of the server reads time from one clock in the context (the
//! real one, or a virtual one a test moves: [`Server::bind_with_clock`]).
//!
//! What every session shares (the context, admission, refusals) is `session`'s;
//! the services import that, never this module.

mod echo;
pub mod summary;
mod throughput;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use engine::clock::RealClock;
use engine::tcp;
use model::clock::Clock;
use model::stop::Stop;

use crate::conn::keep_alive;
use crate::frame::{read_msg_within, write_msg};
use crate::handshake::{self, Deadline};
use crate::messages::{ClientMsg, ErrorCode};
use crate::session::admit::{self, turn_away, Handshake, Slot};
use crate::session::ctx::{refusal, send_refusal};
use crate::session::{refuse, Ctx};
use crate::{auth, ProtoError};
use model::wait::{Poll, Wait};

pub use crate::limits::{check_limits, test_memory, LimitError, MAX_TEST_BUFFER_BYTES};
pub use crate::session::ctx::{
    default_max_memory, RawPortPolicy, ServerConfig, HANDSHAKE_TIMEOUT, IDLE_TIMEOUT,
};

/// Longest a stopping server waits for a tuning session to put its interface back.
const PUT_BACK: Duration = Duration::from_secs(10);

/// A bound server, ready to serve.
pub struct Server {
    listener: TcpListener,
    ctx: Arc<Ctx>,
}

/// A server running on a background thread (used by `demo` and tests).
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Stop,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.raise();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Server {
    /// Binds the listening socket.
    pub fn bind(cfg: ServerConfig) -> std::io::Result<Self> {
        Self::bind_with_clock(cfg, Arc::new(RealClock::new()))
    }

    /// Binds the listening socket of a server that reads time from `clock` (its
    /// handshake deadlines, the gate, a running test's watch): a virtual clock in tests.
    pub fn bind_with_clock(cfg: ServerConfig, clock: Arc<dyn Clock>) -> std::io::Result<Self> {
        let listener = tcp::listen(cfg.bind, None)?;
        let ctx = Ctx::new(&cfg, clock);
        Ok(Self {
            listener,
            ctx: Arc::new(ctx),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves stock iperf3 clients on `listener` (from [`crate::iperf3::server::bind`]), on
    /// a thread of its own until `stop` is raised, under this server's admission: the
    /// same gate (per-address places, penalties), `--max-tests`, per-source shares,
    /// `--max-memory`, limits and metrics as its own clients.
    ///
    /// # Errors
    /// The thread cannot be started, or the listener made non-blocking.
    pub fn serve_iperf3(&self, listener: TcpListener, stop: &Stop) -> std::io::Result<()> {
        listener.set_nonblocking(true)?;
        let (ctx, stop) = (Arc::clone(&self.ctx), stop.clone());
        std::thread::Builder::new()
            .name("wb-iperf3-accept".into())
            .spawn(move || crate::iperf3::server::serve(&listener, &ctx, &stop))?;
        Ok(())
    }

    /// Accepts connections until `stop` is raised (checked every 50 ms).
    pub fn serve(self, stop: &Stop) -> std::io::Result<()> {
        self.listener.set_nonblocking(true)?;
        Wait::on(&RealClock::new())
            .or_stop(stop)
            .poll(|| -> Poll<()> {
                match self.listener.accept() {
                    Ok((stream, peer)) => {
                        if let Some(m) = &self.ctx.metrics {
                            m.connection();
                        }
                        let ctx = self.ctx.clone();
                        // The gate decides before a thread is started.
                        let ip = peer.ip();
                        let id = match admit::enter(&ctx, ip, &stream, ctx.clock.mono()) {
                            Ok(id) => id,
                            Err((code, message)) => {
                                ctx.refused(code);
                                let mut reply = Vec::new();
                                let _ = write_msg(&mut reply, &refusal(code, message));
                                turn_away(&ctx, stream, &reply);
                                return Poll::Again;
                            }
                        };
                        let _ = stream.set_nonblocking(false);
                        let spawned =
                            std::thread::Builder::new()
                                .name("wb-conn".into())
                                .spawn(move || {
                                    // Its handshake is bounded by the gate (which evicts
                                    // for newcomers); a connection slot is taken once it
                                    // is over (`handle_connection`).
                                    let place = Handshake { ctx: &ctx, ip, id };
                                    keep_alive(&stream);
                                    let closer = stream.try_clone().ok();
                                    let started = std::cell::Cell::new(false);
                                    let result = handle_connection(stream, &ctx, place, &started);
                                    // Refusals before a test started; a started one ends in
                                    // the metrics as completed, aborted or failed.
                                    if let (Err(ProtoError::Refused { code, .. }), false) =
                                        (&result, started.get())
                                    {
                                        ctx.refused(*code);
                                    }
                                    // Ends the control reader thread with the connection.
                                    if let Some(c) = closer {
                                        let _ = c.shutdown(std::net::Shutdown::Both);
                                    }
                                    match result {
                                        Ok(()) => tracing::info!("{peer}: done"),
                                        Err(e) => tracing::warn!("{peer}: {e}"),
                                    }
                                });
                        if let Err(e) = spawned {
                            // The closure never ran: its handshake leaves the gate here.
                            admit::leave(&self.ctx, ip, id);
                            tracing::error!("cannot start a connection thread: {e}");
                        }
                        Poll::Again
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        Poll::Wait(Duration::from_millis(50))
                    }
                    Err(e) => {
                        tracing::warn!("accept: {e}");
                        Poll::Wait(Duration::from_millis(50))
                    }
                }
            });
        self.put_back();
        Ok(())
    }

    /// What a stopping server puts back before it returns: a tuning session's interface
    /// (its connection is closed, and the session restores as for a client that went
    /// away), waited for up to [`PUT_BACK`].
    fn put_back(&self) {
        let Some(conn) = self.ctx.tuning_conn().take() else {
            return;
        };
        tracing::info!("stopping: putting the tuned interface back");
        let _ = conn.shutdown(std::net::Shutdown::Both);
        let tuning = &self.ctx.tuning;
        let done = Wait::on(&RealClock::new()).at_most(PUT_BACK).poll(|| {
            if tuning.load(std::sync::atomic::Ordering::Acquire) == 0 {
                Poll::Ready(())
            } else {
                Poll::Wait(Duration::from_millis(20))
            }
        });
        if done.ready().is_none() {
            tracing::warn!("stopping: the tuned interface was not put back within {PUT_BACK:?}");
        }
    }

    /// Runs the server on a background thread until the handle is dropped.
    pub fn spawn(self) -> std::io::Result<ServerHandle> {
        let addr = self.local_addr()?;
        let stop = Stop::new();
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wb-server".into())
            .spawn(move || {
                let _ = self.serve(&s);
            })?;
        Ok(ServerHandle {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

/// Serves one control connection; `started` is set once a test has started (its end is
/// counted in the metrics, not as a refusal). The handshake, from hello to the request,
/// has one deadline; it leaves the gate when the request is read. A failed
/// authentication, a handshake out of time or a connection closed before its handshake
/// ended penalises the address (not one the gate evicted).
fn handle_connection(
    mut ctrl: TcpStream,
    ctx: &Ctx,
    place: Handshake<'_>,
    started: &std::cell::Cell<bool>,
) -> Result<(), ProtoError> {
    let (ip, id) = (place.ip, place.id);
    let clock = &*ctx.clock;
    let deadline = Deadline::new(clock.mono(), ctx.handshake_timeout);
    let left = || deadline.left(clock.mono());
    // A failed authentication, a handshake out of time, and a peer that closed before its
    // handshake ended count against the address (OpenSSH's noauth penalty); one the gate
    // closed for a newcomer (no longer among the open handshakes) does not.
    let failed = |e: ProtoError| {
        let went_away = matches!(e, ProtoError::Closed | ProtoError::Io(_))
            && ctx.handshakes().contains_key(&id);
        if handshake::penalises(&e) || went_away {
            ctx.gate().failed(ip, clock.mono());
        }
        e
    };
    ctrl.set_nodelay(true).map_err(ProtoError::Io)?;
    ctrl.set_write_timeout(Some(ctx.handshake_timeout))
        .map_err(ProtoError::Io)?;
    let hello = read_or_refuse(&mut ctrl, left(), clock, "hello").map_err(failed)?;
    handshake::check_hello(&hello).map_err(|e| send_refusal(&mut ctrl, e))?;
    let challenge = match &ctx.key {
        Some(_) => {
            Some(auth::nonce().map_err(|e| ProtoError::Io(std::io::Error::other(e.to_string())))?)
        }
        None => None,
    };
    write_msg(
        &mut ctrl,
        &handshake::hello(
            challenge.as_ref().map(|c| &c[..]),
            ctx.host_id.clone(),
            ctx.limits,
        ),
    )?;
    if let (Some(key), Some(ns)) = (&ctx.key, challenge) {
        // One that goes away is penalised (unless evicted), as is one that answers
        // wrongly or not in time.
        let msg: ClientMsg = match read_msg_within(&ctrl, left(), clock) {
            Ok(m) => m,
            Err(e @ (ProtoError::Closed | ProtoError::Io(_))) => return Err(failed(e)),
            Err(e) => return Err(failed(refuse(&mut ctrl, ErrorCode::Auth, e.to_string()))),
        };
        let proof = handshake::check_auth(key, &ns, &msg, ctx.host_id.clone(), ctx.limits)
            .map_err(|e| failed(send_refusal(&mut ctrl, e)))?;
        write_msg(&mut ctrl, &proof)?;
    }
    let request = read_or_refuse(&mut ctrl, left(), clock, "a test request").map_err(failed)?;
    // The handshake is over: its place at the gate is free, and the address in good
    // standing.
    drop(place);
    ctx.gate().succeeded(ip);
    // Connections past their handshake: tests, sessions, their data connections. Silent
    // connections that never finish a handshake hold none of these (the gate bounds them
    // and evicts them for newcomers), so they cannot lock honest clients out.
    let max_conns = usize::from(ctx.limits.max_tests) * 2 + 16;
    let Some(_slot) = Slot::take(&ctx.connections, max_conns) else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Busy,
            "too many connections".into(),
        ));
    };
    ctrl.set_write_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(ProtoError::Io)?;
    match request {
        ClientMsg::Test {
            spec,
            one_way,
            interval_ms,
        } => throughput::serve(ctrl, ctx, spec, one_way, interval_ms, started),
        ClientMsg::Echo { spec } => echo::serve(ctrl, ctx, spec),
        ClientMsg::Tune { mtu, features } => crate::tuning::serve(ctrl, ctx, mtu, features),
        open @ ClientMsg::RawOpen { .. } => crate::rawport::serve(ctrl, ctx, open),
        ClientMsg::RunClient { to, spec } => crate::third_party::serve(ctrl, ctx, &to, &spec),
        other => Err(refuse(
            &mut ctrl,
            ErrorCode::Protocol,
            format!("expected a test request, got {}", other.kind()),
        )),
    }
}

/// Reads one handshake message within `timeout` on `clock`; a timeout or undecodable
/// message is answered with an error before the connection closes.
fn read_or_refuse(
    ctrl: &mut TcpStream,
    timeout: Duration,
    clock: &dyn Clock,
    what: &str,
) -> Result<ClientMsg, ProtoError> {
    match read_msg_within(ctrl, timeout, clock) {
        Ok(m) => Ok(m),
        Err(ProtoError::Closed) => Err(ProtoError::Closed),
        Err(e) => {
            let code = if matches!(e, ProtoError::Timeout) {
                ErrorCode::Timeout
            } else {
                ErrorCode::Protocol
            };
            Err(refuse(ctrl, code, format!("expected {what}: {e}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::GateConfig;
    use crate::limits::test::spec;
    use crate::messages::{Limits, ServerMsg};
    use crate::{MAGIC, VERSION};
    use model::spec::{Direction, Rate, TestSpec};

    fn config(limits: Limits, key: Option<Vec<u8>>) -> ServerConfig {
        ServerConfig {
            bind: "127.0.0.1:0".parse().unwrap(),
            limits,
            key,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            allow_tuning: false,
            rx_xdp: false,
            raw_ports: Vec::new(),
            raw_policy: RawPortPolicy::default(),
            third_party: false,
            third_party_peers: Vec::new(),
            finished: None,
            metrics: None,
            gate: GateConfig::default(),
            idle_timeout: IDLE_TIMEOUT,
            max_memory: 1 << 30,
        }
    }

    fn server(limits: Limits, key: Option<Vec<u8>>) -> ServerHandle {
        Server::bind(config(limits, key)).unwrap().spawn().unwrap()
    }

    fn client(addr: SocketAddr, key: Option<Vec<u8>>) -> crate::client::ClientConfig {
        crate::client::ClientConfig {
            server: addr,
            key,
            connect_timeout: Duration::from_secs(2),
            bind: None,
            cport: None,
            cpu: None,
            force_round_trip: false,
            stop: None,
            allow_unauthenticated_server: false,
        }
    }

    /// A client that asks for 0.5 Mbit/s and sends 5 against a 1 Mbit/s limit is stopped
    /// after about a second of its ten, with the reason; an honest one at the limit runs.
    #[test]
    fn a_client_sending_above_the_limit_is_stopped() {
        let limits = Limits {
            max_rate_bps: Some(1e6),
            ..Limits::default()
        };
        let srv = server(limits, None);
        let udp = |bps: f64, secs: u64| TestSpec {
            rate: Rate::BitsPerSec(bps),
            streams: 1,
            direction: Direction::Forward,
            duration: Duration::from_secs(secs),
            ..spec()
        };
        let session = crate::client::Session::connect(&client(srv.addr(), None)).unwrap();
        let clock = RealClock::new();
        let r = session.run_test_telling(&udp(0.5e6, 10), &udp(5e6, 10), None, |_| {});
        let took = clock.mono();
        match r {
            Err(ProtoError::Refused {
                code: ErrorCode::Limit,
                message,
            }) => assert!(message.contains("--max-rate"), "{message}"),
            other => panic!("not stopped for its rate: {other:?}"),
        }
        assert!(
            took < Duration::from_secs(4),
            "stopped after {took:?} of 10 s"
        );
        // At the limit: runs to its end.
        let session = crate::client::Session::connect(&client(srv.addr(), None)).unwrap();
        let ok = session.run_test(&udp(1e6, 3), None, |_| {}).unwrap();
        assert!(!ok.remote.is_empty());
    }

    /// The server's watch runs on the server's clock: a reverse test whose client says
    /// nothing for the idle timeout of that clock is ended, though the client, on its own
    /// clock, is not yet due to say it is alive.
    #[test]
    fn a_silent_client_is_ended_on_the_servers_clock() {
        let clock = Arc::new(model::clock::VirtualClock::default());
        let metrics = Arc::new(crate::metrics::ServerMetrics::new());
        let cfg = ServerConfig {
            metrics: Some(Arc::clone(&metrics)),
            ..config(Limits::default(), None)
        };
        let srv = Server::bind_with_clock(cfg, clock.clone())
            .unwrap()
            .spawn()
            .unwrap();
        let reverse = TestSpec {
            rate: Rate::BitsPerSec(1e6),
            streams: 1,
            direction: Direction::Reverse,
            duration: Duration::from_secs(10),
            ..spec()
        };
        let done = Stop::new();
        let real = RealClock::new();
        let r = std::thread::scope(|s| {
            // Once the test runs, the server's time passes 25 times faster than the
            // client's (half a second every 20 ms): the idle timeout (5 s) is reached in
            // 200 ms of the client's time, its first `Alive` due after a second.
            s.spawn(|| {
                let running = Wait::on(&real).at_most(Duration::from_secs(10)).poll(|| {
                    if metrics
                        .render()
                        .contains("wirebench_server_tests_running 1")
                    {
                        Poll::Ready(())
                    } else {
                        Poll::Wait(Duration::from_millis(5))
                    }
                });
                if running.ready().is_some() {
                    Wait::on(&real).or_stop(&done).poll(|| -> Poll<()> {
                        clock.advance(Duration::from_millis(500));
                        Poll::Wait(Duration::from_millis(20))
                    });
                }
            });
            let session = crate::client::Session::connect(&client(srv.addr(), None)).unwrap();
            let r = session.run_test(&reverse, None, |_| {});
            done.raise();
            r
        });
        match r {
            Err(ProtoError::Refused {
                code: ErrorCode::Timeout,
                message,
            }) => assert!(
                message.contains("said nothing for 5 s (--idle-timeout)"),
                "{message}"
            ),
            other => panic!("not ended for silence: {other:?}"),
        }
        assert!(real.mono() < Duration::from_secs(5), "{:?}", real.mono());
    }

    /// With a key, the hello says the version and the challenge and nothing else; the
    /// limits and boot id come after the proof. Without one, the hello has them.
    #[test]
    fn an_unauthenticated_peer_learns_only_the_version() {
        let key = b"a key of more than sixteen bytes".to_vec();
        for (keyed, srv) in [
            (true, server(Limits::default(), Some(key.clone()))),
            (false, server(Limits::default(), None)),
        ] {
            let mut c = TcpStream::connect(srv.addr()).unwrap();
            write_msg(
                &mut c,
                &ClientMsg::Hello {
                    magic: MAGIC.into(),
                    version: VERSION,
                },
            )
            .unwrap();
            let hello: ServerMsg =
                read_msg_within(&c, Duration::from_secs(5), &RealClock::new()).unwrap();
            let ServerMsg::Hello {
                version,
                host_id,
                challenge,
                limits,
            } = hello
            else {
                panic!("{hello:?}")
            };
            assert_eq!(version, VERSION);
            assert_eq!(challenge.is_some(), keyed);
            assert_eq!(limits.is_some(), !keyed);
            assert!(!keyed || host_id.is_none());
            // The client with the key gets them after the proof.
            let session =
                crate::client::Session::connect(&client(srv.addr(), keyed.then(|| key.clone())))
                    .unwrap();
            assert_eq!(session.limits, Limits::default());
        }
    }

    /// A client with a key refuses a server that does not ask for it, unless told to go
    /// on.
    #[test]
    fn a_client_with_a_key_refuses_a_server_without_one() {
        let srv = server(Limits::default(), None);
        let key = Some(b"a key of more than sixteen bytes".to_vec());
        let e = crate::client::Session::connect(&client(srv.addr(), key.clone()))
            .err()
            .expect("refused");
        assert!(e.to_string().contains("did not ask"), "{e}");
        let cfg = crate::client::ClientConfig {
            allow_unauthenticated_server: true,
            ..client(srv.addr(), key)
        };
        assert!(crate::client::Session::connect(&cfg).is_ok());
    }
}
