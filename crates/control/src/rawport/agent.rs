//! The controller's side of a lent raw port: a [`RawAgent`] is one authenticated session
//! with a server that holds the port open for the controller's trials ([`RawAgent::send`],
//! [`RawAgent::start_receive`] ... [`RawAgent::finish_receive`], reflection, streams).
//!
//! While a port sends for it, the agent says it is there every second
//! ([`ClientMsg::Alive`]): a controller that is frozen or gone falls silent and the server
//! stops the port within its idle timeout.
//!
//! It does not serve ports ([`super::serve`] does) or decide what a trial means (the
//! campaign's runners do).

use std::net::{IpAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use engine::raw::{RawTrialSpec, Reception, Sending};
use model::clock::Clock;
use model::stop::Stop;

use super::check::SLACK;
use crate::client::{ClientConfig, Session};
use crate::conn::{closing_on_stop, saying_alive};
use crate::frame::{read_msg_within, write_msg};
use crate::messages::raw::{RawStream, RawStreamSent};
use crate::messages::{ClientMsg, ServerMsg};
use crate::{auth, ProtoError};

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
    /// The server's boot id, when it said it: ports of servers with equal ones share a
    /// clock.
    pub host_id: Option<String>,
}

/// A raw port of a server, as the controller holds it: one authenticated session that
/// stays open for the trials.
pub struct RawAgent {
    ctrl: TcpStream,
    /// The session's clock.
    clock: Arc<dyn Clock>,
    /// The server's longest test.
    max_s: f64,
    /// Why the session cannot go on (a request failed midway: its answer may still come).
    broken: Option<String>,
    /// `HOST/IFACE` as given.
    pub label: String,
    /// The interface there.
    pub iface: String,
    /// The port.
    pub facts: PortFacts,
    /// The server shares this host's clock (equal boot ids).
    pub same_host: bool,
    /// Set by Ctrl-C: a send is cut short by closing the session.
    stop: Option<Stop>,
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

fn answer(ctrl: &TcpStream, wait: Duration, clock: &dyn Clock) -> Result<ServerMsg, ProtoError> {
    match read_msg_within(ctrl, wait, clock)? {
        ServerMsg::Error { code, message } => Err(ProtoError::Refused { code, message }),
        other => Ok(other),
    }
}

impl RawAgent {
    /// Sends `msg` and reads the answer within `wait`; a failure leaves the session
    /// unusable (a late answer must not pass for the next one).
    fn ask(&mut self, msg: &ClientMsg, wait: Duration) -> Result<ServerMsg, ProtoError> {
        self.ask_with(msg, wait, false)
    }

    /// As [`RawAgent::ask`], for a request the port sends for: the agent says it is there
    /// every second until the answer comes (the server stops sending for a silent one).
    fn ask_saying_alive(
        &mut self,
        msg: &ClientMsg,
        wait: Duration,
    ) -> Result<ServerMsg, ProtoError> {
        self.ask_with(msg, wait, true)
    }

    fn ask_with(
        &mut self,
        msg: &ClientMsg,
        wait: Duration,
        alive: bool,
    ) -> Result<ServerMsg, ProtoError> {
        if let Some(why) = &self.broken {
            return Err(ProtoError::Unexpected(format!(
                "the session failed earlier: {why}"
            )));
        }
        // The request goes first: the heartbeats never interleave with it.
        let r = write_msg(&mut self.ctrl, msg).and_then(|()| {
            let read = || answer(&self.ctrl, wait, &*self.clock);
            if alive {
                saying_alive(&self.ctrl, &*self.clock, read)
            } else {
                read()
            }
        });
        if let Err(e) = &r {
            self.broken = Some(e.to_string());
        }
        r
    }

    /// The server's longest test, seconds.
    pub fn longest_test(&self) -> f64 {
        self.max_s
    }

    /// The longest a request may take: the server's longest test and some.
    fn longest(&self) -> Duration {
        Duration::from_secs_f64(self.max_s.clamp(1.0, 86_400.0)) + SLACK
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
        let host_id = session.host_id.clone();
        let max_s = session.limits.max_duration_s;
        let clock = Arc::clone(&session.clock);
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
        match answer(&ctrl, Duration::from_secs(30), &*clock)? {
            ServerMsg::RawOpened {
                mac,
                ipv4,
                ipv6,
                mtu,
                next_hop_mac,
                backend,
            } => Ok(Self {
                ctrl,
                clock,
                max_s,
                broken: None,
                label: label.to_owned(),
                iface: req.port.clone(),
                facts: PortFacts {
                    mac,
                    ipv4,
                    ipv6,
                    mtu,
                    next_hop_mac,
                    backend,
                    host_id,
                },
                same_host,
                stop: cfg.stop.clone(),
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
        let msg = ClientMsg::RawReceive {
            test_id,
            streams: streams.to_vec(),
            drain_ms: drain.as_millis() as u64,
        };
        match self.ask(&msg, SLACK)? {
            ServerMsg::RawReceiving => Ok(()),
            other => Err(unexpected("raw_receiving", &other)),
        }
    }

    /// Tells the receiver the sender is done after `sent` frames; its counts once drained.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn finish_receive(&mut self, sent: u64) -> Result<Reception, ProtoError> {
        match self.ask(&ClientMsg::RawDone { sent }, SLACK)? {
            ServerMsg::RawReceived { reception } => Ok(reception.into()),
            other => Err(unexpected("raw_received", &other)),
        }
    }

    /// Starts turning the frames of `test_id` around (the port was opened for sending and
    /// receiving); returns once it runs.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn start_reflect(&mut self, test_id: u16) -> Result<(), ProtoError> {
        match self.ask(&ClientMsg::RawReflect { test_id }, SLACK)? {
            ServerMsg::RawReflecting => Ok(()),
            other => Err(unexpected("raw_reflecting", &other)),
        }
    }

    /// Stops the reflector once the frames of `sent` have had time to come back.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn finish_reflect(&mut self, sent: u64) -> Result<engine::raw::Reflected, ProtoError> {
        match self.ask(&ClientMsg::RawDone { sent }, SLACK)? {
            ServerMsg::RawReflected { reflected } => Ok(reflected.into()),
            other => Err(unexpected("raw_reflected", &other)),
        }
    }

    /// Sends one stream of frames like `frame` as `spec` says (its frame and drain are
    /// not used: the port builds the frames from `frame`'s headers); returns when sent.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn send(&mut self, frame: &[u8], spec: &RawTrialSpec) -> Result<Sending, ProtoError> {
        let msg = ClientMsg::RawSend {
            frame: auth::to_hex(frame),
            frame_len: spec.frame_len as u64,
            test_id: spec.test_id,
            stream_id: spec.stream_id,
            load: spec.load.into(),
        };
        // A burst lasts what the generator makes of it; the server ends any send within
        // its longest test. A stop (Ctrl-C) closes the session: the server stops sending.
        let wait = self.longest();
        let stop = self.stop.clone();
        let ctrl = self.ctrl.try_clone().map_err(ProtoError::Io)?;
        let answer = closing_on_stop(&ctrl, stop.as_ref(), || self.ask_saying_alive(&msg, wait))?;
        match answer {
            ServerMsg::RawSent { sent } => Ok(sent.into()),
            other => Err(unexpected("raw_sent", &other)),
        }
    }

    /// Sends `streams` of test `test_id` at once, each on its schedule; returns when all
    /// have reached their stop offsets, with what each sent. `halt` (else the session's
    /// stop) ends it early: the session is closed and the server stops sending.
    ///
    /// # Errors
    /// The server refused, the connection failed, or [`ProtoError::Interrupted`].
    pub fn send_streams(
        &mut self,
        test_id: u16,
        streams: Vec<RawStream>,
        halt: Option<&Stop>,
    ) -> Result<Vec<RawStreamSent>, ProtoError> {
        // The last stream's stop, and time to build the frames and answer.
        let last = streams.iter().map(|s| s.stop_s).fold(0.0, f64::max);
        let wait = Duration::from_secs_f64(last.clamp(0.0, self.max_s)) + SLACK;
        let stop = self.stop.clone();
        let halt = halt.or(stop.as_ref());
        let ctrl = self.ctrl.try_clone().map_err(ProtoError::Io)?;
        let answer = closing_on_stop(&ctrl, halt, || {
            self.ask_saying_alive(&ClientMsg::RawStreams { test_id, streams }, wait)
        })?;
        match answer {
            ServerMsg::RawStreamsSent { sent } => Ok(sent),
            other => Err(unexpected("raw_streams_sent", &other)),
        }
    }
}
