//! The lab's managed processes: what runs on a node (an impairment stage, a FRER relay)
//! with its typed settings, where it keeps its state and its log, and the one place that
//! spells the command line that starts it.
//!
//! A managed process is this program run again in the node's namespace, with the hidden
//! arguments of `wirebench lab stage` or `wirebench frer relay`: its settings as JSON
//! (`--config-json`), its state file (`--state`) and the namespace's `/run/netns` entry
//! (`--netns-file`, so it ends when the namespace does). [`ManagedProcess::argv`] is the
//! only code that knows those flags; the command line's definitions that read them are
//! checked against it by a test of the `cli` crate.

use std::path::{Path, PathBuf};

use crate::cmd::Cmd;
use crate::impair::stage::StageConfig;
use crate::managed;
use crate::naming;
use crate::relay::config::RelayConfig;

/// What a managed process runs, with its settings.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Program {
    /// An impairment stage (`wirebench lab stage`).
    Stage(StageConfig),
    /// A FRER relay (`wirebench frer relay`).
    Relay {
        /// Its streams and pass-through ports.
        config: RelayConfig,
        /// Forward in the kernel (the BPF fast path) when it allows.
        fast: bool,
    },
}

impl Program {
    /// The subcommand that runs it.
    fn subcommand(&self) -> [&'static str; 2] {
        match self {
            Program::Stage(_) => ["lab", "stage"],
            Program::Relay { .. } => ["frer", "relay"],
        }
    }

    /// Its settings as the JSON the subcommand reads.
    fn config_json(&self) -> String {
        match self {
            Program::Stage(c) => serde_json::to_string(c),
            Program::Relay { config, .. } => serde_json::to_string(config),
        }
        .unwrap_or_default()
    }

    /// The kind in its file names: `NODE.state.json`/`NODE.log` for a stage,
    /// `NODE.relay.json`/`NODE.relay.log` for a relay.
    fn file_kind(&self) -> &'static str {
        match self {
            Program::Stage(_) => "state",
            Program::Relay { .. } => "relay",
        }
    }
}

/// A process a lab starts on one of its nodes when it is built and stops when it is
/// removed.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedProcess {
    /// The lab.
    pub lab: String,
    /// The node it runs on.
    pub node: String,
    /// What it runs.
    pub program: Program,
}

impl ManagedProcess {
    /// What it is, as an error about it says (`the FRER relay`).
    pub fn what(&self) -> &'static str {
        match self.program {
            Program::Stage(_) => "the impairment stage",
            Program::Relay { .. } => "the FRER relay",
        }
    }

    /// The network namespace it runs in.
    pub fn namespace(&self) -> String {
        naming::namespace(&self.lab, &self.node)
    }

    /// The file it publishes its state to.
    pub fn state_file(&self) -> PathBuf {
        let kind = self.program.file_kind();
        managed::run_dir(&self.lab).join(format!("{}.{kind}.json", self.node))
    }

    /// The file its output goes to.
    pub fn log_file(&self) -> PathBuf {
        let dir = managed::run_dir(&self.lab);
        match self.program {
            Program::Stage(_) => dir.join(format!("{}.log", self.node)),
            Program::Relay { .. } => dir.join(format!("{}.relay.log", self.node)),
        }
    }

    /// Its command line with program `exe`: `exe SUBCOMMAND --netns-file
    /// /run/netns/NAMESPACE --state STATE_FILE --config-json CONFIG`, and `--fast` for a
    /// relay that forwards in the kernel.
    pub fn argv(&self, exe: &Path) -> Vec<String> {
        let mut argv = vec![exe.display().to_string()];
        argv.extend(self.program.subcommand().map(str::to_owned));
        argv.extend([
            "--netns-file".into(),
            format!("/run/netns/{}", self.namespace()),
            "--state".into(),
            self.state_file().display().to_string(),
            "--config-json".into(),
            self.program.config_json(),
        ]);
        if let Program::Relay { fast: true, .. } = self.program {
            argv.push("--fast".into());
        }
        argv
    }

    /// The command that starts it with program `exe` in its node's namespace.
    pub fn command(&self, exe: &Path) -> Cmd {
        Cmd::exec_in(&self.namespace(), &self.argv(exe))
    }
}

/// The program the lab starts its processes with: this one (`wirebench` when the
/// system cannot say which file that is).
pub fn this_program() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("wirebench"))
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::impair::spec::ImpairSpec;
    use crate::impair::stage::Mode;

    fn stage() -> ManagedProcess {
        ManagedProcess {
            lab: "i1".into(),
            node: "dut".into(),
            program: Program::Stage(StageConfig {
                a: "eth0".into(),
                b: "eth1".into(),
                mode: Mode::Bridge,
                spec: ImpairSpec::default(),
            }),
        }
    }

    fn relay(fast: bool) -> ManagedProcess {
        ManagedProcess {
            lab: "f1".into(),
            node: "split".into(),
            program: Program::Relay {
                config: RelayConfig::default(),
                fast,
            },
        }
    }

    #[test]
    fn a_stage_runs_lab_stage_in_its_namespace() {
        let p = stage();
        let argv = p.argv(Path::new("/usr/bin/wirebench"));
        assert_eq!(
            argv[..7],
            [
                "/usr/bin/wirebench",
                "lab",
                "stage",
                "--netns-file",
                "/run/netns/wb-i1-dut",
                "--state",
                "/run/wirebench/labs/i1/dut.state.json",
            ]
        );
        assert_eq!(argv[7], "--config-json");
        let config: StageConfig = serde_json::from_str(&argv[8]).unwrap();
        assert_eq!(Program::Stage(config), p.program);
        assert_eq!(argv.len(), 9);
        assert_eq!(p.log_file(), Path::new("/run/wirebench/labs/i1/dut.log"));
        assert_eq!(p.what(), "the impairment stage");
        let cmd = p.command(Path::new("/usr/bin/wirebench")).to_string();
        assert!(
            cmd.starts_with("ip netns exec wb-i1-dut /usr/bin/wirebench lab stage "),
            "{cmd}"
        );
    }

    #[test]
    fn a_relay_runs_frer_relay_and_asks_for_the_fast_path_when_it_is_to_use_it() {
        let argv = relay(true).argv(Path::new("wirebench"));
        assert_eq!(argv[1..3], ["frer", "relay"]);
        assert_eq!(argv[4], "/run/netns/wb-f1-split");
        assert_eq!(argv[6], "/run/wirebench/labs/f1/split.relay.json");
        assert_eq!(argv.last().map(String::as_str), Some("--fast"));
        let slow = relay(false).argv(Path::new("wirebench"));
        assert_eq!(slow.len(), argv.len() - 1);
        assert!(!slow.contains(&"--fast".to_owned()));
        assert_eq!(
            relay(false).log_file(),
            Path::new("/run/wirebench/labs/f1/split.relay.log")
        );
    }
}
