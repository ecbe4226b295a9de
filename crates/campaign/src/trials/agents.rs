//! Raw ports that wirebench servers lend (`HOST/IFACE`): how a controller reaches those
//! servers ([`Agents`]), opens a port there, and drives it through one trial
//! ([`LentPort`], the seam the raw runner's tests put a fake behind).
//!
//! It does not run trials (the raw and streams runners do) nor speak the protocol itself
//! (`control::rawport` does).

use std::time::Duration;

use control::rawport::{RawAgent, RawOpenRequest};
use engine::raw::{RawTrialSpec, Reception, Reflected, Sending};
use model::stop::Stop;
use model::wait::{Poll, Polled, Wait};

use crate::request::{Agents, FrameBackend, Server};
use crate::trials::server::client_config;
use crate::Error;

impl Agents {
    /// Opens port `iface` of the server at `host`.
    pub(crate) fn open(
        &self,
        (host, port, iface): (&str, Option<u16>, &str),
        req: RawOpenRequest,
        stop: &Stop,
    ) -> Result<RawAgent, Error> {
        let label = port_label(host, port, iface);
        let server = Server {
            host: host.to_owned(),
            port: port.unwrap_or(self.port),
            key_file: self.key_file.clone(),
            allow_unauthenticated: false,
        };
        let mut cfg = client_config(&server)?;
        cfg.stop = Some(stop.clone());
        let req = RawOpenRequest {
            port: iface.to_owned(),
            ..req
        };
        // A port the previous command just let go of may still be held for a moment while
        // its session winds down on the server: a busy port is asked again for 3 s.
        let clock = engine::clock::RealClock::new();
        let deadline = Duration::from_secs(3);
        let mut busy = None;
        let opened =
            Wait::on(&clock)
                .until(deadline)
                .poll(|| match RawAgent::open(&cfg, &label, &req) {
                    Err(
                        e @ control::ProtoError::Refused {
                            code: control::messages::ErrorCode::Busy,
                            ..
                        },
                    ) if !stop.is_raised() => {
                        busy = Some(e);
                        Poll::Wait(Duration::from_millis(100))
                    }
                    r => Poll::Ready(r),
                });
        // Out of time: the last answer, busy.
        let r = match (opened, busy) {
            (Polled::Ready(r), _) => r,
            (_, Some(e)) => Err(e),
            (_, None) => Err(control::ProtoError::Timeout),
        };
        r.map_err(|e| Error::from(e).context(&label))
    }
}

/// A server's port as the user wrote it: `HOST/IFACE`, `HOST:PORT/IFACE`, or
/// `[V6]:PORT/IFACE`.
fn port_label(host: &str, port: Option<u16>, iface: &str) -> String {
    match port {
        Some(p) if host.contains(':') => format!("[{host}]:{p}/{iface}"),
        Some(p) => format!("{host}:{p}/{iface}"),
        None => format!("{host}/{iface}"),
    }
}

/// A backend's name for a server's port.
pub(crate) fn backend_name(b: FrameBackend) -> String {
    match b {
        FrameBackend::Auto => "auto",
        FrameBackend::Packet => "packet",
        FrameBackend::Ring => "ring",
        FrameBackend::Xdp => "xdp",
    }
    .to_owned()
}

/// A port's addresses as the frame template needs them.
pub(crate) fn agent_addresses(a: &RawAgent) -> lab::probe::Addresses {
    lab::probe::Addresses {
        mac: a.facts.mac,
        ipv4: a.facts.ipv4,
        ipv6: a.facts.ipv6,
    }
}

/// A port a server lends, as one trial of the raw runner drives it: it counts the frames
/// of a trial, sends them, or turns them around. Errors carry the port's `HOST/IFACE`.
pub(crate) trait LentPort: Send {
    /// `HOST/IFACE` as given.
    fn label(&self) -> &str;
    /// Its backends, `sender / receiver`.
    fn backend(&self) -> &str;
    /// The boot id of its host, when its server said it: ports of hosts with equal ones
    /// share a clock.
    fn host_id(&self) -> Option<&str>;
    /// The server's longest test, seconds.
    fn longest_test(&self) -> f64;
    /// Starts counting the frames of `test_id`, streams `ids`.
    fn start_receive(&mut self, test_id: u16, ids: &[u8], drain: Duration) -> Result<(), Error>;
    /// Tells the receiver `sent` frames were sent; what it counted, once drained.
    fn finish_receive(&mut self, sent: u64) -> Result<Reception, Error>;
    /// Starts turning the frames of `test_id` around.
    fn start_reflect(&mut self, test_id: u16) -> Result<(), Error>;
    /// Stops turning frames around once the `sent` frames had time to come back.
    fn finish_reflect(&mut self, sent: u64) -> Result<Reflected, Error>;
    /// Sends frames like `frame` as `spec` says; what was sent.
    fn send(&mut self, frame: &[u8], spec: &RawTrialSpec) -> Result<Sending, Error>;
}

impl LentPort for RawAgent {
    fn label(&self) -> &str {
        &self.label
    }

    fn backend(&self) -> &str {
        &self.facts.backend
    }

    fn host_id(&self) -> Option<&str> {
        self.facts.host_id.as_deref()
    }

    fn longest_test(&self) -> f64 {
        RawAgent::longest_test(self)
    }

    fn start_receive(&mut self, test_id: u16, ids: &[u8], drain: Duration) -> Result<(), Error> {
        RawAgent::start_receive(self, test_id, ids, drain)
            .map_err(|e| Error::from(e).context(&self.label))
    }

    fn finish_receive(&mut self, sent: u64) -> Result<Reception, Error> {
        RawAgent::finish_receive(self, sent).map_err(|e| Error::from(e).context(&self.label))
    }

    fn start_reflect(&mut self, test_id: u16) -> Result<(), Error> {
        RawAgent::start_reflect(self, test_id).map_err(|e| Error::from(e).context(&self.label))
    }

    fn finish_reflect(&mut self, sent: u64) -> Result<Reflected, Error> {
        RawAgent::finish_reflect(self, sent).map_err(|e| Error::from(e).context(&self.label))
    }

    fn send(&mut self, frame: &[u8], spec: &RawTrialSpec) -> Result<Sending, Error> {
        RawAgent::send(self, frame, spec).map_err(|e| Error::from(e).context(&self.label))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_port_is_named_as_the_user_wrote_it() {
        assert_eq!(port_label("h1", None, "eth0"), "h1/eth0");
        assert_eq!(port_label("h1", Some(5300), "eth0"), "h1:5300/eth0");
        assert_eq!(
            port_label("fd00::1", Some(5300), "eth0"),
            "[fd00::1]:5300/eth0"
        );
    }

    #[test]
    fn backends_are_named_as_a_server_takes_them() {
        let names: Vec<String> = [
            FrameBackend::Auto,
            FrameBackend::Packet,
            FrameBackend::Ring,
            FrameBackend::Xdp,
        ]
        .into_iter()
        .map(backend_name)
        .collect();
        assert_eq!(names, ["auto", "packet", "ring", "xdp"]);
    }
}
