//! RFC 2889 §5.7 (address caching capacity) and §5.8 (address learning rate) over three
//! ports: learning (L), test (T) and monitor (M), in that order.
//!
//! One trial (N addresses at r frames/s): the switch forgets what it learned (its bridge
//! flushed when it is a lab's switch, else its ageing time waited out); L sends N frames
//! from N distinct source addresses to T at r; a second or more later T sends one test frame to
//! each of them at r. A switch that learned all N forwards every test frame to L and none
//! to M; one that did not floods the frames to the addresses it does not know, and M sees
//! them. The search (`method::rfc2889::Bisection`) runs over N (§5.7) or r (§5.8).
//!
//! It sends on and counts at ports of this host only: a server's lent port does not send
//! frames from addresses other than its own.

use std::sync::Arc;
use std::time::Duration;

use engine::frameio::{FrameRx, FrameTx};
use engine::multi::{Patch, StreamTx};
use method::rfc2889::{addresses_learned, Bisection, Outcome};
use model::stats::table::StreamTable;
use model::stop::Stop;

use super::request::{Rfc2889Request, Test, ETHERTYPE};
use super::result::{AddressResult, AddressTrial, Rfc2889Result};
use crate::frames::{self, test_id};
use crate::{usage, Error, Watch};

/// The learning frames' stream id, and the test frames'.
const LEARNING: u8 = 1;
const TESTING: u8 = 2;
/// The room a learning sender has past its schedule, and the pause after it before the
/// test frames: these start `2 × span + 2 × SETTLE` in, so at least a second after the
/// last learning frame could have gone.
const SETTLE: Duration = Duration::from_millis(500);

/// The `i`-th learned address: locally administered, unicast, never zero (the bridge
/// learns no other), and apart from the lab's own (02:77:62:...).
pub(super) fn address(i: u64) -> [u8; 6] {
    let b = (i + 1).to_be_bytes();
    [0x02, 0x89, b[4], b[5], b[6], b[7]]
}

/// Frames of `len` bytes from each `(source, destination)`, test header `stream` with
/// test id `id`.
fn frames_of(
    pairs: impl Iterator<Item = ([u8; 6], [u8; 6])>,
    len: u64,
    id: u16,
    stream: u8,
) -> Result<Vec<(Vec<u8>, Patch)>, Error> {
    let hdr = wire::testhdr::TestHeaderRepr::template(id, stream);
    pairs
        .map(|macs| frames::l2_frame(macs, ETHERTYPE, None, len, &hdr).map_err(usage))
        .collect()
}

/// The three ports, open.
struct Ports {
    learning: Box<dyn FrameTx>,
    test: Box<dyn FrameTx>,
    at_learning: Box<dyn FrameRx>,
    at_monitor: Box<dyn FrameRx>,
    test_mac: [u8; 6],
}

impl Ports {
    fn open(req: &Rfc2889Request, len: u64) -> Result<Self, Error> {
        // `request` gave the test three ports of this host.
        let [l, t, m] = req.ports.as_slice() else {
            return Err(Error::Failed(format!("{} needs 3 ports", req.test.name())));
        };
        let (l, t, m) = (
            frames::port(l, &req.lab)?,
            frames::port(t, &req.lab)?,
            frames::port(m, &req.lab)?,
        );
        let test_mac = lab::probe::addresses(&mut lab::SystemRunner, &t)?.mac;
        Ok(Self {
            learning: frames::open_tx(req.backend, &l, len)?,
            test: frames::open_tx(req.backend, &t, len)?,
            at_learning: frames::open_rx(req.backend, &l)?,
            at_monitor: frames::open_rx(req.backend, &m)?,
            test_mac,
        })
    }
}

/// Makes the switch forget what it learned: its bridge flushed, or its ageing time waited.
fn forget(req: &Rfc2889Request, stop: &Stop) -> Result<(), Error> {
    match &req.addresses.switch {
        Some(node) => {
            lab::switch::flush(&mut lab::SystemRunner, &req.lab, node)?;
            Ok(())
        }
        None => {
            let clock = engine::clock::RealClock::new();
            let wait = req.addresses.ageing + Duration::from_secs(1);
            match model::clock::wait_until(&clock, wait, stop) {
                model::clock::Waited::Reached => Ok(()),
                model::clock::Waited::Stopped => Err(Error::Interrupted),
            }
        }
    }
}

/// Flushes the lab switch's bridge when dropped, so that the test's addresses do not fill
/// it for its ageing time after the test (a test run next on the lab would flood).
struct FlushAfter<'a>(&'a Rfc2889Request);

impl Drop for FlushAfter<'_> {
    fn drop(&mut self) {
        if let Some(node) = &self.0.addresses.switch {
            if let Err(e) = lab::switch::flush(&mut lab::SystemRunner, &self.0.lab, node) {
                tracing::warn!("flushing switch {node}'s bridge after the test: {e}");
            }
        }
    }
}

/// One trial: `n` addresses learned at `fps`, then `n` test frames to them.
fn trial(
    req: &Rfc2889Request,
    ports: &mut Ports,
    (len, n, fps): (u64, u64, f64),
    stop: &Stop,
) -> Result<AddressTrial, Error> {
    forget(req, stop)?;
    let id = test_id();
    let t_mac = ports.test_mac;
    let learn = frames_of((0..n).map(|i| (address(i), t_mac)), len, id, LEARNING)?;
    let test = frames_of((0..n).map(|i| (t_mac, address(i))), len, id, TESTING)?;
    // Exactly n frames each, frame k at k / fps: a sender behind its schedule catches up
    // before its stop, which leaves it room.
    let span = Duration::from_secs_f64(n as f64 / fps);
    let tx = |stream_id, templates: Vec<(Vec<u8>, Patch)>, start: Duration| StreamTx {
        stream_id,
        pattern: (0..templates.len()).collect(),
        templates,
        pps: fps,
        start,
        stop: start + span * 2 + SETTLE,
        count: Some(n),
        live: Arc::default(),
        slot_ns: 0,
    };
    let test_start = span * 2 + SETTLE * 2;
    let groups: Vec<(&mut dyn FrameTx, Vec<StreamTx>)> = vec![
        (
            ports.learning.as_mut(),
            vec![tx(LEARNING, learn, Duration::ZERO)],
        ),
        (ports.test.as_mut(), vec![tx(TESTING, test, test_start)]),
    ];
    let receivers: Vec<(&mut dyn FrameRx, StreamTable)> = vec![
        (ports.at_learning.as_mut(), StreamTable::new(id, [TESTING])),
        (ports.at_monitor.as_mut(), StreamTable::new(id, [TESTING])),
    ];
    let r = engine::multi::run(groups, receivers, Duration::from_millis(300), None, stop)
        .map_err(|e| Error::Failed(format!("address trial: {e}")))?;
    let of = |id: u8| r.sent.iter().flatten().find(|s| s.stream_id == id);
    let sent = of(TESTING).map_or(0, |s| s.sent);
    let learned = of(LEARNING);
    let got = |k: usize| {
        r.received
            .get(k)
            .and_then(|(t, _)| t.stream(TESTING))
            .map_or(0, |s| s.counters().received)
    };
    let (at_l, at_m) = (got(0), got(1));
    Ok(AddressTrial {
        value: 0.0,
        addresses: n,
        rate_fps: fps,
        sent,
        at_learning_port: at_l,
        at_monitor: at_m,
        passed: addresses_learned(n.min(sent), at_l, at_m) && sent == n,
        generator_limited: learned.is_none_or(|s| s.generator_limited || s.sent != n),
    })
}

/// §5.7 or §5.8: the search, one trial per value.
pub(super) fn run(
    req: &Rfc2889Request,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<(Rfc2889Result, Vec<String>, bool), Error> {
    let a = &req.addresses;
    let len = req.sizes.first().copied().unwrap_or(64);
    let bad = |e: method::PlanError| usage(e.to_string());
    let mut search = match req.test {
        Test::Caching => Bisection::count(a.count.0, a.count.1, a.count.2).map_err(bad)?,
        _ => Bisection::rate(a.rates.0, a.rates.1, a.rates.2).map_err(bad)?,
    };
    let mut ports = Ports::open(req, len)?;
    // Flushes the bridge when this function returns, however: after `bridge` below has
    // read what it learned.
    let _flush = FlushAfter(req);
    let mut trials = Vec::new();
    let mut interrupted = false;
    while let Some(v) = search.next() {
        if stop.is_raised() {
            interrupted = true;
            break;
        }
        let (n, fps) = match req.test {
            Test::Caching => (v as u64, a.rate_fps),
            _ => (a.learn, v),
        };
        watch.progress(&format!(
            "trial {}: {n} addresses learned at {fps:.0} frames/s",
            trials.len() + 1
        ));
        let mut t = match trial(req, &mut ports, (len, n, fps), stop) {
            Err(Error::Interrupted) => {
                interrupted = true;
                break;
            }
            r => r?,
        };
        t.value = v;
        search.record(v, t.passed);
        trials.push(t);
    }
    let (result, failed) = match search.outcome() {
        Outcome::Found { value, failed } => (Some(value), failed),
        Outcome::BelowMin { failed } => (None, Some(failed)),
    };
    let mut notes = Vec::new();
    let bridge = match &a.switch {
        Some(node) => {
            let b = lab::switch::learned(&req.lab, node)?;
            if let Some((_, limit)) = b.filter(|b| b.1 > 0) {
                notes.push(format!(
                    "the switch's bridge learns at most {limit} addresses (its learning limit, \
                     as the bridge reports it)"
                ));
            }
            b
        }
        None => None,
    };
    if trials.iter().any(|t| t.generator_limited) {
        notes.push(
            "in some trials the learning frames fell behind their rate (marked in the table): \
             those trials learned more slowly than they say"
                .into(),
        );
    }
    if req.test == Test::LearningRate && failed.is_none() && result.is_some() {
        notes.push(format!(
            "every rate passed: the switch learns at least {:.0} addresses per second, the \
             search's upper bound (--max-rate)",
            a.rates.1
        ));
    }
    let (min, max, resolution) = match req.test {
        Test::Caching => (a.count.0 as f64, a.count.1 as f64, a.count.2 as f64),
        _ => a.rates,
    };
    let out = Rfc2889Result {
        addresses: Some(AddressResult {
            frame_len: len,
            min,
            max,
            resolution,
            result,
            failed,
            forgetting: match &a.switch {
                Some(node) => format!(
                    "lab switch {node}'s bridge flushed before each trial and after the last"
                ),
                None => format!(
                    "waited its ageing time ({} s) and a second before each trial",
                    model::units::secs(a.ageing.as_secs_f64())
                ),
            },
            bridge,
            trials,
        }),
        ..Rfc2889Result::of(req)
    };
    Ok((out, notes, interrupted))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn learned_addresses_are_distinct_unicast_and_not_the_labs() {
        let all: std::collections::BTreeSet<[u8; 6]> = (0..70_000).map(address).collect();
        assert_eq!(all.len(), 70_000);
        for a in &all {
            assert_eq!(a[0] & 1, 0, "multicast {a:?}");
            assert_eq!(a[0] & 2, 2, "not locally administered {a:?}");
            assert_ne!(a[1], 0x77);
            assert_ne!(*a, [0; 6]);
        }
    }

    #[test]
    fn the_frames_carry_their_addresses_and_a_test_header() {
        let f = frames_of(
            [(address(0), [2, 0, 0, 0, 0, 9])].into_iter(),
            64,
            7,
            TESTING,
        )
        .expect("frames");
        let (buf, _) = &f[0];
        assert_eq!(buf.len(), 60);
        assert_eq!(&buf[0..6], &[2, 0, 0, 0, 0, 9]);
        assert_eq!(&buf[6..12], &address(0));
        let h = engine::multi::test_header(buf).expect("a test header");
        assert_eq!((h.test_id, h.stream_id), (7, TESTING));
    }
}
