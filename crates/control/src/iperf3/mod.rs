//! The iperf3 dialect (esnet/iperf 3.x, checked against Debian's 3.12): its cookie, control
//! states, length-prefixed JSON, parameters and results, so that `wirebench client
//! --iperf3` can test against a stock `iperf3 -s`.
//!
//! The control connection carries the 37-byte cookie, one signed byte per state and JSON
//! objects framed by a big-endian `u32` length. Data streams are TCP connections that start
//! with the cookie, or UDP sockets that start with the 4-byte hello "9876" answered by
//! "6789"; UDP datagrams carry `wire::iperf3`'s header. Stream ids run 1, 3, 4, 5, ... (2 is
//! skipped, as iperf3 does).
//!
//! Pure parts (this module) are tested without sockets; [`client`] does the I/O.

pub mod client;
pub mod server;
mod setup;

use std::io::{Read, Write};

use serde_json::{json, Map, Value};

use crate::ProtoError;

/// Cookie length: 36 characters and a NUL.
pub const COOKIE_SIZE: usize = 37;
/// The cookie's alphabet (base32).
const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
/// The default iperf3 port.
pub const DEFAULT_PORT: u16 = 5201;
/// Largest JSON object accepted from a peer.
const MAX_JSON: u32 = 1 << 20;

/// Control states (one signed byte each).
pub mod state {
    /// The server starts the test.
    pub const TEST_START: i8 = 1;
    /// Data flows.
    pub const TEST_RUNNING: i8 = 2;
    /// The client is done.
    pub const TEST_END: i8 = 4;
    /// The server asks for the parameters.
    pub const PARAM_EXCHANGE: i8 = 9;
    /// The server asks for the data streams.
    pub const CREATE_STREAMS: i8 = 10;
    /// The server was stopped.
    pub const SERVER_TERMINATE: i8 = 11;
    /// The client was stopped.
    pub const CLIENT_TERMINATE: i8 = 12;
    /// Results are exchanged (client first).
    pub const EXCHANGE_RESULTS: i8 = 13;
    /// The client may print and finish.
    pub const DISPLAY_RESULTS: i8 = 14;
    /// The client's last byte.
    pub const IPERF_DONE: i8 = 16;
    /// Busy, or a bad cookie.
    pub const ACCESS_DENIED: i8 = -1;
    /// Followed by two big-endian `i32`: iperf3's error number and errno.
    pub const SERVER_ERROR: i8 = -2;
}

/// The UDP hello a client sends on each stream, and the server's answer (host-order
/// integers on x86: the ASCII bytes below).
pub const UDP_HELLO: [u8; 4] = *b"9876";
/// The server's answer to [`UDP_HELLO`].
pub const UDP_REPLY: [u8; 4] = *b"6789";
/// Older iperf3 servers' answer (987654321, either byte order).
const UDP_REPLY_LEGACY: [[u8; 4]; 2] = [987_654_321u32.to_le_bytes(), 987_654_321u32.to_be_bytes()];

/// Whether `b` is a server's answer to the UDP hello.
pub fn is_udp_reply(b: &[u8]) -> bool {
    b == UDP_REPLY || b == UDP_HELLO || UDP_REPLY_LEGACY.iter().any(|l| b == l)
}

/// A fresh cookie: 36 random characters of the base32 alphabet and a NUL.
///
/// # Errors
/// The system's random source failed.
pub fn cookie() -> Result<[u8; COOKIE_SIZE], ProtoError> {
    let mut raw = [0u8; COOKIE_SIZE - 1];
    getrandom::fill(&mut raw).map_err(|e| ProtoError::Io(std::io::Error::other(e.to_string())))?;
    let mut c = [0u8; COOKIE_SIZE];
    for (o, r) in c.iter_mut().zip(raw) {
        *o = COOKIE_ALPHABET[usize::from(r) % 32];
    }
    Ok(c)
}

/// The id of the `i`-th stream (from 0): 1, 3, 4, 5, ...
pub fn stream_id(i: usize) -> u64 {
    if i == 0 {
        1
    } else {
        i as u64 + 2
    }
}

/// Writes one state byte.
pub fn write_state(w: &mut impl Write, s: i8) -> Result<(), ProtoError> {
    w.write_all(&s.to_be_bytes()).map_err(ProtoError::Io)
}

/// Reads one state byte.
pub fn read_state(r: &mut impl Read) -> Result<i8, ProtoError> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b).map_err(ProtoError::from_io)?;
    Ok(i8::from_be_bytes(b))
}

/// Writes a JSON object with its big-endian length.
pub fn write_json(w: &mut impl Write, v: &Value) -> Result<(), ProtoError> {
    let text = serde_json::to_vec(v).map_err(|e| ProtoError::Unexpected(e.to_string()))?;
    let len =
        u32::try_from(text.len()).map_err(|_| ProtoError::Unexpected("JSON too long".into()))?;
    let mut buf = len.to_be_bytes().to_vec();
    buf.extend(text);
    w.write_all(&buf).map_err(ProtoError::Io)
}

/// Reads a length-prefixed JSON object (at most 1 MiB).
pub fn read_json(r: &mut impl Read) -> Result<Value, ProtoError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).map_err(ProtoError::from_io)?;
    let len = u32::from_be_bytes(len);
    if len > MAX_JSON {
        return Err(ProtoError::Unexpected(format!(
            "the iperf3 peer announced {len} bytes of JSON (at most {MAX_JSON})"
        )));
    }
    let mut text = vec![0u8; len as usize];
    r.read_exact(&mut text).map_err(ProtoError::from_io)?;
    serde_json::from_slice(&text)
        .map_err(|e| ProtoError::Unexpected(format!("the iperf3 peer's JSON does not parse: {e}")))
}

/// What an iperf3 test asks for (the parameter object's meaning).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// UDP instead of TCP.
    pub udp: bool,
    /// Seconds.
    pub time: u64,
    /// Streams per direction.
    pub parallel: usize,
    /// Block (TCP write) or datagram (UDP) size, bytes.
    pub len: usize,
    /// Rate per stream, bit/s (0 = unlimited).
    pub bandwidth: u64,
    /// The server sends.
    pub reverse: bool,
    /// Both send.
    pub bidir: bool,
    /// Socket buffer, bytes.
    pub window: Option<u64>,
    /// 64-bit UDP counters.
    pub counters_64bit: bool,
    /// TCP options (`MSS`, `nodelay`, `congestion`; zero copy is each side's own).
    pub tcp: model::spec::TcpOptions,
    /// Bytes to send in all (`num`, from `-n` or `-k`); 0 for a timed test.
    pub num: u64,
    /// Warm-up seconds not counted (`omit`, `-O`).
    pub omit: u64,
    /// The client wants the server's own output in the results (`get_server_output`).
    pub get_server_output: bool,
}

impl Params {
    /// The object a 3.12 client sends; flags only when set (iperf3 tests their presence).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(if self.udp { "udp" } else { "tcp" }.into(), json!(true));
        for (k, v) in [
            ("omit", json!(self.omit)),
            ("time", json!(self.time)),
            ("num", json!(self.num)),
            ("blockcount", json!(0)),
            ("parallel", json!(self.parallel)),
        ] {
            m.insert(k.into(), v);
        }
        if self.reverse {
            m.insert("reverse".into(), json!(true));
        }
        if self.bidir {
            m.insert("bidirectional".into(), json!(true));
        }
        if let Some(w) = self.window {
            m.insert("window".into(), json!(w));
        }
        m.insert("len".into(), json!(self.len));
        if self.bandwidth > 0 {
            m.insert("bandwidth".into(), json!(self.bandwidth));
        }
        m.insert("pacing_timer".into(), json!(1000));
        if let Some(mss) = self.tcp.mss {
            m.insert("MSS".into(), json!(mss));
        }
        if self.tcp.nodelay {
            m.insert("nodelay".into(), json!(true));
        }
        if let Some(c) = &self.tcp.congestion {
            m.insert("congestion".into(), json!(c));
        }
        if self.get_server_output {
            m.insert("get_server_output".into(), json!(1));
        }
        if self.counters_64bit {
            m.insert("udp_counters_64bit".into(), json!(1));
        }
        m.insert(
            "client_version".into(),
            json!(format!("wirebench {}", env!("CARGO_PKG_VERSION"))),
        );
        Value::Object(m)
    }
}

/// One stream of a results object.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StreamResult {
    /// Stream id.
    pub id: u64,
    /// Bytes sent (a sender) or received (a receiver).
    pub bytes: u64,
    /// TCP retransmits of a sender; `None` for -1.
    pub retransmits: Option<u64>,
    /// Receiver's jitter, seconds.
    pub jitter_s: f64,
    /// Lost datagrams (a UDP receiver).
    pub errors: u64,
    /// Datagrams: sent (a sender) or the highest count seen (a receiver).
    pub packets: u64,
    /// Seconds the stream ran.
    pub end_time: f64,
}

impl StreamResult {
    /// What iperf3 reads of a UDP stream this side received (its id set by the caller):
    /// bytes, jitter in seconds, lost, the highest count seen, and the active time.
    pub fn received(r: &engine::iperf3_udp::Iperf3RecvReport) -> Self {
        let s = &r.snapshot;
        Self {
            bytes: s.bytes,
            jitter_s: s.jitter_us / 1e6,
            errors: s.counters.lost,
            packets: r.highest.unwrap_or(0),
            end_time: match (s.first_rx, s.last_rx) {
                (Some(a), Some(b)) => b.saturating_sub(a).as_secs_f64(),
                _ => 0.0,
            },
            ..Self::default()
        }
    }
}

/// A results object.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Results {
    /// CPU use of the side, % (total, user, system).
    pub cpu: [f64; 3],
    /// TCP congestion control the side used (`congestion_used`), when it says.
    pub congestion: Option<String>,
    /// The server's own output, when the client asked for it (`server_output_text`).
    pub server_output: Option<String>,
    /// The side's streams.
    pub streams: Vec<StreamResult>,
}

/// iperf3 3.12 prints -1 as 18446744073709551615: any integer of 2^63 or more is -1.
fn int(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| i64::try_from(u).unwrap_or(-1)))
}

impl Results {
    /// The object a side sends; `sender` says whether this side only sent (-1 retransmit
    /// info for a pure receiver, as iperf3 writes it).
    pub fn to_json(&self, sender_has_retransmits: i64) -> Value {
        let streams: Vec<Value> = self
            .streams
            .iter()
            .map(|s| {
                json!({
                    "id": s.id, "bytes": s.bytes,
                    "retransmits": s.retransmits.map_or(-1, |r| r as i64),
                    "jitter": s.jitter_s, "errors": s.errors, "packets": s.packets,
                    "start_time": 0, "end_time": s.end_time,
                })
            })
            .collect();
        let mut v = json!({
            "cpu_util_total": self.cpu[0], "cpu_util_user": self.cpu[1],
            "cpu_util_system": self.cpu[2], "sender_has_retransmits": sender_has_retransmits,
            "streams": streams,
        });
        if let Some(c) = &self.congestion {
            v["congestion_used"] = c.as_str().into();
        }
        if let Some(t) = &self.server_output {
            v["server_output_text"] = t.as_str().into();
        }
        v
    }

    /// Reads a peer's results object; missing or mistyped keys are an error naming them.
    ///
    /// # Errors
    /// A key iperf3 requires is absent or not a number.
    pub fn from_json(v: &Value) -> Result<Self, ProtoError> {
        let bad = |k: &str| ProtoError::Unexpected(format!("the iperf3 peer's results lack '{k}'"));
        let num = |o: &Value, k: &str| o.get(k).and_then(Value::as_f64).ok_or_else(|| bad(k));
        let cpu = [
            num(v, "cpu_util_total")?,
            num(v, "cpu_util_user")?,
            num(v, "cpu_util_system")?,
        ];
        let list = v
            .get("streams")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("streams"))?;
        let mut streams = Vec::new();
        for s in list {
            let get = |k: &str| s.get(k).and_then(int).ok_or_else(|| bad(k));
            let count = |k: &str| get(k).map(|x| u64::try_from(x).unwrap_or(0));
            streams.push(StreamResult {
                id: count("id")?,
                bytes: count("bytes")?,
                retransmits: u64::try_from(get("retransmits")?).ok(),
                jitter_s: num(s, "jitter")?,
                errors: count("errors")?,
                packets: count("packets")?,
                end_time: s.get("end_time").and_then(Value::as_f64).unwrap_or(0.0),
            });
        }
        let congestion = v
            .get("congestion_used")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let server_output = v
            .get("server_output_text")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok(Self {
            cpu,
            congestion,
            server_output,
            streams,
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn cookies_are_base32_and_nul_terminated() {
        let c = cookie().unwrap();
        assert_eq!(c[36], 0);
        assert!(c[..36].iter().all(|b| COOKIE_ALPHABET.contains(b)));
        assert_ne!(cookie().unwrap(), c);
    }

    #[test]
    fn stream_ids_skip_two() {
        let ids: Vec<u64> = (0..4).map(stream_id).collect();
        assert_eq!(ids, [1, 3, 4, 5]);
    }

    #[test]
    fn json_is_length_prefixed_and_bounded() {
        let mut buf = Vec::new();
        write_json(&mut buf, &json!({"tcp": true})).unwrap();
        assert_eq!(&buf[..4], &[0, 0, 0, 12]);
        assert_eq!(read_json(&mut &buf[..]).unwrap(), json!({"tcp": true}));
        let huge = [0xff, 0xff, 0xff, 0xff];
        assert!(read_json(&mut &huge[..]).is_err());
        assert!(read_json(&mut &[0u8, 0, 0, 3, b'{', b'x', b'}'][..]).is_err());
    }

    #[test]
    fn params_set_flags_only_when_asked() {
        let p = Params {
            udp: true,
            time: 3,
            parallel: 2,
            len: 1400,
            bandwidth: 100_000_000,
            reverse: true,
            bidir: false,
            window: None,
            counters_64bit: true,
            tcp: model::spec::TcpOptions::default(),
            num: 0,
            omit: 0,
            get_server_output: false,
        };
        let v = p.to_json();
        assert_eq!(v["udp"], true);
        assert!(v.get("tcp").is_none() && v.get("bidirectional").is_none());
        for absent in ["MSS", "nodelay", "congestion", "get_server_output"] {
            assert!(v.get(absent).is_none(), "{absent}");
        }
        let tcp = Params {
            udp: false,
            tcp: model::spec::TcpOptions {
                congestion: Some("reno".into()),
                mss: Some(1000),
                nodelay: true,
                zerocopy: true,
            },
            num: 1 << 20,
            get_server_output: true,
            ..p.clone()
        }
        .to_json();
        assert_eq!(
            (&tcp["MSS"], &tcp["nodelay"], &tcp["congestion"]),
            (&json!(1000), &json!(true), &json!("reno"))
        );
        assert_eq!(
            (&tcp["num"], &tcp["get_server_output"]),
            (&json!(1 << 20), &json!(1))
        );
        assert_eq!(
            (v["time"].clone(), v["parallel"].clone()),
            (json!(3), json!(2))
        );
        assert_eq!(v["reverse"], true);
        assert_eq!(v["udp_counters_64bit"], 1);
        assert_eq!(v["bandwidth"], 100_000_000);
    }

    #[test]
    fn results_read_iperf3_s_minus_one_and_refuse_missing_keys() {
        // As iperf3 3.12 writes a receiver's results (-1 printed unsigned).
        let v = json!({
            "cpu_util_total": 1.5, "cpu_util_user": 0.5, "cpu_util_system": 1.0,
            "sender_has_retransmits": 18_446_744_073_709_551_615u64,
            "streams": [{"id": 1, "bytes": 1000, "retransmits": 18_446_744_073_709_551_615u64,
                "jitter": 0.0002, "errors": 3, "packets": 10, "start_time": 0, "end_time": 1.0}]
        });
        let r = Results::from_json(&v).unwrap();
        assert_eq!(r.streams[0].retransmits, None);
        assert_eq!((r.streams[0].errors, r.streams[0].packets), (3, 10));
        let back = Results::from_json(&r.to_json(-1)).unwrap();
        assert_eq!(back, r);
        let mut missing = v.clone();
        missing["streams"][0]
            .as_object_mut()
            .unwrap()
            .remove("bytes");
        let e = Results::from_json(&missing).unwrap_err();
        assert!(e.to_string().contains("bytes"), "{e}");
    }

    #[test]
    fn udp_replies_of_every_version_are_recognised() {
        assert!(is_udp_reply(b"6789"));
        assert!(is_udp_reply(&987_654_321u32.to_le_bytes()));
        assert!(!is_udp_reply(b"abcd"));
    }
}
