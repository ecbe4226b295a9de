//! The command line as the campaign's typed requests: defaults applied, values checked
//! against each other, files read. A test method's arguments become its request in its
//! own module (`campaign::methods`, found through the registry: [`test`]); the other
//! commands' are here. A plan's tests go through the same clap definitions and the same
//! functions ([`Parser`]), so a flag means the same in both.

use campaign::methods::args::{backend, frame};
use campaign::methods::{Methods, TestRequest};
use campaign::plan::{CommandError, Commands};
use campaign::request::{AnalyzeRequest, GenRequest};
use campaign::Error;
use clap::{CommandFactory as _, Parser as _};

use crate::args::{self as cli, Cli, Command};

/// `gen`.
pub fn gen(a: &cli::GenArgs) -> GenRequest {
    GenRequest {
        port: a.iface.clone(),
        rx: a.rx.clone(),
        size: a.size,
        rate: a.rate,
        count: a.count,
        time: a.time,
        frame: frame(&a.frame),
        interval: (!a.interval.is_zero()).then_some(a.interval),
        threads: usize::from(a.threads),
        agents: campaign::request::Agents {
            port: control::DEFAULT_PORT,
            key_file: a.auth_key_file.clone(),
            synced_clocks: a.synced_clocks,
        },
    }
}

/// `frer analyze`.
pub fn analyze(a: &cli::FrerAnalyzeArgs) -> AnalyzeRequest {
    AnalyzeRequest {
        ports: a.rx.clone(),
        lab: a.lab.clone(),
        time: a.time,
        backend: backend(a.backend),
    }
}

/// `lab up`: what to build.
pub fn lab_up(a: &cli::LabUpArgs) -> lab::topology::Request {
    lab::topology::Request {
        topology: a.topology.clone(),
        shape: a.shape.clone(),
        impair: a.impair.clone(),
        path_a: a.path_a.clone(),
        path_b: a.path_b.clone(),
        frer: a.frer.clone(),
        ingress: a.ingress,
        port_rate_bps: a.port_rate,
        egress_bps: a.egress,
        mtu: a.mtu,
    }
}

/// `frer relay`: one stream from the flags.
pub fn relay_flags(a: &cli::FrerRelayArgs) -> lab::relay::flags::RelayFlags {
    use lab::relay::config::{AlgorithmName, Eliminate, Latent};
    lab::relay::flags::RelayFlags {
        matching: a.ident.clone(),
        replicate: a.replicate.clone(),
        eliminate: a.eliminate.clone(),
        settings: Eliminate {
            algorithm: match a.algorithm {
                cli::RecoveryAlgorithm::Vector => AlgorithmName::Vector,
                cli::RecoveryAlgorithm::Match => AlgorithmName::Match,
            },
            history: a.history,
            reset_ms: a.reset_ms,
            keep_tag: a.keep_tag,
            take_no_sequence: a.take_no_sequence,
            individual: a.individual,
            off: a.no_elimination,
            latent: a.latent_difference.map(|difference| Latent {
                paths: None,
                difference,
                period_ms: 2000,
                reset_period_ms: 30_000,
            }),
            ..Eliminate::default()
        },
        pass: a.pass.clone(),
    }
}

/// The request of a command a plan can hold (a test method's), from the command line as
/// clap matched it; `None` for the others.
///
/// # Errors
/// The method's usage errors.
pub fn test(matches: &clap::ArgMatches) -> Option<Result<TestRequest, Error>> {
    Methods::STANDARD.request(matches)
}

/// Whether the test method's command that clap matched asks for JSON (`-J`); `None` for a
/// command that is not a method.
pub fn json(matches: &clap::ArgMatches) -> Option<bool> {
    Methods::STANDARD
        .matched(matches)
        .map(|(m, args)| m.json_from(args))
}

/// The first line of what clap says, without its `error: `.
fn first_line(e: &clap::Error) -> String {
    let s = e.to_string();
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_owned()
}

/// Reads a plan's command lines with this program's own definitions.
pub struct Parser;

impl Commands for Parser {
    fn test(&self, argv: &[String]) -> Result<TestRequest, CommandError> {
        let matches = Cli::command()
            .try_get_matches_from(argv)
            .map_err(|e| CommandError::Refused(first_line(&e)))?;
        match test(&matches) {
            Some(r) => r.map_err(CommandError::from),
            None => Err(CommandError::NotATest(argv.join(" "))),
        }
    }

    fn lab(&self, topology: &str, args: &[String]) -> Result<lab::topology::Request, CommandError> {
        let mut argv: Vec<String> = ["wirebench", "lab", "up", topology, "--dry-run"]
            .map(String::from)
            .to_vec();
        argv.extend(args.iter().cloned());
        match Cli::try_parse_from(&argv)
            .map_err(|e| CommandError::Refused(first_line(&e)))?
            .command
        {
            Command::Lab(cli::LabArgs {
                command: cli::LabCommand::Up(a),
            }) => Ok(lab_up(&a)),
            _ => Err(CommandError::NotLabUp),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use campaign::plan::Plan;

    /// Every registered method has its command on the command line (a variant of
    /// [`Command`]), and a command line of it becomes its request through the registry.
    #[test]
    fn every_method_is_a_command_and_parses_through_the_registry() {
        let cmd = Cli::command();
        for m in Methods::STANDARD.iter() {
            let mut at = &cmd;
            for word in m.command().split(' ') {
                at = at
                    .find_subcommand(word)
                    .unwrap_or_else(|| panic!("no command `{}`", m.command()));
            }
            let help = at.clone().render_help().to_string();
            assert!(help.contains("-J"), "`{}` has no -J", m.command());
        }
        let argv = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let req = Parser
            .test(&argv("wirebench latency 198.18.0.1 -l 64,128"))
            .unwrap();
        assert_eq!(req.kind(), "latency");
        let lat = req.get::<campaign::request::LatencyRequest>().unwrap();
        assert_eq!(
            (lat.sizes.as_slice(), lat.server.port),
            (&[64, 128][..], 5301)
        );
        let req = Parser.test(&argv("wirebench frer compare -t 1")).unwrap();
        assert_eq!(req.kind(), "frer-compare");
        let e = Parser
            .test(&argv("wirebench lab status"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not a test"), "{e}");
        let m = Cli::command()
            .try_get_matches_from(argv("wirebench sweep h --from 1M --to 2M --step 1M -J"))
            .unwrap();
        assert_eq!(
            (json(&m), test(&m).map(|r| r.is_ok())),
            (Some(true), Some(true))
        );
    }

    /// Each method's estimate comes from its own plan: a client test its time and a
    /// setup, a sweep its steps, an RFC 2544 run its rehearsed search (more trials than
    /// one), `--repeat` as many times; a profile its duration.
    #[test]
    fn estimates_come_from_each_tests_own_plan() {
        let argv = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let est = |line: &str| {
            let req = Parser.test(&argv(line)).unwrap();
            req.method().estimate(&req).expect("an estimate")
        };
        let ms = |d: std::time::Duration| d.as_millis();
        assert_eq!(ms(est("wirebench client h -t 2")), 2_150);
        assert_eq!(ms(est("wirebench client h -t 2 --repeat 3")), 6_450);
        // Three steps of 0.5 s.
        assert_eq!(
            ms(est(
                "wirebench sweep h --from 20M --to 60M --step 20M -t 0.5"
            )),
            1_950
        );
        // Two sizes of 1 s.
        assert_eq!(ms(est("wirebench latency h -l 64,1472 -t 1")), 2_300);
        // A binary search of 2-s trials takes several: more than 4 trials' worth.
        let rfc = est("wirebench rfc2544 h --sizes 64 -t 2 --tests throughput --search binary");
        assert!(ms(rfc) > 4 * 2_150, "{rfc:?}");
    }

    /// Every example plan passes the check a run makes before anything starts (the demo's
    /// files where the demo writes them).
    #[test]
    fn every_example_plan_parses() {
        // The workspace root, two levels above this crate.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let root = root.as_path();
        let dir = std::env::temp_dir().join(format!("wb-plans-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let demo = [
            ("streams.toml", "streams-demo.toml"),
            ("shaper.toml", "shaper-two-classes.toml"),
        ];
        for (to, from) in demo {
            std::fs::copy(root.join("examples").join(from), dir.join(to)).unwrap();
        }
        std::env::set_current_dir(root).unwrap();
        let mut n = 0;
        for e in std::fs::read_dir(root.join("examples")).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !(name.starts_with("plan-") && name.ends_with(".toml")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.replace("{dir}", &dir.display().to_string());
            let p = Plan::parse(&text, &Parser).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!p.tests.is_empty(), "{name}");
            n += 1;
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(n >= 8, "{n} example plans");
    }

    /// The items of the YAML list under `key:` in `text` (one `- item` per line, comment
    /// lines between them).
    fn yaml_list(text: &str, key: &str) -> Vec<String> {
        let lines = text.lines().skip_while(|l| l.trim() != key).skip(1);
        lines
            .map(str::trim)
            .filter(|l| !l.starts_with('#'))
            .map_while(|l| l.strip_prefix("- "))
            .map(str::to_owned)
            .collect()
    }

    /// The Kubernetes manifests (deploy/kubernetes/, validated against the Kubernetes
    /// schemas in CI) and wirebench agree: the agents' flags parse, the Job runs
    /// examples/plan-fleet.toml, and the plan reads the key where the Secret is mounted
    /// and the hosts of the agents' Service.
    #[test]
    fn the_kubernetes_fleet_runs_the_example_plan() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
        let agents = read("deploy/kubernetes/agents.yaml");
        let mut argv = vec!["wirebench".to_owned(), "server".to_owned()];
        argv.extend(yaml_list(&agents, "args:"));
        let Command::Server(a) = Cli::try_parse_from(&argv).unwrap().command else {
            panic!("{argv:?}")
        };
        assert!(a.allow_third_party, "{argv:?}");
        let key = a.auth_key_file.expect("the agents' key file");
        let key_dir = format!("mountPath: {}", key.parent().unwrap().display());
        assert!(agents.contains(&key_dir));
        assert!(!a.third_party_peers.is_empty(), "{argv:?}");
        // The ConfigMap's plan.toml is the example, indented under its key.
        let job = read("deploy/kubernetes/job.yaml");
        // The Job reads the same Secret where the plan looks for the key.
        assert!(job.contains(&key_dir) && job.contains("secretName: wirebench-key"));
        assert!(agents.contains("secretName: wirebench-key"));
        let embedded: String = job
            .lines()
            .skip_while(|l| l.trim() != "plan.toml: |")
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with("    "))
            .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
            .collect();
        let example = read("examples/plan-fleet.toml");
        assert_eq!(embedded, example);
        let p = Plan::parse(&example, &Parser).unwrap();
        let service = read("deploy/kubernetes/service.yaml");
        let Some(campaign::hosts::HostSource::Dns {
            name,
            port,
            key_file,
        }) = p.hosts
        else {
            panic!("{:?}", p.hosts)
        };
        assert!(service.contains(&format!("name: {name}\n")), "{name}");
        assert!(service.contains(&format!("port: {port}\n")), "{port}");
        assert_eq!(key_file.as_deref(), Some(key.as_path()));
        assert!(p.tests.iter().all(|t| t.kind.name() == "mesh"));
    }
}
