//! The command line as the campaign's typed requests: defaults applied, values checked
//! against each other, files read. A plan's tests go through the same clap definitions
//! and the same functions ([`Parser`]), so a flag means the same in both.

use std::time::Duration;

use campaign::methods::TestRequest;
use campaign::plan::{CommandError, Commands};
use campaign::request::{
    AnalyzeRequest, BlocksizeRequest, ClientRequest, Connect, FrameBackend, FrameProto,
    FrameRequest, FrerCompareRequest, GenRequest, IpFamily, LatencyRequest, MeshHost, MeshRequest,
    NicMatrixRequest, Rfc2544Path, Rfc2544Request, Rfc2544Test, RrulRequest, Server,
    ShapingRequest, StreamsRequest, SweepRequest,
};
use campaign::Error;
use clap::Parser as _;
use method::rfc2544::{Search, SearchConfig};
use model::spec::{Direction, Protocol, Rate, TcpOptions, TestSpec, UdpBackend};
use wire::linerate::LineRate;

use crate::args::{self as cli, Cli, Command};

fn usage(msg: impl Into<String>) -> Error {
    Error::Usage(msg.into())
}

/// The server a command talks to.
pub fn server(t: &cli::Target) -> Server {
    Server {
        host: t.host.clone(),
        port: t.port.unwrap_or(control::DEFAULT_PORT),
        key_file: t.auth_key_file.clone(),
        allow_unauthenticated: t.allow_unauthenticated_server,
    }
}

/// `client`: iperf3's defaults (UDP 1472 bytes at 1 Mbit/s, TCP 128 KiB unlimited).
pub fn client(a: &cli::ClientArgs) -> Result<ClientRequest, Error> {
    let len = a.length.unwrap_or(if a.udp {
        TestSpec::DEFAULT_UDP_LEN
    } else {
        TestSpec::DEFAULT_TCP_LEN
    });
    let rate = match (a.bitrate, a.pps) {
        (Some(0.0), _) => Rate::Unlimited,
        (Some(b), _) => Rate::BitsPerSec(b),
        (None, Some(p)) if p > 0.0 && p.is_finite() => Rate::PacketsPerSec(p),
        (None, Some(p)) => return Err(usage(format!("--pps must be a positive number, got {p}"))),
        (None, None) if a.udp => Rate::BitsPerSec(TestSpec::DEFAULT_UDP_RATE),
        (None, None) => Rate::Unlimited,
    };
    let direction = match (a.bidir, a.reverse) {
        (true, _) => Direction::Bidir,
        (false, true) => Direction::Reverse,
        (false, false) => Direction::Forward,
    };
    let window = match a.window {
        Some(w) => Some(u32::try_from(w).map_err(|_| usage("-w is larger than 4 GiB"))?),
        None => None,
    };
    let amount = match (a.bytes, a.blockcount) {
        (Some(b), _) => Some(b as u64),
        (None, Some(k)) => Some(k.saturating_mul(len as u64)),
        (None, None) => None,
    };
    let spec = TestSpec {
        protocol: if a.udp { Protocol::Udp } else { Protocol::Tcp },
        duration: a.time.unwrap_or(if amount.is_some() {
            Duration::from_secs(3600)
        } else {
            Duration::from_secs(10)
        }),
        rate,
        len,
        streams: a.parallel,
        direction,
        udp_backend: match a.udp_backend {
            cli::BackendArg::Auto => UdpBackend::Auto,
            cli::BackendArg::Sendmmsg => UdpBackend::Sendmmsg,
            cli::BackendArg::Gso => UdpBackend::Gso,
        },
        synced_clocks: a.synced_clocks,
        dscp: a.dscp,
        window,
        server_cpu: a.affinity.and_then(|x| x.1),
        tcp: TcpOptions {
            congestion: a.congestion.clone(),
            mss: a.mss,
            nodelay: a.no_delay,
            zerocopy: a.zerocopy,
        },
        // iperf3's -n and -k count all streams together: each sends its share.
        bytes_per_stream: amount.map(|b| b.div_ceil(u64::from(a.parallel.max(1)))),
        omit: a.omit.filter(|o| !o.is_zero()),
    };
    spec.check()?;
    if !a.interval.is_finite() || !(0.0..=86_400.0).contains(&a.interval) {
        return Err(usage(format!(
            "-i must be 0 or a number of seconds up to 86400, got {}",
            a.interval
        )));
    }
    if a.iperf3 && a.omit.is_some_and(|o| o.subsec_nanos() != 0) {
        return Err(usage(
            "-O with --iperf3 takes whole seconds (iperf3's own unit)",
        ));
    }
    let mut server = server(&a.target);
    if a.iperf3 && a.target.port.is_none() {
        server.port = control::iperf3::DEFAULT_PORT;
    }
    Ok(ClientRequest {
        server,
        spec,
        interval: (a.interval > 0.0).then(|| Duration::from_secs_f64(a.interval.max(0.01))),
        cpu: a.affinity.map(|x| usize::from(x.0)),
        round_trip: a.round_trip,
        iperf3: a.iperf3,
        connect: Connect {
            family: match (a.version4, a.version6) {
                (true, _) => Some(IpFamily::V4),
                (_, true) => Some(IpFamily::V6),
                _ => None,
            },
            bind: a.bind,
            cport: a.cport,
            timeout: a.connect_timeout.map(Duration::from_millis),
        },
        get_server_output: a.get_server_output,
        title: a.title.clone(),
    })
}

/// A mesh host, `[NAME=]HOST[:PORT]` (`[ADDR]:PORT` for IPv6).
pub fn mesh_host(text: &str, key_file: Option<&std::path::Path>) -> Result<MeshHost, Error> {
    let (name, addr) = match text.split_once('=') {
        Some((n, a)) if !n.is_empty() => (Some(n), a),
        Some(_) => return Err(usage(format!("'{text}': the name before = is empty"))),
        None => (None, text),
    };
    let (host, port) = campaign::hosts::split_address(addr)?;
    Ok(MeshHost {
        name: name.unwrap_or(addr).to_owned(),
        server: Server {
            host,
            port,
            key_file: key_file.map(std::path::Path::to_path_buf),
            allow_unauthenticated: false,
        },
    })
}

/// `mesh`.
pub fn mesh(a: &cli::MeshArgs) -> Result<MeshRequest, Error> {
    let hosts = a
        .hosts
        .iter()
        .map(|h| mesh_host(h, a.auth_key_file.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    let protocol = if a.udp { Protocol::Udp } else { Protocol::Tcp };
    let rate = match a.bitrate {
        Some(0.0) => Rate::Unlimited,
        Some(b) => Rate::BitsPerSec(b),
        None if a.udp => Rate::BitsPerSec(TestSpec::DEFAULT_UDP_RATE),
        None => Rate::Unlimited,
    };
    let spec = TestSpec {
        duration: a.time,
        rate,
        len: a.length.unwrap_or(if a.udp {
            TestSpec::DEFAULT_UDP_LEN
        } else {
            TestSpec::DEFAULT_TCP_LEN
        }),
        streams: a.parallel,
        dscp: a.dscp,
        ..campaign::trials::base_spec(protocol)
    };
    spec.check()?;
    Ok(MeshRequest {
        hosts,
        spec,
        parallel: usize::from(a.pairs_at_once),
    })
}

/// `sweep`.
pub fn sweep(a: &cli::SweepArgs) -> Result<SweepRequest, Error> {
    let direction = if a.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    let levels = method::sweep::Levels {
        marginal: a.marginal,
        high: a.high,
    };
    let plan = method::sweep::SweepPlan::new(a.from, a.to, a.step, a.length, a.time, direction)
        .and_then(|p| p.with_points(a.points.as_deref().unwrap_or_default()))
        .and_then(|p| p.repeat(a.repeat))
        .and_then(|p| p.levels(levels))
        .and_then(|p| p.safety_margin(a.safety_margin))
        .map_err(Error::from)?;
    Ok(SweepRequest {
        server: server(&a.target),
        plan,
    })
}

/// `blocksize`.
pub fn blocksize(a: &cli::BlocksizeArgs) -> Result<BlocksizeRequest, Error> {
    sweep_request(server(&a.target), &a.sweep)
}

fn sweep_request(server: Server, o: &cli::SweepOptions) -> Result<BlocksizeRequest, Error> {
    let netio = o.units == cli::UnitsArg::Netio;
    // netio 1.33 sends 32,767 bytes for "32k".
    let sizes: Vec<usize> = o
        .sizes
        .iter()
        .map(|&s| if netio && s == 32 * 1024 { 32_767 } else { s })
        .collect();
    let plan = method::blocksize::BlocksizePlan::new(sizes.clone(), o.time).map_err(Error::from)?;
    Ok(BlocksizeRequest {
        server,
        plan,
        sizes,
        time: o.time,
        streams: o.parallel,
        netio,
    })
}

/// `nicmatrix`.
pub fn nic_matrix(a: &cli::NicMatrixArgs) -> Result<NicMatrixRequest, Error> {
    let server = Server {
        host: a.host.clone().unwrap_or_default(),
        port: a.port,
        key_file: a.auth_key_file.clone(),
        allow_unauthenticated: false,
    };
    Ok(NicMatrixRequest {
        sweep: sweep_request(server, &a.sweep)?,
        remote: a.host.is_some(),
        lab: a.lab.clone(),
        ends: a.ends.clone(),
        mtus: a.mtu.clone().unwrap_or_default(),
        features: a.offload.clone(),
    })
}

/// `latency`.
pub fn latency(a: &cli::LatencyArgs) -> LatencyRequest {
    LatencyRequest {
        server: server(&a.target),
        sizes: a.length.clone(),
        time: a.time,
        spin: a.spin,
        user_timestamps: a.user_timestamps,
        latency_limits: a.latency_limit.clone(),
        marginal_band: a.marginal_band,
        interval: (!a.interval.is_zero()).then_some(a.interval),
    }
}

/// `rrul`.
pub fn rrul(a: &cli::RrulArgs) -> RrulRequest {
    RrulRequest {
        server: server(&a.target),
        time: a.time,
        idle: a.idle,
        streams: a.streams,
        ping_hz: a.ping_rate,
        interval: a.interval,
    }
}

fn backend(b: cli::FrameBackend) -> FrameBackend {
    match b {
        cli::FrameBackend::Auto => FrameBackend::Auto,
        cli::FrameBackend::Packet => FrameBackend::Packet,
        cli::FrameBackend::Ring => FrameBackend::Ring,
        cli::FrameBackend::Xdp => FrameBackend::Xdp,
    }
}

/// How test frames look.
pub fn frame(a: &cli::FrameArgs) -> FrameRequest {
    FrameRequest {
        proto: match a.proto {
            cli::FrameProto::Udp => FrameProto::Udp,
            cli::FrameProto::Tcp => FrameProto::Tcp,
            cli::FrameProto::Icmp => FrameProto::Icmp,
        },
        dst_mac: a.dst_mac,
        src_mac: a.src_mac,
        dst_ip: a.dst_ip,
        src_ip: a.src_ip,
        src_port: a.src_port,
        dst_port: a.dst_port,
        vlan: a.vlan,
        pcp: a.pcp,
        dscp: a.dscp,
        lab: a.lab.clone(),
        line_rate: a.line_rate,
        backend: backend(a.backend),
        rx_backend: a.rx_backend.map(backend),
    }
}

/// `rfc2544`: over UDP to HOST, or between `--tx` and `--rx`.
pub fn rfc2544(a: &cli::Rfc2544Args) -> Result<Rfc2544Request, Error> {
    let path = match (&a.host, &a.tx, &a.rx) {
        (Some(host), _, _) => Rfc2544Path::Server(Server {
            host: host.clone(),
            port: a.port,
            key_file: a.auth_key_file.clone(),
            allow_unauthenticated: false,
        }),
        (None, Some(tx), Some(rx)) => Rfc2544Path::Ports {
            tx: tx.clone(),
            rx: rx.clone(),
            agents: campaign::request::Agents {
                port: a.port,
                key_file: a.auth_key_file.clone(),
                synced_clocks: a.synced_clocks,
            },
            reflect: a.reflect,
        },
        _ => return Err(usage("give HOST, or both --tx and --rx")),
    };
    let tests = a.tests.iter().map(|t| match t {
        cli::Rfc2544Test::Throughput => Rfc2544Test::Throughput,
        cli::Rfc2544Test::Latency => Rfc2544Test::Latency,
        cli::Rfc2544Test::Loss => Rfc2544Test::Loss,
        cli::Rfc2544Test::B2b => Rfc2544Test::B2b,
    });
    let config = SearchConfig {
        line_rate: LineRate(a.frame.line_rate as u64),
        duration: a.duration,
        final_duration: a.final_duration.unwrap_or(a.duration),
        verify: a.verify || a.final_duration.is_some(),
        preceding: a.preceding,
        max_search_time: a.max_search_time,
        loss_ratio: a.loss_tolerance,
        width: a.width.max(0.0001),
        ..SearchConfig::default()
    };
    Ok(Rfc2544Request {
        path,
        tests: tests.collect(),
        sizes: a.sizes.clone(),
        search: match a.search {
            cli::SearchArg::Mlr => Search::Mlr,
            cli::SearchArg::Binary => Search::Binary,
        },
        config,
        latency_trials: a.latency_trials,
        latency_limits: a.latency_limit.clone(),
        marginal_band: a.marginal_band,
        loss_step: a.loss_step,
        b2b_trials: a.b2b_trials,
        b2b_max_burst: a.b2b_max_burst,
        frame: frame(&a.frame),
    })
}

/// `streams`: the profile read and checked.
pub fn streams(a: &cli::StreamsArgs) -> Result<StreamsRequest, Error> {
    let file = a.profile.display().to_string();
    let text = std::fs::read_to_string(&a.profile)
        .map_err(|e| usage(format!("cannot read {file}: {e}")))?;
    let profile =
        method::streams::Profile::parse(&text).map_err(|e| usage(format!("{file}: {e}")))?;
    let lab = a
        .lab
        .clone()
        .or(profile.lab.clone())
        .unwrap_or_else(|| "lab".into());
    Ok(StreamsRequest {
        file,
        profile,
        lab,
        backend: backend(a.backend),
        interval: (!a.interval.is_zero()).then_some(a.interval),
        agents: campaign::request::Agents {
            port: a.port,
            key_file: a.auth_key_file.clone(),
            synced_clocks: false,
        },
    })
}

/// `shaping`.
pub fn shaping(a: &cli::ShapingArgs) -> ShapingRequest {
    ShapingRequest {
        tx: a.tx.clone(),
        rx: a.rx.clone(),
        sizes: a.sizes.clone(),
        bandwidths: a.bandwidths.clone(),
        dut_cmd: a.dut_cmd.clone(),
        duration: a.duration,
        frame: frame(&a.frame),
        agents: campaign::request::Agents {
            port: a.port,
            key_file: a.auth_key_file.clone(),
            synced_clocks: false,
        },
    }
}

/// `frer compare`.
pub fn frer_compare(a: &cli::FrerCompareArgs) -> FrerCompareRequest {
    FrerCompareRequest {
        path_a: a.path_a.clone(),
        path_b: a.path_b.clone(),
        time: a.time,
        length: a.length,
        name: a.name.clone(),
        line_rate: a.line_rate,
        udp: match a.udp {
            cli::UdpMode::Unlimited => method::overhead::UdpLoad::Unlimited,
            cli::UdpMode::ZeroLoss => method::overhead::UdpLoad::ZeroLoss,
        },
    }
}

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

/// The request of a command a plan can hold; `None` for the others.
pub fn test(c: &Command) -> Option<Result<TestRequest, Error>> {
    use campaign::methods as m;
    Some(match c {
        Command::Client(a) => client(a).map(|r| TestRequest::new(&m::client::Client, r)),
        Command::Sweep(a) => sweep(a).map(|r| TestRequest::new(&m::sweep::Sweep, r)),
        Command::Blocksize(a) => {
            blocksize(a).map(|r| TestRequest::new(&m::blocksize::Blocksize, r))
        }
        Command::NicMatrix(a) => {
            nic_matrix(a).map(|r| TestRequest::new(&m::nicmatrix::NicMatrix, Box::new(r)))
        }
        Command::Latency(a) => Ok(TestRequest::new(&m::latency::Latency, latency(a))),
        Command::Rrul(a) => Ok(TestRequest::new(&m::rrul::Rrul, rrul(a))),
        Command::Mesh(a) => mesh(a).map(|r| TestRequest::new(&m::mesh::Mesh, r)),
        Command::Rfc2544(a) => {
            rfc2544(a).map(|r| TestRequest::new(&m::rfc2544::Rfc2544, Box::new(r)))
        }
        Command::Streams(a) => {
            streams(a).map(|r| TestRequest::new(&m::streams::Streams, Box::new(r)))
        }
        Command::Shaping(a) => Ok(TestRequest::new(&m::shaping::Shaping, shaping(a))),
        Command::Frer(cli::FrerArgs {
            command: cli::FrerCommand::Compare(a),
        }) => Ok(TestRequest::new(
            &m::frer_compare::FrerCompare,
            frer_compare(a),
        )),
        _ => return None,
    })
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
        let cli = Cli::try_parse_from(argv).map_err(|e| CommandError::Refused(first_line(&e)))?;
        match test(&cli.command) {
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
