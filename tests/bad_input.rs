//! Bad bytes against a live server: each gets an error and a closed connection, and the
//! server keeps serving everyone else.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::util::*;

/// Sends `bytes`, then reads until the server closes; returns what it sent back and how
/// long it took.
fn poke(port: u16, bytes: &[u8]) -> (Vec<u8>, Duration) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let start = Instant::now();
    s.write_all(bytes).expect("write");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    (out, start.elapsed())
}

fn framed(json: &str) -> Vec<u8> {
    let mut v = (json.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v
}

/// The server's framed error reply, decoded.
fn error_reply(bytes: &[u8]) -> serde_json::Value {
    assert!(bytes.len() > 4, "expected an error message, got {bytes:?}");
    let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    let v: serde_json::Value =
        serde_json::from_slice(&bytes[4..4 + len]).expect("error reply is JSON");
    assert_eq!(v["type"], "error", "{v}");
    v
}

fn server_survives_garbage_oversize_truncation_versions_and_silence() {
    let mut srv = ServerProc::start(&["--handshake-timeout", "1"]);
    let port = srv.port;

    let (r, _) = poke(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let v = error_reply(&r);
    assert!(v["message"].as_str().unwrap().contains("exceeds"), "{v}");

    let (r, _) = poke(port, &[0xff, 0xff, 0xff, 0xff]);
    assert!(error_reply(&r)["message"]
        .as_str()
        .unwrap()
        .contains("exceeds"));

    let (r, _) = poke(
        port,
        &framed(r#"{"type":"hello","magic":"wirebench","version":99}"#),
    );
    let v = error_reply(&r);
    assert_eq!(v["code"], "version", "{v}");
    assert!(v["message"].as_str().unwrap().contains("version 99"), "{v}");

    let (r, _) = poke(
        port,
        &framed(r#"{"type":"hello","magic":"iperf3","version":1}"#),
    );
    assert_eq!(error_reply(&r)["code"], "version");

    let (r, _) = poke(port, &framed(r#"{"type":"finish","reports":[]}"#));
    assert_eq!(error_reply(&r)["code"], "protocol");

    let (r, _) = poke(port, &framed("\u{0}\u{1}not json"));
    assert_eq!(error_reply(&r)["code"], "protocol");

    // A valid hello followed by a request with a field the protocol does not have.
    let hello = || {
        framed(&format!(
            r#"{{"type":"hello","magic":"wirebench","version":{}}}"#,
            control::VERSION
        ))
    };
    let second =
        |r: &[u8]| error_reply(&r[4 + u32::from_be_bytes([r[0], r[1], r[2], r[3]]) as usize..]);
    let mut bytes = hello();
    bytes.extend(framed(
        r#"{"type":"test","spec":{"bogus":1},"one_way":true,"interval_ms":0}"#,
    ));
    let (r, _) = poke(port, &bytes);
    let v = second(&r);
    assert_eq!(v["code"], "protocol", "{v}");
    assert!(v["message"].as_str().unwrap().contains("bogus"), "{v}");

    // Durations no clock holds (a warm-up on top of them overflowed once), and intervals
    // too short to send.
    let spec = |duration: &str, omit: &str| {
        format!(
            r#"{{"protocol":"tcp","duration":{duration},"rate":{{"kind":"unlimited"}},"len":1000,"streams":1,"direction":"forward","udp_backend":"auto","synced_clocks":false,"dscp":null,"window":null,"server_cpu":null{omit}}}"#
        )
    };
    for (s, interval, needle) in [
        (
            spec(
                r#"{"secs":18446744073709551615,"nanos":0}"#,
                r#","omit":{"secs":5,"nanos":0}"#,
            ),
            0,
            "week",
        ),
        (spec(r#"{"secs":1,"nanos":0}"#, ""), 1, "shortest is 10 ms"),
    ] {
        let mut bytes = hello();
        bytes.extend(framed(&format!(
            r#"{{"type":"test","spec":{s},"one_way":true,"interval_ms":{interval}}}"#
        )));
        let (r, _) = poke(port, &bytes);
        let v = second(&r);
        assert_eq!(v["code"], "limit", "{v}");
        assert!(v["message"].as_str().unwrap().contains(needle), "{v}");
    }

    // Truncated: promises 100 bytes, sends 10, then stays silent until the deadline.
    let (r, took) = poke(
        port,
        &[
            0, 0, 0, 100, b'{', b'"', b't', b'y', b'p', b'e', b'"', b':', b'"', b'h',
        ],
    );
    assert_eq!(error_reply(&r)["code"], "timeout");
    assert!(
        took < Duration::from_secs(5),
        "the handshake deadline holds: {took:?}"
    );

    // Silent peer.
    let (r, took) = poke(port, &[]);
    assert_eq!(error_reply(&r)["code"], "timeout");
    assert!(took < Duration::from_secs(5), "{took:?}");

    assert!(srv.alive(), "the server is still running");
    let v = srv.json("client", "-u -b 1M -t 1");
    assert!(
        u64_at(&v, "/summary/sent_packets") > 0,
        "and still serves tests"
    );
}

fn a_client_that_never_connects_its_streams_frees_its_slot() {
    let mut srv = ServerProc::start(&["--max-tests", "1"]);
    let port = srv.port;
    // Hello, then a valid UDP request, then silence: the streams are never connected.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(&framed(&format!(
        r#"{{"type":"hello","magic":"wirebench","version":{}}}"#,
        control::VERSION
    )))
    .unwrap();
    let req = r#"{"type":"test","spec":{"protocol":"udp","duration":{"secs":1,"nanos":0},"rate":{"kind":"bits_per_sec","value":1000000.0},"len":100,"streams":1,"direction":"forward","udp_backend":"auto","synced_clocks":false,"dscp":null,"window":null},"one_way":true,"interval_ms":0}"#;
    s.write_all(&framed(req)).unwrap();
    // The stream setup times out (5 s) and the slot is released; until then the server
    // turns new tests away, after that a real test runs. (A client that closes its
    // connection instead frees the slot at once.)
    let start = std::time::Instant::now();
    // Give the server a moment to take the slot for the vanished client's request.
    std::thread::sleep(Duration::from_millis(300));
    let mut refused = 0;
    let v = loop {
        let out = srv.run("client", "-u -b 1M -t 1 -J");
        if out.status.success() {
            assert!(
                refused > 0,
                "the vanished client's test never held the slot"
            );
            break serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON");
        }
        refused += 1;
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--max-tests"), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the slot was never released"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(srv.alive());
    assert!(u64_at(&v, "/summary/sent_packets") > 0);
    drop(s);
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    vec![
        crate::harness::case!(server_survives_garbage_oversize_truncation_versions_and_silence),
        crate::harness::case!(a_client_that_never_connects_its_streams_frees_its_slot),
    ]
}
