//! A connection's set-up on the iperf3 port as the accept thread reads it, without a
//! thread of its own: its 37-byte cookie and, for a new test, its parameter object (a
//! 4-byte length and JSON), non-blocking, a read at a time. It decides nothing about
//! admission (the server's `serve` loop does, with the gate) and reads no clock (its
//! deadline is checked by the loop).

use std::io::{ErrorKind, Read};
use std::net::{SocketAddr, TcpStream};

use serde_json::Value;

use super::COOKIE_SIZE;
use crate::gate::HandshakeId;
use crate::handshake::Deadline;

/// Largest parameter object read during a set-up (iperf3's is a few hundred bytes).
const MAX_PARAMS: usize = 64 << 10;

/// What a pending connection is reading.
pub(super) enum Phase {
    /// Its 37-byte cookie.
    Cookie,
    /// A new test's parameters (told PARAM_EXCHANGE): a 4-byte length, then JSON.
    Params(Vec<u8>),
}

/// A connection in its set-up, read by the accept thread: the cookie, and for a new test
/// its parameters, all within one deadline.
pub(super) struct Pending {
    pub(super) stream: TcpStream,
    pub(super) peer: SocketAddr,
    pub(super) order: u64,
    pub(super) cookie: [u8; COOKIE_SIZE],
    pub(super) got: usize,
    pub(super) phase: Phase,
    /// Its place at the gate; `None` for a data stream let in beyond the address's share
    /// because one of its tests expects it.
    pub(super) place: Option<HandshakeId>,
    pub(super) deadline: Deadline,
}

/// What a read of a pending connection came to.
pub(super) enum Step {
    /// Nothing complete yet.
    Waiting,
    /// Its cookie is complete.
    Cookie,
    /// A new test's parameters are complete.
    Params(Value),
    /// Parameters that cannot be a test's (too long, not JSON): turned away.
    Bad(String),
    /// Closed or failed before its set-up ended.
    Gone,
}

impl Pending {
    pub(super) fn read(&mut self) -> Step {
        let mut chunk = [0u8; 4096];
        let buf: &mut [u8] = match &self.phase {
            Phase::Cookie => &mut self.cookie[self.got..],
            Phase::Params(_) => &mut chunk,
        };
        let n = match self.stream.read(buf) {
            Ok(0) => return Step::Gone,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                return Step::Waiting
            }
            Err(_) => return Step::Gone,
        };
        match &mut self.phase {
            Phase::Cookie => {
                self.got += n;
                if self.got == COOKIE_SIZE {
                    Step::Cookie
                } else {
                    Step::Waiting
                }
            }
            Phase::Params(b) => {
                b.extend_from_slice(&chunk[..n]);
                params_of(b)
            }
        }
    }
}

/// The parameter object in `b` (its length, then its JSON) once all of it came.
fn params_of(b: &[u8]) -> Step {
    let Some(len) = b.get(..4) else {
        return Step::Waiting;
    };
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
    if len > MAX_PARAMS {
        return Step::Bad(format!("{len} bytes of parameters (at most {MAX_PARAMS})"));
    }
    match b.get(4..) {
        Some(body) if body.len() >= len => match serde_json::from_slice(&body[..len]) {
            Ok(v) => Step::Params(v),
            Err(e) => Step::Bad(format!("parameters that do not parse: {e}")),
        },
        _ => Step::Waiting,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(json: &[u8]) -> Vec<u8> {
        let mut b = (json.len() as u32).to_be_bytes().to_vec();
        b.extend_from_slice(json);
        b
    }

    /// Parameters are complete only with all their bytes; too long or not JSON is bad.
    #[test]
    fn parameters_come_whole_or_not_at_all() {
        let whole = framed(br#"{"tcp":true,"time":1}"#);
        for cut in 0..whole.len() {
            assert!(matches!(params_of(&whole[..cut]), Step::Waiting), "{cut}");
        }
        match params_of(&whole) {
            Step::Params(v) => assert_eq!(v["time"], 1),
            _ => panic!("complete parameters not read"),
        }
        let long = ((MAX_PARAMS + 1) as u32).to_be_bytes();
        assert!(matches!(params_of(&long), Step::Bad(m) if m.contains("at most")));
        assert!(matches!(params_of(&framed(b"{not json")), Step::Bad(_)));
    }
}
