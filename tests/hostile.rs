//! Attacks on a `wirebench server`, each as a bounded test: what a hostile client can make
//! the server do, and what it must not. Every probe here sends to loopback only, or (the
//! lent raw ports) inside a lab of the project's own namespaces, for seconds at most.
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

/// A TCP connection to 127.0.0.1:`port` from the loopback address `from` (another
/// host, as far as the server can tell).
fn connect_from(from: [u8; 4], port: u16) -> Option<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    s.bind(&std::net::SocketAddr::from((from, 0)).into()).ok()?;
    let to = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    s.connect_timeout(&to.into(), Duration::from_secs(1)).ok()?;
    Some(s.into())
}

/// Threads of process `pid` now.
fn threads(pid: u32) -> usize {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
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
fn silent_connections_from_many_addresses_do_not_starve_the_control_port() {
    let srv = ServerProc::start(&[]);
    let port = srv.port;
    let done = model::stop::Stop::new();
    let attackers: Vec<_> = (0..12u8)
        .map(|a| {
            let done = done.clone();
            std::thread::spawn(move || {
                let open = || -> Vec<TcpStream> {
                    (0..4)
                        .filter_map(|_| connect_from([127, 0, 1, 10 + a], port))
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
fn a_mesh_on_one_host_works_with_the_dual_stack_listener() {
    let dir = crate::util::Scratch::new("hostile-mesh");
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
fn planted_symbolic_links_are_not_written_through() {
    let dir = crate::util::Scratch::new("hostile-links");
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

/// 400 silent connections to the iperf3 port from 8 addresses (50 each), held open, while
/// honest clients of both protocols run: the server starts no thread per connection (it
/// once started one each, 1,409 for 2,000 connections), turns the addresses' surplus away,
/// and serves the honest ones.
fn a_connection_flood_on_the_iperf3_port_starts_no_thread_per_connection() {
    let iperf3 = free_port();
    let srv = ServerProc::start(&["--iperf3-port", &iperf3.to_string()]);
    let idle = threads(srv.pid());
    let mut held = Vec::new();
    for a in 0..8u8 {
        held.extend((0..50).filter_map(|_| connect_from([127, 0, 2, 10 + a], iperf3)));
    }
    assert!(held.len() >= 350, "only {} connections opened", held.len());
    // The honest clients run while the flood is held (within the first 10 s, before the
    // cookie deadline would have closed the flood's connections anyway).
    let most = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let done = model::stop::Stop::new();
    let sampler = {
        let (most, done, pid) = (most.clone(), done.clone(), srv.pid());
        std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(20);
            while !done.is_raised() && Instant::now() < end {
                most.fetch_max(threads(pid), std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let (p, i) = (srv.port.to_string(), iperf3.to_string());
    for args in [
        vec!["client", "127.0.0.1", "--iperf3", "-p", &i, "-t", "1", "-J"],
        vec!["client", "127.0.0.1", "-p", &p, "-t", "1", "-J"],
    ] {
        let out = crate::util::run_within(&args, Duration::from_secs(30));
        assert!(
            out.status.success(),
            "{args:?} failed during the flood: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    done.raise();
    sampler.join().unwrap();
    let most = most.load(std::sync::atomic::Ordering::Relaxed);
    // The accept threads, at most 16 turning connections away, and the honest tests'
    // threads; far from one per connection.
    assert!(
        most <= idle + 40,
        "{most} threads for {} connections ({idle} idle)",
        held.len()
    );
    drop(held);
}

/// Connections that drip their iperf3 cookie, or their parameters, one byte every 2 s
/// are closed at one deadline for the whole step (10 s), not kept while each byte comes
/// within a per-read timeout (16 such held every iperf3 slot).
fn drip_fed_iperf3_set_ups_are_cut_off_at_one_deadline() {
    let iperf3 = free_port();
    let _srv = ServerProc::start(&["--iperf3-port", &iperf3.to_string()]);
    let drippers: Vec<_> = (0..4u8)
        .map(|a| {
            std::thread::spawn(move || -> Option<Duration> {
                let mut s = connect_from([127, 0, 3, 10 + a], iperf3).expect("connect");
                let start = Instant::now();
                let mut bytes: Vec<u8> = Vec::new();
                if a % 2 == 1 {
                    // A whole cookie, then the parameters drip.
                    let mut cookie = [b'd'; 37];
                    cookie[0] = b'0' + a;
                    cookie[36] = 0;
                    s.write_all(&cookie).ok()?;
                    let mut st = [0u8; 1];
                    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
                    s.read_exact(&mut st).ok()?;
                    assert_eq!(st[0] as i8, PARAM_EXCHANGE);
                    bytes.extend(b"\0\0\0\x40{\"tcp\":true,\"time\":1}");
                } else {
                    bytes.extend([b'c'; 36]);
                }
                s.set_read_timeout(Some(Duration::from_millis(100))).ok()?;
                // Bounded: 16 s of dripping at most.
                for b in bytes.iter().cycle().take(8) {
                    if s.write_all(&[*b]).is_err() {
                        return Some(start.elapsed());
                    }
                    let next = Instant::now() + Duration::from_secs(2);
                    while Instant::now() < next {
                        let mut sink = [0u8; 16];
                        match s.read(&mut sink) {
                            Ok(0) => return Some(start.elapsed()),
                            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => {
                                return Some(start.elapsed())
                            }
                            _ => {}
                        }
                    }
                }
                None
            })
        })
        .collect();
    for (a, d) in drippers.into_iter().enumerate() {
        let what = if a % 2 == 1 { "parameters" } else { "cookie" };
        let closed = d
            .join()
            .unwrap()
            .unwrap_or_else(|| panic!("a dripped {what} was still open after 16 s"));
        assert!(
            closed <= Duration::from_secs(12),
            "a dripped {what}: closed after {closed:?}"
        );
    }
}

/// An address whose connections close before their handshake ends is penalised from the
/// third time in a row (OpenSSH's noauth penalty), on either port, and the penalty is
/// the server's, not the port's: closing on the iperf3 port bars the control port too.
/// Another address is not held up.
fn connections_closed_before_their_handshake_are_penalised_on_every_port() {
    let iperf3 = free_port();
    let srv = ServerProc::start(&["--iperf3-port", &iperf3.to_string()]);
    let hello_or_refusal = |from: [u8; 4]| -> serde_json::Value {
        let mut s = connect_from(from, srv.port).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let hello = format!(
            r#"{{"type":"hello","magic":"wirebench","version":{}}}"#,
            control::VERSION
        );
        let mut b = (hello.len() as u32).to_be_bytes().to_vec();
        b.extend(hello.as_bytes());
        let _ = s.write_all(&b);
        let mut len = [0u8; 4];
        s.read_exact(&mut len).expect("an answer");
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).expect("its body");
        serde_json::from_slice(&body).expect("JSON")
    };
    for (from, port) in [([127, 0, 4, 1], srv.port), ([127, 0, 4, 2], iperf3)] {
        // Four: the third penalises for 1 s, the fourth for 2 s, a window wide enough for a
        // busy machine to notice each close before the hello comes.
        for _ in 0..4 {
            let s = connect_from(from, port).expect("connect");
            // Until the server has it in its handshakes, then gone.
            std::thread::sleep(Duration::from_millis(100));
            drop(s);
            std::thread::sleep(Duration::from_millis(250));
        }
        let v = hello_or_refusal(from);
        assert_eq!(v["type"], "error", "{from:?} through port {port}: {v}");
        assert!(
            v["message"]
                .as_str()
                .unwrap_or_default()
                .contains("try again in"),
            "{v}"
        );
    }
    // Another address is served.
    let v = hello_or_refusal([127, 0, 4, 3]);
    assert_eq!(v["type"], "hello", "{v}");
}

/// `--max-tests` counts the tests of both protocols together: with one allowed and a
/// wirebench test running, an iperf3 client is told access denied (iperf3's "busy"); the
/// iperf3 port used to count its own tests beside `--max-tests`. The metrics count the
/// refusal and the iperf3 test that runs afterwards.
fn one_test_count_is_shared_by_both_protocols() {
    let (iperf3, metrics) = (free_port(), free_port());
    let srv = ServerProc::start(&[
        "--iperf3-port",
        &iperf3.to_string(),
        "--max-tests",
        "1",
        "--metrics",
        &format!("127.0.0.1:{metrics}"),
    ]);
    let p = srv.port.to_string();
    let running = std::thread::spawn(move || {
        crate::util::run_within(
            &[
                "client",
                "127.0.0.1",
                "-p",
                &p,
                "-t",
                "3",
                "-b",
                "10M",
                "-J",
            ],
            Duration::from_secs(30),
        )
    });
    std::thread::sleep(Duration::from_millis(1500));
    let mut ctrl = TcpStream::connect(("127.0.0.1", iperf3)).expect("connect");
    ctrl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    ctrl.write_all(&[b's'; 37]).unwrap();
    // Its set-up (cookie and parameters) is read first, as a handshake is; then the test
    // finds no place.
    assert_eq!(state(&mut ctrl), PARAM_EXCHANGE);
    let json = r#"{"tcp":true,"time":1}"#;
    ctrl.write_all(&(json.len() as u32).to_be_bytes()).unwrap();
    ctrl.write_all(json.as_bytes()).unwrap();
    assert_eq!(
        state(&mut ctrl),
        -1,
        "access denied while the other test runs"
    );
    let out = running.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let i = iperf3.to_string();
    let out = crate::util::run_within(
        &["client", "127.0.0.1", "--iperf3", "-p", &i, "-t", "1", "-J"],
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut scrape = String::new();
    let mut s = TcpStream::connect(("127.0.0.1", metrics)).expect("metrics");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    s.read_to_string(&mut scrape).unwrap();
    let value = |name: &str| -> f64 {
        scrape
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {scrape}"))
    };
    assert_eq!(
        value("wirebench_server_tests_ended_total{outcome=\"completed\"}"),
        2.0,
        "the wirebench test and the iperf3 one"
    );
    assert!(value("wirebench_server_tests_refused_total{reason=\"busy\"}") >= 1.0);
}

/// A `direct` lab (talker 198.18.0.1 - listener 198.18.0.2) whose talker lends its eth0
/// (`server --raw-ports eth0` with `extra`), and the controller's side of it: the key
/// file and the port as `HOST:PORT/eth0`. The lab goes down when the guard drops.
struct LentTalker {
    server: ServerProc,
    port: String,
    key: String,
    dir: std::path::PathBuf,
    lab: crate::lab::LabGuard,
}

impl LentTalker {
    fn up(tag: &str, extra: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!("wb-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("key");
        crate::util::key_file(&key, "0123456789abcdef0123456789abcdef");
        let lab = crate::lab::LabGuard::up("direct", tag);
        let server = crate::agents::agent_with(&lab, "talker", "198.18.0.1", &key, extra);
        Self {
            port: format!("198.18.0.1:{}/eth0", server.port),
            key: key.to_string_lossy().into_owned(),
            server,
            dir,
            lab,
        }
    }

    /// `gen` from the lent port to the listener's eth0, run on the listener.
    fn gen(&self, args: &[&str]) -> std::process::Output {
        let mut argv = vec![
            "gen",
            &self.port,
            "--rx",
            "eth0",
            "--auth-key-file",
            &self.key,
            "-s",
            "128",
        ];
        argv.extend(args);
        crate::agents::on_node(&self.lab, "listener", &argv)
    }

    /// Frames the listener's eth0 has received so far.
    fn listener_rx_packets(&self) -> u64 {
        let ns = format!("wb-{}-listener", self.lab.0);
        let out = std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &ns,
                "cat",
                "/sys/class/net/eth0/statistics/rx_packets",
            ])
            .output()
            .expect("ip netns exec cat");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("rx_packets: {out:?}"))
    }
}

impl Drop for LentTalker {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Issue 33: a lent raw port sends by default only frames from its own MAC and addresses,
/// to unicast MACs, to its own subnet or the benchmarking blocks, at most at
/// `--raw-max-rate`: a controller holding the key that asks for a spoofed source MAC or
/// IP, a broadcast or multicast MAC, another destination or a faster rate is refused
/// with the flag that would allow it, before anything is sent; the honest request runs.
/// With `--raw-allow-spoof` and `--raw-allow-broadcast` the same frames are sent.
fn raw_ports_refuse_spoofed_and_broadcast_frames_by_default() {
    let lent = LentTalker::up("hsp", &[]);
    let honest = lent.gen(&["-r", "1kpps", "-n", "200", "-J"]);
    assert!(honest.status.success(), "{honest:?}");
    let v: serde_json::Value = serde_json::from_slice(&honest.stdout).expect("JSON");
    assert_eq!(crate::util::u64_at(&v, "/gen/sent"), 200, "{v}");
    let refused = |args: &[&str], flag: &str| {
        let mut argv = vec!["-r", "1kpps", "-n", "200"];
        argv.extend(args);
        let out = lent.gen(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(flag),
            "{args:?} was not refused naming {flag}: {out:?}"
        );
    };
    refused(&["--src-mac", "02:00:00:00:00:99"], "--raw-allow-spoof");
    refused(&["--src-ip", "198.18.0.99"], "--raw-allow-spoof");
    refused(&["--dst-mac", "ff:ff:ff:ff:ff:ff"], "--raw-allow-broadcast");
    refused(&["--dst-mac", "01:00:5e:00:00:01"], "--raw-allow-broadcast");
    refused(
        &["--dst-ip", "192.0.2.1", "--dst-mac", "02:00:00:00:00:02"],
        "--raw-destinations",
    );
    // 2 Gbit/s of 128-byte frames against the default cap of 1 Gbit/s.
    let out = lent.gen(&["-r", "2G", "-n", "200"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--raw-max-rate"),
        "{out:?}"
    );
    drop(lent);
    let open = LentTalker::up("hso", &["--raw-allow-spoof", "--raw-allow-broadcast"]);
    for args in [
        ["--src-mac", "02:00:00:00:00:99"],
        ["--dst-mac", "ff:ff:ff:ff:ff:ff"],
    ] {
        let mut argv = vec!["-r", "1kpps", "-n", "200", "-J"];
        argv.extend(args);
        let out = open.gen(&argv);
        assert!(out.status.success(), "{args:?}: {out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(crate::util::u64_at(&v, "/gen/sent"), 200, "{args:?}: {v}");
    }
}

/// A child process killed (SIGKILL, which ends a stopped one too) when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Issue 33: a controller frozen (SIGSTOP) while a lent port sends for it stops saying
/// it is there: the server ends the send within its idle timeout (the default 5 s) and
/// the heartbeat period, instead of sending for the 30 s asked.
fn a_frozen_raw_controller_s_stream_stops_within_the_idle_timeout() {
    let lent = LentTalker::up("hfz", &[]);
    let ns = format!("wb-{}-listener", lent.lab.0);
    let controller = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns,
            crate::util::bin(),
            "gen",
            &lent.port,
            "--rx",
            "eth0",
            "--auth-key-file",
            &lent.key,
            "-s",
            "128",
            "-r",
            "2kpps",
            "-t",
            "30",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("gen");
    let controller = KillOnDrop(controller);
    // The stream runs: the listener receives its frames.
    let before = lent.listener_rx_packets();
    let until = Instant::now() + Duration::from_secs(15);
    while lent.listener_rx_packets() < before + 2000 {
        assert!(Instant::now() < until, "the stream did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill(2) on our own child's pid (`ip` execs wirebench in place).
    unsafe { libc::kill(controller.0.id() as libc::pid_t, libc::SIGSTOP) };
    // Silent for the idle timeout after its last word (at most a heartbeat earlier).
    std::thread::sleep(Duration::from_millis(6500));
    let a = lent.listener_rx_packets();
    std::thread::sleep(Duration::from_secs(1));
    let b = lent.listener_rx_packets();
    assert!(
        b - a < 50,
        "the server still sent {} frames/s to the frozen controller's listener 6.5 s after it stopped",
        b - a
    );
    assert!(
        lent.server
            .log_line("said nothing", Duration::from_secs(1))
            .is_some(),
        "the server did not say why it stopped"
    );
    drop(controller);
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::Root;
    vec![
        crate::harness::case!(the_iperf3_port_sends_udp_only_to_the_control_connection_s_address),
        crate::harness::case!(the_iperf3_port_stops_sending_to_a_receiver_that_went_away),
        crate::harness::case!(
            silent_connections_from_many_addresses_do_not_starve_the_control_port
        ),
        crate::harness::case!(a_mesh_on_one_host_works_with_the_dual_stack_listener),
        crate::harness::case!(idle_connections_do_not_turn_scrapes_away),
        crate::harness::case!(planted_symbolic_links_are_not_written_through),
        crate::harness::case!(an_iperf3_client_above_max_rate_is_stopped),
        crate::harness::case!(
            a_connection_flood_on_the_iperf3_port_starts_no_thread_per_connection
        ),
        crate::harness::case!(drip_fed_iperf3_set_ups_are_cut_off_at_one_deadline),
        crate::harness::case!(
            connections_closed_before_their_handshake_are_penalised_on_every_port
        ),
        crate::harness::case!(one_test_count_is_shared_by_both_protocols),
        crate::harness::case!(
            raw_ports_refuse_spoofed_and_broadcast_frames_by_default,
            Root
        ),
        crate::harness::case!(
            a_frozen_raw_controller_s_stream_stops_within_the_idle_timeout,
            Root
        ),
    ]
}
