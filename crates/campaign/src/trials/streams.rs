//! Every stream of a profile at once ([`StreamsRun`]): raw streams between ports of this
//! host or of servers that lend them (`HOST/IFACE`), and UDP streams through a wirebench
//! server (`wirebench://HOST[:PORT]`), all on one schedule.
//!
//! The run is a sequence of named steps: find the streams' ends, build each stream's
//! frames, open the ports here, start the servers' receivers and server streams, run the
//! engine, then settle each stream's counts into the method's trial data. The ends on
//! servers' ports and the frames of each stream are in `streams_ends.rs`; the checks, the
//! frame requests and the settling are pure functions, tested without ports. It does not
//! judge the streams against their expectations (`method::streams` does).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use control::rawport::RawStream;
use engine::clock::RealClock;
use engine::frameio::{FrameRx, FrameTx};
use engine::multi::{MultiReport, RemoteSender, StreamSent, StreamTx};
use method::streams::{Profile, StreamSpec};
use method::{StreamsData, StreamsTrial, Trial, TrialData, TrialRequest};
use model::clock::{wait_until, UnixNanos, Waited};
use model::spec::Protocol;
use model::stats::table::StreamTable;
use model::stats::{Counters, LatencyHistogram};
use model::stop::Stop;
use model::wait::{Poll, Wait};
use wire::linerate::LineRate;

use crate::frames::{self, test_id};
use crate::request::Server;
use crate::trials::server::{base_spec, client_config, ServerTrial, TestServer};
use crate::trials::streams_ends::{
    destination, templates, templates_to_far, wire_streams, RemoteDest, RemoteSource,
};
use crate::trials::streams_run::{check_server_stream, server_of, StreamsRun};
use crate::{usage, Error};

/// The stream ids (1-based, in profile order) of the streams that end at `dest`.
fn ids_to(profile: &Profile, dest: &str) -> Vec<u8> {
    profile
        .streams
        .iter()
        .enumerate()
        .filter(|(_, s)| s.destination == dest)
        .map(|(i, _)| (i + 1) as u8)
        .collect()
}

/// The raw streams' ends, each once, in first-use order.
struct Ends {
    /// Sources that are ports of this host.
    sources: Vec<String>,
    /// Sources that are servers' ports, their sessions open.
    remote: Vec<RemoteSource>,
    /// Destinations that are ports of this host.
    dests: Vec<String>,
    /// Destinations that are servers' ports, their sessions open.
    far_dests: Vec<RemoteDest>,
}

impl Ends {
    /// An end is a server's port: it reports its totals at the end, not as it goes.
    fn far(&self) -> bool {
        !self.remote.is_empty() || !self.far_dests.is_empty()
    }
}

/// The raw streams' frames, by sender.
struct Built {
    /// Per source here (as [`Ends::sources`]), its streams.
    groups: Vec<Vec<StreamTx>>,
    /// Per server's port (as [`Ends::remote`]), its streams.
    remote_groups: Vec<Vec<StreamTx>>,
    /// Streams whose ends do not share a clock: no one-way latency.
    no_latency: Vec<u8>,
}

/// The ports of this host, open.
type LocalPorts = (
    Vec<(Box<dyn FrameTx>, Vec<StreamTx>)>,
    Vec<(Box<dyn FrameRx>, StreamTable)>,
);

/// The streams through wirebench servers, running: profile index and thread.
type ServerRuns = Vec<(usize, JoinHandle<Result<TrialData, Error>>)>;

impl StreamsRun {
    /// Finds the raw streams' ends, opening the servers' ports among them: destinations
    /// first (a source's frames are addressed to them), then sources. Server streams are
    /// checked on the way.
    fn open_ends(&self, profile: &Profile) -> Result<Ends, Error> {
        let mut ends = Ends {
            sources: Vec::new(),
            remote: Vec::new(),
            dests: Vec::new(),
            far_dests: Vec::new(),
        };
        for s in profile
            .streams
            .iter()
            .filter(|s| server_of(&s.source).is_none())
        {
            match frames::any_port(&s.destination, &self.lab)? {
                frames::Port::Agent { host, port, iface } => {
                    if !ends.far_dests.iter().any(|d| d.dest == s.destination) {
                        let at = (host.as_str(), port, iface.as_str());
                        let d = RemoteDest::open(self, profile, &s.destination, at)?;
                        ends.far_dests.push(d);
                    }
                }
                frames::Port::Local(_) => {
                    if !ends.dests.contains(&s.destination) {
                        ends.dests.push(s.destination.clone());
                    }
                }
            }
        }
        for p in &self.listen {
            match frames::any_port(p, &self.lab)? {
                frames::Port::Local(_) => {
                    if !ends.dests.contains(p) {
                        ends.dests.push(p.clone());
                    }
                }
                frames::Port::Agent { host, port, iface } => {
                    if !ends.far_dests.iter().any(|d| d.dest == *p) {
                        let at = (host.as_str(), port, iface.as_str());
                        ends.far_dests.push(RemoteDest::open(self, profile, p, at)?);
                    }
                }
            }
        }
        for s in &profile.streams {
            if let Some(server) = server_of(&s.source) {
                check_server_stream(s, server)?;
                continue;
            }
            match frames::any_port(&s.source, &self.lab)? {
                frames::Port::Agent { host, port, iface } => {
                    if !ends.remote.iter().any(|r| r.source == s.source) {
                        let src = (host.as_str(), port, iface.as_str());
                        let r = RemoteSource::open(self, profile, &s.source, src, &ends.far_dests)?;
                        ends.remote.push(r);
                    }
                }
                frames::Port::Local(_) => {
                    if !ends.sources.contains(&s.source) {
                        ends.sources.push(s.source.clone());
                    }
                }
            }
        }
        Ok(ends)
    }

    /// Builds each raw stream's frames (test `id`, slots of `slot_ns`) and sorts them by
    /// sender; notes the streams whose ends do not share a clock.
    fn build_streams(
        &self,
        profile: &Profile,
        id: u16,
        ends: &Ends,
        slot_ns: u64,
    ) -> Result<Built, Error> {
        let line = profile.line_rate;
        let mut built = Built {
            groups: ends.sources.iter().map(|_| Vec::new()).collect(),
            remote_groups: ends.remote.iter().map(|_| Vec::new()).collect(),
            no_latency: Vec::new(),
        };
        let here = engine::env::boot_id();
        for (i, s) in profile.streams.iter().enumerate() {
            if server_of(&s.source).is_some() {
                continue;
            }
            let stream_id = (i + 1) as u8;
            let hdr = wire::testhdr::TestHeaderRepr::template(id, stream_id);
            let far = ends.remote.iter().position(|r| r.source == s.source);
            let to_far = ends.far_dests.iter().any(|d| d.dest == s.destination);
            let frames = match (far, to_far) {
                (Some(k), _) => ends.remote[k].templates(s, &hdr, (self, line), &ends.far_dests)?,
                (None, true) => templates_to_far(s, &hdr, (self, line), &ends.far_dests)?,
                (None, false) => {
                    let ports = (
                        &frames::port(&s.source, &self.lab)?,
                        &frames::port(&s.destination, &self.lab)?,
                    );
                    templates(s, ports, &hdr, self, line)?
                }
            };
            // One-way latency needs one clock: where an end is a server's port, both
            // ends' hosts must be one (two ports here share this host's).
            if far.is_some() || to_far {
                let from_host = match far {
                    Some(k) => ends.remote[k].agent.facts.host_id.clone(),
                    None => here.clone(),
                };
                let to_host = destination(s, self, &ends.far_dests)?.2;
                if from_host.is_none() || from_host != to_host {
                    built.no_latency.push(stream_id);
                }
            }
            let tx = stream_tx(s, stream_id, frames, line, slot_ns);
            match far {
                Some(k) => built.remote_groups[k].push(tx),
                None => {
                    let g = ends
                        .sources
                        .iter()
                        .position(|x| *x == s.source)
                        .unwrap_or(0);
                    built.groups[g].push(tx);
                }
            }
        }
        Ok(built)
    }

    /// Opens the senders (with their streams) and the receivers (test `id`) of the ports
    /// here, and names their backends.
    fn open_local(
        &self,
        profile: &Profile,
        id: u16,
        (ends, groups): (&Ends, Vec<Vec<StreamTx>>),
        slot_ns: u64,
        backends: &mut Vec<String>,
    ) -> Result<LocalPorts, Error> {
        let max_len = profile
            .streams
            .iter()
            .flat_map(|s| s.pattern.iter().copied())
            .max()
            .unwrap_or(64);
        let mut senders = Vec::new();
        for (src, streams) in ends.sources.iter().zip(groups) {
            let tx = frames::open_tx(self.backend, &frames::port(src, &self.lab)?, max_len)?;
            backends.push(format!("{src}: {}", tx.name()));
            senders.push((tx, streams));
        }
        let mut receivers = Vec::new();
        for d in &ends.dests {
            let ids = ids_to(profile, d);
            let rx = frames::open_rx(self.backend, &frames::port(d, &self.lab)?)?;
            backends.push(format!("{d}: {}", rx.name()));
            receivers.push((rx, StreamTable::new(id, ids).with_slots(slot_ns)));
        }
        Ok((senders, receivers))
    }
}

/// Stream `s` (id `stream_id`) as its sender runs it: its frames of each size, the order
/// of its sizes, its rate, start and stop.
fn stream_tx(
    s: &StreamSpec,
    stream_id: u8,
    frames: Vec<(u64, Vec<u8>, engine::multi::Patch)>,
    line: LineRate,
    slot_ns: u64,
) -> StreamTx {
    let pattern = s
        .pattern
        .iter()
        .map(|l| frames.iter().position(|b| b.0 == *l).unwrap_or(0))
        .collect();
    StreamTx {
        stream_id,
        templates: frames.into_iter().map(|(_, b, p)| (b, p)).collect(),
        pattern,
        pps: s.fps(line),
        start: Duration::from_secs_f64(s.start),
        stop: Duration::from_secs_f64(s.stop),
        count: None,
        live: Arc::default(),
        slot_ns,
    }
}

/// The note naming the streams (ids of `profile`) without one-way latency, if any.
fn latency_note(profile: &Profile, no_latency: &[u8]) -> Option<String> {
    if no_latency.is_empty() {
        return None;
    }
    let names: Vec<&str> = no_latency
        .iter()
        .filter_map(|i| profile.streams.get(usize::from(*i).wrapping_sub(1)))
        .map(|s| s.name.as_str())
        .collect();
    Some(format!(
        "no one-way latency for {}: their ends are ports of different hosts, whose clocks are not known to agree",
        names.join(", ")
    ))
}

/// What each server's port is sent, refused before anything runs when it does not fit one
/// message (with room for the message's other fields).
fn wire_requests(
    remote: &[RemoteSource],
    groups: &[Vec<StreamTx>],
) -> Result<Vec<Vec<RawStream>>, Error> {
    let wires: Vec<Vec<RawStream>> = groups.iter().map(|g| wire_streams(g)).collect();
    for (r, w) in remote.iter().zip(&wires) {
        let size = serde_json::to_vec(w).map_or(usize::MAX, |b| b.len());
        check_request_size(&r.source, size)?;
    }
    Ok(wires)
}

/// Refuses a request of `size` bytes to source `source` that does not fit one message.
fn check_request_size(source: &str, size: usize) -> Result<(), Error> {
    let most = control::frame::MAX_MESSAGE - 4096;
    if size > most {
        return Err(usage(format!(
            "the streams from {source} make a request of {} KiB; at most {} KiB go to one port: give it fewer streams",
            size >> 10,
            most >> 10
        )));
    }
    Ok(())
}

/// Starts the servers' receivers: they count from now until they are told what was sent.
fn start_far_receivers(
    profile: &Profile,
    id: u16,
    far_dests: &mut [RemoteDest],
    backends: &mut Vec<String>,
) -> Result<(), Error> {
    for d in far_dests {
        let ids = ids_to(profile, &d.dest);
        d.agent
            .start_receive(id, &ids, Duration::from_millis(300))
            .map_err(|e| Error::from(e).context(d.agent.label.clone()))?;
        backends.push(format!("{}: {}", d.dest, d.agent.facts.backend));
    }
    Ok(())
}

/// Starts the streams through wirebench servers, each a UDP test on a thread of its own;
/// they stop when `halt` is raised.
fn spawn_server_streams(profile: &Profile, halt: &Stop) -> ServerRuns {
    let line = profile.line_rate;
    profile
        .streams
        .iter()
        .enumerate()
        .filter_map(|(i, s)| server_of(&s.source).map(|srv| (i, s.clone(), srv.to_owned())))
        .map(|(i, s, srv)| {
            let stop = halt.clone();
            (
                i,
                std::thread::spawn(move || server_stream(&s, &srv, line, stop)),
            )
        })
        .collect()
}

/// The servers' ports as senders of the engine's run: each sends its streams `wire` of
/// test `id` when called, until done or halted.
fn far_senders(
    remote: &mut [RemoteSource],
    wires: Vec<Vec<RawStream>>,
    id: u16,
) -> Vec<RemoteSender<'_>> {
    remote
        .iter_mut()
        .zip(wires)
        .map(|(r, wire)| {
            let send = move |halt: &Stop| {
                let sent = r.agent.send_streams(id, wire, Some(halt)).map_err(|e| {
                    let kind = match e {
                        control::ProtoError::Interrupted => std::io::ErrorKind::Interrupted,
                        _ => std::io::ErrorKind::Other,
                    };
                    std::io::Error::new(kind, format!("{}: {e}", r.agent.label))
                })?;
                Ok(sent
                    .into_iter()
                    .map(control::rawport::RawStreamSent::into_sent)
                    .collect())
            };
            Box::new(send) as RemoteSender<'_>
        })
        .collect()
}

/// Waits for the server streams, which end with their time, a stop, or the raw streams'
/// failure (`raw_failed`): joined even then, so none runs on into the next test. Returns
/// their data by profile index and the first failure.
fn join_server_streams(
    runs: ServerRuns,
    raw_failed: bool,
    stop: &Stop,
    halt: &Stop,
) -> (BTreeMap<usize, TrialData>, Option<Error>) {
    Wait::on(&RealClock::new()).poll(|| {
        if runs.iter().all(|(_, h)| h.is_finished()) {
            return Poll::Ready(());
        }
        if raw_failed || stop.is_raised() {
            halt.raise();
        }
        Poll::Wait(Duration::from_millis(10))
    });
    let mut by_server = BTreeMap::new();
    let mut failed = None;
    for (i, h) in runs {
        match h.join() {
            Ok(Ok(m)) => {
                by_server.insert(i, m);
            }
            Ok(Err(e)) => failed = failed.or(Some(e)),
            Err(_) => {
                let e = Error::Failed("a server stream's thread panicked".into());
                failed = failed.or(Some(e));
            }
        }
    }
    (by_server, failed)
}

/// Runs a server stream: after its start offset, a UDP test of datagrams of L − 46 bytes
/// at the stream's frame rate until its stop offset.
fn server_stream(
    s: &StreamSpec,
    server: &str,
    line: LineRate,
    stop: Stop,
) -> Result<TrialData, Error> {
    let (host, port) = server_address(server);
    let mut cfg = client_config(&Server {
        host,
        port,
        key_file: None,
        allow_unauthenticated: false,
    })?;
    wait_for_start(s.start, &stop)?;
    cfg.stop = Some(stop);
    run_server_stream(s, line, cfg)
}

/// The host and control port of `wirebench://HOST[:PORT]`'s `HOST[:PORT]`.
fn server_address(server: &str) -> (String, u16) {
    match server.rsplit_once(':').map(|(h, p)| (h, p.parse::<u16>())) {
        Some((h, Ok(p))) => (h.to_owned(), p),
        _ => (server.to_owned(), control::DEFAULT_PORT),
    }
}

/// Waits `start_s` seconds, or until a stop.
fn wait_for_start(start_s: f64, stop: &Stop) -> Result<(), Error> {
    let clock = engine::clock::RealClock::new();
    match wait_until(&clock, Duration::from_secs_f64(start_s), stop) {
        Waited::Reached => Ok(()),
        Waited::Stopped => Err(Error::Interrupted),
    }
}

/// Server stream `s` as one trial on `server`: UDP frames of its size at its frame rate
/// for its time, with latency; received bytes as frames on an Ethernet.
fn run_server_stream<S: TestServer>(
    s: &StreamSpec,
    line: LineRate,
    server: S,
) -> Result<TrialData, Error> {
    let len = s
        .pattern
        .first()
        .copied()
        .ok_or_else(|| usage(format!("stream '{}' has no frame size", s.name)))?;
    let mut base = base_spec(Protocol::Udp);
    base.dscp = (s.dscp > 0).then_some(s.dscp);
    let mut trial = ServerTrial { cfg: server, base };
    let duration = Duration::from_secs_f64(s.stop - s.start);
    let req = TrialRequest::frames(len, s.fps(line), duration).with_latency();
    let mut d = trial
        .run(&req)
        .map_err(|e| e.context(format!("stream '{}'", s.name)))?;
    // As frames on an Ethernet: L − 4 bytes each (the FCS is added in the report).
    d.received_bytes = d.counters.received * len.saturating_sub(4);
    Ok(d)
}

/// The raw streams' interval rows: every receiver's tick k joined into one, the loss of
/// each interval placed where its frames were due.
fn raw_intervals(r: &MultiReport) -> Vec<model::results::IntervalRow> {
    use model::stats::intervals::{attribute_loss, rows, SlotCounts, Tick};
    // Every receiver ticks until the same moment (the generators' end); should one have
    // fewer ticks, the rows end with it.
    let n = r.ticks.iter().map(Vec::len).min().unwrap_or(0);
    let ticks: Vec<Tick> = (0..n)
        .map(|k| {
            let at: Vec<&Tick> = r.ticks.iter().filter_map(|t| t.get(k)).collect();
            Tick {
                end: at.iter().map(|t| t.end).max().unwrap_or_default(),
                streams: at.iter().flat_map(|t| t.streams.iter().cloned()).collect(),
            }
        })
        .collect();
    let mut out = rows(&ticks, model::results::LatencyKind::OneWay);
    let received: BTreeMap<u8, &model::stats::slots::TxSlots> = r
        .received
        .iter()
        .flat_map(|(table, _)| table.streams().map(|(id, s)| (id, &s.slots)))
        .collect();
    let counts = r
        .sent
        .iter()
        .flatten()
        .filter_map(|s| {
            let c = SlotCounts {
                sent: &s.slots,
                received: received.get(&s.stream_id)?,
                origin: r.t0_wall,
            };
            Some((s.stream_id, c))
        })
        .collect();
    attribute_loss(&mut out, &counts);
    out
}

/// What arrived of one stream, wherever it was counted (a receiver here or a server's).
struct Arrived<'a> {
    /// Received, duplicates, reordered, late (not yet settled).
    counters: Counters,
    /// Bytes of the distinct frames.
    bytes: u64,
    /// First and last receive stamp.
    span: Option<(UnixNanos, UnixNanos)>,
    /// Latency of the stamped frames.
    latency: &'a LatencyHistogram,
}

impl<'a> Arrived<'a> {
    /// What a receiver here counted of a stream.
    fn here(rx: &'a model::stats::table::StreamRx) -> Self {
        Self {
            counters: rx.counters(),
            bytes: rx.bytes,
            span: rx.span,
            latency: &rx.latency,
        }
    }

    /// What a server's receiver counted of a stream.
    fn far(rx: &'a engine::raw::ReceivedStream) -> Self {
        Self {
            counters: rx.counters,
            bytes: rx.bytes,
            span: rx.span,
            latency: &rx.latency,
        }
    }
}

/// One raw stream's data: what arrived (`rx`, if anything) settled against what was
/// `sent`; its latency only when `latency` (its ends share a clock) and any was measured.
fn stream_data(sent: &StreamSent, rx: Option<Arrived<'_>>, latency: bool) -> TrialData {
    TrialData {
        counters: rx
            .as_ref()
            .map(|x| x.counters)
            .unwrap_or_default()
            .settle(sent.sent),
        received_bytes: rx.as_ref().map_or(0, |x| x.bytes),
        duration: sent.active,
        rx_span: rx
            .as_ref()
            .and_then(|x| x.span)
            .map(|(a, b)| b.saturating_sub(a)),
        generator_limited: sent.generator_limited,
        latency: rx
            .map(|x| x.latency.clone())
            .filter(|h| !h.is_empty() && latency),
        ..TrialData::default()
    }
}

/// Whether a frame sent on a port at `from` and counted on a port at `at` has a one-way
/// latency: both ports are here, or both hosts' boot ids are known and equal (`None`: this
/// host, whose boot id is `here`).
fn one_clock(
    from: Option<Option<String>>,
    at: Option<Option<String>>,
    here: &Option<String>,
) -> bool {
    if from.is_none() && at.is_none() {
        return true;
    }
    let from = from.unwrap_or_else(|| here.clone());
    let at = at.unwrap_or_else(|| here.clone());
    from.is_some() && from == at
}

/// The run's results, in profile order: the server streams' (`by_server`), the raw
/// streams' from what the engine (`r`) and the servers' receivers counted.
fn collect(
    profile: &Profile,
    ends: &mut Ends,
    r: &MultiReport,
    mut by_server: BTreeMap<usize, TrialData>,
    no_latency: &[u8],
    mut data: StreamsData,
) -> Result<StreamsData, Error> {
    // Local groups first, then the servers' ports (as the engine reports them).
    let all_sources: Vec<&String> = ends
        .sources
        .iter()
        .chain(ends.remote.iter().map(|r| &r.source))
        .collect();
    let sent_of = |stream_id: u8, source: &str| {
        let g = all_sources.iter().position(|x| *x == source).unwrap_or(0);
        r.sent
            .get(g)
            .and_then(|g| g.iter().find(|x| x.stream_id == stream_id))
            .cloned()
    };
    // Each receiver here once.
    data.rx_drops += r.received.iter().map(|(_, drops)| drops).sum::<u64>();
    // The servers' receivers: told what was sent to them, they drain and count. A port
    // that counts strays drains as a port here does (frames of other streams may still
    // arrive once its own are in). All at once: each drains for 300 ms at least.
    let told: Vec<u64> = ends
        .far_dests
        .iter()
        .map(|d| {
            if d.listens {
                return u64::MAX;
            }
            profile
                .streams
                .iter()
                .enumerate()
                .filter(|(_, s)| s.destination == d.dest)
                .filter_map(|(i, s)| sent_of((i + 1) as u8, &s.source))
                .map(|x| x.sent)
                .sum()
        })
        .collect();
    let receptions = std::thread::scope(|scope| {
        let handles: Vec<_> = ends
            .far_dests
            .iter_mut()
            .zip(&told)
            .map(|(d, sent)| {
                scope.spawn(move || {
                    d.agent
                        .finish_receive(*sent)
                        .map_err(|e| Error::from(e).context(d.agent.label.clone()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::Failed("a server's receiver thread panicked".into()))
                })
            })
            .collect::<Vec<_>>()
    });
    let mut far_received = Vec::new();
    for (d, reception) in ends.far_dests.iter().zip(receptions) {
        let reception = reception?;
        data.rx_drops += reception.drops;
        far_received.push((d.dest.clone(), reception));
    }
    data.strays = vec![Vec::new(); profile.streams.len()];
    // A stray's one-way latency needs its source and the port that counted it on one
    // clock. Where a port is: `None` here, else its server's boot id.
    let here = engine::env::boot_id();
    let source_at = |source: &str| {
        ends.remote
            .iter()
            .find(|r| r.source == source)
            .map(|r| r.agent.facts.host_id.clone())
    };
    // Where each listening port is (`None`: here) and the strays it counted.
    let here_strays = ends
        .dests
        .iter()
        .zip(&r.received)
        .flat_map(|(d, (table, _))| {
            table
                .strays()
                .map(move |(id, rx)| (d, None, id, Arrived::here(rx)))
        });
    let far_strays = ends
        .far_dests
        .iter()
        .zip(&far_received)
        .filter(|(d, _)| d.listens)
        .flat_map(|(d, (_, reception))| {
            let at = Some(d.agent.facts.host_id.clone());
            reception
                .strays
                .iter()
                .map(move |rx| (&d.dest, at.clone(), rx.id, Arrived::far(rx)))
        });
    for (d, at, id, arrived) in here_strays.chain(far_strays) {
        let Some(s) = profile.streams.get(usize::from(id).wrapping_sub(1)) else {
            continue;
        };
        let sent = sent_of(id, &s.source).unwrap_or_default();
        let latency = one_clock(source_at(&s.source), at, &here);
        data.strays[usize::from(id) - 1]
            .push((d.clone(), stream_data(&sent, Some(arrived), latency)));
    }
    for (i, s) in profile.streams.iter().enumerate() {
        if let Some(m) = by_server.remove(&i) {
            data.streams.push(m);
            continue;
        }
        let stream_id = (i + 1) as u8;
        let sent = sent_of(stream_id, &s.source).unwrap_or_default();
        let latency = !no_latency.contains(&stream_id);
        if let Some((_, reception)) = far_received.iter().find(|(d, _)| *d == s.destination) {
            let rx = reception.streams.iter().find(|x| x.id == stream_id);
            let arrived = rx.map(Arrived::far);
            data.streams.push(stream_data(&sent, arrived, latency));
            continue;
        }
        let d = ends
            .dests
            .iter()
            .position(|x| *x == s.destination)
            .unwrap_or(0);
        let (table, _) = &r.received[d];
        let arrived = table.stream(stream_id).map(Arrived::here);
        data.streams.push(stream_data(&sent, arrived, latency));
    }
    Ok(data)
}

impl StreamsTrial for StreamsRun {
    type Error = Error;

    fn run(&mut self, profile: &Profile) -> Result<StreamsData, Error> {
        let id = test_id();
        // Senders by source (ports here, then ports of servers), receivers by destination.
        let mut ends = self.open_ends(profile)?;
        // A server's port reports its totals at the end, not as it goes: no interval rows
        // then.
        let interval = self.interval.filter(|_| !ends.far());
        let mut notes = Vec::new();
        if self.interval.is_some() && ends.far() {
            notes
                .push("no interval rows: a server's port reports its totals at the end".to_owned());
        }
        let slot_ns = interval.map_or(0, |i| {
            let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            model::stats::slots::slot_width(ns(i), ns(Duration::from_secs_f64(profile.duration)))
        });
        let built = self.build_streams(profile, id, &ends, slot_ns)?;
        notes.extend(latency_note(profile, &built.no_latency));
        let mut backends = Vec::new();
        let (mut senders, mut receivers) =
            self.open_local(profile, id, (&ends, built.groups), slot_ns, &mut backends)?;
        let wires = wire_requests(&ends.remote, &built.remote_groups)?;
        start_far_receivers(profile, id, &mut ends.far_dests, &mut backends)?;
        // Streams through a wirebench server run as UDP tests of the control protocol, at
        // the same time as the raw streams; they stop on Ctrl-C or when the raw streams
        // failed.
        let halt_servers = Stop::new();
        let server_runs = spawn_server_streams(profile, &halt_servers);
        for r in &ends.remote {
            backends.push(format!("{}: {}", r.source, r.agent.facts.backend));
        }
        let r = engine::multi::run_with_remote(
            senders
                .iter_mut()
                .map(|(tx, streams)| (tx.as_mut() as &mut dyn FrameTx, std::mem::take(streams)))
                .collect(),
            far_senders(&mut ends.remote, wires, id),
            receivers
                .iter_mut()
                .map(|(rx, table)| (rx.as_mut() as &mut dyn FrameRx, table.clone()))
                .collect(),
            Duration::from_millis(300),
            interval,
            &self.stop,
        );
        let (by_server, failed) =
            join_server_streams(server_runs, r.is_err(), &self.stop, &halt_servers);
        // Stopped (Ctrl-C) with a server's port still sending: its session was closed.
        if r.is_err() && self.stop.is_raised() {
            return Err(Error::Interrupted);
        }
        let r = r?;
        if let Some(e) = failed {
            return Err(e);
        }
        if !by_server.is_empty() {
            backends.push("wirebench servers: udp".into());
        }
        let data = StreamsData {
            backends,
            intervals: raw_intervals(&r),
            notes,
            ..StreamsData::default()
        };
        collect(profile, &mut ends, &r, by_server, &built.no_latency, data)
    }
}

#[cfg(test)]
#[path = "streams_tests.rs"]
mod test;
