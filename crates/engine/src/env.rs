//! Facts about the machine a result was measured on: host name, kernel, CPUs, boot id, and
//! the time, read from `/proc` and the real clock. The results model (`model::results`)
//! takes them as inputs; nothing here is on a hot path.

use std::time::Duration;

use model::clock::Clock;
use model::results::{Environment, RunResult};

use crate::clock::RealClock;

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Host name (`/proc/sys/kernel/hostname`), or `unknown`.
pub fn hostname() -> String {
    read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
}

/// Kernel release (`uname -r`), or `unknown`.
pub fn kernel_release() -> String {
    read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into())
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`). Two programs that see the same
/// boot id share one CLOCK_REALTIME (network namespaces included), so one-way delays
/// measured between them are valid.
pub fn boot_id() -> Option<String> {
    read_trimmed("/proc/sys/kernel/random/boot_id")
}

/// This host's memory (`MemTotal` of `/proc/meminfo`), bytes.
pub fn memory_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// The TCP congestion control new sockets get in this network namespace
/// (`net.ipv4.tcp_congestion_control`).
pub fn tcp_congestion_default() -> Option<String> {
    read_trimmed("/proc/sys/net/ipv4/tcp_congestion_control")
}

/// A meter of this process's CPU use from now on.
#[derive(Debug, Clone, Copy)]
pub struct ProcessCpu {
    clock: RealClock,
    start: Duration,
    user: Duration,
    system: Duration,
}

impl ProcessCpu {
    /// Starts metering.
    pub fn start() -> Self {
        let (user, system) = crate::sys::process_cpu_time();
        let clock = RealClock::new();
        Self {
            start: clock.mono(),
            clock,
            user,
            system,
        }
    }

    /// CPU use since the start, % of one core (the whole process, as iperf3 reports it).
    pub fn used(&self) -> model::results::CpuUse {
        let (user, system) = crate::sys::process_cpu_time();
        let wall = self.clock.mono().saturating_sub(self.start).as_secs_f64();
        model::results::CpuUse::over(
            user.saturating_sub(self.user).as_secs_f64(),
            system.saturating_sub(self.system).as_secs_f64(),
            wall,
        )
        .unwrap_or_default()
    }
}

/// The current UTC time in RFC 3339 form with millisecond precision.
pub fn now_rfc3339() -> String {
    let d = Duration::from_nanos(RealClock::new().wall().0);
    model::time::rfc3339(d.as_secs(), d.subsec_millis())
}

/// The environment of this process: host, kernel, CPUs and their model, our version.
pub fn environment() -> Environment {
    Environment {
        hostname: hostname(),
        kernel: kernel_release(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        cpu_model: std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .and_then(|rest| rest.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        }),
        wirebench_version: env!("CARGO_PKG_VERSION").to_owned(),
    }
}

/// An empty result document for `command`, stamped with the time and this environment.
pub fn result(command: &str, params: serde_json::Value) -> RunResult {
    RunResult::new(command, params, now_rfc3339(), environment())
}
