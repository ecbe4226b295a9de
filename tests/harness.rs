//! The integration tests' own runner (a libtest-compatible harness, libtest-mimic): each
//! test says what it needs from the machine (root for labs, a peer program such as Debian's
//! iperf3), and a test whose need is not met here is reported as ignored, which nextest
//! counts and prints as skipped, instead of returning early and passing.
//!
//! What it does: registers every test of every module ([`Case`], made by the `case!`
//! macro in each module's `cases()`), names it by its tier so that nextest profiles can
//! select tiers (`root::` for tests that need root, `peers::` for tests that need a peer
//! program and not root, nothing for tests that need neither), and adds one test,
//! `machine::every_skip_is_named_with_its_reason`, that prints what was skipped here and
//! why, and fails when `WIREBENCH_TESTS_SKIP_NOTHING` is set (`.ci/run` sets it) and
//! anything would be skipped.
//!
//! What it does not: decide anything at build time (a binary built as one user and run as
//! root runs every test), or retry.

use std::sync::OnceLock;

/// What a test needs from the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Root: network namespaces, raw sockets, BPF, interface settings.
    Root,
    /// Debian's iperf3 on PATH (as the peer).
    Iperf3,
    /// tshark on PATH (an independent reader of generated frames).
    Tshark,
    /// Chromium (or chromium-browser) on PATH, headless (renders report.html).
    Chromium,
    /// Debian's prometheus and promtool on PATH (a real scraper).
    Prometheus,
}

impl Need {
    /// Why this need is not met here, or `None` when it is (probed once per process).
    pub fn missing(self) -> Option<&'static str> {
        static PROBED: OnceLock<[bool; 5]> = OnceLock::new();
        let met = PROBED.get_or_init(|| {
            [
                ::lab::cmd::is_root(),
                on_path(&["iperf3"]),
                on_path(&["tshark"]),
                on_path(&["chromium"]) || on_path(&["chromium-browser"]),
                on_path(&["prometheus", "promtool"]),
            ]
        });
        let (i, why) = match self {
            Need::Root => (0, "needs root (network namespaces, raw sockets, BPF)"),
            Need::Iperf3 => (1, "needs iperf3 on PATH (apt install iperf3)"),
            Need::Tshark => (2, "needs tshark on PATH (apt install tshark)"),
            Need::Chromium => (3, "needs chromium on PATH (apt install chromium)"),
            Need::Prometheus => (
                4,
                "needs prometheus and promtool on PATH (apt install prometheus)",
            ),
        };
        (!met[i]).then_some(why)
    }
}

/// Whether every program of `names` is an executable file in a directory of `PATH`.
fn on_path(names: &[&str]) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    names.iter().all(|name| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// One test: its module and function, and what it needs.
pub struct Case {
    /// `module::function`.
    pub name: String,
    pub run: fn(),
    pub needs: &'static [Need],
}

impl Case {
    /// The case of function `run` named `function` in `module_path` (as `module_path!()`
    /// gives it: `integration::module`).
    pub fn new(module_path: &str, function: &str, run: fn(), needs: &'static [Need]) -> Self {
        let module = module_path.split_once("::").map_or(module_path, |(_, m)| m);
        Self {
            name: format!("{module}::{function}"),
            run,
            needs,
        }
    }

    /// Its tier: `root` when it needs root, `peers` when it needs a peer program only,
    /// `None` when it needs nothing the base system lacks.
    pub fn tier(&self) -> Option<&'static str> {
        if self.needs.contains(&Need::Root) {
            Some("root")
        } else if self.needs.is_empty() {
            None
        } else {
            Some("peers")
        }
    }

    /// The name the runner shows and filters on: the tier first.
    pub fn full_name(&self) -> String {
        match self.tier() {
            Some(tier) => format!("{tier}::{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Why it cannot run here (every unmet need), or `None`.
    pub fn skipped_because(&self) -> Option<String> {
        let why: Vec<&str> = self.needs.iter().filter_map(|n| n.missing()).collect();
        (!why.is_empty()).then(|| why.join("; "))
    }
}

/// `case!(function)` or `case!(function, Need, ...)`: the [`Case`] of a test function of
/// the module it is written in.
macro_rules! case {
    ($f:ident $(, $need:expr)* $(,)?) => {
        crate::harness::Case::new(module_path!(), stringify!($f), $f, &[$($need),*])
    };
}
pub(crate) use case;

/// The variable `.ci/run` sets: every test must run (CI runs as root with every peer).
pub const SKIP_NOTHING: &str = "WIREBENCH_TESTS_SKIP_NOTHING";

/// Runs `cases` as libtest would (and as nextest expects of a harness): a case whose needs
/// are not met is listed and reported as ignored.
pub fn main(cases: Vec<Case>) -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let mut skips: Vec<(String, String)> = Vec::new();
    let mut trials: Vec<libtest_mimic::Trial> = cases
        .into_iter()
        .map(|c| {
            let name = c.full_name();
            let why = c.skipped_because();
            let ignored = why.is_some();
            if let Some(why) = why {
                skips.push((name.clone(), why));
            }
            let run = c.run;
            libtest_mimic::Trial::test(name, move || {
                run();
                Ok(())
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    trials.push(libtest_mimic::Trial::test(
        "machine::every_skip_is_named_with_its_reason",
        move || every_skip_is_named(&skips),
    ));
    libtest_mimic::run(&args, trials).exit_code()
}

/// Prints each test skipped here with its reason; fails when [`SKIP_NOTHING`] is set and
/// any is skipped.
fn every_skip_is_named(skips: &[(String, String)]) -> Result<(), libtest_mimic::Failed> {
    if skips.is_empty() {
        println!("every test can run on this machine");
        return Ok(());
    }
    let mut by_reason: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, why) in skips {
        match by_reason.iter_mut().find(|(w, _)| w == why) {
            Some((_, names)) => names.push(name),
            None => by_reason.push((why, vec![name])),
        }
    }
    let mut text = format!("{} tests skipped on this machine:\n", skips.len());
    for (why, names) in &by_reason {
        text.push_str(&format!("  {} {why}:\n", names.len()));
        for name in names {
            text.push_str(&format!("    {name}\n"));
        }
    }
    print!("{text}");
    if std::env::var_os(SKIP_NOTHING).is_some() {
        return Err(format!(
            "{SKIP_NOTHING} is set and {} tests would be skipped",
            skips.len()
        )
        .into());
    }
    Ok(())
}
