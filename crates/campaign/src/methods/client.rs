//! `client`: a TCP or UDP throughput test against a wirebench server (or a stock iperf3
//! with `--iperf3`), as iperf3 runs it. The run itself is [`crate::jobs::client`].

use engine::frameio::Endpoint;
use model::results::figures::{figures, Figure};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::request::ClientRequest;
use crate::{Error, Watch};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use model::spec::{Direction, Protocol, Rate, TcpOptions, TestSpec, UdpBackend};
use model::units;

use super::args::{server, usage, Target};
use crate::request::{Connect, IpFamily};

/// The `client` method.
pub struct Client;

impl Method for Client {
    type Request = ClientRequest;
    type Args = ClientArgs;

    fn request(&self, a: &ClientArgs) -> Result<Self::Request, Error> {
        client(a)
    }

    fn json(&self, a: &ClientArgs) -> bool {
        a.target.json
    }

    fn estimate(&self, req: &ClientRequest) -> Option<std::time::Duration> {
        // `-O` warms up before the measured time; `-n` bounds a test by bytes, its
        // duration then being the longest it may take.
        Some(req.spec.duration + req.spec.omit.unwrap_or_default() + super::method::TRIAL_SETUP)
    }

    fn kind(&self) -> &'static str {
        "client"
    }

    fn needs_server(&self, _args: &[String]) -> bool {
        true
    }

    /// In a plan, a test without `-i` reports at a tenth of its time (1 s at most), so a
    /// short test's time series has points enough to show a shape.
    fn argv(&self, a: &mut super::method::Argv<'_>) {
        a.push(&["client"]);
        a.server();
        if !(a.has("-i") || a.has("--interval")) {
            let time = a
                .args
                .iter()
                .position(|w| w == "-t" || w == "--time")
                .and_then(|i| a.args.get(i + 1))
                .and_then(|t| model::units::seconds(t).ok())
                .unwrap_or(Duration::from_secs(10));
            let every = (time.as_secs_f64() / 10.0).clamp(0.01, 1.0);
            a.push(&["-i", &model::units::secs(every)]);
        }
    }

    fn run(
        &self,
        req: &ClientRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::client(req, watch, stop)
    }

    fn sides(&self, req: &ClientRequest) -> Vec<(String, Endpoint)> {
        crate::jobs::server_side(&req.server)
    }

    fn text(&self, _req: &ClientRequest, r: &RunResult, unit: Option<Fixed>) -> String {
        report::text::client_summary_in(r, unit)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::StopTwiceExits
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &[
            shared::RECEIVED_BPS,
            shared::LOSS,
            shared::LATENCY[0],
            shared::LATENCY[1],
            shared::LATENCY[2],
            shared::LATENCY[3],
        ]
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        figures(r)
    }
}

/// The UDP sender's way of sending.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BackendArg {
    /// GSO above 200 kpps or when unlimited, sendmmsg otherwise.
    Auto,
    /// One datagram per message, batched with sendmmsg.
    Sendmmsg,
    /// UDP generic segmentation offload.
    Gso,
}

/// `client`'s command line (iperf3's flags).
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// The server.
    #[command(flatten)]
    pub target: Target,
    /// UDP instead of TCP.
    #[arg(short, long)]
    pub udp: bool,
    /// The server is a stock iperf3 (`iperf3 -s`, port 5201 unless -p): speak its
    /// dialect; wirebench's own accounting still applies to what this side receives.
    #[arg(long)]
    pub iperf3: bool,
    /// Seconds to send (default 10; with -n or -k the longest the test may take, default
    /// 3600).
    #[arg(short, long, value_parser = units::seconds)]
    pub time: Option<Duration>,
    /// Rate per stream in bits/s (k/M/G suffixes); 0 = unlimited. UDP default 1M, TCP unlimited.
    #[arg(short, long, value_parser = units::rate_bps)]
    pub bitrate: Option<f64>,
    /// Rate per stream in packets (datagrams or writes) per second, instead of -b.
    #[arg(long, conflicts_with = "bitrate")]
    pub pps: Option<f64>,
    /// Payload bytes per datagram (UDP, default 1472) or per write (TCP, default 128k).
    #[arg(short, long, value_parser = units::size_bytes)]
    pub length: Option<usize>,
    /// Parallel streams.
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=128))]
    pub parallel: u8,
    /// Reverse: the server sends, the client receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// Seconds between interval reports (0 = none).
    #[arg(short, long, default_value = "1")]
    pub interval: f64,
    /// The two hosts' clocks are synchronised (PTP): report one-way latency across hosts.
    #[arg(long, conflicts_with = "round_trip")]
    pub synced_clocks: bool,
    /// Measure round-trip latency from echoed probes even when the clocks are shared.
    #[arg(long)]
    pub round_trip: bool,
    /// UDP send path.
    #[arg(long, value_enum, default_value = "auto")]
    pub udp_backend: BackendArg,
    /// DSCP value for data packets (0-63).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=63))]
    pub dscp: Option<u8>,
    /// Socket buffer size, bytes (k/M suffixes).
    #[arg(short = 'w', long, value_parser = units::size_bytes)]
    pub window: Option<usize>,
    /// Pin the client's data threads to CPU N and, with N,M, the server's to CPU M.
    #[arg(short = 'A', long, value_parser = units::cpu_pair)]
    pub affinity: Option<(u16, Option<u16>)>,
    /// The layout of -J: wirebench's own document, or iperf3's (`iperf3 -J`'s keys and
    /// units, for the scripts and dashboards that read it).
    #[arg(long, value_enum, default_value = "wirebench", requires = "json")]
    pub json_format: JsonFormat,
    /// One JSON object per event per line as the test runs (start, each interval, end), as
    /// iperf3 3.17's --json-stream (with or without -J, as iperf3 takes it).
    #[arg(long)]
    pub json_stream: bool,
    /// Bytes to send in all, shared by the streams (k/M/G suffixes, powers of 1024), instead
    /// of a time; -t is then the longest the test may take (default 3600 s).
    #[arg(short = 'n', long = "bytes", value_parser = units::size_bytes, conflicts_with = "blockcount")]
    pub bytes: Option<usize>,
    /// Blocks (-l bytes each) to send in all, instead of a time.
    #[arg(short = 'k', long)]
    pub blockcount: Option<u64>,
    /// TCP: a warm-up of this many seconds before the -t measured (slow start left out of
    /// the figures); the test takes both.
    #[arg(short = 'O', long, value_parser = units::seconds)]
    pub omit: Option<Duration>,
    /// Only IPv4 addresses of the server's name.
    #[arg(short = '4', long = "version4", conflicts_with = "version6")]
    pub version4: bool,
    /// Only IPv6 addresses of the server's name.
    #[arg(short = '6', long = "version6")]
    pub version6: bool,
    /// Send from this local address.
    #[arg(short = 'B', long)]
    pub bind: Option<std::net::IpAddr>,
    /// Local port of the first data stream (the next streams take the following ports).
    #[arg(long)]
    pub cport: Option<u16>,
    /// TCP congestion control algorithm for the data connections, both ends (e.g. cubic,
    /// bbr; see /proc/sys/net/ipv4/tcp_available_congestion_control).
    #[arg(short = 'C', long)]
    pub congestion: Option<String>,
    /// TCP maximum segment size of the data connections, bytes.
    #[arg(short = 'M', long = "set-mss")]
    pub mss: Option<u32>,
    /// TCP_NODELAY on the data connections (no Nagle delay).
    #[arg(short = 'N', long = "no-delay")]
    pub no_delay: bool,
    /// Zero copy: TCP senders (both ends) send with sendfile from one in-memory block.
    #[arg(short = 'Z', long)]
    pub zerocopy: bool,
    /// Rates and amounts in one unit, named as iperf3 names them: k, m, g, t (Kbits/sec ...
    /// Tbits/sec) or K, M, G, T (KBytes/sec ... TBytes/sec, powers of 1024).
    #[arg(short = 'f', long, value_parser = units::Fixed::parse)]
    pub format: Option<units::Fixed>,
    /// Put TITLE before every line of text, and into the JSON document.
    #[arg(short = 'T', long)]
    pub title: Option<String>,
    /// Write the output to FILE instead of standard output (appended, as iperf3 does).
    #[arg(long)]
    pub logfile: Option<PathBuf>,
    /// Start every line of text with the time (RFC 3339, UTC).
    #[arg(long)]
    pub timestamps: bool,
    /// Flush the output after every line (wirebench always does; taken for iperf3's
    /// command lines).
    #[arg(long)]
    pub forceflush: bool,
    /// Show what the server printed about the test (an iperf3 server's output; a wirebench
    /// server's figures are in the result already).
    #[arg(long)]
    pub get_server_output: bool,
    /// Give up connecting to the server after this many milliseconds (default 5000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub connect_timeout: Option<u64>,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: super::args::Repeat,
}

/// The layout of a client's JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JsonFormat {
    /// wirebench's result document (schema wirebench.result/1).
    Wirebench,
    /// iperf3's `-J` document.
    Iperf3,
}

/// `client`: iperf3's defaults (UDP 1472 bytes at 1 Mbit/s, TCP 128 KiB unlimited).
fn client(a: &ClientArgs) -> Result<ClientRequest, Error> {
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
            BackendArg::Auto => UdpBackend::Auto,
            BackendArg::Sendmmsg => UdpBackend::Sendmmsg,
            BackendArg::Gso => UdpBackend::Gso,
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
