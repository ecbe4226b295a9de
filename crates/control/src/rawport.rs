//! Raw ports lent by a server (`wirebench server --raw-ports eth1,eth2`, which needs
//! `--auth-key-file`, so every session here is authenticated): a controller on another
//! host opens one of them for sending and/or receiving ([`ClientMsg::RawOpen`]) and runs
//! trials through it, the receive half ([`ClientMsg::RawReceive`] ...
//! [`ClientMsg::RawDone`]) and the send half ([`ClientMsg::RawSend`]) of
//! `engine::raw`'s trials, each answered with the same counters and histograms a local
//! port gives ([`engine::raw::Reception`], [`engine::raw::Sending`]).
//!
//! The server side is [`serve`]; the controller's side is [`RawAgent`]. What the trial
//! means (which port sends, settling received against sent, latency only on a shared or
//! synchronised clock) is the controller's. A port can also reflect ([`ClientMsg::RawReflect`]):
//! turn a test's frames around and send them back, for round-trip latency on one clock.

use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use engine::frameio::{Backend, Endpoint, FrameRx, FrameTx};
use engine::raw::{RawLoad, RawTrialSpec, Reception, Sending};

use crate::client::{ClientConfig, Session};
use crate::frame::{read_msg_within, write_msg};
use crate::messages::{ClientMsg, ErrorCode, ServerMsg};
use crate::server::{refuse, Ctx};
use crate::{auth, ProtoError};

/// Longest wait for a session's next request (a search's trials come one after another).
const IDLE: Duration = Duration::from_secs(600);
/// Beyond a trial's duration: the longest wait for its end.
const SLACK: Duration = Duration::from_secs(30);

/// The backends opened: `sender / receiver`.
fn backend_names(tx: Option<&dyn FrameTx>, rx: Option<&dyn FrameRx>) -> String {
    format!(
        "{} / {}",
        tx.map_or("-", FrameTx::name),
        rx.map_or("-", FrameRx::name)
    )
}

/// The backend named `name` (`auto`: `auto`'s order).
fn order<const N: usize>(name: &str, auto: [Backend; N]) -> Result<Vec<Backend>, String> {
    match name {
        "auto" => Ok(auto.to_vec()),
        n => Backend::from_name(n)
            .map(|b| vec![b])
            .ok_or_else(|| format!("unknown frame backend '{n}' (auto, packet, ring, xdp)")),
    }
}

/// Serves a raw-port session that starts with `open` ([`ClientMsg::RawOpen`]).
pub(crate) fn serve(mut ctrl: TcpStream, ctx: &Ctx, open: ClientMsg) -> Result<(), ProtoError> {
    let ClientMsg::RawOpen {
        port,
        send,
        receive,
        max_len,
        resolve,
    } = open
    else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Protocol,
            "expected raw_open".into(),
        ));
    };
    if ctx.key.is_none() || ctx.raw_ports.is_empty() {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::BadRequest,
            "this server lends no raw ports (start it as root with --raw-ports and --auth-key-file)".into(),
        ));
    }
    if !ctx.raw_ports.contains(&port) {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::BadRequest,
            format!(
                "this server does not lend port '{port}' (it lends {})",
                ctx.raw_ports.join(", ")
            ),
        ));
    }
    let ep = Endpoint {
        netns: None,
        iface: port.clone(),
    };
    let runner = &mut lab::SystemRunner;
    let addrs = match lab::probe::addresses(runner, &ep) {
        Ok(a) => a,
        Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Internal, e.to_string())),
    };
    let next_hop_mac = match resolve {
        Some(ip) => match lab::probe::next_hop_mac(runner, &ep, ip) {
            Ok(m) => Some(m),
            Err(e) => return Err(refuse(&mut ctrl, ErrorCode::BadRequest, e.to_string())),
        },
        None => None,
    };
    let mut tx = None;
    if let Some(name) = &send {
        let opened = order(name, Backend::AUTO_TX)
            .and_then(|o| {
                Backend::open_tx_first(&o, &ep, max_len as usize).map_err(|e| e.to_string())
            })
            .map(|(t, _)| t);
        match opened {
            Ok(t) => tx = Some(t),
            Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Internal, e)),
        }
    }
    let mut rx = None;
    if let Some(name) = &receive {
        let opened = order(name, Backend::AUTO_RX)
            .and_then(|o| Backend::open_rx_first(&o, &ep).map_err(|e| e.to_string()))
            .map(|(r, _)| r);
        match opened {
            Ok(r) => rx = Some(r),
            Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Internal, e)),
        }
    }
    tracing::info!(
        "raw port {port} lent to {}",
        ctrl.peer_addr().map_or("?".into(), |a| a.to_string())
    );
    write_msg(
        &mut ctrl,
        &ServerMsg::RawOpened {
            mac: addrs.mac,
            ipv4: addrs.ipv4,
            ipv6: addrs.ipv6,
            mtu: engine::nic::mtu(&port).ok(),
            next_hop_mac,
            backend: backend_names(tx.as_deref(), rx.as_deref()),
        },
    )?;
    let max_s = ctx.limits.max_duration_s;
    loop {
        let msg = match read_msg_within(&ctrl, IDLE) {
            Ok(m) => m,
            Err(ProtoError::Closed) => return Ok(()),
            Err(e) => return Err(e),
        };
        match msg {
            ClientMsg::RawSend {
                frame,
                frame_len,
                test_id,
                stream_id,
                load,
            } => {
                let Some(tx) = tx.as_deref_mut() else {
                    return Err(refuse(
                        &mut ctrl,
                        ErrorCode::BadRequest,
                        "this session did not open a sender".into(),
                    ));
                };
                let spec = match send_spec(&frame, frame_len, test_id, stream_id, load, max_s) {
                    Ok(s) => s,
                    Err(e) => return Err(refuse(&mut ctrl, ErrorCode::BadRequest, e)),
                };
                let stop = AtomicBool::new(false);
                let report = engine::raw::run_trial(tx, None, &spec, &stop)
                    .map_err(|e| refuse(&mut ctrl, ErrorCode::Internal, e.to_string()))?;
                write_msg(
                    &mut ctrl,
                    &ServerMsg::RawSent {
                        sent: report.sending(),
                    },
                )?;
            }
            ClientMsg::RawReceive {
                test_id,
                streams,
                drain_ms,
            } => {
                let Some(rx) = rx.as_deref_mut() else {
                    return Err(refuse(
                        &mut ctrl,
                        ErrorCode::BadRequest,
                        "this session did not open a receiver".into(),
                    ));
                };
                if streams.is_empty() || streams.len() > 255 {
                    return Err(refuse(
                        &mut ctrl,
                        ErrorCode::BadRequest,
                        "1 to 255 streams".into(),
                    ));
                }
                let drain = Duration::from_millis(drain_ms.min(2_000));
                let wait = Duration::from_secs_f64(max_s) + SLACK;
                let reception = count(&mut ctrl, rx, test_id, &streams, drain, wait)?;
                write_msg(&mut ctrl, &ServerMsg::RawReceived { reception })?;
            }
            ClientMsg::RawReflect { test_id } => {
                let (Some(tx), Some(rx)) = (tx.as_deref_mut(), rx.as_deref_mut()) else {
                    return Err(refuse(
                        &mut ctrl,
                        ErrorCode::BadRequest,
                        "a reflector needs the port opened for sending and receiving".into(),
                    ));
                };
                let wait = Duration::from_secs_f64(max_s) + SLACK;
                let reflected = reflect(&mut ctrl, rx, tx, test_id, wait)?;
                write_msg(&mut ctrl, &ServerMsg::RawReflected { reflected })?;
            }
            ClientMsg::Abort { .. } => return Ok(()),
            other => {
                return Err(refuse(
                    &mut ctrl,
                    ErrorCode::Protocol,
                    format!("expected raw_send, raw_receive or raw_reflect, got {other:?}"),
                ))
            }
        }
    }
}

/// The trial a [`ClientMsg::RawSend`] asks for, within the server's longest test.
fn send_spec(
    frame: &str,
    frame_len: u64,
    test_id: u16,
    stream_id: u8,
    load: RawLoad,
    max_s: f64,
) -> Result<RawTrialSpec, String> {
    let bytes = auth::from_hex(frame).ok_or("the frame is not hex")?;
    let spec = wire::frame::parse_frame(&bytes)
        .ok()
        .and_then(|p| p.spec())
        .ok_or("the frame has no IP and transport header this server can build")?;
    if !(64..=9216 + 4).contains(&frame_len) || (frame_len as usize) < spec.min_frame_len() {
        return Err(format!("frame size {frame_len} B does not fit its headers"));
    }
    match load {
        RawLoad::Rate { pps, duration, .. }
            if !(pps.is_finite() && pps > 0.0) || duration.as_secs_f64() > max_s =>
        {
            return Err(format!(
                "a rate above 0 for at most {max_s} s (this server's longest test)"
            ))
        }
        RawLoad::Burst { frames, .. } if frames > 100_000_000 => {
            return Err("a burst of at most 100,000,000 frames".into())
        }
        _ => {}
    }
    Ok(RawTrialSpec {
        frame: spec,
        frame_len: frame_len as usize,
        test_id,
        stream_id,
        load,
        drain: Duration::ZERO,
        interval: None,
    })
}

/// Counts on `rx` until the controller says the sender is done ([`ClientMsg::RawDone`]);
/// an abort, a closed connection or no word within `wait` stops it.
fn count(
    ctrl: &mut TcpStream,
    rx: &mut dyn FrameRx,
    test_id: u16,
    streams: &[u8],
    drain: Duration,
    wait: Duration,
) -> Result<Reception, ProtoError> {
    let generating = AtomicUsize::new(1);
    let expected = AtomicU64::new(u64::MAX);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let counting = s.spawn(|| {
            engine::raw::receive_trial(rx, test_id, streams, drain, &generating, &expected, &stop)
        });
        let told =
            write_msg(ctrl, &ServerMsg::RawReceiving).and_then(|()| read_msg_within(ctrl, wait));
        match told {
            Ok(ClientMsg::RawDone { sent }) => {
                expected.store(sent, Ordering::Release);
                generating.store(0, Ordering::Release);
            }
            Ok(other) => {
                stop.store(true, Ordering::Relaxed);
                let _ = counting.join();
                return Err(refuse(
                    ctrl,
                    ErrorCode::Protocol,
                    format!("expected raw_done, got {other:?}"),
                ));
            }
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                let _ = counting.join();
                return Err(e);
            }
        }
        counting
            .join()
            .map_err(|_| ProtoError::Io(std::io::Error::other("receiver thread panicked")))?
            .map_err(|e| refuse(ctrl, ErrorCode::Internal, e.to_string()))
    })
}

/// Reflects the frames of `test_id` until the controller says the sender is done
/// ([`ClientMsg::RawDone`]), then for as long as they keep coming back (at most
/// [`REFLECT_DRAIN`]); an abort, a closed connection or no word within `wait` stops it.
fn reflect(
    ctrl: &mut TcpStream,
    rx: &mut dyn FrameRx,
    tx: &mut dyn FrameTx,
    test_id: u16,
    wait: Duration,
) -> Result<engine::raw::Reflected, ProtoError> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let running = s.spawn(|| engine::raw::reflect(rx, tx, test_id, &stop));
        let told =
            write_msg(ctrl, &ServerMsg::RawReflecting).and_then(|()| read_msg_within(ctrl, wait));
        let outcome = match told {
            Ok(ClientMsg::RawDone { .. }) => {
                // The last frames are still on their way to this port.
                std::thread::sleep(REFLECT_DRAIN);
                Ok(())
            }
            Ok(other) => Err(format!("expected raw_done, got {other:?}")),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                let _ = running.join();
                return Err(e);
            }
        };
        stop.store(true, Ordering::Relaxed);
        let done = running
            .join()
            .map_err(|_| ProtoError::Io(std::io::Error::other("reflector thread panicked")))?;
        match (outcome, done) {
            (Err(m), _) => Err(refuse(ctrl, ErrorCode::Protocol, m)),
            (Ok(()), Err(e)) => Err(refuse(ctrl, ErrorCode::Internal, e.to_string())),
            (Ok(()), Ok(r)) => Ok(r),
        }
    })
}

/// How long a reflector keeps going after the sender is done.
const REFLECT_DRAIN: Duration = Duration::from_millis(100);

/// What the server said about a port it opened.
#[derive(Debug, Clone)]
pub struct PortFacts {
    /// MAC address.
    pub mac: [u8; 6],
    /// First IPv4 address.
    pub ipv4: Option<std::net::Ipv4Addr>,
    /// First IPv6 address that is not link-local.
    pub ipv6: Option<std::net::Ipv6Addr>,
    /// MTU.
    pub mtu: Option<u32>,
    /// The next hop's MAC toward the address asked for.
    pub next_hop_mac: Option<[u8; 6]>,
    /// The backends, `sender / receiver`.
    pub backend: String,
}

/// A raw port of a server, as the controller holds it: one authenticated session that
/// stays open for the trials.
pub struct RawAgent {
    ctrl: TcpStream,
    /// `HOST/IFACE` as given.
    pub label: String,
    /// The port.
    pub facts: PortFacts,
    /// The server shares this host's clock (equal boot ids).
    pub same_host: bool,
}

/// What a controller asks of a port.
#[derive(Debug, Clone, Default)]
pub struct RawOpenRequest {
    /// The interface.
    pub port: String,
    /// A sender with this backend (`auto`: the fastest that opens).
    pub send: Option<String>,
    /// A receiver with this backend (`auto`: the ring, then packet).
    pub receive: Option<String>,
    /// Largest frame, FCS included.
    pub max_len: u64,
    /// Resolve the next hop's MAC toward this address.
    pub resolve: Option<IpAddr>,
}

fn answer(ctrl: &TcpStream, wait: Duration) -> Result<ServerMsg, ProtoError> {
    match read_msg_within(ctrl, wait)? {
        ServerMsg::Error { code, message } => Err(ProtoError::Refused { code, message }),
        other => Ok(other),
    }
}

fn unexpected(what: &str, got: &ServerMsg) -> ProtoError {
    ProtoError::Unexpected(format!("expected {what}, got {got:?}"))
}

impl RawAgent {
    /// Connects to the server of `cfg`, authenticates and opens the port.
    ///
    /// # Errors
    /// The server cannot be reached or authenticated, lends no such port, or cannot open it.
    pub fn open(cfg: &ClientConfig, label: &str, req: &RawOpenRequest) -> Result<Self, ProtoError> {
        let session = Session::connect(cfg)?;
        let same_host = session.same_host;
        let mut ctrl = session.into_stream();
        write_msg(
            &mut ctrl,
            &ClientMsg::RawOpen {
                port: req.port.clone(),
                send: req.send.clone(),
                receive: req.receive.clone(),
                max_len: req.max_len,
                resolve: req.resolve,
            },
        )?;
        match answer(&ctrl, Duration::from_secs(30))? {
            ServerMsg::RawOpened {
                mac,
                ipv4,
                ipv6,
                mtu,
                next_hop_mac,
                backend,
            } => Ok(Self {
                ctrl,
                label: label.to_owned(),
                facts: PortFacts {
                    mac,
                    ipv4,
                    ipv6,
                    mtu,
                    next_hop_mac,
                    backend,
                },
                same_host,
            }),
            other => Err(unexpected("raw_opened", &other)),
        }
    }

    /// Starts counting the frames of `test_id`, `streams`; returns once the port counts.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn start_receive(
        &mut self,
        test_id: u16,
        streams: &[u8],
        drain: Duration,
    ) -> Result<(), ProtoError> {
        write_msg(
            &mut self.ctrl,
            &ClientMsg::RawReceive {
                test_id,
                streams: streams.to_vec(),
                drain_ms: drain.as_millis() as u64,
            },
        )?;
        match answer(&self.ctrl, Duration::from_secs(30))? {
            ServerMsg::RawReceiving => Ok(()),
            other => Err(unexpected("raw_receiving", &other)),
        }
    }

    /// Tells the receiver the sender is done after `sent` frames; its counts once drained.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn finish_receive(&mut self, sent: u64) -> Result<Reception, ProtoError> {
        write_msg(&mut self.ctrl, &ClientMsg::RawDone { sent })?;
        match answer(&self.ctrl, SLACK)? {
            ServerMsg::RawReceived { reception } => Ok(reception),
            other => Err(unexpected("raw_received", &other)),
        }
    }

    /// Starts turning the frames of `test_id` around (the port was opened for sending and
    /// receiving); returns once it runs.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn start_reflect(&mut self, test_id: u16) -> Result<(), ProtoError> {
        write_msg(&mut self.ctrl, &ClientMsg::RawReflect { test_id })?;
        match answer(&self.ctrl, Duration::from_secs(30))? {
            ServerMsg::RawReflecting => Ok(()),
            other => Err(unexpected("raw_reflecting", &other)),
        }
    }

    /// Stops the reflector once the frames of `sent` have had time to come back.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn finish_reflect(&mut self, sent: u64) -> Result<engine::raw::Reflected, ProtoError> {
        write_msg(&mut self.ctrl, &ClientMsg::RawDone { sent })?;
        match answer(&self.ctrl, SLACK)? {
            ServerMsg::RawReflected { reflected } => Ok(reflected),
            other => Err(unexpected("raw_reflected", &other)),
        }
    }

    /// Sends one stream of frames like `frame` as `spec` says (its frame and drain are
    /// not used: the port builds the frames from `frame`'s headers); returns when sent.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn send(&mut self, frame: &[u8], spec: &RawTrialSpec) -> Result<Sending, ProtoError> {
        write_msg(
            &mut self.ctrl,
            &ClientMsg::RawSend {
                frame: auth::to_hex(frame),
                frame_len: spec.frame_len as u64,
                test_id: spec.test_id,
                stream_id: spec.stream_id,
                load: spec.load,
            },
        )?;
        let wait = spec.load.duration() + SLACK;
        match answer(&self.ctrl, wait)? {
            ServerMsg::RawSent { sent } => Ok(sent),
            other => Err(unexpected("raw_sent", &other)),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// A UDP frame of the headers a controller sends (a built test frame).
    fn frame() -> Vec<u8> {
        use wire::frame::{FrameSpec, L4Spec};
        let spec = FrameSpec {
            eth: wire::ethernet::EthernetRepr {
                src_addr: wire::EthernetAddress([2, 0, 0, 0, 0, 1]),
                dst_addr: wire::EthernetAddress([2, 0, 0, 0, 0, 2]),
                ethertype: wire::EtherType::IPV4,
            },
            vlan: None,
            ip: wire::IpRepr::V4(wire::ipv4::Ipv4Repr {
                src_addr: wire::Ipv4Address([198, 18, 0, 1]),
                dst_addr: wire::Ipv4Address([198, 18, 0, 2]),
                protocol: wire::IpProtocol::UDP,
                payload_len: 0,
                ttl: 64,
                dscp: 0,
                ecn: 0,
                dont_frag: true,
                ident: 0,
            }),
            l4: L4Spec::Udp {
                src_port: 1,
                dst_port: 2,
            },
        };
        let hdr = wire::testhdr::TestHeaderRepr::template(7, 1);
        let mut buf = vec![0u8; 128];
        let n = spec.build(128, &hdr, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    fn rate(pps: f64, secs: u64) -> RawLoad {
        RawLoad::Rate {
            pps,
            duration: Duration::from_secs(secs),
            count: None,
        }
    }

    #[test]
    fn a_send_request_is_checked_before_anything_is_sent() {
        let hex = auth::to_hex(&frame());
        let ok = send_spec(&hex, 128, 7, 1, rate(1000.0, 2), 60.0).unwrap();
        assert_eq!((ok.frame_len, ok.test_id, ok.stream_id), (128, 7, 1));
        assert_eq!(ok.frame.eth.dst_addr.0, [2, 0, 0, 0, 0, 2]);
        let refused = |frame: &str, len: u64, load: RawLoad| {
            send_spec(frame, len, 7, 1, load, 60.0).unwrap_err()
        };
        assert!(refused("zz", 128, rate(1.0, 1)).contains("not hex"));
        assert!(refused("0102", 128, rate(1.0, 1)).contains("no IP"));
        assert!(refused(&hex, 40, rate(1.0, 1)).contains("does not fit"));
        assert!(refused(&hex, 100_000, rate(1.0, 1)).contains("does not fit"));
        assert!(refused(&hex, 128, rate(f64::NAN, 1)).contains("longest test"));
        assert!(refused(&hex, 128, rate(-5.0, 1)).contains("longest test"));
        assert!(refused(&hex, 128, rate(1000.0, 61)).contains("longest test"));
        let burst = RawLoad::Burst {
            frames: u64::MAX,
            target_pps: 1.0,
        };
        assert!(refused(&hex, 128, burst).contains("burst"));
    }
}
