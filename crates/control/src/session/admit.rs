//! Admission: the places a connection or a test holds on the server, each given back when
//! its guard is dropped, however the session ends. A new connection enters the gate
//! ([`enter`], a [`Handshake`] place); a test takes one of `--max-tests` ([`Slot`]), one
//! of its address's share (`--max-tests-per-source`) and its part of `--max-memory`
//! ([`admit`], an [`Admission`]).
//!
//! Each step decides without I/O (counters, the gate with `now` passed in) and says its
//! refusal as a [`ProtoError::Refused`]; [`admit`] and [`source_test`] send it to the
//! client. The request's own limits are [`crate::limits`]'.

use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::ctx::{send_refusal, Ctx};
use crate::gate::{Admit, HandshakeId};
use crate::messages::ErrorCode;
use crate::ProtoError;

/// Counts one more in `counter` if it is below `max`.
pub(crate) fn reserve(counter: &AtomicUsize, max: usize) -> bool {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .is_ok()
}

/// A slot in a counter, released on drop.
pub(crate) struct Slot<'a>(&'a AtomicUsize);

impl<'a> Slot<'a> {
    pub(crate) fn take(counter: &'a AtomicUsize, max: usize) -> Option<Self> {
        // Lazily: a Slot built and dropped here would release a count never taken.
        reserve(counter, max).then(|| Slot(counter))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A place in one of the context's counters that moves with its owner to another thread
/// (a test's thread started by an accept loop), given back when dropped.
pub(crate) struct OwnedSlot {
    ctx: Arc<Ctx>,
    counter: fn(&Ctx) -> &AtomicUsize,
}

impl OwnedSlot {
    /// One more in `counter` of `ctx` if it is below `max`.
    pub(crate) fn take(
        ctx: &Arc<Ctx>,
        counter: fn(&Ctx) -> &AtomicUsize,
        max: usize,
    ) -> Option<Self> {
        reserve(counter(ctx), max).then(|| OwnedSlot {
            ctx: Arc::clone(ctx),
            counter,
        })
    }

    /// One of `--max-tests`, or the refusal (the place of a test whose thread is yet to
    /// start).
    pub(crate) fn test(ctx: &Arc<Ctx>) -> Result<Self, ProtoError> {
        Self::take(ctx, |c| &c.active_tests, usize::from(ctx.limits.max_tests))
            .ok_or_else(|| busy(max_tests_message(ctx)))
    }
}

impl Drop for OwnedSlot {
    fn drop(&mut self) {
        (self.counter)(&self.ctx).fetch_sub(1, Ordering::AcqRel);
    }
}

/// Connections being turned away at once, each on its own short thread.
const MAX_TURNING: usize = 16;

/// Refuses a connection without holding up the accept thread: `reply` (the refusal in
/// the port's protocol) is written at once (it fits the socket's buffer); then, on a
/// short-lived thread (at most [`MAX_TURNING`] at once, shared by every port), what the
/// client sends for up to 200 ms is read and dropped, so that closing does not reset the
/// connection before the client has read the refusal.
pub(crate) fn turn_away(ctx: &Arc<Ctx>, stream: TcpStream, reply: &[u8]) {
    use std::io::{Read, Write};
    let mut s = stream;
    let _ = s.set_nonblocking(true);
    let _ = s.write(reply);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let Some(slot) = OwnedSlot::take(ctx, |c| &c.turning, MAX_TURNING) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("wb-turn-away".into())
        .spawn(move || {
            let _ = s.set_nonblocking(false);
            let clock = &slot.ctx.clock;
            let until = clock.mono() + Duration::from_millis(200);
            let mut sink = [0u8; 4096];
            while let Some(left) = until.checked_sub(clock.mono()) {
                let _ = s.set_read_timeout(Some(left.max(Duration::from_millis(1))));
                if !matches!(s.read(&mut sink), Ok(n) if n > 0) {
                    break;
                }
            }
            drop(slot);
        });
}

/// A handshake let in by the gate: leaves it when dropped, however the handshake ended.
pub(crate) struct Handshake<'a> {
    pub(crate) ctx: &'a Ctx,
    pub(crate) ip: IpAddr,
    pub(crate) id: HandshakeId,
}

impl Drop for Handshake<'_> {
    fn drop(&mut self) {
        let _ = leave(self.ctx, self.ip, self.id);
    }
}

/// Takes handshake `id` of `ip` out of the gate and the open handshakes; `false` if the
/// gate had evicted it for a newcomer already.
pub(crate) fn leave(ctx: &Ctx, ip: IpAddr, id: HandshakeId) -> bool {
    let counted = ctx.gate().handshake_done(ip, id);
    ctx.handshakes().remove(&id);
    counted
}

/// Lets a new connection from `ip` start its handshake at `now` (the server clock's
/// `mono()`): its place at the gate
/// (the socket is kept, so that a newcomer may evict it; an evicted one is closed here),
/// or the refusal to turn it away with.
pub(crate) fn enter(
    ctx: &Ctx,
    ip: IpAddr,
    stream: &TcpStream,
    now: Duration,
) -> Result<HandshakeId, (ErrorCode, String)> {
    // (The gate's lock is let go before the arms, which take it again.)
    let admitted = ctx.gate().admit(ip, now);
    match admitted {
        Admit::Yes { id, evict } => {
            let mut open = ctx.handshakes();
            if let Some(old) = evict.and_then(|e| open.remove(&e)) {
                let _ = old.shutdown(std::net::Shutdown::Both);
            }
            if let Ok(c) = stream.try_clone() {
                open.insert(id, c);
            }
            Ok(id)
        }
        Admit::Full => {
            let max = ctx.gate().open_handshakes();
            Err((
                ErrorCode::Busy,
                format!("too many handshakes open from {ip} ({max} in all)"),
            ))
        }
        Admit::Penalised(d) => Err((
            ErrorCode::Auth,
            format!(
                "{ip} failed to authenticate or to finish its handshake: try again in {} s",
                d.as_secs_f64().ceil()
            ),
        )),
    }
}

/// A test counted against its address's share until dropped.
pub(crate) struct SourceTest<'a> {
    ctx: &'a Ctx,
    ip: IpAddr,
}

impl Drop for SourceTest<'_> {
    fn drop(&mut self) {
        self.ctx.gate().end_test(self.ip);
    }
}

/// Memory held by running tests, reserved until dropped.
pub(crate) struct Reserved<'a> {
    ctx: &'a Ctx,
    bytes: u64,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.ctx.memory.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

fn max_tests_message(ctx: &Ctx) -> String {
    format!(
        "the server is running its maximum of {} tests (--max-tests)",
        ctx.limits.max_tests
    )
}

fn busy(message: String) -> ProtoError {
    ProtoError::Refused {
        code: ErrorCode::Busy,
        message,
    }
}

impl Ctx {
    /// One of `--max-tests`, or the refusal.
    pub(crate) fn test_slot(&self) -> Result<Slot<'_>, ProtoError> {
        Slot::take(&self.active_tests, usize::from(self.limits.max_tests))
            .ok_or_else(|| busy(max_tests_message(self)))
    }

    /// One of `ip`'s share of tests, or the refusal.
    pub(crate) fn source_test(&self, ip: IpAddr) -> Result<SourceTest<'_>, ProtoError> {
        // The gate's lock is let go before a guard exists (its drop takes the lock).
        let counted = self.gate().start_test(ip);
        counted
            .then(|| SourceTest { ctx: self, ip })
            .ok_or_else(|| {
                busy(format!(
                    "{ip} runs its share of tests at once (--max-tests-per-source)"
                ))
            })
    }

    /// `bytes` of the server's memory budget, or the refusal saying what is left.
    pub(crate) fn reserve_memory(&self, bytes: u64) -> Result<Reserved<'_>, ProtoError> {
        self.memory
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|u| *u <= self.max_memory)
            })
            .map(|_| Reserved { ctx: self, bytes })
            .map_err(|used| {
                let free = self.max_memory.saturating_sub(used);
                busy(format!(
                    "this test needs {} MiB of buffers; {} MiB of this server's --max-memory of {} MiB are free now",
                    bytes >> 20,
                    free >> 20,
                    self.max_memory >> 20
                ))
            })
    }
}

/// The client's address's share of tests, or its refusal (sent).
pub(crate) fn source_test<'a>(
    ctrl: &mut TcpStream,
    ctx: &'a Ctx,
) -> Result<SourceTest<'a>, ProtoError> {
    let ip = ctrl.peer_addr().map_err(ProtoError::Io)?.ip();
    ctx.source_test(ip).map_err(|e| send_refusal(ctrl, e))
}

/// A test's place on the server: one of `--max-tests`, one of its source's, and its
/// share of `--max-memory`; given back when dropped.
pub(crate) struct Admission<'a> {
    _slot: Slot<'a>,
    _source: SourceTest<'a>,
    _memory: Reserved<'a>,
}

/// Admits a test that needs `memory` bytes of buffers, or refuses it saying which limit
/// it met.
pub(crate) fn admit<'a>(
    ctrl: &mut TcpStream,
    ctx: &'a Ctx,
    memory: u64,
) -> Result<Admission<'a>, ProtoError> {
    let slot = ctx.test_slot().map_err(|e| send_refusal(ctrl, e))?;
    let source = source_test(ctrl, ctx)?;
    let reserved = ctx
        .reserve_memory(memory)
        .map_err(|e| send_refusal(ctrl, e))?;
    Ok(Admission {
        _slot: slot,
        _source: source,
        _memory: reserved,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::GateConfig;
    use crate::messages::Limits;
    use crate::session::ctx::ServerConfig;
    use std::time::Duration;

    fn ctx(max_tests: u16, per_source_tests: usize, max_memory: u64) -> Ctx {
        let clock = std::sync::Arc::new(model::clock::VirtualClock::default());
        Ctx::new(
            &ServerConfig {
                bind: "127.0.0.1:0".parse().unwrap(),
                limits: Limits {
                    max_tests,
                    ..Limits::default()
                },
                key: None,
                handshake_timeout: Duration::from_secs(10),
                allow_tuning: true,
                finished: None,
                metrics: None,
                gate: GateConfig {
                    per_source_tests,
                    per_source_handshakes: 2,
                    ..GateConfig::default()
                },
                idle_timeout: Duration::from_secs(5),
                max_memory,
                rx_xdp: false,
                raw_ports: vec!["eth1".into()],
                raw_policy: crate::session::ctx::RawPortPolicy::default(),
                third_party: true,
                third_party_peers: Vec::new(),
            },
            clock,
        )
    }

    fn refusal<T>(r: Result<T, ProtoError>) -> (ErrorCode, String) {
        match r {
            Err(ProtoError::Refused { code, message }) => (code, message),
            Err(e) => panic!("not a refusal: {e}"),
            Ok(_) => panic!("admitted"),
        }
    }

    #[test]
    fn what_needs_a_key_is_off_without_one() {
        let c = ctx(4, 4, 1 << 30);
        assert!(!c.allow_tuning && !c.third_party && c.raw_ports.is_empty());
    }

    #[test]
    fn tests_take_and_give_back_their_places() {
        let c = ctx(2, 1, 100 << 20);
        let (a, b) = (IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 0, 0, 2]));
        let s1 = c.test_slot().unwrap();
        let _s2 = c.test_slot().unwrap();
        let (code, msg) = refusal(c.test_slot());
        assert_eq!(code, ErrorCode::Busy);
        assert!(msg.contains("maximum of 2 tests (--max-tests)"), "{msg}");
        drop(s1);
        let _s3 = c.test_slot().unwrap();
        // One test per address: another address is not held up.
        let of_a = c.source_test(a).unwrap();
        let (_, msg) = refusal(c.source_test(a));
        assert!(msg.contains("10.0.0.1 runs its share"), "{msg}");
        let _of_b = c.source_test(b).unwrap();
        drop(of_a);
        let _again = c.source_test(a).unwrap();
        // Memory: what is reserved is not free until given back.
        let m = c.reserve_memory(60 << 20).unwrap();
        let (_, msg) = refusal(c.reserve_memory(60 << 20));
        assert!(
            msg.contains("needs 60 MiB")
                && msg.contains("40 MiB of this server's --max-memory of 100 MiB"),
            "{msg}"
        );
        drop(m);
        assert!(c.reserve_memory(100 << 20).is_ok());
    }

    /// An address holding its share of handshakes is turned away (Busy); one penalised
    /// for failed handshakes is told when to try again (Auth); a place left is free again.
    #[test]
    fn connections_enter_the_gate_or_are_told_why_not() {
        let c = ctx(4, 4, 1 << 30);
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let ip = IpAddr::from([10, 0, 0, 7]);
        let t0 = Duration::from_secs(1_000);
        let first = enter(&c, ip, &s, t0).unwrap();
        let _second = enter(&c, ip, &s, t0).unwrap();
        let (code, msg) = enter(&c, ip, &s, t0).unwrap_err();
        assert_eq!(code, ErrorCode::Busy);
        assert!(
            msg.contains("too many handshakes open from 10.0.0.7"),
            "{msg}"
        );
        assert_eq!(c.handshakes().len(), 2);
        leave(&c, ip, first);
        assert_eq!(c.handshakes().len(), 1);
        let _third = enter(&c, ip, &s, t0).unwrap();
        let other = IpAddr::from([10, 0, 0, 8]);
        for _ in 0..3 {
            c.gate().failed(other, t0);
        }
        let (code, msg) = enter(&c, other, &s, t0).unwrap_err();
        assert_eq!(code, ErrorCode::Auth);
        assert!(msg.contains("try again in 1 s"), "{msg}");
        // The penalty passes with time.
        assert!(enter(&c, other, &s, t0 + Duration::from_secs(2)).is_ok());
    }
}
