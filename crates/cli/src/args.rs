//! The command line, as clap structs: syntax and per-value validation only ("low" args).
//! [`crate::requests`] turns them into the campaign's typed requests.
//!
//! A test method's own arguments are defined in its module (`campaign::methods::NAME`,
//! with its request); here it is one variant of [`Command`].

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use campaign::methods::args::{FrameArgs, FrameBackend};
use campaign::methods::{
    blocksize::BlocksizeArgs, client::ClientArgs, frer_compare::FrerCompareArgs,
    latency::LatencyArgs, mesh::MeshArgs, nicmatrix::NicMatrixArgs, rfc2544::Rfc2544Args,
    rfc2889::Rfc2889Args, rfc6349::Rfc6349Args, rrul::RrulArgs, shaping::ShapingArgs,
    streams::StreamsArgs, sweep::SweepArgs, y1564::Y1564Args,
};
use model::units;

/// Benchmarks links and network devices: TCP/UDP throughput with exact loss, duplicate,
/// reorder, jitter and latency accounting (also against iperf3), zero-loss sweeps, RFC 2544,
/// multi-stream profiles, shaper and NIC matrices, FRER, meshes of servers; builds test labs
/// of network namespaces and writes the report.
///
/// Exit codes: 0 success; 1 the test could not run (connection, server refusal,
/// protocol error); 2 bad command line or input; 3 the test ran but a verdict failed.
#[derive(Debug, Parser)]
#[command(
    name = "wirebench",
    version,
    max_term_width = 100,
    after_help = "Examples:\n  wirebench demo                           # the whole story in about a minute\n  wirebench server & wirebench client 127.0.0.1 -t 5\n  wirebench COMMAND --help                 # each command with its examples"
)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

/// iperf3's way of starting: `-c HOST ...` is `client HOST ...` and `-s ...` is
/// `server ...` (also after `-v`s), so the command lines iperf3 users type work; anything
/// else is left as it is.
pub fn iperf3_aliases(argv: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let verbose = argv
        .iter()
        .skip(1)
        .take_while(|a| {
            a.to_str()
                .is_some_and(|a| a == "-v" || a == "-vv" || a == "-vvv")
        })
        .count();
    let at = 1 + verbose;
    let sub = match argv.get(at).and_then(|a| a.to_str()) {
        Some("-c" | "--client") => "client",
        Some("-s" | "--server") => "server",
        _ => return argv,
    };
    let mut out = argv[..at].to_vec();
    out.push(sub.into());
    out.extend(argv[at + 1..].iter().cloned());
    out
}

/// iperf3 options that `client` and `server` do not take, each with the reason: said by
/// name instead of clap's "unexpected argument".
const NOT_TAKEN: &[(&[&str], &str)] = &[
    (
        &["-D", "--daemon"],
        "run the server under systemd or with '&'",
    ),
    (
        &["-I", "--pidfile"],
        "run the server under systemd, which tracks it",
    ),
    (
        &["-F", "--file"],
        "wirebench sends generated data, not files",
    ),
    (&["--sctp"], "wirebench tests TCP and UDP only"),
    (&["-L", "--flowlabel"], "IPv6 flow labels are not set"),
    (
        &["-S", "--tos"],
        "give the DSCP with --dscp (the upper six bits of the TOS byte)",
    ),
    (
        &["--fq-rate"],
        "wirebench paces in user space (this kernel has no fq qdisc anyway)",
    ),
    (&["--pacing-timer"], "wirebench paces with its own schedule"),
    (&["--dont-fragment"], "not set by wirebench"),
    (
        &[
            "--username",
            "--rsa-public-key-path",
            "--rsa-private-key-path",
            "--authorized-users-path",
        ],
        "wirebench authenticates with a pre-shared key: --auth-key-file",
    ),
    (
        &["--extra-data"],
        "no free-form data is carried into results; use -T for a title",
    ),
    (
        &["--repeating-payload"],
        "the payload is fixed and carries wirebench's test header",
    ),
    (
        &["--skip-rx-copy"],
        "the receiver reads every byte it counts",
    ),
    (&["-X", "--xbind"], "SCTP is not supported"),
    (&["--nstreams"], "SCTP is not supported"),
    (
        &["--udp-counters-64bit"],
        "wirebench always uses 64-bit counters",
    ),
    (&["--mptcp", "-m"], "MPTCP is not supported"),
    (
        &["--cntl-ka"],
        "control connection keepalives are not configurable",
    ),
    (&["--rcv-timeout", "--snd-timeout"], "not configurable"),
    (&["--server-bitrate-limit"], "use server --max-rate"),
    (
        &["--time-skew-threshold"],
        "wirebench authenticates without timestamps",
    ),
    (&["--gsro"], "not supported"),
    (&["--bind-dev"], "give the interface's address with -B"),
];

/// The first iperf3 option of a `client` or `server` command line (after
/// [`iperf3_aliases`]) that wirebench does not take, as an error message naming it and why.
pub fn refused_iperf3_option(argv: &[std::ffi::OsString]) -> Option<String> {
    let args: Vec<&str> = argv.iter().filter_map(|a| a.to_str()).collect();
    let sub = args
        .iter()
        .skip(1)
        .position(|a| !a.starts_with('-'))
        .map(|i| i + 1)?;
    if !matches!(args[sub], "client" | "server") {
        return None;
    }
    for a in &args[sub + 1..] {
        if *a == "--" {
            break;
        }
        let name = a.split('=').next().unwrap_or(a);
        for (names, why) in NOT_TAKEN {
            if names.contains(&name) {
                return Some(format!(
                    "{name} (iperf3's) is not taken by wirebench: {why}"
                ));
            }
        }
    }
    None
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve tests to many clients at once.
    #[command(
        after_help = "Examples:\n  wirebench server                              # port 5301 (and 5201 for iperf3 clients)\n  wirebench server --auth-key-file /etc/wirebench.key --max-rate 1G\n  wirebench server -p 5399 --run-for 60 --metrics 127.0.0.1:9464"
    )]
    Server(ServerArgs),
    /// Tests on demand for Prometheus (like the blackbox exporter): a scrape of
    /// /probe?target=HOST&kind=tcp|udp|latency&secs=5&rate=100M runs that test against the
    /// wirebench (or iperf3) server at HOST and answers with its figures as metrics.
    #[command(
        after_help = "Examples:\n  wirebench exporter --listen 127.0.0.1:9465 --allow-target 198.18.0.2 --max-rate 100M\n  curl 'http://127.0.0.1:9465/probe?target=198.18.0.2&kind=udp&secs=5&rate=50M'"
    )]
    Exporter(ExporterArgs),
    /// Run a TCP or UDP throughput test against a server (iperf3's flags).
    #[command(
        after_help = "Examples:\n  wirebench client 127.0.0.1 -u -b 500M         # UDP at 500 Mbit/s for 10 s\n  wirebench client HOST -P 4 -t 30 -i 1 -f m    # TCP, 4 streams, rows every second in Mbit/s\n  wirebench -c HOST -R -J --json-format iperf3  # iperf3's flags and iperf3's JSON"
    )]
    Client(ClientArgs),
    /// UDP ping-pong latency per message size (like sockperf).
    #[command(
        after_help = "Examples:\n  wirebench latency 127.0.0.1 -l 64,512,1472 -t 5\n  wirebench latency HOST -l 64 -t 60 -i 1 -J"
    )]
    Latency(LatencyArgs),
    /// Latency under load (flent's RRUL): TCP streams up and down at once with pings at a
    /// steady rate, and idle pings before and after as the baseline; prints throughput each
    /// way, idle and loaded round trips and the latency the load added.
    #[command(
        after_help = "Examples:\n  wirebench rrul HOST -t 30 --idle 5\n  wirebench rrul HOST -P 4 -t 60 -J"
    )]
    Rrul(RrulArgs),
    /// Client tests between every ordered pair of hosts (N x (N-1)), each run by the source
    /// host's server toward the destination's (servers started with --allow-third-party
    /// and one key); prints the matrix of received rates. A host that cannot be reached
    /// fails its cells, and the rest of the mesh goes on.
    #[command(
        after_help = "Examples:\n  wirebench mesh --auth-key-file mesh.key a=198.18.1.1 b=198.18.2.1 c=198.18.3.1 -t 5\n  wirebench mesh --auth-key-file mesh.key a=HOST1 b=HOST2 -u -b 100M --pairs-at-once 2"
    )]
    Mesh(MeshArgs),
    /// UDP rate staircase: loss per target rate and the maximum zero-loss rate.
    #[command(
        after_help = "Examples:\n  wirebench sweep HOST --from 400M --to 950M --step 50M -t 5 -l 1472\n  wirebench sweep HOST --from 400M --to 600M --step 100M --points 520M,540M --repeat 3"
    )]
    Sweep(SweepArgs),
    /// TCP throughput per write size, each direction (like netio).
    #[command(
        after_help = "Examples:\n  wirebench blocksize HOST                       # netio's sizes, each direction\n  wirebench blocksize HOST --sizes 1k,4k,32k,128k -t 5 -P 2"
    )]
    Blocksize(BlocksizeArgs),
    /// NIC review (needs root): for each MTU and feature combination, set both ends, run
    /// the block-size sweep, count interrupts, softirqs and CPU; every setting is put back
    /// afterwards, also on Ctrl-C. One table: rows block size, columns the combinations.
    #[command(name = "nicmatrix")]
    #[command(
        after_help = "Examples:\n  sudo wirebench nicmatrix --lab n1 --end talker:eth0,listener:eth0 --mtu 1500,9000 --offload lro=on,off\n  sudo wirebench nicmatrix --end eth1 --mtu 1500,9000 --offload tx=on,off HOST --auth-key-file k"
    )]
    NicMatrix(NicMatrixArgs),
    /// The whole story in about a minute: as root, a FRER lab with path loss (TCP, UDP,
    /// sweep, latency, RFC 2544 at two frame sizes), a shaper profile and the FRER overhead;
    /// otherwise the same methods on loopback. Writes a run directory with report.html.
    #[command(
        after_help = "Examples:\n  wirebench demo                                # as root on labs, else on loopback\n  sudo wirebench demo --out /tmp/d --name d2     # labs d2, d26, d2c, d2f"
    )]
    Demo(DemoArgs),
    /// Test networks on this machine: network namespaces joined by veth (needs root).
    #[command(
        after_help = "Examples:\n  sudo wirebench lab up frer --name f1 --path-a loss=2% --path-b loss=2%\n  sudo wirebench lab exec --name f1 talker -- ping -c 3 198.18.30.2\n  sudo wirebench lab down f1"
    )]
    Lab(LabArgs),
    /// Generate Ethernet frames of an exact size on an interface (like trafgen/mausezahn):
    /// prints the achieved rate and whether the generator kept its schedule (needs root).
    #[command(
        after_help = "Examples:\n  sudo wirebench gen --lab g1 talker:eth0 --rx listener:eth0 -s 64 -r 100kpps -t 2\n  sudo wirebench gen eth1 -s 1518 -r 1G -n 100000 --backend xdp"
    )]
    Gen(GenArgs),
    /// Run a multi-stream profile (TOML): every stream at once, each on its own schedule;
    /// per stream and in total: sent, received, lost, loss %, Mbit/s, latency, and the
    /// expectations (exit code 3 when one fails). Needs root.
    #[command(
        after_help = "Examples:\n  sudo wirebench streams examples/streams-two-classes.toml --lab s2\n  sudo wirebench streams profile.toml --lab s2 -i 1 -J"
    )]
    Streams(StreamsArgs),
    /// Shaper accuracy matrix: for each configured bandwidth (set on the lab shaper, or on
    /// any device through --dut-cmd), offer line-rate traffic at each frame size and print
    /// the passed rate in % of the bandwidth (needs root).
    #[command(
        after_help = "Examples:\n  sudo wirebench shaping --lab s1 --tx talker:eth0 --rx listener:eth0 --bandwidths 10M,50M,100M --sizes 64,512,1518\n  sudo wirebench shaping --tx eth1 --rx eth2 --bandwidths 10M,100M --dut-cmd 'ssh dut tc-set {bandwidth_m}'"
    )]
    Shaping(ShapingArgs),
    /// RFC 2544 throughput, latency, frame loss rate and back-to-back per frame size,
    /// between two interfaces of this host (--tx/--rx, a tester with two ports; needs root),
    /// or over UDP to a wirebench server (HOST).
    #[command(
        after_help = "Examples:\n  sudo wirebench rfc2544 --lab r1 --tx talker:eth0 --rx listener:eth0 --sizes 64,1518 --line-rate 1G\n  wirebench rfc2544 HOST --sizes 64,512,1518 -t 2 --tests throughput,latency\n  sudo wirebench rfc2544 --tx eth1 --rx eth2 --search binary --loss-tolerance 0.1% -J"
    )]
    Rfc2544(Rfc2544Args),
    /// RFC 6349 TCP throughput testing against a wirebench server: the path MTU (an RFC
    /// 4821 search), the baseline RTT and the bottleneck bandwidth through the server's
    /// echo, the BDP and the window each connection needs, then a TCP test with that
    /// window and its transfer time ratio, TCP efficiency and buffer delay.
    #[command(
        after_help = "Examples:\n  wirebench rfc6349 HOST -t 30\n  wirebench rfc6349 HOST --bb 100M -w auto\n  wirebench rfc6349 HOST --iperf3 --rtt 40ms --bb 50M -J"
    )]
    Rfc6349(Rfc6349Args),
    /// ITU-T Y.1564 service activation over raw ports (needs root): per service the
    /// configuration test (CIR steps, CIR + EIR, traffic policing), then every service at
    /// its CIR at once (the performance test), with IR, FLR, FTD, FDV, availability and
    /// PASS/FAIL against each service's acceptance criteria.
    #[command(
        after_help = "Examples:\n  sudo wirebench y1564 examples/y1564-two-services.toml --lab s1 -t 10 --duration 60\n  sudo wirebench y1564 services.toml --tests configuration -J\n  sudo wirebench y1564 services.toml --tests performance --duration 2h"
    )]
    Y1564(Y1564Args),
    /// RFC 2889 LAN switch benchmarking over raw ports of this host (needs root): fully
    /// meshed, one-to-many, many-to-one, unidirectional, congestion control and broadcast
    /// traffic with each port's forwarding rate, loss and flood count; address caching
    /// capacity and learning rate by search, flooding watched on a monitor port.
    #[command(
        after_help = "Examples:\n  sudo wirebench lab up examples/lab-switch.toml --name s1\n  sudo wirebench rfc2889 fully-meshed h1:eth0 h2:eth0 h3:eth0 h4:eth0 --lab s1 --line-rate 100M -t 5\n  sudo wirebench rfc2889 many-to-one h1:eth0 h2:eth0 h3:eth0 --lab s1 --line-rate 100M --no-search\n  sudo wirebench rfc2889 address-caching h1:eth0 h2:eth0 h3:eth0 --lab s1 --switch sw --max-addresses 1024"
    )]
    Rfc2889(Rfc2889Args),
    /// IEEE 802.1CB FRER: a software replicate/eliminate relay over AF_PACKET, and its
    /// counters (needs root).
    #[command(
        after_help = "Examples:\n  sudo wirebench frer compare -t 2 --name fc\n  sudo wirebench frer stats"
    )]
    Frer(FrerArgs),
    /// Run a whole campaign from a plan (TOML): target, tests in order, thresholds,
    /// metadata. Writes DIR/results.json after every test, then report.md, report.html
    /// (charts inline) and one CSV per table. Exit code 3 when a threshold fails.
    #[command(
        after_help = "Examples:\n  wirebench run examples/plan-loopback.toml --out run1\n  sudo wirebench run examples/plan-frer.toml --out run2 --name p1 --junit run2/junit.xml"
    )]
    Run(RunArgs),
    /// Render the reports of a run again from its results.json.
    #[command(
        after_help = "Examples:\n  wirebench report run1/results.json\n  wirebench report run1/results.json --template my-templates"
    )]
    Report(ReportArgs),
    /// Print a shell completion script: `source <(wirebench completions bash)`, or install
    /// it in the shell's completion directory.
    #[command(
        after_help = "Examples:\n  source <(wirebench completions bash)\n  wirebench completions zsh > ~/.zfunc/_wirebench"
    )]
    Completions(CompletionsArgs),
    /// Write the manual pages (wirebench.1 and one per command) into DIR, or print
    /// wirebench.1 without DIR.
    #[command(
        after_help = "Examples:\n  wirebench man | man -l -\n  wirebench man /usr/local/share/man/man1"
    )]
    Man(ManArgs),
    /// Two runs side by side (results.json of `run`, or any command's -J output): every
    /// figure both measured, the difference and the overhead of B against A in % (e.g. FRER
    /// against a control group).
    #[command(
        after_help = "Examples:\n  wirebench compare control/results.json frer/results.json\n  wirebench compare a.json b.json -J"
    )]
    Compare(CompareArgs),
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The reference run (A).
    pub a: PathBuf,
    /// The run compared with it (B).
    pub b: PathBuf,
    /// Print the rows as JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan (see examples/plan-*.toml).
    pub plan: PathBuf,
    /// Directory for results.json, the reports and the CSV files.
    #[arg(long, default_value = "wirebench-run")]
    pub out: PathBuf,
    /// Name of the lab a lab target builds, and the prefix of every lab the run builds:
    /// NAME, NAME6 for test 6's own lab, NAMEc and NAMEf for `frer compare`'s (all
    /// removed at the end; NAME and a test number at most 8 characters).
    #[arg(long, default_value = "run")]
    pub name: String,
    /// Render report.md and report.html with the minijinja templates of this directory
    /// (report.md, report.html; a file it lacks stays built in). Checked before the run.
    #[arg(long, value_name = "DIR")]
    pub template: Option<PathBuf>,
    /// Also write a JUnit XML file: one testcase per test and per threshold, so CI systems
    /// (Jenkins, GitLab, GitHub) show the verdicts.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// GNU bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Directory for the pages (created if missing).
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// results.json of a run.
    pub results: PathBuf,
    /// md, html or csv (to standard output).
    #[arg(long, default_value = "md")]
    pub format: String,
    /// Write every format into this directory instead.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Render with the minijinja templates of this directory (report.md, report.html; a
    /// file it lacks stays built in).
    #[arg(long, value_name = "DIR")]
    pub template: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct FrerArgs {
    #[command(subcommand)]
    pub command: FrerCommand,
}

#[derive(Debug, Subcommand)]
pub enum FrerCommand {
    /// Run a FRER relay on this host's interfaces until Ctrl-C (or -t), then print its
    /// counters. One stream by flags, e.g. `--replicate eth0=eth1,eth2` on the talker side
    /// and `--eliminate eth1,eth2=eth0 --history 1024` on the listener side, or several
    /// streams from a TOML file (--config; see examples/frer-relay.toml). While it runs,
    /// `wirebench frer stats` shows its counters.
    Relay(FrerRelayArgs),
    /// Show the counters of running relays (standalone ones and those of labs).
    Stats(FrerStatsArgs),
    /// Capture test frames on the paths of a redundant network (before elimination, e.g.
    /// `--rx merge:eth1 --rx merge:eth2` in the frer lab) while a test runs, and report
    /// per stream: distinct, lost, duplicate and out-of-order frames, and per path
    /// (arrival interface) what it delivered, missed, and how often it was first.
    Analyze(FrerAnalyzeArgs),
    /// What FRER costs: TCP throughput, UDP throughput and UDP round-trip latency through
    /// the frer lab, against the same lab whose relays forward plainly over path A (the
    /// control group); a table of both, overhead % and the reason measured alongside.
    /// Builds and removes both labs (needs root).
    Compare(FrerCompareArgs),
}

#[derive(Debug, Args)]
pub struct FrerAnalyzeArgs {
    /// A path to listen on: IFACE, or NODE:IFACE in a lab (repeat for each path).
    #[arg(long, required = true)]
    pub rx: Vec<String>,
    /// Lab whose nodes NODE:IFACE names.
    #[arg(long, default_value = "lab")]
    pub lab: String,
    /// How long to capture, seconds.
    #[arg(short = 't', long, default_value_t = 10.0)]
    pub time: f64,
    /// Receive backend: auto (ring, else packet), packet, or ring (xdp too: the analyzed ports
    /// belong to a relay or host that needs their frames, which an AF_XDP receiver would take).
    #[arg(long, value_enum, default_value_t = FrameBackend::Auto)]
    pub backend: FrameBackend,
    /// Print JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FrerRelayArgs {
    /// Relay file (TOML): [[stream]] tables with name, match, replicate, eliminate; and
    /// pass = { IN = "OUT" } for frames of no stream.
    #[arg(long, conflicts_with_all = ["replicate", "eliminate", "config_json"])]
    pub config: Option<PathBuf>,
    /// The configuration as JSON (how `lab up` starts a relay).
    #[arg(long, hide = true)]
    pub config_json: Option<String>,
    /// Replicate the stream: IN=OUT,OUT[,...] (a fresh R-TAG sequence number per frame).
    #[arg(long, value_name = "IN=OUT,OUT")]
    pub replicate: Option<String>,
    /// Eliminate duplicates of the stream: IN,IN[,...]=OUT.
    #[arg(long, value_name = "IN,IN=OUT")]
    pub eliminate: Option<String>,
    /// Which frames form the stream: dst_mac=MAC,vlan=N,src_ip=A,dst_ip=A,proto=udp,
    /// src_port=N,dst_port=N (any subset; default: every frame).
    #[arg(long = "match", value_name = "KEY=VALUE,...")]
    pub ident: Option<String>,
    /// frerSeqRcvyHistoryLength, 2..2048 (802.1CB default 2). Must exceed the skew between
    /// the paths in frames.
    #[arg(long, default_value_t = 2)]
    pub history: u16,
    /// frerSeqRcvyResetMSec: reset recovery after this long without a passed frame (0 =
    /// never).
    #[arg(long, default_value_t = 2000)]
    pub reset_ms: u64,
    /// Recovery algorithm.
    #[arg(long, value_enum, default_value_t = RecoveryAlgorithm::Vector)]
    pub algorithm: RecoveryAlgorithm,
    /// Keep the R-TAG on eliminated frames (default: strip it).
    #[arg(long)]
    pub keep_tag: bool,
    /// Pass frames without an R-TAG at the eliminator (frerSeqRcvyTakeNoSequence).
    #[arg(long)]
    pub take_no_sequence: bool,
    /// Individual recovery per in-port before sequence recovery (802.1CB 7.5).
    #[arg(long)]
    pub individual: bool,
    /// Turn elimination off: every copy passes (a broken eliminator, for testing).
    #[arg(long)]
    pub no_elimination: bool,
    /// Latent error detection (802.1CB 7.4.4): signal when passed x (paths - 1) -
    /// discarded drifts by more than this many frames per test period (2 s).
    #[arg(long, value_name = "FRAMES")]
    pub latent_difference: Option<i64>,
    /// Frames of no stream: IN=OUT, forwarded unchanged (repeatable); others are dropped.
    #[arg(long, value_name = "IN=OUT")]
    pub pass: Vec<String>,
    /// Forward in the kernel: BPF programs on the ports do the replication and
    /// elimination (streams identified by destination MAC; no individual recovery or latent
    /// error detection). When the kernel or the configuration does not allow it, the
    /// userspace relay runs and says why.
    #[arg(long)]
    pub fast: bool,
    /// Name of a standalone relay; its counters go to /run/wirebench/frer/NAME.json.
    #[arg(long, default_value = "relay")]
    pub name: String,
    /// Publish the counters to this file instead.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Stop when this file (a network namespace's /run/netns entry) disappears.
    #[arg(long, hide = true)]
    pub netns_file: Option<PathBuf>,
    /// Stop after this many seconds (default: run until Ctrl-C or SIGTERM).
    #[arg(short = 't', long)]
    pub time: Option<f64>,
    /// Print the final counters as JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecoveryAlgorithm {
    /// VectorRecoveryAlgorithm: a window of --history numbers.
    Vector,
    /// MatchRecoveryAlgorithm: only an exact repeat of the last number is discarded.
    Match,
}

#[derive(Debug, Args)]
pub struct FrerStatsArgs {
    /// Only the relays of this lab.
    #[arg(long, conflicts_with = "state")]
    pub lab: Option<String>,
    /// Read this state file.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Print JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
}

/// How a server receives UDP tests' datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RxBackend {
    /// The kernel's UDP stack (recvmmsg).
    Socket,
    /// AF_XDP, past the UDP stack.
    Xdp,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// Interface to send on: IFACE on this host, NODE:IFACE of a lab (see --lab), or
    /// HOST/IFACE: a port of the wirebench server at HOST[:PORT] started with --raw-ports.
    pub iface: String,
    /// Also receive on this interface (IFACE, NODE:IFACE or HOST/IFACE) and count the
    /// frames back.
    #[arg(long)]
    pub rx: Option<String>,
    /// Frame size in bytes, FCS included (64..=9018).
    #[arg(short, long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(64..=9018))]
    pub size: u64,
    /// Rate: frames/s (500kpps), % of --line-rate (50%) or L2 bit/s (100M).
    #[arg(short, long, value_parser = units::frame_rate, default_value = "10kpps")]
    pub rate: units::FrameRate,
    /// Stop after this many frames.
    #[arg(short = 'n', long)]
    pub count: Option<u64>,
    /// Stop after this many seconds (whichever comes first with --count).
    #[arg(short = 't', long, value_parser = units::seconds, default_value = "5")]
    pub time: Duration,
    #[command(flatten)]
    pub frame: FrameArgs,
    /// With --rx: seconds between interval rows (per interval: frames sent, received, lost
    /// where they were due, duplicates, reordering, latency); 0 = none.
    #[arg(short, long, value_parser = units::seconds_or_zero, default_value = "1")]
    pub interval: Duration,
    /// Generator threads (1..=64), each with its own socket (AF_XDP: its own transmit
    /// queue, so the interface needs as many), its own stream and an equal share of the
    /// rate; the results add the streams up.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: u16,
    /// Pre-shared key file of the servers lending HOST/IFACE ports (they all require one).
    #[arg(long)]
    pub auth_key_file: Option<PathBuf>,
    /// The clocks of the hosts of HOST/IFACE ports and this one are synchronised (PTP,
    /// NTP): report one-way latency between hosts.
    #[arg(long)]
    pub synced_clocks: bool,
    /// Print one JSON document.
    #[arg(short = 'J', long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Build a topology: `direct` (talker - listener), `router` (talker - dut - listener),
    /// `shaper` (router with an HTB class tree on the dut's egress, from --shape FILE.toml:
    /// `[[class]]` tables with name, protocol udp|tcp|icmp, ports, dscp, rate, ceil, burst;
    /// optional `[default] rate`), `impair` (router whose dut forwards through a userspace
    /// impairment stage, --impair), `twopath` (talker - split - path A / path B - merge -
    /// listener, each path its own impairment stage, --path-a/--path-b; split and merge
    /// route over path A), `frer` (the twopath layout with FRER relays on split and merge:
    /// the talker's frames are replicated onto both paths and eliminated before the
    /// listener, and back; --path-a/--path-b, --frer), or a TOML file: `topology = "..."`
    /// plus `[shaper]`, `[impair]`, `[path_a]`, `[path_b]`, `[frer]` tables, or a network
    /// of its own: `[[node]]` tables (name, role host|switch|router|shaper|impair|relay; a
    /// switch's vlan_filtering, ageing_s, learning_limit; a shaper's shape or egress; an
    /// impair node's impair; a relay's frer) and `[[link]]` tables (a, b as NODE:PORT;
    /// optional subnet, a_addr, b_addr, rate, mtu, impair), from which the lab gets its
    /// addresses and routes (examples/lab-*.toml; the guide's Labs chapter).
    ///
    /// Impairment is written `key=value,...` or as a TOML file: loss (%), loss_burst (mean
    /// frames per burst), delay and jitter (ns/us/ms/s), duplicate (%), reorder (%), rate
    /// (bit/s), limit (frames), seed; `forward.` / `reverse.` prefixes (or [forward] /
    /// [reverse] tables) set one direction, forward being talker -> listener.
    Up(LabUpArgs),
    /// Remove a lab (or every lab with --all, or those left behind with --stale).
    Down {
        /// Lab name.
        #[arg(required_unless_present_any = ["all", "stale", "name_flag"], conflicts_with_all = ["all", "stale"])]
        name: Option<String>,
        /// Lab name as `lab up --name` takes it (the same as NAME).
        #[arg(long = "name", value_name = "NAME", conflicts_with_all = ["name", "all", "stale"])]
        name_flag: Option<String>,
        /// Remove every namespace any wirebench lab made.
        #[arg(long, conflicts_with = "stale")]
        all: bool,
        /// Remove the labs whose owner is gone before it was done with them (a killed
        /// `lab up` half-way, a killed `run`); labs of `lab up` that finished stay.
        #[arg(long)]
        stale: bool,
    },
    /// Show the labs that are up: nodes, namespaces, interfaces and addresses, the shaper's
    /// classes and the impairment stages' counters.
    Status,
    /// Run an impairment stage in this network namespace (started by `lab up`).
    #[command(hide = true)]
    Stage {
        /// The stage's configuration (JSON, as `lab up` writes it).
        #[arg(long = "config-json")]
        config: String,
        /// Where to publish the counters (JSON).
        #[arg(long)]
        state: Option<std::path::PathBuf>,
        /// Stop when this file (the namespace's /run/netns entry) disappears.
        #[arg(long)]
        netns_file: Option<std::path::PathBuf>,
    },
    /// Run a command on a node of a lab: `wirebench lab exec talker -- wirebench client ...`.
    Exec {
        /// Node (talker, dut, listener).
        node: String,
        /// Lab name.
        #[arg(long, default_value = "lab")]
        name: String,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
}

/// `lab up`: what to build.
#[derive(Debug, Args)]
pub struct LabUpArgs {
    /// Built-in topology name, or a TOML topology file.
    pub topology: String,
    /// Class list of the `shaper` topology (TOML).
    #[arg(long)]
    pub shape: Option<std::path::PathBuf>,
    /// Impairment of the `impair` topology (both paths of `twopath`): `loss=1%,delay=5ms`
    /// or a TOML file.
    #[arg(long)]
    pub impair: Option<String>,
    /// Impairment of path A of `twopath` (overrides --impair).
    #[arg(long)]
    pub path_a: Option<String>,
    /// Impairment of path B of `twopath` (overrides --impair).
    #[arg(long)]
    pub path_b: Option<String>,
    /// Settings of the `frer` topology: history=N (default 1024), reset_ms=N (2000),
    /// elimination=on|off, mode=frer|plain (plain: the relays forward over path A
    /// without FRER, the control group).
    #[arg(long)]
    pub frer: Option<String>,
    /// `shaper`: talker nodes, each on its own link into the dut (talker, talker2, ...;
    /// 1-8), so each stream can enter on a port of its own.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub ingress: Option<u8>,
    /// `shaper`: the rate every ingress link carries at most (e.g. 100M), policed on
    /// arrival as a port of that speed; 0 = unlimited.
    #[arg(long, value_parser = units::rate_bps)]
    pub port_rate: Option<f64>,
    /// `shaper` without --shape: a plain port-rate egress toward the listener, one FIFO
    /// (the baseline without shaping), e.g. 100M.
    #[arg(long, value_parser = units::rate_bps)]
    pub egress: Option<f64>,
    /// MTU of every link, bytes (68-65535), e.g. 9000 for jumbo frames end to end;
    /// links that carry a tag (frer) get the tag's bytes on top.
    #[arg(long, value_parser = clap::value_parser!(u16).range(68..))]
    pub mtu: Option<u16>,
    /// Lab name (1-8 characters a-z, 0-9, -); namespaces are wb-NAME-NODE.
    #[arg(long, default_value = "lab")]
    pub name: String,
    /// Print the ip/sysctl commands instead of running them.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address to listen on; by default every IPv6 and IPv4 address (IPv4 alone where the
    /// host has no IPv6).
    #[arg(long)]
    pub bind: Option<IpAddr>,
    /// Serve metrics for Prometheus at http://ADDR/metrics, e.g. 127.0.0.1:9464: tests
    /// running, ended and refused (wirebench's and iperf3 clients'), connections,
    /// failed authentications, bytes and packets, and each running test's rate and loss
    /// (echo sessions are not counted as tests).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Run one test (wirebench's or an iperf3 client's), then exit.
    #[arg(short = '1', long)]
    pub one_off: bool,
    /// Control port.
    #[arg(short, long, default_value_t = control::DEFAULT_PORT)]
    pub port: u16,
    /// Largest total rate one test may ask for, bits/s (e.g. 1G). Unlimited if absent.
    #[arg(long, value_parser = units::rate_bps)]
    pub max_rate: Option<f64>,
    /// Longest test, seconds.
    #[arg(long, value_parser = units::seconds, default_value = "3600")]
    pub max_duration: Duration,
    /// Most streams per test (both directions together).
    #[arg(long, default_value_t = 128)]
    pub max_streams: u16,
    /// Most tests running at once, wirebench's and iperf3 clients' together.
    #[arg(long, default_value_t = 16)]
    pub max_tests: u16,
    /// Most tests (and latency sessions) one client address may run at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_tests_per_source: u16,
    /// Most handshakes one client address may have open at once (on the control port and
    /// iperf3's together; an iperf3 connection's is its cookie and parameters); more
    /// connections from it are turned away at once (64 in all; when all are taken, a
    /// newcomer takes the place of the oldest handshake of the addresses holding at least
    /// two more than its own).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_handshakes_per_source: u16,
    /// How an IPv6 client address is counted for the per-address limits: by this many
    /// leading bits (128: each address, as OpenSSH counts them; 64: a whole /64 as one,
    /// for clients that hop between addresses of their subnet). IPv4 is counted by /32.
    #[arg(long, value_name = "BITS", default_value_t = 128, value_parser = clap::value_parser!(u8).range(1..=128))]
    pub ipv6_source_prefix: u8,
    /// Core time one client address may busy-poll in a row in latency sessions with
    /// `--spin`, seconds; it is given back at a quarter of a core. Beyond it the server
    /// answers from `recv` (slower, nothing lost) and logs it.
    #[arg(long, value_parser = units::seconds, default_value = "60")]
    pub max_spin_per_source: Duration,
    /// Memory all running tests together may make the server hold (payload buffers and
    /// socket buffers; k/M/G suffixes); a test that would exceed it is refused. Default a
    /// quarter of this host's memory.
    #[arg(long, value_parser = units::size_bytes)]
    pub max_memory: Option<usize>,
    /// End a running test whose client says nothing for this long, seconds (clients say
    /// they are there every second; a stopped or vanished client is silent).
    #[arg(long, value_parser = units::seconds, default_value = "5")]
    pub idle_timeout: Duration,
    /// Require clients to prove they hold this pre-shared key (HMAC challenge/response;
    /// the key never crosses the network). At least 16 bytes.
    #[arg(long)]
    pub auth_key_file: Option<PathBuf>,
    /// Seconds a client has for its whole handshake (hello, authentication, request)
    /// before it is disconnected; from the third failure in a row (a wrong key, a handshake
    /// out of time, a connection closed before its handshake ended) an address waits 1 s,
    /// then 2, 4, ... 64 s.
    #[arg(long, value_parser = units::seconds, default_value = "10")]
    pub handshake_timeout: Duration,
    /// Serve only this long, then exit (seconds). Runs until killed if absent.
    #[arg(long, value_parser = units::seconds)]
    pub run_for: Option<Duration>,
    /// Port for stock iperf3 clients (`iperf3 -c HOST`), TCP and UDP; several at once,
    /// under the same admission as wirebench's clients: --max-tests and
    /// --max-tests-per-source shared by both, the same limits, memory and per-address
    /// penalties.
    #[arg(long, default_value_t = control::iperf3::DEFAULT_PORT)]
    pub iperf3_port: u16,
    /// Serve no iperf3 clients.
    #[arg(long)]
    pub no_iperf3: bool,
    /// With --auth-key-file, serve iperf3 clients anyway, without a key (iperf3 cannot
    /// prove it holds one); without this flag a server with a key does not open the
    /// iperf3 port at all.
    #[arg(long)]
    pub iperf3_open: bool,
    /// Let authenticated clients set the MTU and features of the interface they arrive on
    /// (`nicmatrix HOST`), one at a time; everything is put back when they finish or
    /// disconnect. Needs root and --auth-key-file.
    #[arg(long)]
    pub allow_tuning: bool,
    /// Lend these interfaces (comma-separated) to authenticated controllers as raw ports:
    /// a method given `HOST/IFACE` (e.g. `rfc2544 --tx 198.18.1.1/eth1`) sends or
    /// receives its frames here. Needs root and --auth-key-file.
    #[arg(long, value_delimiter = ',', value_name = "IFACE,...")]
    pub raw_ports: Vec<String>,
    /// Largest rate one lent port sends, all its streams together, L2 bits/s of frames
    /// with FCS (e.g. 10G): a trial asking more is refused, and a sender found above it
    /// (10 % over) is stopped. The default is a gigabit port's line rate.
    #[arg(long, value_name = "RATE", value_parser = units::rate_bps, default_value = "1G")]
    pub raw_max_rate: f64,
    /// Let lent ports send frames with any source MAC and IP address, and TCP segments
    /// with SYN or RST set. By default a port sends from its own MAC and addresses only.
    #[arg(long)]
    pub raw_allow_spoof: bool,
    /// Let lent ports send to broadcast and multicast MAC and IP addresses. By default they
    /// send to unicast destinations only.
    #[arg(long)]
    pub raw_allow_broadcast: bool,
    /// Address blocks lent ports may send to besides their own subnets and the
    /// benchmarking blocks 198.18.0.0/15 and 2001:2::/48 (ADDR/LEN or ADDR,
    /// comma-separated; 0.0.0.0/0,::/0 for any).
    #[arg(long, value_delimiter = ',', value_name = "CIDR,...", value_parser = control::cidr::parse_cidr)]
    pub raw_destinations: Vec<(std::net::IpAddr, u8)>,
    /// Let authenticated controllers have this server run client tests toward other
    /// wirebench servers (`mesh`: every host of a fleet tests every other). It
    /// authenticates to them with its own key, so the fleet shares one; the tests count
    /// against this server's limits. Needs --auth-key-file.
    /// Never toward unspecified, multicast, broadcast or link-local addresses, and toward
    /// loopback only for controllers on this host.
    #[arg(long)]
    pub allow_third_party: bool,
    /// With --allow-third-party: only toward these address blocks (ADDR/LEN or ADDR,
    /// comma-separated, e.g. 10.0.0.0/8,fd00::/8).
    #[arg(long, value_delimiter = ',', value_name = "CIDR,...", value_parser = control::cidr::parse_cidr)]
    pub third_party_peers: Vec<(std::net::IpAddr, u8)>,
    /// How UDP tests' datagrams from clients are received: socket (the kernel's UDP
    /// stack) or xdp (AF_XDP: an XDP program hands the test's datagrams to the server
    /// before the UDP stack, for floods the socket path cannot count; one receiving
    /// stream per test and one such test per interface at a time, others use sockets and
    /// their results say why; not on loopback). Results name the receiver used.
    #[arg(long, value_enum, default_value_t = RxBackend::Socket)]
    pub rx_backend: RxBackend,
}

#[derive(Debug, Args)]
pub struct ExporterArgs {
    /// Address to serve /probe, /metrics and a help page at /.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9465")]
    pub listen: SocketAddr,
    /// Probes running at once; one more is answered 503.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub max_concurrent: u16,
    /// Longest test a probe may ask for (secs=), seconds.
    #[arg(long, value_parser = units::seconds, default_value = "30")]
    pub max_secs: Duration,
    /// Largest total rate a probe may ask for, bits/s (e.g. 1G); probes must then give
    /// rate=. Unlimited if absent.
    #[arg(long, value_parser = units::rate_bps)]
    pub max_rate: Option<f64>,
    /// Pre-shared key file of the servers probed.
    #[arg(long)]
    pub auth_key_file: Option<PathBuf>,
    /// Probe only these targets (HOST or HOST:PORT, comma-separated or repeated); any
    /// target if absent. Give it (and --max-rate) when others can reach the exporter.
    #[arg(long, value_delimiter = ',')]
    pub allow_target: Vec<String>,
    /// Serve only this long, then exit (seconds). Runs until killed if absent.
    #[arg(long, value_parser = units::seconds)]
    pub run_for: Option<Duration>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Directory for results.json, report.md, report.html and the CSV files.
    #[arg(long, default_value = "wirebench-demo")]
    pub out: std::path::PathBuf,
    /// Stay on loopback even when running as root (root builds labs).
    #[arg(long)]
    pub loopback: bool,
    /// Prefix of the labs the demo builds (NAME, NAME6, NAMEc, NAMEf; removed at the end):
    /// another name lets two demos run at once, or one beside labs of that name.
    #[arg(long, default_value = "demo")]
    pub name: String,
}

#[cfg(test)]
mod test {
    use super::*;

    fn words(v: &[&str]) -> Vec<std::ffi::OsString> {
        v.iter().map(Into::into).collect()
    }

    /// Words of a shell line, single-quoted parts kept whole.
    fn shell_words(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        let (mut word, mut quoted, mut any) = (String::new(), false, false);
        for c in line.chars() {
            match c {
                '\'' => {
                    quoted = !quoted;
                    any = true;
                }
                c if c.is_whitespace() && !quoted => {
                    if any {
                        out.push(std::mem::take(&mut word));
                        any = false;
                    }
                }
                c => {
                    word.push(c);
                    any = true;
                }
            }
        }
        if any {
            out.push(word);
        }
        out
    }

    /// Every command's help ends with examples, and every example that runs wirebench
    /// parses with the command line it shows (a renamed or removed flag fails here).
    #[test]
    fn every_command_ends_its_help_with_examples_that_parse() {
        use clap::CommandFactory;
        let root = Cli::command();
        let mut commands: Vec<&clap::Command> = vec![&root];
        commands.extend(root.get_subcommands().filter(|c| !c.is_hide_set()));
        let mut parsed = 0;
        for c in commands {
            if c.get_name() == "help" {
                continue;
            }
            let after = c
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(
                after.starts_with("Examples:\n"),
                "{}: {after:?}",
                c.get_name()
            );
            let lines: Vec<&str> = after.lines().skip(1).collect();
            assert!(lines.len() >= 2, "{}: two examples at least", c.get_name());
            for line in lines {
                let code = line.split(" #").next().unwrap_or("").trim();
                for part in code.split(" & ") {
                    let part = part.trim().trim_start_matches("sudo ");
                    let runs_wirebench = part.starts_with("wirebench ")
                        && !part.contains('|')
                        && !part.contains('>')
                        && !part.contains("<(")
                        && !part.contains("COMMAND");
                    if !runs_wirebench {
                        continue;
                    }
                    let argv = iperf3_aliases(shell_words(part).iter().map(Into::into).collect());
                    if let Err(e) = Cli::try_parse_from(&argv) {
                        panic!("{}: `{part}` does not parse: {e}", c.get_name());
                    }
                    parsed += 1;
                }
            }
        }
        assert!(parsed >= 40, "{parsed} examples parsed");
    }

    /// `lab down` takes the lab's name as `lab up` does (`--name`) or alone, not both.
    #[test]
    fn lab_down_takes_the_name_either_way() {
        let down = |v: &[&str]| {
            let argv: Vec<&str> = ["wirebench", "lab", "down"]
                .iter()
                .chain(v)
                .copied()
                .collect();
            match Cli::try_parse_from(argv).map(|c| c.command) {
                Ok(Command::Lab(LabArgs {
                    command:
                        LabCommand::Down {
                            name, name_flag, ..
                        },
                })) => Ok(name.or(name_flag)),
                Ok(other) => panic!("{other:?}"),
                Err(e) => Err(e.kind()),
            }
        };
        assert_eq!(down(&["f1"]), Ok(Some("f1".into())));
        assert_eq!(down(&["--name", "f1"]), Ok(Some("f1".into())));
        assert!(down(&["f1", "--name", "f2"]).is_err());
        assert!(down(&[]).is_err());
        assert_eq!(down(&["--all"]), Ok(None));
    }

    #[test]
    fn iperf3_starts_become_subcommands() {
        let c = iperf3_aliases(words(&["wirebench", "-c", "h", "-u", "-b", "10M"]));
        assert_eq!(c, words(&["wirebench", "client", "h", "-u", "-b", "10M"]));
        let s = iperf3_aliases(words(&["wirebench", "-v", "-s", "-p", "5201"]));
        assert_eq!(s, words(&["wirebench", "-v", "server", "-p", "5201"]));
        let same = words(&["wirebench", "client", "h", "-c", "x"]);
        assert_eq!(iperf3_aliases(same.clone()), same);
        assert_eq!(iperf3_aliases(words(&["wirebench"])), words(&["wirebench"]));
        // They parse as the subcommands do.
        let cli = Cli::try_parse_from(iperf3_aliases(words(&["wirebench", "-c", "h", "-t", "3"])))
            .unwrap();
        assert!(matches!(cli.command, Command::Client(ref a) if a.target.host == "h"));
    }

    #[test]
    fn iperf3_options_not_taken_are_named_with_the_reason() {
        let argv =
            |s: &str| -> Vec<std::ffi::OsString> { s.split_whitespace().map(Into::into).collect() };
        let refused = |s: &str| refused_iperf3_option(&iperf3_aliases(argv(s)));
        let m = refused("wirebench -c h --udp-counters-64bit").unwrap();
        assert!(
            m.contains("--udp-counters-64bit") && m.contains("64-bit"),
            "{m}"
        );
        let m = refused("wirebench server -D").unwrap();
        assert!(m.starts_with("-D ") && m.contains("systemd"), "{m}");
        assert!(refused("wirebench client h --tos=16")
            .unwrap()
            .contains("--dscp"));
        // Taken options, and other commands' own flags, pass.
        assert_eq!(refused("wirebench -c h -u -b 10M -Z -C reno"), None);
        assert_eq!(refused("wirebench rfc2544 -S x"), None);
        // The server's own --idle-timeout (iperf3's restarts an idle server) passes.
        assert_eq!(refused("wirebench server --idle-timeout 2"), None);
        assert_eq!(refused("wirebench -s --idle-timeout=2"), None);
    }

    /// The lab starts its stages and relays with command lines it spells itself
    /// (`lab::processes`): they must parse as these definitions, with the same values.
    #[test]
    fn the_lab_s_managed_processes_parse_as_their_subcommands() {
        use lab::impair::{spec::ImpairSpec, stage};
        use lab::processes::{ManagedProcess, Program};
        use std::path::Path;
        let config = stage::StageConfig {
            a: "eth0".into(),
            b: "eth1".into(),
            mode: stage::Mode::Bridge,
            spec: ImpairSpec::parse_inline("loss=1%").unwrap(),
        };
        let p = ManagedProcess {
            lab: "x1".into(),
            node: "dut".into(),
            program: Program::Stage(config.clone()),
        };
        let cli = Cli::try_parse_from(p.argv(Path::new("wirebench"))).unwrap();
        let Command::Lab(LabArgs {
            command:
                LabCommand::Stage {
                    config: json,
                    state,
                    netns_file,
                },
        }) = cli.command
        else {
            panic!("not lab stage: {:?}", cli.command)
        };
        assert_eq!(
            serde_json::from_str::<stage::StageConfig>(&json).unwrap(),
            config
        );
        assert_eq!(state.as_deref(), Some(p.state_file().as_path()));
        assert_eq!(
            netns_file.as_deref(),
            Some(Path::new("/run/netns/wb-x1-dut"))
        );
        for fast in [true, false] {
            let relay = lab::relay::config::RelayConfig::from_toml(
                "[[stream]]\nname = \"s\"\nreplicate = { from = \"eth0\", to = [\"eth1\", \"eth2\"] }\n",
            )
            .unwrap();
            let p = ManagedProcess {
                lab: "x1".into(),
                node: "split".into(),
                program: Program::Relay {
                    config: relay.clone(),
                    fast,
                },
            };
            let cli = Cli::try_parse_from(p.argv(Path::new("wirebench"))).unwrap();
            let Command::Frer(FrerArgs {
                command: FrerCommand::Relay(a),
            }) = cli.command
            else {
                panic!("not frer relay: {:?}", cli.command)
            };
            let json = a.config_json.as_deref().unwrap();
            assert_eq!(
                serde_json::from_str::<lab::relay::config::RelayConfig>(json).unwrap(),
                relay
            );
            assert_eq!(a.state.as_deref(), Some(p.state_file().as_path()));
            assert_eq!(
                a.netns_file.as_deref(),
                Some(Path::new("/run/netns/wb-x1-split"))
            );
            assert_eq!(a.fast, fast);
        }
    }
}
