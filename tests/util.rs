//! Helpers: run the binary, start a server on a free port and stop it on drop.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_wirebench")
}

/// Longest any single wirebench run in the tests may take before it counts as a hang.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `wirebench ARGS` to completion; kills it and fails after [`RUN_TIMEOUT`].
pub fn run(args: &[&str]) -> Output {
    run_polling(args, None, RUN_TIMEOUT, |_| {})
}

/// Runs `wirebench ARGS` like [`run`], allowed `timeout` (a long matrix).
pub fn run_within(args: &[&str], timeout: Duration) -> Output {
    run_polling(args, None, timeout, |_| {})
}

/// Programs a fresh machine of this kind does not have (the tests install them; the
/// product must not need them).
pub const NOT_ON_A_FRESH_MACHINE: [&str; 6] =
    ["ethtool", "tshark", "chromium", "iperf3", "iperf", "ping"];

/// A directory of a test's own under the temporary directory (`wb-TAG-PID`), empty when
/// made and removed with everything in it when dropped, whether the test passes or not.
pub struct Scratch(std::path::PathBuf);

impl Scratch {
    /// Makes `wb-TAG-PID` afresh.
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("wb-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Self(dir)
    }
}

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `PATH` of a fresh machine: a directory of links to every program of the system's
/// directories but [`NOT_ON_A_FRESH_MACHINE`], removed when dropped.
pub fn fresh_path(tag: &str) -> Scratch {
    let dir = Scratch::new(&format!("fresh-path-{tag}"));
    for sys in [
        "/usr/local/sbin",
        "/usr/local/bin",
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
    ] {
        for e in std::fs::read_dir(sys).into_iter().flatten().flatten() {
            let name = e.file_name();
            if NOT_ON_A_FRESH_MACHINE
                .iter()
                .any(|n| name.to_str() == Some(n))
            {
                continue;
            }
            // The first directory of the PATH order wins, as the shell would find it.
            let _ = std::os::unix::fs::symlink(e.path(), dir.join(&name));
        }
    }
    dir
}

/// Runs `wirebench ARGS` like [`run`] with `PATH` set to `path`.
pub fn run_with_path(args: &[&str], path: &std::path::Path) -> Output {
    run_polling(args, Some(path), RUN_TIMEOUT, |_| {})
}

/// The command lines of the processes whose parent is `pid` (from /proc).
pub fn children_of(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            out.push(String::from_utf8_lossy(&cmd).replace('\0', " "));
        }
    }
    out
}

/// Runs `wirebench ARGS` like [`run`], and lists every child process it started (seen by
/// polling /proc every 20 ms while it runs). A child with wirebench's own command line is
/// not listed: that is a fork caught before it ran `exec` (it becomes `ip`, say), not a
/// second wirebench.
pub fn run_watching_children(args: &[&str]) -> (Output, Vec<String>) {
    let own = std::iter::once(bin())
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let mut seen = Vec::new();
    let out = run_polling(args, None, RUN_TIMEOUT, |pid| {
        for c in children_of(pid) {
            if c.trim_end() != own && !seen.contains(&c) {
                seen.push(c);
            }
        }
    });
    (out, seen)
}

fn run_polling(
    args: &[&str],
    path: Option<&std::path::Path>,
    timeout: Duration,
    mut tick: impl FnMut(u32),
) -> Output {
    use std::io::Read;
    let mut cmd = Command::new(bin());
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let mut child = cmd
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run wirebench");
    // Read both pipes while waiting, so a large output cannot block the child.
    let mut out_pipe = child.stdout.take().expect("stdout");
    let mut err_pipe = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out_pipe.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err_pipe.read_to_end(&mut v);
        v
    });
    let start = std::time::Instant::now();
    let status = loop {
        tick(child.id());
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("wirebench {args:?} hung for {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    }
}

/// Runs and parses stdout as JSON, failing with both streams shown if it is not.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "wirebench {args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// A `wirebench server` (or `exporter`) child process on 127.0.0.1 and a free port; killed
/// on drop.
pub struct ServerProc {
    child: Child,
    pub port: u16,
    /// Its stderr lines after the first.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl ServerProc {
    pub fn start(extra: &[&str]) -> Self {
        Self::start_on(Some("127.0.0.1"), extra)
    }

    /// A server listening on `bind` (none: the server's default, every IPv6 and IPv4
    /// address).
    pub fn start_on(bind: Option<&str>, extra: &[&str]) -> Self {
        let mut args = vec!["server", "-p", "0"];
        if let Some(b) = bind {
            args.extend(["--bind", b]);
        }
        args.extend(extra);
        Self::start_command(&args)
    }

    /// Any long-running command whose first line on stderr says `listening on ADDR`
    /// (`server`, `exporter`); its port is read from that line.
    pub fn start_command(args: &[&str]) -> Self {
        Self::start_program(bin(), args)
    }

    /// As [`ServerProc::start_command`], for any program (`ip netns exec NS wirebench
    /// server ...`: `ip` execs the command, so killing the child kills the server).
    pub fn start_program(program: &str, args: &[&str]) -> Self {
        let mut child = Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the command");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log2 = log.clone();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            for line in lines.map_while(Result::ok) {
                log2.lock().unwrap().push(line);
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the command announced its address");
        let port = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .map(|a| a.trim_start_matches("http://").trim_end_matches('/'))
            .and_then(|a| a.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("cannot find the port in: {line}"));
        Self { child, port, log }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Log lines so far containing `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }

    /// Waits up to `within` for a log line containing `needle`; the line, if one came.
    pub fn log_line(&self, needle: &str, within: Duration) -> Option<String> {
        let until = std::time::Instant::now() + within;
        loop {
            let found = self
                .log
                .lock()
                .unwrap()
                .iter()
                .find(|l| l.contains(needle))
                .cloned();
            if found.is_some() || std::time::Instant::now() >= until {
                return found;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn port_arg(&self) -> String {
        self.port.to_string()
    }

    /// Runs `wirebench CMD 127.0.0.1 -p PORT ARGS` (ARGS split on whitespace).
    pub fn run(&self, cmd: &str, args: &str) -> Output {
        let port = self.port_arg();
        let mut all = vec![cmd, "127.0.0.1", "-p", &port];
        all.extend(args.split_whitespace());
        run(&all)
    }

    /// Runs `wirebench CMD 127.0.0.1 -p PORT ARGS -J` and parses its JSON.
    pub fn json(&self, cmd: &str, args: &str) -> serde_json::Value {
        let port = self.port_arg();
        let mut all = vec![cmd, "127.0.0.1", "-p", &port];
        all.extend(args.split_whitespace());
        all.push("-J");
        run_json(&all)
    }

    /// The server process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asserts that a run exited with `code` and that its stderr names `needle`.
pub fn assert_fails(out: &Output, code: i32, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.contains(needle), "expected '{needle}' in: {err}");
}

pub fn u64_at(v: &serde_json::Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(|x| x.as_u64())
        .unwrap_or_else(|| panic!("no integer at {path} in {v:#}"))
}

pub fn f64_at(v: &serde_json::Value, path: &str) -> f64 {
    v.pointer(path)
        .and_then(|x| x.as_f64())
        .unwrap_or_else(|| panic!("no number at {path} in {v:#}"))
}

pub fn str_at<'a>(v: &'a serde_json::Value, path: &str) -> &'a str {
    v.pointer(path)
        .and_then(|x| x.as_str())
        .unwrap_or_else(|| panic!("no string at {path} in {v:#}"))
}

/// A free TCP port of 127.0.0.1 (nothing listens on it once this returns).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Writes a key file readable by its owner only (as the server and client require).
pub fn key_file(path: &std::path::Path, key: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, key).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}
