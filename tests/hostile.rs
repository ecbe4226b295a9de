//! Attacks on a `wirebench server`, each as a bounded loopback test: what a hostile client
//! can make the server do, and what it must not. Every probe here sends to loopback only,
//! for a few seconds at most.
//!
//! The iperf3 port is spoken to byte by byte (cookie, states, length-prefixed JSON, the
//! UDP hello), as a stock iperf3 client would, so that a test can lie where iperf3 does
//! not: a UDP hello from another address, a receiver that goes away.

use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use crate::util::{free_port, ServerProc};

/// iperf3's states (its `iperf_api.h`) and UDP hello.
const PARAM_EXCHANGE: i8 = 9;
const CREATE_STREAMS: i8 = 10;
const TEST_START: i8 = 1;
const UDP_HELLO: &[u8; 4] = b"9876";
const UDP_REPLY: &[u8; 4] = b"6789";

/// An iperf3-dialect control connection that has asked for `params` and been told to
/// create its streams.
fn iperf3_test(port: u16, params: serde_json::Value) -> TcpStream {
    let mut ctrl = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    ctrl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut cookie = [b'a'; 37];
    cookie[36] = 0;
    ctrl.write_all(&cookie).unwrap();
    assert_eq!(state(&mut ctrl), PARAM_EXCHANGE);
    let json = params.to_string();
    ctrl.write_all(&(json.len() as u32).to_be_bytes()).unwrap();
    ctrl.write_all(json.as_bytes()).unwrap();
    assert_eq!(state(&mut ctrl), CREATE_STREAMS);
    ctrl
}

fn state(ctrl: &mut TcpStream) -> i8 {
    let mut b = [0u8; 1];
    ctrl.read_exact(&mut b).expect("a state byte");
    b[0] as i8
}

/// Datagrams that reach `sock` within `within`.
fn datagrams(sock: &UdpSocket, within: Duration) -> u64 {
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut b = [0u8; 2048];
    let mut n = 0;
    let end = Instant::now() + within;
    while Instant::now() < end {
        if sock.recv(&mut b).is_ok() {
            n += 1;
        }
    }
    n
}

/// A reverse UDP test whose hello comes from another address than its control
/// connection (127.0.0.5, spoofable by anyone on the path): the server must not send the
/// test's datagrams there. A wirebench server's own protocol checks the address; its
/// iperf3 port must too. The honest hello, from the control connection's address, is
/// served.
#[test]
fn the_iperf3_port_sends_udp_only_to_the_control_connection_s_address() {
    let port = free_port();
    let _srv = ServerProc::start(&["--iperf3-port", &port.to_string()]);
    let params = serde_json::json!({
        "udp": true, "reverse": true, "time": 3, "parallel": 1, "len": 1000,
        "bandwidth": 10_000_000u64,
    });
    let mut ctrl = iperf3_test(port, params);
    let victim = UdpSocket::bind("127.0.0.5:0").expect("bind 127.0.0.5");
    victim.send_to(UDP_HELLO, ("127.0.0.1", port)).unwrap();
    let reached = datagrams(&victim, Duration::from_millis(1500));
    assert_eq!(
        reached, 0,
        "the server sent {reached} datagrams to 127.0.0.5, which its client is not"
    );
    // The client itself is still served: its hello is answered and its test starts.
    let me = UdpSocket::bind("127.0.0.1:0").unwrap();
    me.connect(("127.0.0.1", port)).unwrap();
    me.send(UDP_HELLO).unwrap();
    me.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut b = [0u8; 2048];
    let n = me
        .recv(&mut b)
        .expect("the server answers the client's own hello");
    assert_eq!(&b[..n], UDP_REPLY);
    assert_eq!(state(&mut ctrl), TEST_START);
    assert!(
        datagrams(&me, Duration::from_millis(500)) > 0,
        "no test data"
    );
}

/// A reverse UDP test whose receiver goes away (its port closed: the kernel answers the
/// server's datagrams with port unreachable): the server stops sending at once instead
/// of sending to a closed port for the rest of the test (an hour, if the client asked).
/// A socket that takes the port over a second later receives nothing.
#[test]
fn the_iperf3_port_stops_sending_to_a_receiver_that_went_away() {
    let port = free_port();
    let _srv = ServerProc::start(&["--iperf3-port", &port.to_string()]);
    let params = serde_json::json!({
        "udp": true, "reverse": true, "time": 30, "parallel": 1, "len": 1000,
        "bandwidth": 10_000_000u64,
    });
    let mut ctrl = iperf3_test(port, params);
    let me = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mine = me.local_addr().unwrap();
    me.connect(("127.0.0.1", port)).unwrap();
    me.send(UDP_HELLO).unwrap();
    me.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut b = [0u8; 2048];
    let n = me.recv(&mut b).expect("the hello is answered");
    assert_eq!(&b[..n], UDP_REPLY);
    assert_eq!(state(&mut ctrl), TEST_START);
    assert!(
        datagrams(&me, Duration::from_millis(500)) > 0,
        "no test data"
    );
    drop(me);
    std::thread::sleep(Duration::from_secs(1));
    // The same address and port again, as a later program on this host would get it.
    let again = UdpSocket::bind(mine).expect("the port is free again");
    let reached = datagrams(&again, Duration::from_secs(2));
    assert_eq!(
        reached, 0,
        "the server still sent {reached} datagrams to the closed receiver's port"
    );
}

/// 48 silent control connections from 12 addresses (4 each, the per-address share),
/// each closed and opened again at 9.5 s, before the handshake deadline could penalise
/// it: an honest client from another address still completes 3 tests in a row while
/// they keep at it.
#[test]
fn silent_connections_from_many_addresses_do_not_starve_the_control_port() {
    let srv = ServerProc::start(&[]);
    let port = srv.port;
    let done = model::stop::Stop::new();
    let attackers: Vec<_> = (0..12u8)
        .map(|a| {
            let done = done.clone();
            std::thread::spawn(move || {
                let from = std::net::SocketAddr::from(([127, 0, 1, 10 + a], 0));
                let open = || -> Vec<TcpStream> {
                    (0..4)
                        .filter_map(|_| {
                            let s = socket2::Socket::new(
                                socket2::Domain::IPV4,
                                socket2::Type::STREAM,
                                None,
                            )
                            .ok()?;
                            s.bind(&from.into()).ok()?;
                            let to = std::net::SocketAddr::from(([127, 0, 0, 1], port));
                            s.connect_timeout(&to.into(), Duration::from_secs(1)).ok()?;
                            Some(s.into())
                        })
                        .collect()
                };
                // Bounded: the honest client's three tests take seconds.
                let end = Instant::now() + Duration::from_secs(60);
                let mut held = open();
                let mut opened = Instant::now();
                while !done.is_raised() && Instant::now() < end {
                    if opened.elapsed() >= Duration::from_millis(9500) {
                        drop(std::mem::take(&mut held));
                        held = open();
                        opened = Instant::now();
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        })
        .collect();
    // Every attacker holds its connections before the honest client comes; its second
    // and third tests come right after the attackers opened theirs again (at 9.5 s).
    let start = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let p = port.to_string();
    for n in 1..=3 {
        if n == 2 {
            std::thread::sleep(Duration::from_secs(10).saturating_sub(start.elapsed()));
        }
        let out = crate::util::run_within(
            &["client", "127.0.0.1", "-p", &p, "-t", "1", "-J"],
            Duration::from_secs(30),
        );
        assert!(
            out.status.success(),
            "honest test {n} of 3 failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    done.raise();
    for a in attackers {
        a.join().unwrap();
    }
}

/// Two servers on one host with the default dual-stack listener (an IPv4 peer is seen as
/// `::ffff:127.0.0.1`), both `--allow-third-party`: a mesh between them runs both ways,
/// because a controller at `::ffff:127.0.0.1` is on this host; and a third-party test
/// aimed at a loopback address written as IPv4-mapped IPv6 from a controller that is not
/// (checked in `third_party`'s unit test) is refused like its IPv4 form.
#[test]
fn a_mesh_on_one_host_works_with_the_dual_stack_listener() {
    let dir = crate::util::fresh_path("hostile-mesh");
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("k");
    crate::util::key_file(&key, "0123456789abcdef0123456789abcdef");
    let k = key.to_string_lossy().into_owned();
    let args = ["--auth-key-file", k.as_str(), "--allow-third-party"];
    let a = ServerProc::start_on(None, &args);
    let b = ServerProc::start_on(None, &args);
    let (ha, hb) = (
        format!("a=127.0.0.1:{}", a.port),
        format!("b=127.0.0.1:{}", b.port),
    );
    let out = crate::util::run_within(
        &["mesh", &ha, &hb, "--auth-key-file", &k, "-t", "0.5", "-J"],
        Duration::from_secs(60),
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let cells = r["mesh"]["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 2, "{r}");
    for c in cells {
        assert!(
            c["summary"]["received_bps"]
                .as_f64()
                .is_some_and(|b| b > 0.0),
            "{} -> {}: {}",
            c["from"],
            c["to"],
            c["error"]
        );
    }
    assert!(out.status.success(), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// 16 connections to the metrics endpoint that never send a request, opened again as soon
/// as the server closes them: scrapes are still answered (200), not turned away as busy.
#[test]
fn idle_connections_do_not_turn_scrapes_away() {
    let metrics = free_port();
    let addr = format!("127.0.0.1:{metrics}");
    let _srv = ServerProc::start(&["--metrics", &addr]);
    let done = model::stop::Stop::new();
    let idle = {
        let done = done.clone();
        std::thread::spawn(move || {
            let open = || TcpStream::connect(("127.0.0.1", metrics)).ok();
            let mut held: Vec<TcpStream> = (0..16).filter_map(|_| open()).collect();
            // Bounded: the scrapes below take a few seconds.
            let end = Instant::now() + Duration::from_secs(30);
            while !done.is_raised() && Instant::now() < end {
                // Any the server closed is opened again at once.
                held.retain(|s| {
                    s.set_nonblocking(true).unwrap();
                    let mut b = [0u8; 64];
                    (&*s).read(&mut b).is_err()
                });
                while held.len() < 16 {
                    match open() {
                        Some(s) => held.push(s),
                        None => break,
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    for n in 1..=5 {
        let mut s = TcpStream::connect(("127.0.0.1", metrics)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "scrape {n}: {}",
            answer.lines().next().unwrap_or("(nothing)")
        );
        std::thread::sleep(Duration::from_millis(700));
    }
    done.raise();
    idle.join().unwrap();
}

/// Files the product writes are never written through a symbolic link planted where they
/// go: `--junit` at a dangling link does not create the link's target (the report
/// replaces the link when the run ends), and `--logfile` at a link is refused, leaving
/// its target as it was.
#[test]
fn planted_symbolic_links_are_not_written_through() {
    let dir = crate::util::fresh_path("hostile-links");
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    // --junit at a dangling link; the run's one test fails fast (nothing listens on port 1).
    let junit = dir.join("junit.xml");
    std::os::unix::fs::symlink(&victim, &junit).unwrap();
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        "[target]\nhost = \"127.0.0.1\"\nport = 1\n\n[[test]]\nname = \"t\"\nkind = \"client\"\nargs = \"-t 1\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    let (p, o, j) = (
        plan.to_string_lossy().into_owned(),
        out.to_string_lossy().into_owned(),
        junit.to_string_lossy().into_owned(),
    );
    let run = crate::util::run_within(
        &["run", &p, "--out", &o, "--junit", &j],
        Duration::from_secs(60),
    );
    assert!(
        !victim.exists(),
        "--junit created the link's target: {run:?}"
    );
    assert!(
        std::fs::symlink_metadata(&junit).is_ok_and(|m| m.is_file()),
        "the JUnit file replaced the link: {run:?}"
    );
    // --logfile at a link to an existing file: refused, the file untouched.
    std::fs::write(&victim, "keep").unwrap();
    let log = dir.join("client.log");
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    let l = log.to_string_lossy().into_owned();
    let out = crate::util::run(&["client", "127.0.0.1", "-p", "1", "--logfile", &l]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("symbolic link"),
        "{out:?}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An iperf3-dialect client that asks for 1 Mbit/s and sends 80 Mbit/s to a server with
/// `--max-rate 2M`: the server meters what it receives and ends the test within 2 s (its
/// control connection is closed), as it does for its own protocol.
#[test]
fn an_iperf3_client_above_max_rate_is_stopped() {
    let port = free_port();
    let _srv = ServerProc::start(&["--iperf3-port", &port.to_string(), "--max-rate", "2M"]);
    let params = serde_json::json!({
        "udp": true, "time": 10, "parallel": 1, "len": 1000, "bandwidth": 1_000_000u64,
    });
    let mut ctrl = iperf3_test(port, params);
    let me = UdpSocket::bind("127.0.0.1:0").unwrap();
    me.connect(("127.0.0.1", port)).unwrap();
    me.send(UDP_HELLO).unwrap();
    me.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut b = [0u8; 64];
    let n = me.recv(&mut b).expect("the hello is answered");
    assert_eq!(&b[..n], UDP_REPLY);
    assert_eq!(state(&mut ctrl), TEST_START);
    // 80 Mbit/s: 10,000 datagrams of 1000 bytes a second, for at most 4 s, until the
    // server closes the control connection.
    let flood = {
        let me = me.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut d = [0u8; 1000];
            let start = Instant::now();
            let mut count = 0u32;
            while start.elapsed() < Duration::from_secs(4) {
                count += 1;
                d[8..12].copy_from_slice(&count.to_be_bytes());
                let _ = me.send(&d);
                if count.is_multiple_of(100) {
                    let due = Duration::from_micros(100 * u64::from(count));
                    std::thread::sleep(due.saturating_sub(start.elapsed()));
                }
            }
        })
    };
    let started = Instant::now();
    ctrl.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut ended = None;
    while started.elapsed() < Duration::from_secs(4) {
        let mut b = [0u8; 64];
        match ctrl.read(&mut b) {
            Ok(0) => {
                ended = Some(started.elapsed());
                break;
            }
            // TEST_RUNNING and any state the server sends while it runs.
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => {
                ended = Some(started.elapsed());
                break;
            }
        }
    }
    flood.join().unwrap();
    let ended = ended.expect("the test still ran after 4 s at 40x --max-rate");
    assert!(ended <= Duration::from_secs(2), "ended after {ended:?}");
}
