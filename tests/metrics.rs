//! The server's metrics as a real Prometheus sees them: Debian's `prometheus` scrapes
//! `server --metrics` every second while a test runs, and its query API has the series
//! with sane values; `promtool check metrics` accepts the text.

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
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then(|| body.to_owned())
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

#[test]
fn prometheus_scrapes_the_server_during_a_test() {
    let (Ok(prometheus), Ok(promtool)) = (which("prometheus"), which("promtool")) else {
        // CI installs it: there a missing Prometheus is a failure, not a skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI without prometheus (.ci/run installs it)"
        );
        eprintln!("SKIP prometheus_scrapes_the_server_during_a_test: Debian's prometheus is not installed (apt install prometheus; .ci/run does)");
        return;
    };
    let metrics_port = free_port();
    let addr = format!("127.0.0.1:{metrics_port}");
    let srv = ServerProc::start(&["--metrics", &addr]);
    let dir = std::env::temp_dir().join(format!("wb-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: wirebench\n    static_configs:\n      - targets: ['{addr}']\n"),
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
    // promtool accepts the text.
    let text = get(metrics_port, "/metrics").expect("metrics");
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

fn which(name: &str) -> Result<String, ()> {
    let out = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .map_err(|_| ())?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && !path.is_empty() {
        Ok(path)
    } else {
        Err(())
    }
}
