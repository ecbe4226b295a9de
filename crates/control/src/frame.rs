//! Message framing: a 4-byte big-endian length, then that many bytes of JSON.
//!
//! Lengths above [`MAX_MESSAGE`] are refused before anything is allocated; every read has
//! the stream's timeout, or a deadline for the whole message on the caller's clock
//! ([`read_msg_within`]); a peer that stops half-way gives `Truncated` or `Timeout`, never
//! a hang. The JSON decodes into typed enums only ([`crate::messages`]).

use std::io::{self, Read, Write};

use model::clock::Clock;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::ProtoError;

pub use crate::messages::MAX_MESSAGE;

/// Writes one framed message.
pub fn write_msg<T: Serialize>(w: &mut impl Write, msg: &T) -> Result<(), ProtoError> {
    let body = serde_json::to_vec(msg).map_err(|e| ProtoError::Encode(e.to_string()))?;
    if body.len() > MAX_MESSAGE {
        return Err(ProtoError::TooLarge(body.len()));
    }
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    w.write_all(&out).map_err(ProtoError::from_io)?;
    w.flush().map_err(ProtoError::from_io)
}

/// Reads one framed message, refusing oversized lengths and malformed bodies.
pub fn read_msg<T: DeserializeOwned>(r: &mut impl Read) -> Result<T, ProtoError> {
    let mut len = [0u8; 4];
    read_full(r, &mut len, true)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_MESSAGE {
        return Err(ProtoError::TooLarge(len));
    }
    let mut body = vec![0u8; len];
    read_full(r, &mut body, false)?;
    serde_json::from_slice(&body).map_err(|e| ProtoError::Malformed(e.to_string()))
}

fn read_full(r: &mut impl Read, buf: &mut [u8], at_boundary: bool) -> Result<(), ProtoError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 && at_boundary => return Err(ProtoError::Closed),
            Ok(0) => return Err(ProtoError::Truncated),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ProtoError::from_io(e)),
        }
    }
    Ok(())
}

/// A reader over a TCP stream that gives up at a fixed deadline for the whole message, so
/// a peer that drips one byte at a time cannot hold a connection open past it.
pub struct DeadlineReader<'a> {
    stream: &'a std::net::TcpStream,
    clock: &'a dyn Clock,
    /// On `clock`'s monotonic axis.
    until: std::time::Duration,
}

impl<'a> DeadlineReader<'a> {
    /// Reads from `stream` until `timeout` from now on `clock`.
    pub fn new(
        stream: &'a std::net::TcpStream,
        timeout: std::time::Duration,
        clock: &'a dyn Clock,
    ) -> Self {
        Self {
            stream,
            clock,
            until: clock.mono().saturating_add(timeout),
        }
    }
}

impl Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_sub(self.clock.mono());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut s = self.stream;
        s.read(buf)
    }
}

/// Reads one message from `stream`, all of it within `timeout` on `clock`.
pub fn read_msg_within<T: DeserializeOwned>(
    stream: &std::net::TcpStream,
    timeout: std::time::Duration,
    clock: &dyn Clock,
) -> Result<T, ProtoError> {
    read_msg(&mut DeadlineReader::new(stream, timeout, clock))
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::messages::ClientMsg;

    #[test]
    fn round_trip() {
        let msg = ClientMsg::Hello {
            magic: crate::MAGIC.into(),
            version: crate::VERSION,
        };
        let mut buf = Vec::new();
        write_msg(&mut buf, &msg).unwrap();
        assert_eq!(&buf[..4], &((buf.len() - 4) as u32).to_be_bytes());
        let back: ClientMsg = read_msg(&mut buf.as_slice()).unwrap();
        assert_eq!(back, msg);
    }

    #[test]
    fn oversized_length_is_refused_without_reading_body() {
        let buf = [0xff, 0xff, 0xff, 0xff, b'{'];
        let err = read_msg::<ClientMsg>(&mut buf.as_slice()).unwrap_err();
        assert!(
            matches!(err, ProtoError::TooLarge(n) if n == u32::MAX as usize),
            "{err}"
        );
    }

    #[test]
    fn truncated_and_closed_are_told_apart() {
        let empty: [u8; 0] = [];
        assert!(matches!(
            read_msg::<ClientMsg>(&mut empty.as_slice()),
            Err(ProtoError::Closed)
        ));
        let half = [0, 0, 0, 10, b'{', b'"'];
        assert!(matches!(
            read_msg::<ClientMsg>(&mut half.as_slice()),
            Err(ProtoError::Truncated)
        ));
        let short_len = [0, 0];
        assert!(matches!(
            read_msg::<ClientMsg>(&mut short_len.as_slice()),
            Err(ProtoError::Truncated)
        ));
    }

    #[test]
    fn garbage_body_is_malformed() {
        let mut buf = vec![0, 0, 0, 5];
        buf.extend_from_slice(b"\x00\x01abc");
        assert!(matches!(
            read_msg::<ClientMsg>(&mut buf.as_slice()),
            Err(ProtoError::Malformed(_))
        ));
        let mut buf = vec![0, 0, 0, 17];
        buf.extend_from_slice(br#"{"type":"bogus"}"#);
        buf.push(b' ');
        assert!(matches!(
            read_msg::<ClientMsg>(&mut buf.as_slice()),
            Err(ProtoError::Malformed(_))
        ));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = read_msg::<ClientMsg>(&mut bytes.as_slice());
        }
    }
}
