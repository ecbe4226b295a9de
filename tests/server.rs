//! Server behaviour: many tests at once, limits, authentication.

use crate::util::*;

fn serves_several_tests_at_once() {
    let srv = ServerProc::start(&[]);
    let p = srv.port_arg();
    let handles: Vec<_> = (0..3)
        .map(|i| {
            let p = p.clone();
            std::thread::spawn(move || {
                let udp = i % 2 == 0;
                let mut args = vec!["client", "127.0.0.1", "-p", &p, "-t", "2", "-J"];
                if udp {
                    args.extend(["-u", "-b", "5M"]);
                } else {
                    args.extend(["-b", "50M"]);
                }
                run_json(&args)
            })
        })
        .collect();
    for h in handles {
        let v = h.join().expect("client thread");
        assert!(u64_at(&v, "/summary/sent_bytes") > 0);
    }
}

/// `--rx-backend xdp` on loopback: AF_XDP is refused before anything is loaded (so the
/// client is not told to shrink its GSO batches, and no root is needed), the result says
/// why, and the socket receiver counts every datagram.
fn an_xdp_server_on_loopback_receives_with_sockets_and_says_why() {
    let srv = ServerProc::start(&["--rx-backend", "xdp"]);
    let v = srv.json("client", "-u --pps 20000 -l 18 -t 0.5");
    let mode = v["receive_mode"].as_str().unwrap_or_default();
    assert!(
        mode.contains("af_xdp not used: AF_XDP does not work on loopback"),
        "{mode}"
    );
    let sent = u64_at(&v, "/summary/sent_packets");
    assert!(sent > 5_000, "{v}");
    assert_eq!(u64_at(&v, "/summary/received_packets"), sent, "{v}");
}

/// As `iperf3 -s`, the server says what each finished test was: client, protocol,
/// streams, time, what it received (and lost, for UDP) or sent; its log carries no colour
/// codes when it is not a terminal (a pipe here).
fn the_server_logs_each_finished_test_without_colour_in_a_log() {
    let srv = ServerProc::start(&[]);
    let v = srv.json("client", "-u -b 8M -l 1000 -t 1");
    let sent = u64_at(&v, "/summary/sent_packets");
    let line = srv
        .log_line("test from 127.0.0.1:", std::time::Duration::from_secs(5))
        .expect("a line for the finished test");
    assert!(line.contains("UDP, 1 stream, "), "{line}");
    assert!(line.contains(&format!("/{sent} (")), "{line} ({sent} sent)");
    assert!(
        line.contains(": received ") && line.contains(" Mbit/s"),
        "{line}"
    );
    let v = srv.json("client", "-t 0.5 -R -P 2");
    let bytes = u64_at(&v, "/summary/sent_bytes");
    assert!(bytes > 0);
    let line = srv
        .log_line("TCP, 2 streams", std::time::Duration::from_secs(5))
        .expect("a line for the reverse test");
    assert!(
        line.contains(": sent ") && !line.contains("received"),
        "{line}"
    );
    assert_eq!(srv.log_count("\u{1b}["), 0, "colour codes in a log");
}

fn limits_are_enforced_with_a_clear_message() {
    let srv = ServerProc::start(&[
        "--max-duration",
        "1",
        "--max-rate",
        "10M",
        "--max-streams",
        "2",
    ]);
    assert_fails(&srv.run("client", "-u -b 1M -t 3"), 1, "--max-duration");
    assert_fails(&srv.run("client", "-u -b 20M -t 1"), 1, "--max-rate");
    assert_fails(&srv.run("client", "-u -b 1M -t 1 -P 3"), 1, "--max-streams");
    let v = srv.json("client", "-u -b 1M -t 1");
    assert!(
        u64_at(&v, "/summary/sent_packets") > 0,
        "a request within the limits runs"
    );
}

fn authentication_refuses_missing_and_wrong_keys() {
    let dir = std::env::temp_dir().join(format!("wb-it-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.key");
    let bad = dir.join("bad.key");
    key_file(&good, "correct horse battery staple\n");
    key_file(&bad, "incorrect horse battery staple\n");
    let srv = ServerProc::start(&["--auth-key-file", good.to_str().unwrap()]);
    assert_fails(&srv.run("client", "-u -t 1"), 1, "requires authentication");
    let bad_arg = format!("-u -t 1 --auth-key-file {}", bad.display());
    assert_fails(&srv.run("client", &bad_arg), 1, "wrong key");
    let v = srv.json(
        "client",
        &format!("-u -t 1 --auth-key-file {}", good.display()),
    );
    assert!(u64_at(&v, "/summary/sent_packets") > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn max_tests_turns_away_the_extra_client() {
    let srv = ServerProc::start(&["--max-tests", "1"]);
    std::thread::scope(|scope| {
        let long = scope.spawn(|| srv.json("client", "-u -b 1M -t 3"));
        std::thread::sleep(std::time::Duration::from_millis(1000));
        assert_fails(&srv.run("client", "-u -t 1"), 1, "--max-tests");
        let v = long.join().unwrap();
        assert!(
            u64_at(&v, "/summary/sent_packets") > 0,
            "the running test was not disturbed"
        );
    });
}

/// A key file others can read is refused with the fix, on the server and the client.
fn a_key_readable_by_others_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let key = std::env::temp_dir().join(format!("wb-it-key644-{}", std::process::id()));
    key_file(&key, "a key of more than sixteen bytes\n");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let k = key.to_str().unwrap();
    assert_fails(&run(&["server", "--auth-key-file", k]), 2, "chmod 600");
    assert_fails(
        &run(&["client", "127.0.0.1", "--auth-key-file", k]),
        2,
        "chmod 600",
    );
    let _ = std::fs::remove_file(&key);
}

/// A client given a key does not run its test with a server that does not ask for it
/// (it may be an impostor), unless told to go on.
fn a_client_with_a_key_refuses_a_server_that_does_not_ask() {
    let key = std::env::temp_dir().join(format!("wb-it-keydown-{}", std::process::id()));
    key_file(&key, "a key of more than sixteen bytes\n");
    let srv = ServerProc::start(&[]);
    let with_key = format!("-u -t 0.5 --auth-key-file {}", key.display());
    assert_fails(&srv.run("client", &with_key), 1, "did not ask for it");
    let v = srv.json(
        "client",
        &format!("{with_key} --allow-unauthenticated-server"),
    );
    assert!(u64_at(&v, "/summary/sent_packets") > 0);
    let _ = std::fs::remove_file(&key);
}

/// Wrong keys from an address: two cost nothing, the third and later make it wait
/// (1 s, then 2 s, ...), and the right key works again once the wait is over.
fn repeated_wrong_keys_make_the_address_wait() {
    let dir = std::env::temp_dir().join(format!("wb-it-penalty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (good, bad) = (dir.join("good"), dir.join("bad"));
    key_file(&good, "correct horse battery staple\n");
    key_file(&bad, "incorrect horse battery staple\n");
    let srv = ServerProc::start(&["--auth-key-file", good.to_str().unwrap()]);
    let wrong = format!("-u -t 0.3 --auth-key-file {}", bad.display());
    let right = format!("-u -t 0.3 --auth-key-file {}", good.display());
    for _ in 0..3 {
        assert_fails(&srv.run("client", &wrong), 1, "wrong key");
    }
    // Penalised now: within the next few tries (the waits grow 1 s, 2 s, 4 s, so a slow
    // machine that starts the next try late still meets one), the address is told to wait.
    let mut told = String::new();
    for _ in 0..4 {
        let out = srv.run("client", &wrong);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success());
        if err.contains("try again in") {
            told = err;
            break;
        }
        assert!(err.contains("wrong key"), "{err}");
    }
    let secs: f64 = told
        .split("try again in ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("never told to wait: {told}"));
    std::thread::sleep(std::time::Duration::from_secs_f64(secs + 0.1));
    let v = srv.json("client", &right);
    assert!(u64_at(&v, "/summary/sent_packets") > 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A client stopped with SIGSTOP, and one killed with SIGKILL, each free their test's
/// slot within 10 s (the stopped one falls silent: the server's idle timeout ends it).
fn a_stopped_or_killed_client_frees_its_slot() {
    let srv = ServerProc::start(&["--max-tests", "1"]);
    let port = srv.port_arg();
    for signal in ["STOP", "KILL"] {
        let mut long = std::process::Command::new(bin())
            .args([
                "client",
                "127.0.0.1",
                "-p",
                &port,
                "-u",
                "-b",
                "1M",
                "-t",
                "60",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Its test holds the one slot (the first look after it started, so that the look
        // does not take the slot first).
        std::thread::sleep(std::time::Duration::from_millis(1000));
        assert!(long.try_wait().unwrap().is_none(), "the long test ended");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let out = srv.run("client", "-u -b 1M -t 0.2");
            if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--max-tests")
            {
                break;
            }
            assert!(std::time::Instant::now() < until, "the long test never ran");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let sent = std::process::Command::new("sh")
            .args(["-c", &format!("kill -{signal} {}", long.id())])
            .status()
            .unwrap();
        assert!(sent.success());
        let signalled = std::time::Instant::now();
        loop {
            if srv.run("client", "-u -b 1M -t 0.2").status.success() {
                break;
            }
            assert!(
                signalled.elapsed() < std::time::Duration::from_secs(10),
                "SIG{signal}: the slot is still taken after 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        eprintln!("SIG{signal}: slot free after {:?}", signalled.elapsed());
        let _ = long.kill();
        let _ = long.wait();
    }
}

/// Connections from 127.0.0.2, opened one after another and held without a word, neither take
/// more than their share of handshakes (the rest are turned away at once) nor keep an
/// honest client on 127.0.0.1 from running five tests in a row.
fn a_flood_from_one_address_does_not_keep_an_honest_client_out() {
    use std::io::Read;
    // The flood's handshakes stay open all along (none expires and makes room).
    let srv = ServerProc::start(&["--handshake-timeout", "120"]);
    let target: std::net::SocketAddr = format!("127.0.0.1:{}", srv.port).parse().unwrap();
    let stop = model::stop::Stop::new();
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut held = std::collections::VecDeque::new();
            let (mut opened, mut turned_away) = (0u32, 0u32);
            let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !stop.is_raised() && std::time::Instant::now() < until {
                let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                    .unwrap();
                s.bind(
                    &"127.0.0.2:0"
                        .parse::<std::net::SocketAddr>()
                        .unwrap()
                        .into(),
                )
                .unwrap();
                if s.connect(&target.into()).is_ok() {
                    opened += 1;
                    let mut t: std::net::TcpStream = s.into();
                    // The accept loop looks every 50 ms when idle.
                    t.set_read_timeout(Some(std::time::Duration::from_millis(300)))
                        .unwrap();
                    let mut buf = [0u8; 512];
                    if let Ok(n) = t.read(&mut buf) {
                        let said = String::from_utf8_lossy(&buf[..n]);
                        if said.contains("too many handshakes") || said.contains("try again") {
                            turned_away += 1;
                        }
                    }
                    held.push_back(t);
                    if held.len() > 64 {
                        held.pop_front();
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            (opened, turned_away)
        })
    };
    std::thread::sleep(std::time::Duration::from_secs(1));
    for k in 0..5 {
        let v = srv.json("client", "-u -b 1M -t 0.5");
        assert!(u64_at(&v, "/summary/sent_packets") > 0, "test {k}");
    }
    stop.raise();
    let (opened, turned_away) = flood.join().unwrap();
    // All but the first four of the flood's connections were turned away at once.
    assert!(opened > 10, "the flood opened {opened}");
    assert!(
        turned_away + 4 >= opened,
        "{turned_away} of {opened} turned away"
    );
}

/// A latency client that busy-polls the server beyond its address's spin budget is
/// answered from `recv` from then on: every ping still answered, the server says why.
fn a_spinning_latency_client_is_held_to_its_spin_budget() {
    let srv = ServerProc::start(&["--max-spin-per-source", "0.2"]);
    let v = srv.json("latency", "--spin -t 1.5");
    let row = &v["latency"][0];
    assert!(u64_at(row, "/samples") > 100, "{row}");
    assert_eq!(u64_at(row, "/lost"), 0, "{row}");
    let line = srv
        .log_line(
            "used up its busy-polling time",
            std::time::Duration::from_secs(5),
        )
        .expect("the server logs the spent budget");
    assert!(line.contains("127.0.0.1"), "{line}");
}

/// An address beyond its share of tests is refused, and the server goes on serving (the
/// refusal once left the gate locked).
fn an_address_beyond_its_share_of_tests_is_refused_and_the_server_goes_on() {
    let srv = ServerProc::start(&["--max-tests-per-source", "1"]);
    std::thread::scope(|scope| {
        let long = scope.spawn(|| srv.json("client", "-u -b 1M -t 3"));
        std::thread::sleep(std::time::Duration::from_millis(1000));
        assert_fails(&srv.run("client", "-u -t 0.3"), 1, "--max-tests-per-source");
        assert_fails(&srv.run("latency", "-t 0.3"), 1, "--max-tests-per-source");
        let v = long.join().unwrap();
        assert!(u64_at(&v, "/summary/sent_packets") > 0);
    });
    // Its share is free again, and counted right: one test runs, then another.
    for _ in 0..2 {
        let v = srv.json("client", "-u -b 1M -t 0.3");
        assert!(u64_at(&v, "/summary/sent_packets") > 0);
    }
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    vec![
        crate::harness::case!(serves_several_tests_at_once),
        crate::harness::case!(an_xdp_server_on_loopback_receives_with_sockets_and_says_why),
        crate::harness::case!(the_server_logs_each_finished_test_without_colour_in_a_log),
        crate::harness::case!(limits_are_enforced_with_a_clear_message),
        crate::harness::case!(authentication_refuses_missing_and_wrong_keys),
        crate::harness::case!(max_tests_turns_away_the_extra_client),
        crate::harness::case!(a_key_readable_by_others_is_refused),
        crate::harness::case!(a_client_with_a_key_refuses_a_server_that_does_not_ask),
        crate::harness::case!(repeated_wrong_keys_make_the_address_wait),
        crate::harness::case!(a_stopped_or_killed_client_frees_its_slot),
        crate::harness::case!(a_flood_from_one_address_does_not_keep_an_honest_client_out),
        crate::harness::case!(a_spinning_latency_client_is_held_to_its_spin_budget),
        crate::harness::case!(
            an_address_beyond_its_share_of_tests_is_refused_and_the_server_goes_on
        ),
    ]
}
