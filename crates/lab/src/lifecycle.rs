//! The lab life cycle: `up` builds a [`Topology`] all or nothing and starts its managed
//! processes (impairment stages, FRER relays); `down` stops every process in the lab's
//! namespaces and removes them; the labs that are up are found by their namespaces'
//! names; `exec` runs a command on a node.
//!
//! Each lab name has a lock (`flock` on `/run/wirebench/labs/.locks/NAME`), held while it
//! is built or removed, so two `up` of one name cannot race (the second finds the first's
//! lab) and a loser's rollback never removes a winner's lab. Each lab records its owner
//! ([`Owner`]: the process that built it, and whether the lab outlives it): a lab whose
//! owner died before it was done with it (a killed `lab up`, a killed `run`) is stale, is
//! removed by `lab down --stale`, and is rebuilt over by the next `up` of its name.

use std::path::{Path, PathBuf};

use engine::clock::RealClock;
use model::clock::Clock;
use model::stop::Stop;
use model::wait::Wait;
use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::cmd::{Cmd, Runner};
use crate::impair::stage::StageState;
use crate::managed::{self, Liveness};
use crate::naming;
use crate::topology::Topology;
use crate::LabError;

/// A lab that is up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lab {
    /// Lab name.
    pub name: String,
    /// Its nodes' namespaces, in node order.
    pub namespaces: Vec<String>,
}

/// Namespaces that labs made, as (namespace, lab, node).
pub fn lab_namespaces(runner: &mut dyn Runner) -> Result<Vec<(String, String, String)>, LabError> {
    let out = runner.run(&Cmd::netns_list())?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|ns| {
            naming::parse(ns).map(|(lab, node)| (ns.to_owned(), lab.to_owned(), node.to_owned()))
        })
        .collect())
}

/// How long `up` waits for a managed process to report that it runs.
const STAGE_START_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `up` waits for the links' carrier.
const CARRIER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `down` waits for processes to end after SIGTERM before it sends SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(2);
/// How often a wait for another process or the kernel looks again.
const POLL_EVERY: Duration = Duration::from_millis(20);
/// How often a wait for another process's lock looks again (and at `stop`).
const LOCK_POLL_EVERY: Duration = Duration::from_millis(50);

/// Whether process `pid` runs (a zombie left for its parent to reap does not).
pub fn process_runs(pid: u32) -> bool {
    // A zombie has no status worth waiting for.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// Whether a managed process (relay, stage) still runs, as a word: `running`, `stopped:
/// WHY` (it said why), or `gone` (it ended without saying why).
pub fn liveness(running: bool, pid: u32, stopped: Option<&String>) -> String {
    match (running && process_runs(pid), stopped) {
        (true, _) => "running".to_owned(),
        (false, Some(why)) => format!("stopped: {why}"),
        (false, None) => "gone".to_owned(),
    }
}

/// When process `pid` started (field 22 of `/proc/PID/stat`, in clock ticks since boot):
/// with the pid, it names one process even after the pid is reused.
pub fn process_started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Who owns a lab: the process that builds it, and whether the lab outlives it (a lab of
/// `lab up` does; a `run`'s lab is removed by the run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// The owner's pid.
    pub pid: u32,
    /// When it started ([`process_started`]), so a reused pid is not taken for it.
    pub started: Option<u64>,
    /// The lab stays when its owner ends.
    pub persistent: bool,
}

impl Owner {
    /// This process, owning a lab that ends with it (`persistent` false) or not.
    pub fn this_process(persistent: bool) -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            started: process_started(pid),
            persistent,
        }
    }

    /// The owner process still runs.
    pub fn alive(&self) -> bool {
        process_runs(self.pid) && process_started(self.pid) == self.started
    }

    /// The lab was left behind: its owner is gone and it was not meant to outlive it.
    pub fn stale(&self) -> bool {
        !self.persistent && !self.alive()
    }

    fn path(lab: &str) -> PathBuf {
        managed::run_dir(lab).join("owner.json")
    }

    /// The owner lab `lab` recorded, if any.
    pub fn of(lab: &str) -> Option<Owner> {
        managed::read_json(&Self::path(lab)).ok()
    }

    fn record(&self, lab: &str) -> Result<(), LabError> {
        let dir = managed::run_dir(lab);
        std::fs::create_dir_all(&dir)
            .and_then(|()| managed::write_json_atomic(&Self::path(lab), self))
            .map_err(|e| LabError::Command {
                cmd: format!("record the owner of lab {lab}"),
                detail: e.to_string(),
            })
    }
}

/// The lock of lab name `name`, held until dropped (none for a runner that does not act
/// on this machine: a dry run, a test double). While another
/// process holds it, this waits, looking every 50 ms whether `stop` was raised (Ctrl-C then
/// ends the wait: a blocking `flock` would not see it).
fn lock(
    name: &str,
    runner: &dyn Runner,
    stop: Option<&Stop>,
) -> Result<Option<std::fs::File>, LabError> {
    if !runner.acts_on_this_machine() {
        return Ok(None);
    }
    let failed = |e: std::io::Error| LabError::Command {
        cmd: format!("lock lab {name}"),
        detail: e.to_string(),
    };
    let dir = Path::new(managed::RUN_ROOT).join(".locks");
    std::fs::create_dir_all(&dir).map_err(failed)?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(name))
        .map_err(failed)?;
    let mut said = false;
    let locked = Wait::on(&RealClock::new()).poll_every(LOCK_POLL_EVERY, || match f.try_lock() {
        Ok(()) => Some(Ok(())),
        Err(std::fs::TryLockError::WouldBlock) => {
            if stop.is_some_and(Stop::is_raised) {
                return Some(Err(LabError::Interrupted));
            }
            if !said {
                tracing::warn!("lab {name} is being built or removed by another process: waiting");
                said = true;
            }
            None
        }
        Err(std::fs::TryLockError::Error(e)) => Some(Err(failed(e))),
    });
    // Without a timeout the wait ends only with an answer.
    locked
        .ready()
        .unwrap_or(Err(LabError::Interrupted))
        .map(|()| Some(f))
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

impl Lab {
    /// Builds `topo` as lab `name`, a lab that stays (`lab up`): see [`Lab::up_owned`].
    pub fn up(name: &str, topo: &Topology, runner: &mut dyn Runner) -> Result<Lab, LabError> {
        Self::up_owned(name, topo, runner, true, None)
    }

    /// Builds `topo` as lab `name`: all or nothing, under the name's lock. A lab of that
    /// name must not exist, unless it is stale (then it is removed first). If any command
    /// fails, a managed process does not start, or `stop` is raised (Ctrl-C, SIGTERM),
    /// everything this call created is removed again. The lab is recorded as owned by
    /// this process, `persistent` if it is to outlive it.
    pub fn up_owned(
        name: &str,
        topo: &Topology,
        runner: &mut dyn Runner,
        persistent: bool,
        stop: Option<&Stop>,
    ) -> Result<Lab, LabError> {
        naming::check(name)?;
        let _lock = lock(name, runner, stop)?;
        if !runner.is_dry()
            && lab_namespaces(runner)?
                .iter()
                .any(|(_, lab, _)| lab == name)
        {
            match Owner::of(name) {
                Some(o) if o.stale() => {
                    tracing::warn!(
                        "lab {name} was left by process {} that is gone: removing it",
                        o.pid
                    );
                    Self::down_locked(name, runner)?;
                }
                _ => return Err(LabError::Exists(name.to_owned())),
            }
        }
        let lab = Lab {
            name: name.to_owned(),
            namespaces: topo
                .nodes
                .iter()
                .map(|n| naming::namespace(name, n))
                .collect(),
        };
        // Recorded before anything is built: a build killed half-way is stale.
        if !runner.is_dry() {
            Owner::this_process(false).record(name)?;
        }
        let stopped = || {
            stop.is_some_and(Stop::is_raised)
                .then_some(())
                .map_or(Ok(()), |()| Err(LabError::Interrupted))
        };
        let built = topo
            .build_commands(name)
            .iter()
            .try_for_each(|c| stopped().and_then(|()| runner.run(c).map(drop)))
            .and_then(|()| Self::wait_for_carrier(&lab, runner))
            .and_then(|()| Self::start_processes(name, topo, runner))
            .and_then(|()| stopped());
        if let Err(e) = built {
            let _ = Self::down_locked(name, runner);
            return Err(e);
        }
        if persistent && !runner.is_dry() {
            Owner::this_process(true).record(name)?;
        }
        Ok(lab)
    }

    /// Waits until every interface of the lab reports carrier (not DOWN): the kernel
    /// propagates a veth's carrier after both ends are up, up to a second later, and
    /// neither `lab status` nor the first test should see a link that is still coming up.
    fn wait_for_carrier(lab: &Lab, runner: &mut dyn Runner) -> Result<(), LabError> {
        if runner.is_dry() {
            return Ok(());
        }
        let clock = RealClock::new();
        let deadline = clock.mono() + CARRIER_TIMEOUT;
        for ns in &lab.namespaces {
            let mut waiting: Vec<String> = Vec::new();
            let up = Wait::on(&clock).until(deadline).poll_every(POLL_EVERY, || {
                let text = match runner.run(&Cmd::ip_json(Some(ns), &["link", "show"])) {
                    Ok(text) => text,
                    Err(e) => return Some(Err(e)),
                };
                let links: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                waiting = links
                    .as_array()
                    .into_iter()
                    .flatten()
                    // A veth without carrier yet is DOWN / NO-CARRIER; devices without a
                    // carrier of their own (lo, ifb) say UNKNOWN.
                    .filter(|l| {
                        let no_carrier = l["flags"]
                            .as_array()
                            .is_some_and(|f| f.iter().any(|x| x == "NO-CARRIER"));
                        l["operstate"] == "DOWN" || no_carrier
                    })
                    .filter_map(|l| l["ifname"].as_str().map(str::to_owned))
                    .collect();
                waiting.is_empty().then_some(Ok(()))
            });
            match up.ready() {
                Some(result) => result?,
                None => {
                    return Err(LabError::Interface(format!(
                        "{ns}: {} still without carrier after {CARRIER_TIMEOUT:?}",
                        waiting.join(", ")
                    )))
                }
            }
        }
        Ok(())
    }

    fn start_processes(
        name: &str,
        topo: &Topology,
        runner: &mut dyn Runner,
    ) -> Result<(), LabError> {
        let processes = topo.processes(name);
        if processes.is_empty() {
            return Ok(());
        }
        let exe = crate::processes::this_program();
        let dir = managed::run_dir(name);
        if !runner.is_dry() {
            std::fs::create_dir_all(&dir).map_err(|e| LabError::Command {
                cmd: format!("mkdir -p {}", dir.display()),
                detail: e.to_string(),
            })?;
        }
        let mut started = Vec::new();
        for process in processes {
            let cmd = process.command(&exe);
            let pid = runner.spawn(&cmd, &process.log_file())?;
            started.push((process, cmd, pid));
        }
        if runner.is_dry() {
            return Ok(());
        }
        // Wait until every process has opened its sockets and published its first state.
        let clock = RealClock::new();
        for (process, cmd, pid) in started {
            let state = process.state_file();
            let started =
                Wait::on(&clock)
                    .at_most(STAGE_START_TIMEOUT)
                    .poll_every(POLL_EVERY, || {
                        if managed::read_json::<Liveness>(&state)
                            .is_ok_and(|st| st.running && st.pid == pid)
                        {
                            Some(true)
                        } else {
                            (!process_runs(pid)).then_some(false)
                        }
                    });
            if started.ready() != Some(true) {
                return Err(LabError::Command {
                    cmd: cmd.to_string(),
                    detail: format!(
                        "{} on {} did not start: {}",
                        process.what(),
                        process.node,
                        tail(&process.log_file())
                    ),
                });
            }
        }
        Ok(())
    }

    /// Stops every process living in `namespaces` (SIGTERM, then SIGKILL after a grace
    /// period).
    fn stop_processes(namespaces: &[String], runner: &mut dyn Runner) -> Result<(), LabError> {
        let mut pids: Vec<u32> = Vec::new();
        for ns in namespaces {
            let out = runner.run(&Cmd::netns_pids(ns)).unwrap_or_default();
            pids.extend(out.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
        pids.retain(|&p| p > 1 && p != std::process::id());
        if pids.is_empty() {
            return Ok(());
        }
        let _ = runner.run(&Cmd::kill("TERM", &pids));
        if runner.is_dry() {
            return Ok(());
        }
        let ended = || (!pids.iter().any(|&p| process_runs(p))).then_some(());
        let _ = Wait::on(&RealClock::new())
            .at_most(STOP_TIMEOUT)
            .poll_every(POLL_EVERY, ended);
        let left: Vec<u32> = pids.into_iter().filter(|&p| process_runs(p)).collect();
        if !left.is_empty() {
            let _ = runner.run(&Cmd::kill("KILL", &left));
        }
        Ok(())
    }

    fn remove(
        namespaces: &[String],
        labs: &[&str],
        runner: &mut dyn Runner,
    ) -> Result<(), LabError> {
        Self::stop_processes(namespaces, runner)?;
        for ns in namespaces {
            runner.run(&Cmd::netns_del(ns))?;
        }
        if !runner.is_dry() {
            for lab in labs {
                let _ = std::fs::remove_dir_all(managed::run_dir(lab));
            }
        }
        Ok(())
    }

    /// Stops the processes of lab `name` and removes its namespaces (their veths go with
    /// them) and its run directory, under the name's lock. Returns how many namespaces.
    pub fn down(name: &str, runner: &mut dyn Runner) -> Result<usize, LabError> {
        naming::check(name)?;
        let _lock = lock(name, runner, None)?;
        Self::down_locked(name, runner)
    }

    /// Removes every lab whose owner is gone before it was done with it (a killed `lab
    /// up` or `run`), as [`Lab::down`] does. Returns their names.
    pub fn down_stale(runner: &mut dyn Runner) -> Result<Vec<String>, LabError> {
        let mut labs: Vec<String> = lab_namespaces(runner)?
            .into_iter()
            .map(|(_, lab, _)| lab)
            .collect();
        // Run directories of labs whose namespaces are gone already.
        if let Ok(d) = std::fs::read_dir(managed::RUN_ROOT) {
            labs.extend(
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| naming::check(n).is_ok()),
            );
        }
        labs.sort();
        labs.dedup();
        let mut removed = Vec::new();
        for name in labs {
            let _lock = lock(&name, runner, None)?;
            // Looked at under the lock: an `up` of this name may have just finished.
            if Owner::of(&name).is_some_and(|o| o.stale()) {
                Self::down_locked(&name, runner)?;
                removed.push(name);
            }
        }
        Ok(removed)
    }

    fn down_locked(name: &str, runner: &mut dyn Runner) -> Result<usize, LabError> {
        let mine: Vec<String> = lab_namespaces(runner)?
            .into_iter()
            .filter(|(_, lab, _)| lab == name)
            .map(|(ns, _, _)| ns)
            .collect();
        Self::remove(&mine, &[name], runner)?;
        Ok(mine.len())
    }

    /// Removes every namespace any lab made, with its processes and run directories.
    /// Returns how many namespaces.
    pub fn down_all(runner: &mut dyn Runner) -> Result<usize, LabError> {
        let all = lab_namespaces(runner)?;
        let namespaces: Vec<String> = all.iter().map(|(ns, _, _)| ns.clone()).collect();
        // Labs' run directories (not the locks beside them).
        let mut labs: Vec<String> = std::fs::read_dir(managed::RUN_ROOT)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| naming::check(n).is_ok())
                    .collect()
            })
            .unwrap_or_default();
        labs.extend(all.iter().map(|(_, lab, _)| lab.clone()));
        let labs: Vec<&str> = labs.iter().map(String::as_str).collect();
        Self::remove(&namespaces, &labs, runner)?;
        Ok(all.len())
    }

    /// The published state of every managed process of lab `name`, as (node, state).
    pub fn stage_states(name: &str) -> Vec<(String, StageState)> {
        let Ok(dir) = std::fs::read_dir(managed::run_dir(name)) else {
            return vec![];
        };
        let mut out: Vec<(String, StageState)> = dir
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let file = e.file_name().to_string_lossy().into_owned();
                let node = file.strip_suffix(".state.json")?.to_owned();
                StageState::read(&e.path()).ok().map(|s| (node, s))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The command that runs `argv` on `node` of lab `name`.
    pub fn exec(
        name: &str,
        node: &str,
        argv: &[String],
        runner: &mut dyn Runner,
    ) -> Result<Cmd, LabError> {
        naming::check(name)?;
        let all = lab_namespaces(runner)?;
        let nodes: Vec<&str> = all
            .iter()
            .filter(|(_, l, _)| l == name)
            .map(|(_, _, n)| n.as_str())
            .collect();
        if nodes.is_empty() {
            return Err(LabError::NotFound(name.to_owned()));
        }
        if !nodes.contains(&node) {
            return Err(LabError::NoSuchNode {
                lab: name.to_owned(),
                node: node.to_owned(),
                nodes: nodes.join(", "),
            });
        }
        Ok(Cmd::exec_in(&naming::namespace(name, node), argv))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// A runner whose n-th command fails, recording everything.
    struct FailAt {
        n: usize,
        seen: Vec<String>,
        namespaces: Vec<String>,
    }

    impl Runner for FailAt {
        fn run(&mut self, cmd: &Cmd) -> Result<String, LabError> {
            self.seen.push(cmd.to_string());
            if cmd.args[..2] == ["netns", "list"] {
                return Ok(self.namespaces.join("\n"));
            }
            if self.seen.len() == self.n {
                return Err(LabError::Command {
                    cmd: cmd.to_string(),
                    detail: "injected".into(),
                });
            }
            match cmd.args[..2] {
                [ref a, ref b] if a == "netns" && b == "add" => {
                    self.namespaces.push(cmd.args[2].clone())
                }
                [ref a, ref b] if a == "netns" && b == "del" => {
                    self.namespaces.retain(|n| *n != cmd.args[2])
                }
                _ => {}
            }
            Ok(String::new())
        }
    }

    #[test]
    fn a_failure_half_way_removes_what_was_built() {
        let t = Topology::builtin("router").unwrap();
        let mut r = FailAt {
            n: 12,
            seen: vec![],
            namespaces: vec!["wb-other-talker".into()],
        };
        assert!(Lab::up("r2", &t, &mut r).is_err());
        assert_eq!(
            r.namespaces,
            ["wb-other-talker"],
            "only the other lab's namespace is left"
        );
    }

    #[test]
    fn an_existing_lab_is_not_built_again() {
        let t = Topology::builtin("direct").unwrap();
        let mut r = FailAt {
            n: 0,
            seen: vec![],
            namespaces: vec!["wb-d1-talker".into(), "wb-d1-listener".into()],
        };
        assert!(matches!(
            Lab::up("d1", &t, &mut r),
            Err(LabError::Exists(_))
        ));
        assert_eq!(r.seen, ["ip netns list"], "nothing was built");
    }
}
