//! The server's metrics and the exporter's probes as a real Prometheus sees them: Debian's
//! `prometheus` scrapes `server --metrics` every second while a test runs, and the
//! exporter's `/probe` beside it; its query API has the series with sane values, and
//! `promtool check metrics` accepts both texts. The exporter's refusals (400, 503) are
//! checked over plain HTTP.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// A Prometheus child, killed when dropped.
struct Prometheus(Child, std::path::PathBuf);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

/// The body of `GET path` from 127.0.0.1:`port` (HTTP/1.0: no chunked answers).
fn get(port: u16, path: &str) -> Option<String> {
    match get_with(port, path, "") {
        Some((200, body)) => Some(body),
        _ => None,
    }
}

/// The status and body of `GET path` with extra header lines (each ending in CRLF).
fn get_with(port: u16, path: &str, headers: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{headers}\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    // "HTTP/1.0 200 OK" (Prometheus answers in the request's version) or "HTTP/1.1 ...".
    let status = head.strip_prefix("HTTP/1.")?.get(2..5)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// The value of the sample `series` (name and labels exactly as written) in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// `promtool check metrics` accepts `text`.
fn promtool_accepts(promtool: &str, text: &str) {
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The value of a Prometheus instant query, once the query has a result (within 20 s).
fn query(port: u16, q: &str) -> f64 {
    let until = Instant::now() + Duration::from_secs(20);
    let path = format!(
        "/api/v1/query?query={}",
        q.replace(' ', "%20")
            .replace('"', "%22")
            .replace('{', "%7B")
            .replace('}', "%7D")
            .replace('[', "%5B")
            .replace(']', "%5D")
    );
    loop {
        if let Some(body) = get(port, &path) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) {
                let value = v
                    .pointer("/data/result/0/value/1")
                    .and_then(|x| x.as_str())
                    .and_then(|x| x.parse().ok());
                if let Some(value) = value {
                    return value;
                }
            }
        }
        assert!(Instant::now() < until, "no result for {q}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn prometheus_scrapes_the_server_during_a_test() {
    let (prometheus, promtool) = (which("prometheus"), which("promtool"));
    let metrics_port = free_port();
    let addr = format!("127.0.0.1:{metrics_port}");
    let srv = ServerProc::start(&["--metrics", &addr]);
    let exporter = ServerProc::start_command(&["exporter", "--listen", "127.0.0.1:0"]);
    let dir = std::env::temp_dir().join(format!("wb-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: wirebench\n    static_configs:\n      - targets: ['{addr}']\n  - job_name: probe\n    scrape_interval: 3s\n    scrape_timeout: 3s\n    metrics_path: /probe\n    params:\n      target: ['127.0.0.1:{}']\n      kind: [latency]\n      secs: ['1']\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
            srv.port, exporter.port
        ),
    )
    .unwrap();
    let web = free_port();
    let child = Command::new(prometheus)
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{web}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus");
    let _prom = Prometheus(child, dir);
    // Prometheus takes a few seconds to open its store: the test starts once it scrapes.
    // (`up == 1` has a result only once a scrape succeeded.)
    assert_eq!(query(web, "up{job=\"wirebench\"} == 1"), 1.0);
    // A UDP test of 4 s at 20 Mbit/s: scraped about four times while it runs.
    let v = srv.json("client", "-u -b 20M -t 4");
    let received = u64_at(&v, "/summary/received_bytes");
    assert!(received > 0);
    // Prometheus scraped the running test: its rate was there, near 20 Mbit/s.
    let rate = query(web, "max_over_time(wirebench_server_test_rate_bps[5m])");
    assert!((5e6..40e6).contains(&rate), "rate {rate}");
    // Once scraped after the test's end: completed, nothing running, and the byte total is
    // what the test received.
    let settled = |q: &str, done: &dyn Fn(f64) -> bool| {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let v = query(web, q);
            if done(v) {
                return v;
            }
            assert!(Instant::now() < until, "{q} = {v}");
            std::thread::sleep(Duration::from_millis(500));
        }
    };
    settled(
        "wirebench_server_tests_ended_total{outcome=\"completed\"}",
        &|v| v >= 1.0,
    );
    settled("wirebench_server_tests_running", &|v| v == 0.0);
    let rx = "wirebench_server_payload_bytes_total{direction=\"rx\"}";
    let bytes = settled(rx, &|v| v as u64 >= received);
    assert!(bytes as u64 <= received * 11 / 10, "{bytes} of {received}");
    // The exporter's probes, scraped beside it, succeeded and measured round trips.
    settled("probe_success{job=\"probe\"}", &|v| v == 1.0);
    let p99 = query(
        web,
        "wirebench_probe_latency_seconds{job=\"probe\",stat=\"p99\"}",
    );
    assert!(p99 > 0.0 && p99 < 0.1, "p99 {p99}");
    // The scrape example in deploy/ is a valid configuration.
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/prometheus/prometheus.yml"
    );
    let config = Command::new(&promtool)
        .args(["check", "config", example])
        .output()
        .expect("promtool");
    assert!(
        config.status.success(),
        "{}{}",
        String::from_utf8_lossy(&config.stdout),
        String::from_utf8_lossy(&config.stderr)
    );
    // promtool accepts both texts.
    promtool_accepts(&promtool, &get(metrics_port, "/metrics").expect("metrics"));
    let probe = format!(
        "/probe?target=127.0.0.1:{}&kind=udp&secs=1&rate=10M",
        srv.port
    );
    promtool_accepts(&promtool, &get(exporter.port, &probe).expect("probe"));
}

fn the_exporter_probes_and_refuses_what_it_must() {
    let srv = ServerProc::start(&[]);
    let exporter = ServerProc::start_command(&[
        "exporter",
        "--listen",
        "127.0.0.1:0",
        "--max-concurrent",
        "1",
        "--max-secs",
        "10",
        "--max-rate",
        "50M",
    ]);
    let target = format!("target=127.0.0.1:{}", srv.port);
    let probe = |q: &str, headers: &str| {
        get_with(exporter.port, &format!("/probe?{target}&{q}"), headers).expect("an answer")
    };
    // A UDP probe: the rate asked for arrived, nothing lost, jitter and latency measured.
    let (status, text) = probe("kind=udp&secs=1&rate=10M", "");
    assert_eq!(status, 200, "{text}");
    assert_eq!(sample(&text, "probe_success"), Some(1.0), "{text}");
    let rx = sample(&text, "wirebench_probe_received_bytes_per_second").expect("rate");
    assert!((8e6..12e6).contains(&(rx * 8.0)), "{rx}\n{text}");
    assert_eq!(sample(&text, "wirebench_probe_loss_ratio"), Some(0.0));
    assert!(sample(&text, "wirebench_probe_jitter_seconds").is_some());
    assert!(text.contains("wirebench_probe_latency_seconds{kind=\"one-way\",stat=\"p99\"}"));
    // A TCP probe has no loss ratio (not measured, so not written).
    let (status, text) = probe("secs=1&rate=20M", "");
    assert_eq!(
        (status, sample(&text, "probe_success")),
        (200, Some(1.0)),
        "{text}"
    );
    assert!(sample(&text, "wirebench_probe_received_bytes_per_second").is_some());
    assert!(!text.contains("loss_ratio"), "{text}");
    // Latency: round trips.
    let (_, text) = probe("kind=latency&secs=1", "");
    let p99 = r#"wirebench_probe_latency_seconds{kind="round-trip",stat="p99"}"#;
    assert!(sample(&text, p99).is_some_and(|v| v > 0.0), "{text}");
    // Refused with the reason: 400.
    for (q, headers, needle) in [
        ("kind=icmp", "", "kind=icmp"),
        ("secs=11", "", "--max-secs 10"),
        (
            "secs=3",
            "X-Prometheus-Scrape-Timeout-Seconds: 3\r\n",
            "scrape timeout of 3 s",
        ),
        (
            "secs=1",
            "",
            "unlimited rate is above this exporter's --max-rate",
        ),
        (
            "secs=1&rate=30M&streams=2",
            "",
            "above this exporter's --max-rate",
        ),
        ("secs=1&rate=fast", "", "--bitrate"),
        ("secs=1&rate=1M&logfile=/tmp/x", "", "unknown parameter"),
        ("kind=latency&len=64,1472", "", "len=64,1472: one size"),
        ("secs=1&rate=1M&streams=64", "", "streams=64: 1 to 16"),
    ] {
        let (status, body) = probe(q, headers);
        assert_eq!(status, 400, "{q}: {body}");
        assert!(body.contains(needle), "{q}: {body}");
    }
    // A flag inside a value stays a value: no file is written.
    let planted = std::env::temp_dir().join(format!("wb-planted-{}", std::process::id()));
    let flag = format!("--logfile%3D{}", planted.display());
    for q in [
        format!("secs=1&rate=1M%20{flag}"),
        format!("secs=1&rate={flag}"),
        format!("secs=1&rate=1M&len={flag}"),
    ] {
        let (status, body) = probe(&q, "");
        assert_eq!(status, 400, "{q}: {body}");
    }
    let as_target = format!("/probe?target={flag}&secs=1&rate=1M");
    let (status, text) = get_with(exporter.port, &as_target, "").unwrap();
    assert_eq!(
        (status, sample(&text, "probe_success")),
        (200, Some(0.0)),
        "{text}"
    );
    assert!(!planted.exists(), "a query wrote {}", planted.display());
    // A server that is not there: the probe ran and failed (200, probe_success 0).
    let down = format!("/probe?target=127.0.0.1:{}&secs=1&rate=1M", free_port());
    let (status, text) = get_with(exporter.port, &down, "").unwrap();
    assert_eq!(
        (status, sample(&text, "probe_success")),
        (200, Some(0.0)),
        "{text}"
    );
    // One probe at a time: a second while one runs is busy (503).
    let port = exporter.port;
    let long = format!("/probe?{target}&kind=udp&secs=3&rate=1M");
    let first = std::thread::spawn(move || get_with(port, &long, ""));
    let until = Instant::now() + Duration::from_secs(10);
    while get(port, "/metrics").and_then(|m| sample(&m, "wirebench_exporter_probes_running"))
        != Some(1.0)
    {
        assert!(Instant::now() < until, "the long probe never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, body) = probe("kind=udp&secs=1&rate=1M", "");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("--max-concurrent"), "{body}");
    let (status, text) = first.join().unwrap().unwrap();
    assert_eq!(
        (status, sample(&text, "probe_success")),
        (200, Some(1.0)),
        "{text}"
    );
    // The exporter counted all of it.
    let own = get(port, "/metrics").unwrap();
    for (series, want) in [
        (
            r#"wirebench_exporter_probes_total{kind="udp",outcome="success"}"#,
            2.0,
        ),
        (
            r#"wirebench_exporter_probes_total{kind="tcp",outcome="success"}"#,
            1.0,
        ),
        (
            r#"wirebench_exporter_probes_total{kind="tcp",outcome="failure"}"#,
            2.0,
        ),
        (
            r#"wirebench_exporter_probes_refused_total{reason="bad_request"}"#,
            12.0,
        ),
        (
            r#"wirebench_exporter_probes_refused_total{reason="busy"}"#,
            1.0,
        ),
        ("wirebench_exporter_probes_running", 0.0),
    ] {
        assert_eq!(sample(&own, series), Some(want), "{series}\n{own}");
    }
}

fn which(name: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .expect("sh");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        out.status.success() && !path.is_empty(),
        "{name} is not on PATH (the harness checked it is)"
    );
    path
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::Prometheus;
    vec![
        crate::harness::case!(prometheus_scrapes_the_server_during_a_test, Prometheus),
        crate::harness::case!(the_exporter_probes_and_refuses_what_it_must),
    ]
}
