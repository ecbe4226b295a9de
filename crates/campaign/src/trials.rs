//! The runners the methods' trials run on: a wirebench server ([`ServerTrial`]), two raw
//! ports of this host ([`RawTrial`]), every stream of a profile at once ([`StreamsRun`]),
//! and a shaper whose rate is set between trials ([`ShaperDut`]). Each returns the
//! method's trial data directly from what the engine and the control client measured.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use control::client::{ClientConfig, Session};
use control::rawport::{RawAgent, RawOpenRequest};
use engine::frameio::{Endpoint, FrameRx, FrameTx};
use engine::multi::{Patch, StreamTx};
use engine::raw::{RawLoad, RawTrialSpec};
use method::streams::{Profile, StreamProto, StreamSpec};
use method::{Dut, Load, Size, StreamsData, StreamsTrial, Trial, TrialData, TrialRequest};
use model::spec::{Direction, Protocol, Rate, TestSpec, UdpBackend};
use model::stats::Counters;
use wire::frame::FrameSpec;
use wire::linerate::LineRate;

use crate::frames::{self, test_id};
use crate::request::{Connect, FrameBackend, FrameRequest, IpFamily, Server};
use crate::{usage, Error};

/// Ethernet, IPv4, UDP headers and the FCS around a UDP payload: a frame of L bytes is a
/// datagram of L − 46 bytes of payload.
pub const UDP_FRAME_OVERHEAD: u64 = 46;

/// How to reach `server`: its address resolved, its key read.
///
/// # Errors
/// A name that does not resolve, a key file that cannot be read or is too short.
pub fn client_config(server: &Server) -> Result<ClientConfig, Error> {
    client_config_with(server, &Connect::default())
}

/// [`client_config`] with a client's connection options (`-4`, `-6`, `-B`, `--cport`,
/// `--connect-timeout`).
///
/// # Errors
/// The key file cannot be read, the name does not resolve (in the asked family), or the
/// local address is of the other family.
pub fn client_config_with(server: &Server, connect: &Connect) -> Result<ClientConfig, Error> {
    let key = match &server.key_file {
        Some(p) => Some(control::auth::load_key(p).map_err(usage)?),
        None => None,
    };
    let family = connect.family.or(connect.bind.map(|b| {
        if b.is_ipv4() {
            IpFamily::V4
        } else {
            IpFamily::V6
        }
    }));
    let addr: SocketAddr = (server.host.as_str(), server.port)
        .to_socket_addrs()
        .map_err(|e| Error::Failed(format!("cannot resolve {}: {e}", server.host)))?
        .find(|a| match family {
            Some(IpFamily::V4) => a.is_ipv4(),
            Some(IpFamily::V6) => a.is_ipv6(),
            None => true,
        })
        .ok_or_else(|| {
            let which = match family {
                Some(IpFamily::V4) => "IPv4 ",
                Some(IpFamily::V6) => "IPv6 ",
                None => "",
            };
            usage(format!("{} has no {which}address", server.host))
        })?;
    Ok(ClientConfig {
        server: addr,
        key,
        connect_timeout: connect.timeout.unwrap_or(Duration::from_secs(5)),
        cpu: None,
        force_round_trip: false,
        stop: None,
        bind: connect.bind,
        cport: connect.cport,
        allow_unauthenticated_server: server.allow_unauthenticated,
    })
}

/// A test spec of one UDP or TCP stream, 1 s, unlimited, 1472 bytes, forward, to be
/// completed by the caller.
pub fn base_spec(protocol: Protocol) -> TestSpec {
    TestSpec {
        protocol,
        duration: Duration::from_secs(1),
        rate: Rate::Unlimited,
        len: TestSpec::DEFAULT_UDP_LEN,
        streams: 1,
        direction: Direction::Forward,
        udp_backend: UdpBackend::Auto,
        synced_clocks: false,
        dscp: None,
        window: None,
        server_cpu: None,
        tcp: Default::default(),
        bytes_per_stream: None,
        omit: None,
    }
}

/// Trials as tests against a wirebench server: a payload trial is a test of one stream; a
/// frame trial of L bytes a UDP test of datagrams of L − 46 bytes at L's frame rate.
pub struct ServerTrial {
    /// How to reach the server.
    pub cfg: ClientConfig,
    /// What every trial's test has besides the request (DSCP, window, ...).
    pub base: TestSpec,
}

impl Trial for ServerTrial {
    type Error = Error;

    fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Error> {
        let Load::Rate(rate, duration) = req.load else {
            return Err(usage(
                "back-to-back bursts need raw ports (--tx/--rx): a socket cannot send at line rate",
            ));
        };
        let len = match req.size {
            Size::Payload(len) => len,
            Size::Frame(l) => l.saturating_sub(UDP_FRAME_OVERHEAD) as usize,
        };
        let spec = TestSpec {
            protocol: req.protocol,
            direction: req.direction,
            rate,
            len,
            duration,
            ..self.base.clone()
        };
        // A trial the method asked for that the server would refuse is a failed run.
        spec.validate()
            .map_err(|e| Error::Failed(format!("test with {} failed: {e}", self.cfg.server)))?;
        let server = self.cfg.server;
        let outcome = Session::connect(&self.cfg)
            .map_err(|e| Error::from(e).context(format!("cannot start a test with {server}")))?
            .run_test(&spec, None, |_| {})
            .map_err(|e| Error::from(e).context(format!("test with {server} failed")))?;
        // A trial cut short by a stop measured part of its time: it is no result.
        if outcome.interrupted {
            return Err(Error::Interrupted);
        }
        let (s, latency) = control::assemble::main_direction(&outcome)
            .ok_or_else(|| Error::Failed("the trial produced no result".into()))?;
        let c = Counters {
            received: s.received_packets.unwrap_or(0),
            duplicates: s.duplicate_packets.unwrap_or(0),
            reordered: s.reordered_packets.unwrap_or(0),
            late: s.late_packets.unwrap_or(0),
            ..Counters::default()
        };
        let offered_pps = s.offered_bps.unwrap_or(0.0) / (8.0 * len.max(1) as f64);
        Ok(TrialData {
            counters: c.settle(s.sent_packets.unwrap_or(0)),
            received_bytes: s.received_bytes.unwrap_or(0),
            offered_bps: s.offered_bps,
            received_bps: s.received_bps,
            offered_pps,
            duration: Duration::from_secs_f64(s.duration_s),
            rx_span: None,
            generator_limited: s.generator_limited,
            latency: latency.filter(|_| req.latency),
            backend: Some(control::assemble::backend_name(&outcome)),
            timestamp_source: Some(control::assemble::timestamp_source(&outcome)),
            sender_cpu: s.sender_cpu,
            receiver_cpu: s.receiver_cpu,
        })
    }
}

/// Where a trial's frames leave: a port of this host or one a server lends.
enum TxSide {
    Local(Box<dyn FrameTx>),
    Agent(RawAgent),
}

/// Where a trial's frames are counted.
enum RxSide {
    Local(Box<dyn FrameRx>),
    Agent(RawAgent),
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
    stop: Arc<AtomicBool>,
    /// Why one-way latency is not reported (the ports do not share a clock).
    no_latency: Option<String>,
    /// The far end that turns the frames around (`--reflect`): they come back to the
    /// sending port, where `rx` counts them.
    reflector: Option<RawAgent>,
    /// Frames the reflector lost itself (its receive buffer full, its sender refusing),
    /// over all trials.
    reflector_lost: u64,
}

/// How a controller reaches the servers that lend ports (`HOST/IFACE`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Agents {
    /// Their control port, unless `HOST:PORT/IFACE` says.
    pub port: u16,
    /// The key they require (`--raw-ports` needs one).
    pub key_file: Option<std::path::PathBuf>,
    /// Their clocks and this host's are synchronised (PTP, NTP): one-way latency between
    /// hosts is reported.
    pub synced_clocks: bool,
}

impl Agents {
    /// Opens port `iface` of the server at `host`.
    fn open(
        &self,
        (host, port, iface): (&str, Option<u16>, &str),
        req: RawOpenRequest,
        stop: &Arc<AtomicBool>,
    ) -> Result<RawAgent, Error> {
        // As the user wrote it.
        let label = match port {
            Some(p) if host.contains(':') => format!("[{host}]:{p}/{iface}"),
            Some(p) => format!("{host}:{p}/{iface}"),
            None => format!("{host}/{iface}"),
        };
        let server = Server {
            host: host.to_owned(),
            port: port.unwrap_or(self.port),
            key_file: self.key_file.clone(),
            allow_unauthenticated: false,
        };
        let mut cfg = client_config(&server)?;
        cfg.stop = Some(Arc::clone(stop));
        let req = RawOpenRequest {
            port: iface.to_owned(),
            ..req
        };
        // A port the previous command just let go of may still be held for a moment while
        // its session winds down on the server: a busy port is asked again for 3 s.
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        loop {
            match RawAgent::open(&cfg, &label, &req) {
                Err(control::ProtoError::Refused {
                    code: control::messages::ErrorCode::Busy,
                    ..
                }) if std::time::Instant::now() < deadline && !stop.load(Ordering::Relaxed) => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                r => return r.map_err(|e| Error::from(e).context(&label)),
            }
        }
    }
}

/// A backend's name for a server's port.
fn backend_name(b: FrameBackend) -> String {
    match b {
        FrameBackend::Auto => "auto",
        FrameBackend::Packet => "packet",
        FrameBackend::Ring => "ring",
        FrameBackend::Xdp => "xdp",
    }
    .to_owned()
}

/// Opens the sending port of a trial toward `dst_ip`: the port, its addresses and name,
/// and the next hop's MAC (the request's, or resolved where the port is).
fn open_sender(
    frame: &FrameRequest,
    tx: &frames::Port,
    dst_ip: std::net::IpAddr,
    agents: &Agents,
    max_len: u64,
    stop: &Arc<AtomicBool>,
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
            Ok((TxSide::Agent(agent), a, name, mac))
        }
    }
}

/// A port's addresses as the frame template needs them.
fn agent_addresses(a: &RawAgent) -> lab::probe::Addresses {
    lab::probe::Addresses {
        mac: a.facts.mac,
        ipv4: a.facts.ipv4,
        ipv6: a.facts.ipv6,
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
        stop: Arc<AtomicBool>,
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
        stop: Arc<AtomicBool>,
    ) -> Result<(Self, FrameSpec), Error> {
        use frames::Port;
        if reflect {
            return Self::open_reflected(frame, (tx, rx), agents, max_len, stop);
        }
        if let (Port::Local(t), Port::Local(r)) = (tx, rx) {
            let spec = frames::spec(frame, t, Some(r))?;
            return Ok((Self::open(frame, spec, (t, r), max_len, stop)?, spec));
        }
        let runner = &mut lab::SystemRunner;
        let vlan = frame.vlan.is_some();
        // The receiver first: the frames' destination address may be its.
        let (rx_side, rxa, rx_name) = match rx {
            Port::Local(ep) => {
                frames::fits_mtu(ep, max_len, vlan)?;
                let a = lab::probe::addresses(runner, ep)?;
                (
                    RxSide::Local(frames::open_rx(frame.rx_backend(), ep)?),
                    a,
                    ep.to_string(),
                )
            }
            Port::Agent { host, port, iface } => {
                let req = RawOpenRequest {
                    receive: Some(backend_name(frame.rx_backend())),
                    max_len,
                    ..RawOpenRequest::default()
                };
                let agent = agents.open((host, *port, iface), req, &stop)?;
                frames::fits(agent.facts.mtu, (&agent.label, &agent.iface), max_len, vlan)?;
                let a = agent_addresses(&agent);
                let name = agent.label.clone();
                (RxSide::Agent(agent), a, name)
            }
        };
        let dst_ip = frames::dst_ip(frame, Some((&rx_name, &rxa)))?;
        let (tx_side, txa, tx_name, dst_mac) =
            open_sender(frame, tx, dst_ip, agents, max_len, &stop)?;
        let spec = frames::headers(frame, (&tx_name, &txa), dst_ip, dst_mac)?;
        // Ports share a clock when their hosts have one boot id (this host's for a port
        // here).
        let here = engine::env::boot_id();
        let host = |agent: Option<&RawAgent>| match agent {
            Some(a) => a.facts.host_id.clone(),
            None => here.clone(),
        };
        let tx_host = host(match &tx_side {
            TxSide::Agent(a) => Some(a),
            TxSide::Local(_) => None,
        });
        let rx_host = host(match &rx_side {
            RxSide::Agent(a) => Some(a),
            RxSide::Local(_) => None,
        });
        let shared = tx_host.is_some() && tx_host == rx_host;
        let no_latency = (!shared && !agents.synced_clocks).then(|| {
            "one-way latency between hosts is not reported: the ports' clocks are not known to agree (--synced-clocks when they are synchronised)".to_owned()
        });
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
        stop: Arc<AtomicBool>,
    ) -> Result<(Self, FrameSpec), Error> {
        use frames::Port;
        let Port::Agent { host, port, iface } = rx else {
            return Err(usage(
                "--reflect turns the frames around at --rx, which is then HOST/IFACE (a port of a wirebench server started with --raw-ports)",
            ));
        };
        let vlan = frame.vlan.is_some();
        // The far end sends each batch the moment it arrives: sendmmsg (AF_XDP in copy
        // mode leaves frames in its ring until the next wake-up, and a reflector has no
        // next one at a trial's end).
        let back = match frame.backend {
            FrameBackend::Auto => FrameBackend::Packet,
            b => b,
        };
        // It also receives with recvmmsg: each frame at once (a ring hands a block over
        // every 2 ms, which would add to the round trip), VLAN tag restored.
        let back_rx = match frame.rx_backend() {
            FrameBackend::Auto => FrameBackend::Packet,
            b => b,
        };
        let req = RawOpenRequest {
            send: Some(backend_name(back)),
            receive: Some(backend_name(back_rx)),
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
                RxSide::Agent(agents.open((host, *port, iface), back, &stop)?)
            }
        };
        let spec = frames::headers(frame, (&tx_name, &txa), dst_ip, dst_mac)?;
        // Sent and counted back on one port: one clock.
        let trial = Self::assemble(frame, (tx_side, rx_side), spec, stop, None, Some(far));
        Ok((trial, spec))
    }

    fn assemble(
        frame: &FrameRequest,
        (tx, rx): (TxSide, RxSide),
        spec: FrameSpec,
        stop: Arc<AtomicBool>,
        no_latency: Option<String>,
        reflector: Option<RawAgent>,
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
        self.reflector.as_ref().map(|a| a.label.as_str())
    }

    /// The backends, `sender / receiver` (a lent port's with its `HOST/IFACE`).
    pub fn backend(&self) -> String {
        let tx = match &self.tx {
            TxSide::Local(t) => t.name().to_owned(),
            TxSide::Agent(a) => format!(
                "{} at {}",
                a.facts.backend.split(" / ").next().unwrap_or("?"),
                a.label
            ),
        };
        let rx = match &self.rx {
            RxSide::Local(r) => r.name().to_owned(),
            RxSide::Agent(a) => format!(
                "{} at {}",
                a.facts.backend.split(" / ").nth(1).unwrap_or("?"),
                a.label
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
    ) -> Result<engine::raw::RawTrialReport, Error> {
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
        if self.stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        Ok(r)
    }

    /// A trial with at least one port elsewhere, in halves.
    fn run_split(&mut self, spec: &RawTrialSpec) -> Result<engine::raw::RawTrialReport, Error> {
        let agents = [
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
        if let RawLoad::Rate { .. } = spec.load {
            for a in agents.into_iter().flatten() {
                if secs > a.longest_test() {
                    return Err(usage(format!(
                        "{}: a trial of {secs} s, and this server's longest test is {} s (its --max-duration)",
                        a.label,
                        a.longest_test()
                    )));
                }
            }
        }
        let ids = [spec.stream_id];
        let generating = AtomicUsize::new(1);
        let expected = AtomicU64::new(u64::MAX);
        let stop = &*self.stop;
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
            far.start_reflect(spec.test_id)
                .map_err(|e| Error::from(e).context(&far.label))?;
        }
        let (tx, rx) = (&mut self.tx, &mut self.rx);
        let counted = std::thread::scope(|s| {
            let (local, agent) = match rx {
                RxSide::Local(r) => {
                    let (g, e) = (&generating, &expected);
                    let h = s.spawn(move || {
                        engine::raw::receive_trial(
                            r.as_mut(),
                            spec.test_id,
                            &ids,
                            spec.drain,
                            g,
                            e,
                            stop,
                        )
                    });
                    (Some(h), None)
                }
                RxSide::Agent(a) => {
                    a.start_receive(spec.test_id, &ids, spec.drain)
                        .map_err(|e| Error::from(e).context(&a.label))?;
                    (None, Some(a))
                }
            };
            let sent = match tx {
                TxSide::Local(t) => engine::raw::run_trial(t.as_mut(), None, spec, stop)
                    .map_err(|e| Error::Failed(e.to_string())),
                TxSide::Agent(a) => a
                    .send(&frame, spec)
                    .map(|s| engine::raw::RawTrialReport::sent(&s))
                    .map_err(|e| Error::from(e).context(&a.label)),
            };
            let n = sent.as_ref().map_or(0, |r| r.counters.sent);
            expected.store(n, Ordering::Release);
            generating.store(0, Ordering::Release);
            let reception = match (local, agent) {
                (Some(h), _) => h
                    .join()
                    .map_err(|_| Error::Failed("receiver thread panicked".into()))?
                    .map_err(|e| Error::Failed(e.to_string())),
                (None, Some(a)) => a
                    .finish_receive(n)
                    .map_err(|e| Error::from(e).context(&a.label)),
                (None, None) => unreachable!("a receiver is local or lent"),
            };
            let mut report = sent?;
            report.add_reception(&[(spec.stream_id, n)], &reception?);
            Ok::<_, Error>((report, n))
        });
        // The reflector stops whatever happened to the trial.
        let turned = match &mut self.reflector {
            Some(far) => {
                let n = counted.as_ref().map_or(0, |(_, n)| *n);
                Some(
                    far.finish_reflect(n)
                        .map_err(|e| Error::from(e).context(&far.label)),
                )
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
}

impl Trial for RawTrial {
    type Error = Error;

    fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Error> {
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

/// A shaper whose rate a method sets: the first class of a lab's shaper, or any device
/// through a shell command template (`{bandwidth}`, `{bandwidth_k}`, `{bandwidth_m}` are
/// replaced; its exit status is checked).
pub enum ShaperDut {
    /// Class 1:10 of the shaper on a lab's dut.
    Lab {
        /// The lab.
        lab: String,
        /// The class before the matrix (rate, ceil and buckets as tc wrote them).
        before: Option<lab::shaper::ClassStats>,
    },
    /// A command template.
    Command(String),
}

/// Longest a shaper's queue may take to empty (at the line rate it is raised to).
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

impl ShaperDut {
    /// Class 1:10 of lab `lab`'s shaper, its rate, ceil and buckets read now so that they can
    /// be put back.
    ///
    /// # Errors
    /// The lab has no shaper class 1:10.
    pub fn lab(lab: &str) -> Result<Self, Error> {
        let classes = lab::shaper::classes(lab, &mut lab::SystemRunner)?;
        let first = classes
            .into_iter()
            .find(|c| c.id == "1:10")
            .ok_or_else(|| usage(format!("lab '{lab}' has no shaper class 1:10 to set")))?;
        Ok(ShaperDut::Lab {
            lab: lab.to_owned(),
            before: Some(first),
        })
    }

    fn run(cmd: &lab::Cmd, what: impl FnOnce() -> String) -> Result<(), Error> {
        match lab::Runner::run(&mut lab::SystemRunner, cmd) {
            Ok(_) => Ok(()),
            Err(lab::LabError::Command { cmd, detail }) => Err(usage(format!(
                "{} failed: `{cmd}` exited with {detail}",
                what()
            ))),
            Err(e) => Err(usage(format!("{} failed: {e}", what()))),
        }
    }
}

impl Dut for ShaperDut {
    type Error = Error;

    fn set_bandwidth(&mut self, bps: f64) -> Result<(), Error> {
        let cmd = match self {
            ShaperDut::Lab { lab, .. } => lab::shaper::set_first_class_rate(lab, bps),
            ShaperDut::Command(t) => lab::Cmd::shell(
                &t.replace("{bandwidth}", &(bps.round() as u64).to_string())
                    .replace("{bandwidth_k}", &format!("{}", bps / 1e3))
                    .replace("{bandwidth_m}", &format!("{}", bps / 1e6)),
            ),
        };
        let what = || format!("setting the bandwidth to {}", model::units::bps(bps));
        Self::run(&cmd, what)
    }

    fn describe(&self) -> String {
        match self {
            ShaperDut::Lab { lab, .. } => format!("lab {lab} shaper class 1:10 (tc class change)"),
            ShaperDut::Command(t) => t.clone(),
        }
    }

    /// A lab's shaper: when frames of the previous cell still wait in its queue, the
    /// class is opened to 10 Gbit/s until the queue reads empty (the next cell sets its
    /// own rate); how long that took is the answer. A command's device cannot be read.
    fn drain(&mut self) -> Result<Option<Duration>, Error> {
        let ShaperDut::Lab { lab, .. } = self else {
            return Ok(None);
        };
        let lab = lab.clone();
        let start = std::time::Instant::now();
        let queued = || -> Result<u64, Error> {
            let classes = lab::shaper::classes(&lab, &mut lab::SystemRunner)?;
            Ok(classes.iter().map(|c| c.backlog_packets).sum())
        };
        if queued()? == 0 {
            return Ok(Some(Duration::ZERO));
        }
        let open = lab::shaper::set_first_class_rate(&lab, 10e9);
        Self::run(&open, || "opening the shaper to empty its queue".into())?;
        while queued()? > 0 {
            if start.elapsed() > DRAIN_LIMIT {
                return Err(Error::Failed(format!(
                    "the shaper of lab '{lab}' still holds frames after {DRAIN_LIMIT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Some(start.elapsed()))
    }

    fn restore(&mut self) -> Result<(), Error> {
        let ShaperDut::Lab {
            lab,
            before: Some(was),
        } = self
        else {
            return Ok(());
        };
        let cmd = lab::shaper::change_first_class(lab, was);
        let what = || format!("restoring the shaper's rate {}", was.rate);
        Self::run(&cmd, what)
    }
}

/// Every stream of a profile at once on the raw-frame engine: one generator per source
/// interleaving its streams on their own schedules, one receiver per destination; streams
/// whose source is `wirebench://HOST[:PORT]` run as UDP tests through that server at the
/// same time.
pub struct StreamsRun {
    /// Lab whose nodes `NODE:IFACE` names.
    pub lab: String,
    /// Frame I/O backend of every sender.
    pub backend: FrameBackend,
    /// Ends the run early.
    pub stop: Arc<AtomicBool>,
    /// Interval rows every this long (`None`: none).
    pub interval: Option<Duration>,
    /// Servers whose ports are ends of streams (`HOST/IFACE`).
    pub agents: Agents,
}

/// The server of a stream whose source is `wirebench://HOST[:PORT]`.
pub fn server_of(source: &str) -> Option<&str> {
    source.strip_prefix("wirebench://")
}

/// A stream through a wirebench server carries UDP datagrams of one size.
///
/// # Errors
/// Any other stream through a server.
pub fn check_server_stream(s: &StreamSpec, server: &str) -> Result<(), Error> {
    let refuse = |why: &str| Err(usage(format!("stream '{}': {why}", s.name)));
    if server.is_empty() {
        return refuse("wirebench://HOST[:PORT] needs a host");
    }
    if s.protocol != StreamProto::Udp {
        return refuse("a stream through a wirebench server is UDP");
    }
    if s.pattern.iter().any(|l| *l != s.pattern[0]) {
        return refuse("a stream through a wirebench server has one frame size");
    }
    Ok(())
}

/// The frame request of stream `s` (its headers' fields; the ports add the addresses).
fn stream_request(s: &StreamSpec, run: &StreamsRun, line: LineRate) -> FrameRequest {
    FrameRequest {
        proto: match s.protocol {
            StreamProto::Tcp => crate::request::FrameProto::Tcp,
            StreamProto::Icmp => crate::request::FrameProto::Icmp,
            _ => crate::request::FrameProto::Udp,
        },
        dst_mac: s.dst_mac,
        dst_ip: s.dst_ip,
        src_port: s.src_port,
        dst_port: s.dst_port,
        vlan: s.vlan,
        pcp: s.pcp,
        dscp: s.dscp,
        lab: run.lab.clone(),
        line_rate: line.0 as f64,
        backend: run.backend,
        ..FrameRequest::default()
    }
}

/// Stream `s`'s frames of each of its sizes, built from `spec` with test header `hdr`.
fn l4_templates(
    s: &StreamSpec,
    spec: &FrameSpec,
    hdr: &wire::testhdr::TestHeaderRepr,
) -> Result<Vec<(u64, Vec<u8>, Patch)>, Error> {
    let in_stream = |e: String| usage(format!("stream '{}': {e}", s.name));
    let mut sizes = s.pattern.clone();
    sizes.sort_unstable();
    sizes.dedup();
    let mut built = Vec::new();
    for len in sizes {
        let mut buf = vec![0u8; len as usize];
        let n = spec.build(len as usize, hdr, &mut buf).map_err(|e| {
            in_stream(format!(
                "{len}-byte frame: {e} (at least {} bytes)",
                spec.min_frame_len()
            ))
        })?;
        buf.truncate(n);
        let layout = spec
            .layout(len as usize)
            .map_err(|e| in_stream(e.to_string()))?;
        built.push((len, buf, Patch::L4(layout)));
    }
    Ok(built)
}

/// The frame templates of one raw stream between ports of this host, one per distinct
/// size, with where to patch them.
fn templates(
    s: &StreamSpec,
    (tx, rx): (&Endpoint, &Endpoint),
    hdr: &wire::testhdr::TestHeaderRepr,
    run: &StreamsRun,
    line: LineRate,
) -> Result<Vec<(u64, Vec<u8>, Patch)>, Error> {
    let in_stream = |e: String| usage(format!("stream '{}': {e}", s.name));
    if let StreamProto::EtherType(t) = s.protocol {
        let mut sizes = s.pattern.clone();
        sizes.sort_unstable();
        sizes.dedup();
        let mut built = Vec::new();
        let runner = &mut lab::SystemRunner;
        let src = lab::probe::addresses(runner, tx)?.mac;
        let dst = match s.dst_mac {
            Some(m) => m,
            None => lab::probe::addresses(runner, rx)?.mac,
        };
        let eth = wire::ethernet::EthernetRepr {
            src_addr: wire::EthernetAddress(src),
            dst_addr: wire::EthernetAddress(dst),
            ethertype: wire::EtherType::from(t),
        };
        let vlan = s.vlan.map(|vid| wire::vlan::VlanRepr {
            pcp: s.pcp,
            dei: false,
            vid,
            inner_ethertype: wire::EtherType::from(t),
        });
        let off = 14 + if vlan.is_some() { 4 } else { 0 };
        for len in sizes {
            let mut buf = vec![0u8; len as usize];
            let n = wire::frame::build_l2(&eth, vlan.as_ref(), len as usize, hdr, &mut buf)
                .map_err(|e| in_stream(format!("{len}-byte frame: {e}")))?;
            buf.truncate(n);
            built.push((len, buf, Patch::L2(off)));
        }
        return Ok(built);
    }
    let request = stream_request(s, run, line);
    let spec = frames::spec(&request, tx, Some(rx)).map_err(|e| in_stream(e.to_string()))?;
    l4_templates(s, &spec, hdr)
}

/// A source on a server's port: its session, opened for the streams that start there.
struct RemoteSource {
    /// `HOST/IFACE` as the profile names it.
    source: String,
    agent: RawAgent,
}

impl RemoteSource {
    /// Opens source `source` (`HOST/IFACE`) for the streams of `profile` that start
    /// there, toward their destinations (ports of this host), the next hop resolved by
    /// the server for the first one's address.
    ///
    /// # Errors
    /// The server refuses, or the streams need what a remote source does not do yet.
    fn open(
        run: &StreamsRun,
        profile: &Profile,
        source: &str,
        (host, port, iface): (&str, Option<u16>, &str),
        far_dests: &[RemoteDest],
    ) -> Result<Self, Error> {
        let line = profile.line_rate;
        let mine: Vec<&StreamSpec> = profile
            .streams
            .iter()
            .filter(|s| s.source == source)
            .collect();
        let mut dst_ips = Vec::new();
        for s in &mine {
            if matches!(s.protocol, StreamProto::EtherType(_)) {
                return Err(usage(format!(
                    "stream '{}': EtherType streams from a server's port are not supported yet (IP streams are)",
                    s.name
                )));
            }
            let (name, rxa, _) = destination(s, run, far_dests)?;
            let ip = frames::dst_ip(&stream_request(s, run, line), Some((&name, &rxa)))?;
            if s.dst_mac.is_none() && !dst_ips.contains(&ip) {
                dst_ips.push(ip);
            }
        }
        if dst_ips.len() > 1 {
            return Err(usage(format!(
                "the streams from {source} go to {} addresses: the server resolves one next hop, so give the others dst_mac",
                dst_ips.len()
            )));
        }
        let req = RawOpenRequest {
            send: Some(backend_name(run.backend)),
            resolve: dst_ips.first().copied(),
            ..RawOpenRequest::default()
        };
        let agent = open_far(run, &mine, (host, port, iface), req)?;
        refuse_past_longest(&agent, &mine)?;
        Ok(Self {
            source: source.to_owned(),
            agent,
        })
    }

    /// Stream `s`'s frames from this source, with test header `hdr`.
    fn templates(
        &self,
        s: &StreamSpec,
        hdr: &wire::testhdr::TestHeaderRepr,
        (run, line): (&StreamsRun, LineRate),
        far_dests: &[RemoteDest],
    ) -> Result<Vec<(u64, Vec<u8>, Patch)>, Error> {
        let request = stream_request(s, run, line);
        let (name, rxa, _) = destination(s, run, far_dests)?;
        let dst_ip = frames::dst_ip(&request, Some((&name, &rxa)))?;
        let dst_mac = s.dst_mac.or(self.agent.facts.next_hop_mac).ok_or_else(|| {
            usage(format!(
                "stream '{}': the next hop's MAC from {} is not known: give dst_mac",
                s.name, self.agent.label
            ))
        })?;
        let spec = frames::headers(
            &request,
            (&self.agent.label, &agent_addresses(&self.agent)),
            dst_ip,
            dst_mac,
        )?;
        l4_templates(s, &spec, hdr)
    }
}

/// Opens a server's port as `req` asks, for the frames of `streams` (their largest, and a
/// VLAN tag if one has it, within the port's MTU).
fn open_far(
    run: &StreamsRun,
    streams: &[&StreamSpec],
    at: (&str, Option<u16>, &str),
    req: RawOpenRequest,
) -> Result<RawAgent, Error> {
    let max_len = streams
        .iter()
        .flat_map(|s| s.pattern.iter().copied())
        .max()
        .unwrap_or(64);
    let agent = run
        .agents
        .open(at, RawOpenRequest { max_len, ..req }, &run.stop)?;
    let vlan = streams.iter().any(|s| s.vlan.is_some());
    frames::fits(agent.facts.mtu, (&agent.label, &agent.iface), max_len, vlan)?;
    Ok(agent)
}

/// Refuses streams that run past the server's longest test now, rather than after the
/// streams here have run.
fn refuse_past_longest(agent: &RawAgent, streams: &[&StreamSpec]) -> Result<(), Error> {
    let last = streams.iter().map(|s| s.stop).fold(0.0, f64::max);
    if last > agent.longest_test() {
        return Err(usage(format!(
            "{}: its streams run until {last} s; this server's longest test is {} s",
            agent.label,
            agent.longest_test()
        )));
    }
    Ok(())
}

/// A destination on a server's port: its session, counting the streams that end there.
struct RemoteDest {
    /// `HOST/IFACE` as the profile names it.
    dest: String,
    agent: RawAgent,
}

impl RemoteDest {
    /// Opens destination `dest` (`HOST/IFACE`) for the streams of `profile` that end there.
    ///
    /// # Errors
    /// The server refuses, or a stream needs what a server's port does not do yet.
    fn open(
        run: &StreamsRun,
        profile: &Profile,
        dest: &str,
        (host, port, iface): (&str, Option<u16>, &str),
    ) -> Result<Self, Error> {
        let mine: Vec<&StreamSpec> = profile
            .streams
            .iter()
            .filter(|s| s.destination == dest)
            .collect();
        if let Some(s) = mine
            .iter()
            .find(|s| matches!(s.protocol, StreamProto::EtherType(_)))
        {
            return Err(usage(format!(
                "stream '{}': EtherType streams to a server's port are not supported yet (IP streams are)",
                s.name
            )));
        }
        let req = RawOpenRequest {
            receive: Some(backend_name(run.backend)),
            ..RawOpenRequest::default()
        };
        let agent = open_far(run, &mine, (host, port, iface), req)?;
        refuse_past_longest(&agent, &mine)?;
        Ok(Self {
            dest: dest.to_owned(),
            agent,
        })
    }
}

/// Where stream `s` goes: its port's name, addresses and host's boot id (this host's for
/// a port here).
fn destination(
    s: &StreamSpec,
    run: &StreamsRun,
    far_dests: &[RemoteDest],
) -> Result<(String, lab::probe::Addresses, Option<String>), Error> {
    if let Some(d) = far_dests.iter().find(|d| d.dest == s.destination) {
        let a = &d.agent;
        return Ok((a.label.clone(), agent_addresses(a), a.facts.host_id.clone()));
    }
    let rx = frames::port(&s.destination, &run.lab)?;
    let rxa = lab::probe::addresses(&mut lab::SystemRunner, &rx)?;
    Ok((rx.to_string(), rxa, engine::env::boot_id()))
}

/// Stream `s`'s frames from a port here to a server's port.
fn templates_to_far(
    s: &StreamSpec,
    hdr: &wire::testhdr::TestHeaderRepr,
    (run, line): (&StreamsRun, LineRate),
    far_dests: &[RemoteDest],
) -> Result<Vec<(u64, Vec<u8>, Patch)>, Error> {
    if matches!(s.protocol, StreamProto::EtherType(_)) {
        return Err(usage(format!(
            "stream '{}': EtherType streams to a server's port are not supported yet (IP streams are)",
            s.name
        )));
    }
    let request = stream_request(s, run, line);
    let (name, rxa, _) = destination(s, run, far_dests)?;
    let dst_ip = frames::dst_ip(&request, Some((&name, &rxa)))?;
    let runner = &mut lab::SystemRunner;
    let tx = frames::port(&s.source, &run.lab)?;
    let txa = lab::probe::addresses(runner, &tx)?;
    let dst_mac = match s.dst_mac {
        Some(m) => m,
        None => lab::probe::next_hop_mac(runner, &tx, dst_ip)?,
    };
    let spec = frames::headers(&request, (&tx.to_string(), &txa), dst_ip, dst_mac)?;
    l4_templates(s, &spec, hdr)
}

/// Streams as a server's port takes them: an example frame, the sizes, pattern, rate,
/// start and stop.
fn wire_streams(streams: &[StreamTx]) -> Vec<control::rawport::RawStream> {
    streams
        .iter()
        .map(|s| control::rawport::RawStream {
            stream_id: s.stream_id,
            // The smallest frame: the port takes its headers.
            frame: s
                .templates
                .iter()
                .map(|(b, _)| b)
                .min_by_key(|b| b.len())
                .map(|b| control::auth::to_hex(b))
                .unwrap_or_default(),
            sizes: s
                .templates
                .iter()
                .map(|(b, _)| (b.len() + 4) as u64)
                .collect(),
            pattern: s.pattern.iter().map(|i| *i as u16).collect(),
            pps: s.pps,
            start_s: s.start.as_secs_f64(),
            stop_s: s.stop.as_secs_f64(),
        })
        .collect()
}

/// Runs a server stream: after its start offset, a UDP test of datagrams of L − 46 bytes
/// at the stream's frame rate until its stop offset.
fn server_stream(
    s: &StreamSpec,
    server: &str,
    line: LineRate,
    stop: Arc<AtomicBool>,
) -> Result<TrialData, Error> {
    let (host, port) = match server.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h.to_owned(), p.parse().unwrap_or(0)),
        _ => (server.to_owned(), control::DEFAULT_PORT),
    };
    let mut cfg = client_config(&crate::request::Server {
        host,
        port,
        key_file: None,
        allow_unauthenticated: false,
    })?;
    let len = s.pattern[0];
    // Wait for the start offset, or for a stop.
    let start = std::time::Instant::now() + Duration::from_secs_f64(s.start);
    while std::time::Instant::now() < start {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(20).min(start - std::time::Instant::now()));
    }
    cfg.stop = Some(stop);
    let mut base = base_spec(Protocol::Udp);
    base.dscp = (s.dscp > 0).then_some(s.dscp);
    let mut trial = ServerTrial { cfg, base };
    let duration = Duration::from_secs_f64(s.stop - s.start);
    let req = TrialRequest::frames(len, s.fps(line), duration).with_latency();
    let mut d = trial
        .run(&req)
        .map_err(|e| e.context(format!("stream '{}'", s.name)))?;
    // As frames on an Ethernet: L − 4 bytes each (the FCS is added in the report).
    d.received_bytes = d.counters.received * (len - 4);
    Ok(d)
}

/// The raw streams' interval rows: every receiver's tick k joined into one, the loss of
/// each interval placed where its frames were due.
fn raw_intervals(r: &engine::multi::MultiReport) -> Vec<model::results::IntervalRow> {
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
    let received: std::collections::BTreeMap<u8, &model::stats::slots::TxSlots> = r
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

impl StreamsTrial for StreamsRun {
    type Error = Error;

    fn run(&mut self, profile: &Profile) -> Result<StreamsData, Error> {
        let id = test_id();
        let line = profile.line_rate;
        // Senders by source (ports here, then ports of servers), receivers by destination,
        // in first-use order.
        let mut sources: Vec<String> = Vec::new();
        let mut remote: Vec<RemoteSource> = Vec::new();
        let mut dests: Vec<String> = Vec::new();
        let mut far_dests: Vec<RemoteDest> = Vec::new();
        // Destinations first: a source's frames are addressed to them.
        for s in profile
            .streams
            .iter()
            .filter(|s| server_of(&s.source).is_none())
        {
            match frames::any_port(&s.destination, &self.lab)? {
                frames::Port::Agent { host, port, iface } => {
                    if !far_dests.iter().any(|d| d.dest == s.destination) {
                        let at = (host.as_str(), port, iface.as_str());
                        far_dests.push(RemoteDest::open(self, profile, &s.destination, at)?);
                    }
                }
                frames::Port::Local(_) => {
                    if !dests.contains(&s.destination) {
                        dests.push(s.destination.clone());
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
                    if !remote.iter().any(|r| r.source == s.source) {
                        let src = (host.as_str(), port, iface.as_str());
                        let r = RemoteSource::open(self, profile, &s.source, src, &far_dests)?;
                        remote.push(r);
                    }
                }
                frames::Port::Local(_) => {
                    if !sources.contains(&s.source) {
                        sources.push(s.source.clone());
                    }
                }
            }
        }
        // A server's port reports its totals at the end, not as it goes: no interval rows
        // then.
        let far = !remote.is_empty() || !far_dests.is_empty();
        let interval = self.interval.filter(|_| !far);
        let mut notes = Vec::new();
        if self.interval.is_some() && far {
            notes
                .push("no interval rows: a server's port reports its totals at the end".to_owned());
        }
        let mut groups: Vec<Vec<StreamTx>> = sources.iter().map(|_| Vec::new()).collect();
        let mut remote_groups: Vec<Vec<StreamTx>> = remote.iter().map(|_| Vec::new()).collect();
        let slot_ns = interval.map_or(0, |i| {
            let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            model::stats::slots::slot_width(ns(i), ns(Duration::from_secs_f64(profile.duration)))
        });
        let here = engine::env::boot_id();
        let mut no_latency: Vec<u8> = Vec::new();
        for (i, s) in profile.streams.iter().enumerate() {
            if server_of(&s.source).is_some() {
                continue;
            }
            let stream_id = (i + 1) as u8;
            let hdr = wire::testhdr::TestHeaderRepr::template(id, stream_id);
            let far = remote.iter().position(|r| r.source == s.source);
            let to_far = far_dests.iter().any(|d| d.dest == s.destination);
            let built = match (far, to_far) {
                (Some(k), _) => remote[k].templates(s, &hdr, (self, line), &far_dests)?,
                (None, true) => templates_to_far(s, &hdr, (self, line), &far_dests)?,
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
                    Some(k) => remote[k].agent.facts.host_id.clone(),
                    None => here.clone(),
                };
                let to_host = destination(s, self, &far_dests)?.2;
                if from_host.is_none() || from_host != to_host {
                    no_latency.push(stream_id);
                }
            }
            let pattern = s
                .pattern
                .iter()
                .map(|l| built.iter().position(|b| b.0 == *l).unwrap_or(0))
                .collect();
            let tx = StreamTx {
                stream_id,
                templates: built.into_iter().map(|(_, b, p)| (b, p)).collect(),
                pattern,
                pps: s.fps(line),
                start: Duration::from_secs_f64(s.start),
                stop: Duration::from_secs_f64(s.stop),
                live: Arc::default(),
                slot_ns,
            };
            match far {
                Some(k) => remote_groups[k].push(tx),
                None => {
                    let g = sources.iter().position(|x| *x == s.source).unwrap_or(0);
                    groups[g].push(tx);
                }
            }
        }
        if !no_latency.is_empty() {
            let names: Vec<&str> = no_latency
                .iter()
                .filter_map(|i| profile.streams.get(usize::from(*i) - 1))
                .map(|s| s.name.as_str())
                .collect();
            notes.push(format!(
                "no one-way latency for {}: their ends are ports of different hosts, whose clocks are not known to agree",
                names.join(", ")
            ));
        }
        let max_len = profile
            .streams
            .iter()
            .flat_map(|s| s.pattern.iter().copied())
            .max()
            .unwrap_or(64);
        let mut senders = Vec::new();
        let mut backends = Vec::new();
        for (src, streams) in sources.iter().zip(groups) {
            let tx = frames::open_tx(self.backend, &frames::port(src, &self.lab)?, max_len)?;
            backends.push(format!("{src}: {}", tx.name()));
            senders.push((tx, streams));
        }
        let mut receivers = Vec::new();
        for d in &dests {
            let ids = profile
                .streams
                .iter()
                .enumerate()
                .filter(|(_, s)| s.destination == *d)
                .map(|(i, _)| (i + 1) as u8);
            let rx = frames::open_rx(self.backend, &frames::port(d, &self.lab)?)?;
            backends.push(format!("{d}: {}", rx.name()));
            receivers.push((
                rx,
                model::stats::table::StreamTable::new(id, ids).with_slots(slot_ns),
            ));
        }
        // What each server's port is sent fits one message (checked before anything runs),
        // with room for the message's other fields.
        let most = control::frame::MAX_MESSAGE - 4096;
        let wires: Vec<Vec<control::rawport::RawStream>> =
            remote_groups.iter().map(|g| wire_streams(g)).collect();
        for (r, w) in remote.iter().zip(&wires) {
            let size = serde_json::to_vec(w).map_or(usize::MAX, |b| b.len());
            if size > most {
                return Err(usage(format!(
                    "the streams from {} make a request of {} KiB; at most {} KiB go to one port: give it fewer streams",
                    r.source,
                    size >> 10,
                    most >> 10
                )));
            }
        }
        // The servers' receivers count from now until they are told what was sent.
        for d in &mut far_dests {
            let ids: Vec<u8> = profile
                .streams
                .iter()
                .enumerate()
                .filter(|(_, s)| s.destination == d.dest)
                .map(|(i, _)| (i + 1) as u8)
                .collect();
            d.agent
                .start_receive(id, &ids, Duration::from_millis(300))
                .map_err(|e| Error::from(e).context(d.agent.label.clone()))?;
            backends.push(format!("{}: {}", d.dest, d.agent.facts.backend));
        }
        // Streams through a wirebench server run as UDP tests of the control protocol, at
        // the same time as the raw streams; they stop on Ctrl-C or when the raw streams
        // failed.
        let halt_servers = Arc::new(AtomicBool::new(false));
        let server_runs: Vec<_> = profile
            .streams
            .iter()
            .enumerate()
            .filter_map(|(i, s)| server_of(&s.source).map(|srv| (i, s.clone(), srv.to_owned())))
            .map(|(i, s, srv)| {
                let stop = Arc::clone(&halt_servers);
                (
                    i,
                    std::thread::spawn(move || server_stream(&s, &srv, line, stop)),
                )
            })
            .collect();
        for r in &remote {
            backends.push(format!("{}: {}", r.source, r.agent.facts.backend));
        }
        let far_senders: Vec<engine::multi::RemoteSender<'_>> = remote
            .iter_mut()
            .zip(wires)
            .map(|(r, wire)| {
                let send = move |halt: &AtomicBool| {
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
                Box::new(send) as engine::multi::RemoteSender<'_>
            })
            .collect();
        let r = engine::multi::run_with_remote(
            senders
                .iter_mut()
                .map(|(tx, streams)| (tx.as_mut() as &mut dyn FrameTx, std::mem::take(streams)))
                .collect(),
            far_senders,
            receivers
                .iter_mut()
                .map(|(rx, table)| (rx.as_mut() as &mut dyn FrameRx, table.clone()))
                .collect(),
            Duration::from_millis(300),
            interval,
            &self.stop,
        );
        // The server streams end with their time, a stop, or the raw streams' failure: join
        // them even then, so none runs on into the next test.
        while server_runs.iter().any(|(_, h)| !h.is_finished()) {
            if r.is_err() || self.stop.load(Ordering::Relaxed) {
                halt_servers.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut by_server = std::collections::BTreeMap::new();
        let mut failed = None;
        for (i, h) in server_runs {
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
        // Stopped (Ctrl-C) with a server's port still sending: its session was closed.
        if r.is_err() && self.stop.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        let r = r?;
        if let Some(e) = failed {
            return Err(e);
        }
        if !by_server.is_empty() {
            backends.push("wirebench servers: udp".into());
        }
        let mut data = StreamsData {
            backends,
            intervals: raw_intervals(&r),
            notes,
            ..StreamsData::default()
        };
        // Local groups first, then the servers' ports (as the engine reports them).
        let all_sources: Vec<&String> = sources
            .iter()
            .chain(remote.iter().map(|r| &r.source))
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
        // The servers' receivers: told what was sent to them, they drain and count.
        let mut far_received = Vec::new();
        for d in &mut far_dests {
            let sent: u64 = profile
                .streams
                .iter()
                .enumerate()
                .filter(|(_, s)| s.destination == d.dest)
                .filter_map(|(i, s)| sent_of((i + 1) as u8, &s.source))
                .map(|x| x.sent)
                .sum();
            let reception = d
                .agent
                .finish_receive(sent)
                .map_err(|e| Error::from(e).context(d.agent.label.clone()))?;
            data.rx_drops += reception.drops;
            far_received.push((d.dest.clone(), reception));
        }
        for (i, s) in profile.streams.iter().enumerate() {
            if let Some(m) = by_server.remove(&i) {
                data.streams.push(m);
                continue;
            }
            let stream_id = (i + 1) as u8;
            let sent = sent_of(stream_id, &s.source).unwrap_or_default();
            if let Some((_, reception)) = far_received.iter().find(|(d, _)| *d == s.destination) {
                let rx = reception.streams.iter().find(|x| x.id == stream_id);
                data.streams.push(TrialData {
                    counters: rx.map(|x| x.counters).unwrap_or_default().settle(sent.sent),
                    received_bytes: rx.map_or(0, |x| x.bytes),
                    duration: sent.active,
                    rx_span: rx.and_then(|x| x.span).map(|(a, b)| b.saturating_sub(a)),
                    generator_limited: sent.generator_limited,
                    latency: rx
                        .map(|x| x.latency.clone())
                        .filter(|h| !h.is_empty() && !no_latency.contains(&stream_id)),
                    ..TrialData::default()
                });
                continue;
            }
            let d = dests.iter().position(|x| *x == s.destination).unwrap_or(0);
            let (table, _) = &r.received[d];
            let rx = table.stream(stream_id);
            data.streams.push(TrialData {
                counters: rx
                    .map(|x| x.counters())
                    .unwrap_or_default()
                    .settle(sent.sent),
                received_bytes: rx.map_or(0, |x| x.bytes),
                duration: sent.active,
                rx_span: rx.and_then(|x| x.span).map(|(a, b)| b.saturating_sub(a)),
                generator_limited: sent.generator_limited,
                latency: rx
                    .map(|x| x.latency.clone())
                    .filter(|h| !h.is_empty() && !no_latency.contains(&stream_id)),
                ..TrialData::default()
            });
        }
        Ok(data)
    }
}
