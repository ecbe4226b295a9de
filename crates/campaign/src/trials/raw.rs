//! Frame trials between two raw ports ([`RawTrial`]), each of this host or lent by a
//! wirebench server (`HOST/IFACE`), optionally turned around by a server's port
//! (`--reflect`).
//!
//! It opens the ports, builds the frame template from what they say, runs each trial on
//! the engine (two ports here) or in halves (a port elsewhere: the receiver counts, the
//! sender sends, the receiver is told how many were sent and drains), and settles the
//! counts into the method's trial data. Latency is reported only where both ends share a
//! clock. It does not choose loads (the methods do) nor move frames itself (the engine's
//! backends and the servers' ports do: `FrameTx`, `FrameRx` and [`LentPort`] are its seams).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use control::rawport::{RawAgent, RawOpenRequest};
use engine::frameio::{Endpoint, FrameRx, FrameTx};
use engine::raw::{RawLoad, RawTrialReport, RawTrialSpec};
use method::{Load, Trial, TrialData, TrialRequest};
use wire::frame::FrameSpec;
use wire::linerate::LineRate;

use crate::frames::{self, test_id};
use crate::request::Agents;
use crate::request::{FrameBackend, FrameRequest};
use crate::trials::agents::{agent_addresses, backend_name, LentPort};
use crate::{usage, Error};
use model::stop::Stop;

/// Where a trial's frames leave: a port of this host or one a server lends.
pub(crate) enum TxSide {
    Local(Box<dyn FrameTx>),
    Agent(Box<dyn LentPort>),
}

/// Where a trial's frames are counted.
pub(crate) enum RxSide {
    Local(Box<dyn FrameRx>),
    Agent(Box<dyn LentPort>),
}

/// Frame trials between two raw ports, of this host or lent by wirebench servers
/// (`HOST/IFACE`): a fresh stream id per trial, so late frames of the previous trial are
/// not counted. With a port elsewhere, the trial runs in halves (the receiver counts, the
/// sender sends, the receiver is told how many were sent and drains) and the counters
/// settle as for two local ports.
pub struct RawTrial {
    tx: TxSide,
    rx: RxSide,
    frame: FrameSpec,
    line: LineRate,
    test_id: u16,
    stream: u8,
    stop: Stop,
    /// Why one-way latency is not reported (the ports do not share a clock).
    no_latency: Option<String>,
    /// The far end that turns the frames around (`--reflect`): they come back to the
    /// sending port, where `rx` counts them.
    reflector: Option<Box<dyn LentPort>>,
    /// Frames the reflector lost itself (its receive buffer full, its sender refusing),
    /// over all trials.
    reflector_lost: u64,
}

/// Why one-way latency between two ports is not reported, when it is not: their hosts'
/// boot ids differ or are unknown and the user did not say the clocks are synchronised.
fn latency_note(tx_host: Option<&str>, rx_host: Option<&str>, synced: bool) -> Option<String> {
    let shared = tx_host.is_some() && tx_host == rx_host;
    (!shared && !synced).then(|| {
        "one-way latency between hosts is not reported: the ports' clocks are not known to agree (--synced-clocks when they are synchronised)".to_owned()
    })
}

/// Opens the sending port of a trial toward `dst_ip`: the port, its addresses and name,
/// and the next hop's MAC (the request's, or resolved where the port is).
fn open_sender(
    frame: &FrameRequest,
    tx: &frames::Port,
    dst_ip: std::net::IpAddr,
    agents: &Agents,
    max_len: u64,
    stop: &Stop,
) -> Result<(TxSide, lab::probe::Addresses, String, [u8; 6]), Error> {
    let vlan = frame.vlan.is_some();
    match tx {
        frames::Port::Local(ep) => {
            let runner = &mut lab::SystemRunner;
            frames::fits_mtu(ep, max_len, vlan)?;
            let a = lab::probe::addresses(runner, ep)?;
            let mac = match frame.dst_mac {
                Some(m) => m,
                None => lab::probe::next_hop_mac(runner, ep, dst_ip)?,
            };
            let t = frames::open_tx(frame.backend, ep, max_len)?;
            Ok((TxSide::Local(t), a, ep.to_string(), mac))
        }
        frames::Port::Agent { host, port, iface } => {
            let req = RawOpenRequest {
                send: Some(backend_name(frame.backend)),
                max_len,
                resolve: frame.dst_mac.is_none().then_some(dst_ip),
                ..RawOpenRequest::default()
            };
            let agent = agents.open((host, *port, iface), req, stop)?;
            frames::fits(agent.facts.mtu, (&agent.label, &agent.iface), max_len, vlan)?;
            let mac = frame.dst_mac.or(agent.facts.next_hop_mac).ok_or_else(|| {
                usage(format!(
                    "{}: the next hop's MAC is not known: give --dst-mac",
                    agent.label
                ))
            })?;
            let a = agent_addresses(&agent);
            let name = agent.label.clone();
            Ok((TxSide::Agent(Box::new(agent)), a, name, mac))
        }
    }
}

/// Opens the receiving port of a trial: the port, its addresses and name.
fn open_receiver(
    frame: &FrameRequest,
    rx: &frames::Port,
    agents: &Agents,
    max_len: u64,
    stop: &Stop,
) -> Result<(RxSide, lab::probe::Addresses, String), Error> {
    let vlan = frame.vlan.is_some();
    match rx {
        frames::Port::Local(ep) => {
            frames::fits_mtu(ep, max_len, vlan)?;
            let a = lab::probe::addresses(&mut lab::SystemRunner, ep)?;
            Ok((
                RxSide::Local(frames::open_rx(frame.rx_backend(), ep)?),
                a,
                ep.to_string(),
            ))
        }
        frames::Port::Agent { host, port, iface } => {
            let req = RawOpenRequest {
                receive: Some(backend_name(frame.rx_backend())),
                max_len,
                ..RawOpenRequest::default()
            };
            let agent = agents.open((host, *port, iface), req, stop)?;
            frames::fits(agent.facts.mtu, (&agent.label, &agent.iface), max_len, vlan)?;
            let a = agent_addresses(&agent);
            let name = agent.label.clone();
            Ok((RxSide::Agent(Box::new(agent)), a, name))
        }
    }
}

/// The backend a reflecting port uses for `b`: each batch sent the moment it arrives, so
/// `auto` is sendmmsg/recvmmsg (AF_XDP in copy mode leaves frames in its ring until the
/// next wake-up, and a reflector has no next one at a trial's end; a ring hands a block
/// over every 2 ms, which would add to the round trip).
fn reflecting(b: FrameBackend) -> FrameBackend {
    match b {
        FrameBackend::Auto => FrameBackend::Packet,
        b => b,
    }
}

impl RawTrial {
    /// Opens the ports for frames of up to `max_len` bytes.
    ///
    /// # Errors
    /// A frame larger than a port's MTU allows, or a backend that does not open.
    pub fn open(
        frame: &FrameRequest,
        spec: FrameSpec,
        (tx, rx): (&Endpoint, &Endpoint),
        max_len: u64,
        stop: Stop,
    ) -> Result<Self, Error> {
        for ep in [tx, rx] {
            frames::fits_mtu(ep, max_len, frame.vlan.is_some())?;
        }
        let sides = (
            TxSide::Local(frames::open_tx(frame.backend, tx, max_len)?),
            RxSide::Local(frames::open_rx(frame.rx_backend(), rx)?),
        );
        Ok(Self::assemble(frame, sides, spec, stop, None, None))
    }

    /// Opens two ports, each on this host or lent by a server (`agents` says how to reach
    /// them), and builds the frame template from the request and what the ports say (a
    /// server resolves its port's next hop); returns the trial and its template.
    ///
    /// # Errors
    /// A server that cannot be reached or does not lend the port, an address neither the
    /// request nor the ports give, a frame larger than a port's MTU, a backend that does
    /// not open.
    ///
    /// With `reflect` the receiving port (a server's) turns the frames around and the
    /// sending port counts them as they come back: round-trip latency on one clock.
    pub fn open_ports(
        frame: &FrameRequest,
        (tx, rx): (&frames::Port, &frames::Port),
        agents: &Agents,
        reflect: bool,
        max_len: u64,
        stop: Stop,
    ) -> Result<(Self, FrameSpec), Error> {
        use frames::Port;
        if reflect {
            return Self::open_reflected(frame, (tx, rx), agents, max_len, stop);
        }
        if let (Port::Local(t), Port::Local(r)) = (tx, rx) {
            let spec = frames::spec(frame, t, Some(r))?;
            return Ok((Self::open(frame, spec, (t, r), max_len, stop)?, spec));
        }
        // The receiver first: the frames' destination address may be its.
        let (rx_side, rxa, rx_name) = open_receiver(frame, rx, agents, max_len, &stop)?;
        let dst_ip = frames::dst_ip(frame, Some((&rx_name, &rxa)))?;
        let (tx_side, txa, tx_name, dst_mac) =
            open_sender(frame, tx, dst_ip, agents, max_len, &stop)?;
        let spec = frames::headers(frame, (&tx_name, &txa), dst_ip, dst_mac)?;
        // Ports share a clock when their hosts have one boot id (this host's for a port
        // here).
        let here = engine::env::boot_id();
        let tx_host = match &tx_side {
            TxSide::Agent(a) => a.host_id(),
            TxSide::Local(_) => here.as_deref(),
        };
        let rx_host = match &rx_side {
            RxSide::Agent(a) => a.host_id(),
            RxSide::Local(_) => here.as_deref(),
        };
        let no_latency = latency_note(tx_host, rx_host, agents.synced_clocks);
        let trial = Self::assemble(frame, (tx_side, rx_side), spec, stop, no_latency, None);
        Ok((trial, spec))
    }

    /// [`RawTrial::open_ports`] with `reflect`: `rx` (a server's port) turns the frames
    /// around, `tx` sends them and counts them back.
    fn open_reflected(
        frame: &FrameRequest,
        (tx, rx): (&frames::Port, &frames::Port),
        agents: &Agents,
        max_len: u64,
        stop: Stop,
    ) -> Result<(Self, FrameSpec), Error> {
        use frames::Port;
        let Port::Agent { host, port, iface } = rx else {
            return Err(usage(
                "--reflect turns the frames around at --rx, which is then HOST/IFACE (a port of a wirebench server started with --raw-ports)",
            ));
        };
        let vlan = frame.vlan.is_some();
        // The far end sends each batch the moment it arrives and receives each frame at
        // once, VLAN tag restored.
        let req = RawOpenRequest {
            send: Some(backend_name(reflecting(frame.backend))),
            receive: Some(backend_name(reflecting(frame.rx_backend()))),
            max_len,
            ..RawOpenRequest::default()
        };
        let far = agents.open((host, *port, iface), req, &stop)?;
        frames::fits(far.facts.mtu, (&far.label, &far.iface), max_len, vlan)?;
        let fara = agent_addresses(&far);
        let dst_ip = frames::dst_ip(frame, Some((&far.label, &fara)))?;
        let (tx_side, txa, tx_name, dst_mac) =
            open_sender(frame, tx, dst_ip, agents, max_len, &stop)?;
        // The frames come back to the sending port, which counts them.
        let rx_side = match tx {
            Port::Local(ep) => RxSide::Local(frames::open_rx(frame.rx_backend(), ep)?),
            Port::Agent { host, port, iface } => {
                let back = RawOpenRequest {
                    receive: Some(backend_name(frame.rx_backend())),
                    max_len,
                    ..RawOpenRequest::default()
                };
                let agent: RawAgent = agents.open((host, *port, iface), back, &stop)?;
                RxSide::Agent(Box::new(agent))
            }
        };
        let spec = frames::headers(frame, (&tx_name, &txa), dst_ip, dst_mac)?;
        // Sent and counted back on one port: one clock.
        let far: Box<dyn LentPort> = Box::new(far);
        let trial = Self::assemble(frame, (tx_side, rx_side), spec, stop, None, Some(far));
        Ok((trial, spec))
    }

    /// The trial over opened ports.
    pub(crate) fn assemble(
        frame: &FrameRequest,
        (tx, rx): (TxSide, RxSide),
        spec: FrameSpec,
        stop: Stop,
        no_latency: Option<String>,
        reflector: Option<Box<dyn LentPort>>,
    ) -> Self {
        Self {
            tx,
            rx,
            frame: spec,
            line: LineRate(frame.line_rate as u64),
            test_id: test_id(),
            stream: 0,
            stop,
            no_latency,
            reflector,
            reflector_lost: 0,
        }
    }

    /// Frames the reflector lost itself over the trials so far: its CPU, not the path.
    pub fn reflector_lost(&self) -> u64 {
        self.reflector_lost
    }

    /// Where the frames are turned around (`--reflect`), when they are.
    pub fn reflected_at(&self) -> Option<&str> {
        self.reflector.as_ref().map(|a| a.label())
    }

    /// The backends, `sender / receiver` (a lent port's with its `HOST/IFACE`).
    pub fn backend(&self) -> String {
        let tx = match &self.tx {
            TxSide::Local(t) => t.name().to_owned(),
            TxSide::Agent(a) => format!(
                "{} at {}",
                a.backend().split(" / ").next().unwrap_or("?"),
                a.label()
            ),
        };
        let rx = match &self.rx {
            RxSide::Local(r) => r.name().to_owned(),
            RxSide::Agent(a) => format!(
                "{} at {}",
                a.backend().split(" / ").nth(1).unwrap_or("?"),
                a.label()
            ),
        };
        format!("{tx} / {rx}")
    }

    /// Why one-way latency is not reported, when it is not.
    pub fn latency_absent(&self) -> Option<&str> {
        self.no_latency.as_deref()
    }

    /// One trial of `load` with frames of `len` bytes (FCS included) on a fresh stream,
    /// waiting up to `drain` for the last frames.
    ///
    /// # Errors
    /// A backend or a server fails; [`Error::Interrupted`] when stopped meanwhile (a
    /// trial cut short measured part of its time: it is no result).
    pub fn run_load(
        &mut self,
        len: usize,
        load: RawLoad,
        drain: Duration,
    ) -> Result<RawTrialReport, Error> {
        self.stream = self.stream.wrapping_add(1);
        let spec = RawTrialSpec {
            frame: self.frame,
            frame_len: len,
            test_id: self.test_id,
            stream_id: self.stream,
            load,
            drain,
            interval: None,
        };
        let r = match (&mut self.tx, &mut self.rx) {
            (TxSide::Local(tx), RxSide::Local(rx)) if self.reflector.is_none() => {
                engine::raw::run_trial(tx.as_mut(), Some(rx.as_mut()), &spec, &self.stop)?
            }
            _ => self.run_split(&spec)?,
        };
        if self.stop.is_raised() {
            return Err(Error::Interrupted);
        }
        Ok(r)
    }

    /// Refuses a timed trial longer than a lent port's server runs a test.
    fn check_longest(&self, spec: &RawTrialSpec) -> Result<(), Error> {
        let RawLoad::Rate { .. } = spec.load else {
            return Ok(());
        };
        let lent = [
            match &self.tx {
                TxSide::Agent(a) => Some(a),
                TxSide::Local(_) => None,
            },
            match &self.rx {
                RxSide::Agent(a) => Some(a),
                RxSide::Local(_) => None,
            },
            self.reflector.as_ref(),
        ];
        let secs = spec.load.duration().as_secs_f64();
        for a in lent.into_iter().flatten() {
            if secs > a.longest_test() {
                return Err(usage(format!(
                    "{}: a trial of {secs} s, and this server's longest test is {} s (its --max-duration)",
                    a.label(),
                    a.longest_test()
                )));
            }
        }
        Ok(())
    }

    /// A trial with at least one port elsewhere, in halves.
    fn run_split(&mut self, spec: &RawTrialSpec) -> Result<RawTrialReport, Error> {
        self.check_longest(spec)?;
        let frame = {
            let hdr = wire::testhdr::TestHeaderRepr::template(spec.test_id, spec.stream_id);
            let mut buf = vec![0u8; spec.frame_len];
            let len = spec
                .frame
                .build(spec.frame_len, &hdr, &mut buf)
                .map_err(|e| usage(format!("frame: {e}")))?;
            buf.truncate(len);
            buf
        };
        if let Some(far) = &mut self.reflector {
            far.start_reflect(spec.test_id)?;
        }
        let counted = send_and_count((&mut self.tx, &mut self.rx), spec, &frame, &self.stop);
        // The reflector stops whatever happened to the trial.
        let turned = match &mut self.reflector {
            Some(far) => {
                let n = counted.as_ref().map_or(0, |(_, n)| *n);
                Some(far.finish_reflect(n))
            }
            None => None,
        };
        let (report, _) = counted?;
        if let Some(t) = turned {
            let t = t?;
            self.reflector_lost += t.not_sent + t.rx_drops;
        }
        Ok(report)
    }

    /// The load of trial `req` and its frame size.
    fn load_for(&self, req: &TrialRequest) -> Result<(u64, RawLoad), Error> {
        let len = req
            .frame_len()
            .ok_or_else(|| usage("raw ports send whole frames: give a frame size"))?;
        let load = match req.load {
            Load::Rate(rate, duration) => RawLoad::Rate {
                pps: rate
                    .packets_per_sec(len as usize)
                    .unwrap_or(self.line.max_fps(len)),
                duration,
                count: None,
            },
            Load::Burst(frames) => RawLoad::Burst {
                frames,
                target_pps: self.line.max_fps(len),
            },
        };
        Ok((len, load))
    }
}

/// The halves of a split trial: the receiver starts counting (a thread here, or a lent
/// port), the sender sends, the receiver is told how many were sent and drains; the
/// report settles what it counted against what was sent. Returns the report and the
/// frames sent.
fn send_and_count(
    (tx, rx): (&mut TxSide, &mut RxSide),
    spec: &RawTrialSpec,
    frame: &[u8],
    stop: &Stop,
) -> Result<(RawTrialReport, u64), Error> {
    let ids = [spec.stream_id];
    let generating = AtomicUsize::new(1);
    let expected = AtomicU64::new(u64::MAX);
    std::thread::scope(|s| {
        let counting = match rx {
            RxSide::Local(r) => {
                let (g, e, ids) = (&generating, &expected, &ids);
                Counting::Here(s.spawn(move || {
                    engine::raw::receive_trial(
                        r.as_mut(),
                        spec.test_id,
                        ids,
                        spec.drain,
                        g,
                        e,
                        stop,
                    )
                }))
            }
            RxSide::Agent(a) => {
                a.start_receive(spec.test_id, &ids, spec.drain)?;
                Counting::There(a)
            }
        };
        let sent = match tx {
            TxSide::Local(t) => engine::raw::run_trial(t.as_mut(), None, spec, stop)
                .map_err(|e| Error::Failed(e.to_string())),
            TxSide::Agent(a) => a.send(frame, spec).map(|s| RawTrialReport::sent(&s)),
        };
        let n = sent.as_ref().map_or(0, |r| r.counters.sent);
        expected.store(n, Ordering::Release);
        generating.store(0, Ordering::Release);
        let reception = match counting {
            Counting::Here(h) => h
                .join()
                .map_err(|_| Error::Failed("receiver thread panicked".into()))?
                .map_err(|e| Error::Failed(e.to_string())),
            Counting::There(a) => a.finish_receive(n),
        };
        let mut report = sent?;
        report.add_reception(&[(spec.stream_id, n)], &reception?);
        Ok::<_, Error>((report, n))
    })
}

/// Who counts a split trial's frames: a receiver thread here, or a lent port.
enum Counting<'scope, 'a> {
    Here(std::thread::ScopedJoinHandle<'scope, std::io::Result<engine::raw::Reception>>),
    There(&'a mut Box<dyn LentPort>),
}

impl Trial for RawTrial {
    type Error = Error;

    fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Error> {
        let (len, load) = self.load_for(req)?;
        // RFC 2544 §23 waits 2 s for residual frames; on one host 300 ms is plenty.
        let r = self.run_load(len as usize, load, Duration::from_millis(300))?;
        Ok(TrialData {
            counters: r.counters,
            received_bytes: r.received_bytes,
            offered_pps: r.offered_pps,
            duration: r.elapsed,
            rx_span: r.rx_span,
            generator_limited: r.generator_limited,
            latency: (req.latency && self.no_latency.is_none()).then_some(r.latency),
            backend: Some(self.backend()),
            timestamp_source: Some("kernel-software".into()),
            ..TrialData::default()
        })
    }
}

#[cfg(test)]
#[path = "raw_tests.rs"]
mod test;
