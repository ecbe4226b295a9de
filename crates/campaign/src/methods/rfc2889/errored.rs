//! RFC 2889 §5.9, errored frames filtering, over two ports (source, destination): valid
//! frames and errored ones sent together below congestion, each kind its own stream, so
//! what the switch forwarded of each is counted apart at the destination.
//!
//! What a raw port of this host can send: undersized frames (below 64 bytes with FCS) and
//! oversized ones (1522 bytes untagged, the most a 1500-byte port sends: above 1518, the
//! untagged maximum). A bad FCS needs a NIC that sends one on request (`SO_NOFCS`) and
//! veth has none at all; dribble bits and alignment errors need the PHY: each of those is
//! reported as not possible on these ports, neither passed nor failed.

use std::sync::Arc;
use std::time::Duration;

use engine::frameio::{FrameRx, FrameTx};
use engine::multi::StreamTx;
use model::stats::table::StreamTable;
use model::stop::Stop;

use super::request::{Rfc2889Request, ETHERTYPE};
use super::result::{Errored, ErroredRow, Rfc2889Result};
use crate::frames::{self, test_id};
use crate::{usage, Error, Watch};

/// An undersized frame's length with FCS: short of 64 by 4 (a runt).
pub(super) const UNDERSIZED: u64 = 60;
/// An oversized frame's length with FCS: 4 above the untagged maximum of 1518 (the most a
/// port of MTU 1500 sends, its VLAN allowance).
pub(super) const OVERSIZED: u64 = 1522;

/// The kinds no port here can send, and why.
const NOT_POSSIBLE: [(&str, &str); 3] = [
    (
        "bad FCS",
        "not possible on these ports: veth carries no FCS, and a NIC sends a bad one only on \
         request (SO_NOFCS), which wirebench does not make",
    ),
    (
        "dribble bits",
        "not possible on these ports: it needs control of the PHY",
    ),
    (
        "alignment error",
        "not possible on these ports: it needs control of the PHY",
    ),
];

/// The trial: valid frames of the first size at half the load, undersized and oversized
/// ones at a quarter each, for the trial time.
pub(super) fn run(
    req: &Rfc2889Request,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<(Rfc2889Result, Vec<String>, bool), Error> {
    // `request` gave the test two ports.
    let [from, to] = req.ports.as_slice() else {
        return Err(Error::Failed("errored-frames needs 2 ports".into()));
    };
    let (tx_ep, rx_ep) = (frames::port(from, &req.lab)?, frames::port(to, &req.lab)?);
    let macs = (
        lab::probe::addresses(&mut lab::SystemRunner, &tx_ep)?.mac,
        lab::probe::addresses(&mut lab::SystemRunner, &rx_ep)?.mac,
    );
    let valid_len = req.sizes.first().copied().unwrap_or(64);
    let test = test_id();
    let kinds: [(&str, u64, f64); 3] = [
        ("valid", valid_len, 0.5),
        ("undersized", UNDERSIZED, 0.25),
        ("oversized", OVERSIZED, 0.25),
    ];
    let mut streams = Vec::new();
    for (i, (_, len, share)) in kinds.iter().enumerate() {
        let id = (i + 1) as u8;
        // A runt's rate as a 64-byte frame's: the wire pads nothing on veth, and a load in
        // % of line rate means the same number of frames either way.
        let fps = req.load * share * req.line_rate.max_fps((*len).max(64));
        streams.push(StreamTx {
            stream_id: id,
            templates: vec![frames::l2_frame(
                macs,
                ETHERTYPE,
                None,
                *len,
                &wire::testhdr::TestHeaderRepr::template(test, id),
            )
            .map_err(usage)?],
            pattern: vec![0],
            pps: fps,
            start: Duration::ZERO,
            stop: req.trial,
            count: None,
            live: Arc::default(),
            slot_ns: 0,
        });
    }
    watch.progress(&format!(
        "errored frames: valid {valid_len}-byte, undersized {UNDERSIZED}-byte and oversized \
         {OVERSIZED}-byte frames from {from} to {to} for {} s",
        model::units::secs(req.trial.as_secs_f64())
    ));
    let mut tx = frames::open_tx(req.backend, &tx_ep, OVERSIZED)?;
    let mut rx = frames::open_rx(req.backend, &rx_ep)?;
    let groups: Vec<(&mut dyn FrameTx, Vec<StreamTx>)> = vec![(tx.as_mut(), streams)];
    let receivers: Vec<(&mut dyn FrameRx, StreamTable)> =
        vec![(rx.as_mut(), StreamTable::new(test, [1, 2, 3]))];
    let r = engine::multi::run(groups, receivers, Duration::from_millis(300), None, stop)
        .map_err(|e| Error::Failed(format!("errored frames: {e}")))?;
    let sent = |id: u8| {
        r.sent
            .iter()
            .flatten()
            .find(|s| s.stream_id == id)
            .map_or(0, |s| s.sent)
    };
    let got = |id: u8| {
        r.received
            .first()
            .and_then(|(t, _)| t.stream(id))
            .map_or(0, |s| s.counters().received)
    };
    let mut rows = Vec::new();
    for (i, (kind, len, _)) in kinds.iter().enumerate().skip(1) {
        let id = (i + 1) as u8;
        let (s, g) = (sent(id), got(id));
        rows.push(ErroredRow {
            kind: (*kind).into(),
            frame_len: Some(*len),
            sent: Some(s),
            forwarded: Some(g),
            verdict: match (s, g) {
                (0, _) => "not sent: the port refused them".into(),
                (_, 0) => "filtered".into(),
                _ => "forwarded".into(),
            },
        });
    }
    for (kind, why) in NOT_POSSIBLE {
        rows.push(ErroredRow {
            kind: kind.into(),
            frame_len: None,
            sent: None,
            forwarded: None,
            verdict: why.into(),
        });
    }
    let valid_sent = sent(1);
    let valid_lost = valid_sent.saturating_sub(got(1));
    let filtered = rows
        .iter()
        .filter(|r| r.sent.is_some_and(|s| s > 0))
        .all(|r| r.forwarded == Some(0));
    let out = Rfc2889Result {
        errored: Some(Errored {
            valid_len,
            valid_sent,
            valid_lost,
            rows,
            passed: filtered && valid_lost == 0 && valid_sent > 0,
        }),
        ..Rfc2889Result::of(req)
    };
    Ok((out, Vec::new(), stop.is_raised()))
}
