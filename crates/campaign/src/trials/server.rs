//! Trials as tests against a wirebench server ([`ServerTrial`]), and how to reach a server
//! ([`client_config`]) with a test's defaults ([`base_spec`]).
//!
//! The runner turns a method's trial request into a test spec, has the server run it
//! through a [`TestServer`] (the control client's session, or a fake in tests) and turns
//! the totals of the main direction into the method's trial data. It does not speak the
//! control protocol itself, nor assemble both sides' reports (`control` does).

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use control::client::{ClientConfig, Session, TestOutcome};
use method::{Load, Size, Trial, TrialData, TrialRequest};
use model::results::Summary;
use model::spec::{Protocol, TestSpec};
use model::stats::{Counters, LatencyHistogram};

use crate::request::{Connect, IpFamily, Server};
use crate::{usage, Error};

pub use method::trial::UDP_FRAME_OVERHEAD;

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
        Some(p) => Some(control::auth::load_key(p).map_err(|e| usage(e.to_string()))?),
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
    TestSpec::base(protocol)
}

/// What a test on a server gave a trial: the totals of its main direction (client to
/// server, or back with `-R`) with their latency, and how they were measured.
#[derive(Debug, Clone, Default)]
pub struct ServerOutcome {
    /// The test was cut short by a stop: it measured part of its time.
    pub interrupted: bool,
    /// The main direction's totals and latency histogram; `None` when the test produced no
    /// stream of that direction.
    pub main: Option<(Summary, Option<LatencyHistogram>)>,
    /// The send path (`udp-gso`, `tcp`, ...).
    pub backend: String,
    /// Where the latency stamps came from (`kernel-software`, `user`, `none`).
    pub timestamp_source: String,
}

impl ServerOutcome {
    /// What `outcome` gives a trial (its totals only when it ran to its end).
    pub fn of(outcome: &TestOutcome) -> Self {
        Self {
            interrupted: outcome.interrupted,
            main: if outcome.interrupted {
                None
            } else {
                control::assemble::main_direction(outcome)
            },
            backend: control::assemble::backend_name(outcome),
            timestamp_source: control::assemble::timestamp_source(outcome),
        }
    }
}

/// A wirebench server that runs one test per trial: the control client's session for a
/// [`ClientConfig`], a canned one in tests.
pub trait TestServer {
    /// The server's address, for messages.
    fn server(&self) -> SocketAddr;
    /// Runs the test `spec` on the server, to its end or to a stop.
    ///
    /// # Errors
    /// The server cannot be reached or refuses, or the test fails.
    fn run_test(&mut self, spec: &TestSpec) -> Result<ServerOutcome, Error>;
}

impl TestServer for ClientConfig {
    fn server(&self) -> SocketAddr {
        self.server
    }

    /// A session of its own per test.
    fn run_test(&mut self, spec: &TestSpec) -> Result<ServerOutcome, Error> {
        let server = self.server;
        let outcome = Session::connect(self)
            .map_err(|e| Error::from(e).context(format!("cannot start a test with {server}")))?
            .run_test(spec, None, |_| {})
            .map_err(|e| Error::from(e).context(format!("test with {server} failed")))?;
        Ok(ServerOutcome::of(&outcome))
    }
}

/// A server borrowed: the caller keeps it (and what it recorded) after the trials.
impl<T: TestServer + ?Sized> TestServer for &mut T {
    fn server(&self) -> SocketAddr {
        (**self).server()
    }

    fn run_test(&mut self, spec: &TestSpec) -> Result<ServerOutcome, Error> {
        (**self).run_test(spec)
    }
}

/// Trials as tests against a wirebench server: a payload trial is a test of one stream; a
/// frame trial of L bytes a UDP test of datagrams of L − 46 bytes at L's frame rate.
pub struct ServerTrial<S = ClientConfig> {
    /// How to reach the server ([`TestServer`]: a [`ClientConfig`], or a fake in tests).
    pub cfg: S,
    /// What every trial's test has besides the request (DSCP, window, ...).
    pub base: TestSpec,
}

impl<S> ServerTrial<S> {
    /// The test `req` asks for: its protocol, direction, rate and duration, and a payload
    /// of its size (a frame's less [`UDP_FRAME_OVERHEAD`]), on top of [`ServerTrial::base`].
    ///
    /// # Errors
    /// A burst: a socket cannot send back to back at line rate.
    pub fn spec_for(&self, req: &TrialRequest) -> Result<TestSpec, Error> {
        let Load::Rate(rate, duration) = req.load else {
            return Err(usage(
                "back-to-back bursts need raw ports (--tx/--rx): a socket cannot send at line rate",
            ));
        };
        Ok(TestSpec {
            protocol: req.protocol,
            direction: req.direction,
            rate,
            len: payload_len(req.size),
            duration,
            ..self.base.clone()
        })
    }
}

/// The payload of one packet of `size`: itself, or a frame's less the headers and FCS.
fn payload_len(size: Size) -> usize {
    match size {
        Size::Payload(len) => len,
        Size::Frame(l) => l.saturating_sub(UDP_FRAME_OVERHEAD) as usize,
    }
}

/// The trial data of a test of `len`-byte payloads from its main direction's totals `s`;
/// latency only when `req` asked for it.
fn trial_data(
    req: &TrialRequest,
    len: usize,
    (s, latency): (Summary, Option<LatencyHistogram>),
    outcome: ServerOutcome,
) -> TrialData {
    let c = Counters {
        received: s.received_packets.unwrap_or(0),
        duplicates: s.duplicate_packets.unwrap_or(0),
        reordered: s.reordered_packets.unwrap_or(0),
        late: s.late_packets.unwrap_or(0),
        ..Counters::default()
    };
    let offered_pps = s.offered_bps.unwrap_or(0.0) / (8.0 * len.max(1) as f64);
    TrialData {
        counters: c.settle(s.sent_packets.unwrap_or(0)),
        received_bytes: s.received_bytes.unwrap_or(0),
        offered_bps: s.offered_bps,
        received_bps: s.received_bps,
        offered_pps,
        duration: Duration::from_secs_f64(s.duration_s),
        rx_span: None,
        generator_limited: s.generator_limited,
        latency: latency.filter(|_| req.latency),
        backend: Some(outcome.backend),
        timestamp_source: Some(outcome.timestamp_source),
        sender_cpu: s.sender_cpu,
        receiver_cpu: s.receiver_cpu,
    }
}

impl<S: TestServer> Trial for ServerTrial<S> {
    type Error = Error;

    fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Error> {
        let spec = self.spec_for(req)?;
        // A trial the method asked for that the server would refuse is a failed run.
        spec.check()
            .map_err(|e| Error::Failed(format!("test with {} failed: {e}", self.cfg.server())))?;
        let mut outcome = self.cfg.run_test(&spec)?;
        // A trial cut short by a stop measured part of its time: it is no result.
        if outcome.interrupted {
            return Err(Error::Interrupted);
        }
        let main = outcome
            .main
            .take()
            .ok_or_else(|| Error::Failed("the trial produced no result".into()))?;
        Ok(trial_data(req, spec.len, main, outcome))
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod test;
