//! Server behaviour: many tests at once, limits, authentication.

use crate::util::*;

#[test]
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

#[test]
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

#[test]
fn authentication_refuses_missing_and_wrong_keys() {
    let dir = std::env::temp_dir().join(format!("wb-it-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.key");
    let bad = dir.join("bad.key");
    std::fs::write(&good, "correct horse battery staple\n").unwrap();
    std::fs::write(&bad, "incorrect horse battery staple\n").unwrap();
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

#[test]
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
