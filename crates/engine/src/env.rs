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
