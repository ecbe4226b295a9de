//! Multi-stream profiles (the SmartBits/Spirent way of testing QoS): several streams, each
//! with its own source, destination, protocol, frame size, load and time window, run at
//! once; the analyzer prints per stream and in total what was sent, received and lost,
//! and checks each stream's received rate against an expectation.
//!
//! This module parses and checks a profile (TOML; errors name the stream, the key and the
//! line) and turns what the engine measured into the result table. It sends nothing.
//!
//! ```toml
//! duration = 10            # seconds, default for every stream's stop
//! line_rate = "1G"         # what % loads refer to
//!
//! [[stream]]
//! name = "udp"
//! source = "talker:eth0"           # IFACE, NODE:IFACE, or wirebench://HOST[:PORT]
//!                                  # (UDP through a wirebench server, one frame size)
//! destination = "listener:eth0"    # where it is counted
//! protocol = "udp"                 # udp, tcp, icmp, or an EtherType like "0x88b5"
//! size = 1518                      # bytes with FCS; or [64, 512, 1518] cycled; or "imix"
//! load = "100%"                    # % of line rate, L2 bit/s ("10M") or frames/s ("5kpps")
//! dscp = 46                        # optional; vlan = 100 and pcp = 5 add a tag
//! start = 0.0                      # optional offsets, seconds
//! stop = 10.0
//! expect = "10M"                   # optional: expected received L2 bit/s
//! tolerance = "2%"                 # of the expectation, default 2 %
//! ```

use model::units::{frame_rate, percent, positive_rate_bps, FrameRate};
use serde::Deserialize;
use toml::Spanned;
use wire::linerate::LineRate;

use model::results::profile::{ProfileReport, StreamRow};
use model::results::Verdict;
use model::units::bps;

use crate::trial::TrialData;

/// Something that runs every stream of a multi-stream profile at once.
pub trait StreamsTrial {
    /// Why the streams could not run.
    type Error;
    /// Runs the profile: one [`TrialData`] per stream, in profile order.
    fn run(&mut self, profile: &Profile) -> Result<StreamsData, Self::Error>;
}

/// What a [`StreamsTrial`] measured.
#[derive(Debug, Clone, Default)]
pub struct StreamsData {
    /// Per stream, in profile order.
    pub streams: Vec<TrialData>,
    /// Frames a receiving socket dropped before they were counted.
    pub rx_drops: u64,
    /// The backends used, e.g. `talker:eth0: xdp`.
    pub backends: Vec<String>,
    /// The raw streams' interval rows (per stream, then their sum).
    pub intervals: Vec<model::results::IntervalRow>,
    /// What a reader must know of how the streams ran (figures a source could not give).
    pub notes: Vec<String>,
    /// Per stream (in profile order, where counted), its frames that arrived at listening
    /// ports other than its destination: (port, what arrived there).
    pub strays: Vec<Vec<(String, TrialData)>>,
}

/// The simple IMIX: 64, 594 and 1518-byte frames in the ratio 7:4:1 (mean 361.8 bytes).
pub const IMIX: [(u64, usize); 3] = [(64, 7), (594, 4), (1518, 1)];

/// A frame size setting.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum SizeToml {
    One(u64),
    List(Vec<u64>),
    Name(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamToml {
    pub(crate) name: String,
    pub(crate) source: Spanned<String>,
    pub(crate) destination: Spanned<String>,
    pub(crate) protocol: Option<Spanned<String>>,
    pub(crate) size: Spanned<SizeToml>,
    pub(crate) load: Spanned<String>,
    pub(crate) dscp: Option<Spanned<u8>>,
    pub(crate) vlan: Option<Spanned<u16>>,
    pub(crate) pcp: Option<Spanned<u8>>,
    pub(crate) dst_ip: Option<Spanned<String>>,
    pub(crate) dst_mac: Option<Spanned<String>>,
    pub(crate) src_port: Option<u16>,
    pub(crate) dst_port: Option<u16>,
    pub(crate) start: Option<Spanned<f64>>,
    pub(crate) stop: Option<Spanned<f64>>,
    pub(crate) expect: Option<Spanned<String>>,
    pub(crate) tolerance: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileToml {
    duration: Option<Spanned<f64>>,
    line_rate: Option<Spanned<String>>,
    lab: Option<String>,
    #[serde(default)]
    stream: Vec<StreamToml>,
}

/// What a stream carries above Ethernet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamProto {
    /// UDP datagrams.
    Udp,
    /// TCP segments (crafted, no connection).
    Tcp,
    /// ICMP echo requests.
    Icmp,
    /// Raw frames of this EtherType, the test header right after it.
    EtherType(u16),
}

impl StreamProto {
    /// Name for tables.
    pub fn label(self) -> String {
        match self {
            StreamProto::Udp => "udp".into(),
            StreamProto::Tcp => "tcp".into(),
            StreamProto::Icmp => "icmp".into(),
            StreamProto::EtherType(t) => format!("0x{t:04x}"),
        }
    }
}

/// One checked stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSpec {
    /// Name.
    pub name: String,
    /// Sending interface (IFACE or NODE:IFACE).
    pub source: String,
    /// Receiving interface.
    pub destination: String,
    /// Protocol.
    pub protocol: StreamProto,
    /// Frame sizes in sending order, cycled.
    pub pattern: Vec<u64>,
    /// How the sizes were given.
    pub frame_label: String,
    /// Load.
    pub load: FrameRate,
    /// DSCP.
    pub dscp: u8,
    /// 802.1Q VID, if tagged.
    pub vlan: Option<u16>,
    /// 802.1Q priority.
    pub pcp: u8,
    /// Destination IP, if given.
    pub dst_ip: Option<std::net::IpAddr>,
    /// Destination MAC, if given.
    pub dst_mac: Option<[u8; 6]>,
    /// UDP/TCP ports.
    pub src_port: u16,
    /// UDP/TCP destination port.
    pub dst_port: u16,
    /// Start offset, s.
    pub start: f64,
    /// Stop offset, s.
    pub stop: f64,
    /// Expected received L2 bit/s.
    pub expect_bps: Option<f64>,
    /// Tolerance ratio.
    pub tolerance: f64,
}

impl StreamSpec {
    /// Mean frame size of the pattern, bytes with FCS.
    pub fn mean_len(&self) -> f64 {
        self.pattern.iter().sum::<u64>() as f64 / self.pattern.len().max(1) as f64
    }

    /// Frames/s of this stream on a link of `line`: a % load counts the L1 size of the
    /// mean frame (preamble and gap included), an L2 rate the mean frame.
    pub fn fps(&self, line: LineRate) -> f64 {
        self.load.fps_mean(self.mean_len(), line)
    }
}

/// A checked profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Streams, in file order (stream ids 1, 2, …).
    pub streams: Vec<StreamSpec>,
    /// Line rate of % loads.
    pub line_rate: LineRate,
    /// Lab whose nodes NODE:IFACE names (default `lab`).
    pub lab: Option<String>,
    /// Run length: the latest stop.
    pub duration: f64,
}

/// A profile that does not parse or cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// TOML syntax, an unknown key or a value of the wrong type; the text names the line.
    #[error("{0}")]
    Syntax(String),
    /// A duration outside (0, 86400] s.
    #[error("line {line}: duration must be between 0 and 86400 s")]
    Duration {
        /// Its line.
        line: usize,
    },
    /// A line rate that is not a bit rate above zero.
    #[error("line {line}: line_rate '{value}' is not a bit rate (e.g. 1G)")]
    LineRate {
        /// Its line.
        line: usize,
        /// The value as written.
        value: String,
    },
    /// No stream.
    #[error("the profile has no [[stream]]")]
    NoStreams,
    /// More streams than a profile runs.
    #[error("at most 250 streams")]
    TooManyStreams,
    /// Two streams of one name.
    #[error("two streams are named '{0}'")]
    SameName(String),
    /// A stream with a value that cannot run.
    #[error("stream '{stream}', line {line}: {problem}")]
    Stream {
        /// The stream's name.
        stream: String,
        /// The line of the value.
        line: usize,
        /// What is wrong with it.
        problem: StreamProblem,
    },
}

/// What is wrong with one value of a stream.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamProblem {
    /// Not a protocol the generator writes.
    #[error("protocol '{0}': use udp, tcp, icmp or an EtherType like 0x88b5")]
    Protocol(String),
    /// Not a size, a list of up to 64 sizes or `imix`.
    #[error("size: a frame size, a list of up to 64 sizes, or \"imix\"")]
    Size,
    /// A frame size outside 64..=9018.
    #[error("size {0}: frame sizes are 64..=9018 bytes with FCS")]
    SizeOutOfRange(u64),
    /// A load that is no frame rate.
    #[error(
        "load '{0}': use a % of line rate (\"50%\"), L2 bit/s (\"10M\") or frames/s (\"5kpps\")"
    )]
    Load(String),
    /// A DSCP above 63.
    #[error("dscp: 0..=63")]
    Dscp,
    /// A VLAN id above 4094.
    #[error("vlan: 0..=4094")]
    Vlan,
    /// A priority above 7.
    #[error("pcp: 0..=7")]
    Pcp,
    /// A priority without a VLAN tag to carry it.
    #[error("pcp needs a vlan tag (vlan = ID)")]
    PcpWithoutVlan,
    /// Not an IP address.
    #[error("dst_ip '{0}' is not an IP address")]
    DstIp(String),
    /// Not a MAC address.
    #[error("dst_mac '{0}' is not a MAC address")]
    DstMac(String),
    /// Start and stop out of order or range.
    #[error("start {start} s / stop {stop} s: need 0 <= start < stop")]
    StartStop {
        /// Start, s.
        start: f64,
        /// Stop, s.
        stop: f64,
    },
    /// An expected rate that is no bit rate above zero.
    #[error("expect '{0}' is not a bit rate (e.g. 10M)")]
    Expect(String),
    /// A tolerance that is no percentage below 100.
    #[error("tolerance '{0}': a percentage like \"2%\"")]
    Tolerance(String),
    /// An empty source or destination (`source`, `destination`).
    #[error("{0} is empty")]
    Empty(&'static str),
}

pub(crate) fn line_of(text: &str, span: std::ops::Range<usize>) -> usize {
    text[..span.start.min(text.len())].matches('\n').count() + 1
}

/// One stream's table checked against the profile's `duration` (its default stop); `at`
/// gives the line of a span. Errors name the stream, the key and the line.
pub(crate) fn stream_spec(
    s: StreamToml,
    duration: f64,
    at: &dyn Fn(std::ops::Range<usize>) -> usize,
) -> Result<StreamSpec, ProfileError> {
    let name = s.name.clone();
    let bad = |span: std::ops::Range<usize>, problem: StreamProblem| ProfileError::Stream {
        stream: name.clone(),
        line: at(span),
        problem,
    };
    let protocol = match s.protocol.as_ref() {
        None => StreamProto::Udp,
        Some(p) => match p.get_ref().as_str() {
            "udp" => StreamProto::Udp,
            "tcp" => StreamProto::Tcp,
            "icmp" => StreamProto::Icmp,
            other => match other
                .strip_prefix("0x")
                .and_then(|h| u16::from_str_radix(h, 16).ok())
            {
                Some(t) if t >= 0x0600 => StreamProto::EtherType(t),
                _ => return Err(bad(p.span(), StreamProblem::Protocol(other.to_owned()))),
            },
        },
    };
    let (pattern, frame_label) = match s.size.get_ref() {
        SizeToml::One(n) => (vec![*n], n.to_string()),
        SizeToml::List(l) if !l.is_empty() && l.len() <= 64 => (
            l.clone(),
            l.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
        ),
        SizeToml::Name(n) if n.eq_ignore_ascii_case("imix") => (
            IMIX.iter()
                .flat_map(|(len, n)| std::iter::repeat_n(*len, *n))
                .collect(),
            "imix".into(),
        ),
        _ => return Err(bad(s.size.span(), StreamProblem::Size)),
    };
    if let Some(bad_len) = pattern.iter().find(|l| !(64..=9018).contains(*l)) {
        return Err(bad(s.size.span(), StreamProblem::SizeOutOfRange(*bad_len)));
    }
    let load = frame_rate(s.load.get_ref())
        .map_err(|_| bad(s.load.span(), StreamProblem::Load(s.load.get_ref().clone())))?;
    let dscp = match &s.dscp {
        Some(d) if *d.get_ref() > 63 => return Err(bad(d.span(), StreamProblem::Dscp)),
        Some(d) => *d.get_ref(),
        None => 0,
    };
    let vlan = match &s.vlan {
        Some(v) if *v.get_ref() > 4094 => return Err(bad(v.span(), StreamProblem::Vlan)),
        v => v.as_ref().map(|v| *v.get_ref()),
    };
    let pcp = match &s.pcp {
        Some(p) if *p.get_ref() > 7 => return Err(bad(p.span(), StreamProblem::Pcp)),
        Some(p) if vlan.is_none() => return Err(bad(p.span(), StreamProblem::PcpWithoutVlan)),
        p => p.as_ref().map_or(0, |p| *p.get_ref()),
    };
    let dst_ip = match &s.dst_ip {
        Some(ip) => Some(
            ip.get_ref()
                .parse()
                .map_err(|_| bad(ip.span(), StreamProblem::DstIp(ip.get_ref().clone())))?,
        ),
        None => None,
    };
    let dst_mac = match &s.dst_mac {
        Some(m) => Some(
            wire::EthernetAddress::parse_str(m.get_ref())
                .map(|a| a.0)
                .ok_or_else(|| bad(m.span(), StreamProblem::DstMac(m.get_ref().clone())))?,
        ),
        None => None,
    };
    let start = s.start.as_ref().map_or(0.0, |x| *x.get_ref());
    let stop = s.stop.as_ref().map_or(duration, |x| *x.get_ref());
    if !(start >= 0.0 && stop > start && stop <= 86_400.0) {
        let span = s
            .stop
            .as_ref()
            .or(s.start.as_ref())
            .map(|x| x.span())
            .unwrap_or(s.load.span());
        return Err(bad(span, StreamProblem::StartStop { start, stop }));
    }
    let expect_bps = match &s.expect {
        Some(e) => Some(
            positive_rate_bps(e.get_ref())
                .ok_or_else(|| bad(e.span(), StreamProblem::Expect(e.get_ref().clone())))?,
        ),
        None => None,
    };
    let tolerance = match &s.tolerance {
        Some(t) => {
            percent(t.get_ref())
                .filter(|v| (0.0..100.0).contains(v))
                .ok_or_else(|| bad(t.span(), StreamProblem::Tolerance(t.get_ref().clone())))?
                / 100.0
        }
        None => 0.02,
    };
    for (what, v) in [("source", &s.source), ("destination", &s.destination)] {
        if v.get_ref().trim().is_empty() {
            return Err(bad(v.span(), StreamProblem::Empty(what)));
        }
    }
    Ok(StreamSpec {
        name,
        source: s.source.get_ref().clone(),
        destination: s.destination.get_ref().clone(),
        protocol,
        pattern,
        frame_label,
        load,
        dscp,
        vlan,
        pcp,
        dst_ip,
        dst_mac,
        src_port: s.src_port.unwrap_or(49184),
        dst_port: s.dst_port.unwrap_or(7),
        start,
        stop,
        expect_bps,
        tolerance,
    })
}

impl Profile {
    /// Parses and checks a profile. Errors name the stream, the key and the line.
    ///
    /// # Errors
    /// The first value that does not parse or cannot run.
    pub fn parse(text: &str) -> Result<Self, ProfileError> {
        let p: ProfileToml = toml::from_str(text)
            .map_err(|e| ProfileError::Syntax(e.to_string().trim().to_owned()))?;
        let at = |span: std::ops::Range<usize>| line_of(text, span);
        let duration = match &p.duration {
            Some(d)
                if !(d.get_ref().is_finite() && *d.get_ref() > 0.0 && *d.get_ref() <= 86_400.0) =>
            {
                return Err(ProfileError::Duration { line: at(d.span()) })
            }
            Some(d) => *d.get_ref(),
            None => 10.0,
        };
        let line_rate =
            match &p.line_rate {
                Some(l) => LineRate(positive_rate_bps(l.get_ref()).ok_or_else(|| {
                    ProfileError::LineRate {
                        line: at(l.span()),
                        value: l.get_ref().clone(),
                    }
                })? as u64),
                None => LineRate(1_000_000_000),
            };
        if p.stream.is_empty() {
            return Err(ProfileError::NoStreams);
        }
        if p.stream.len() > 250 {
            return Err(ProfileError::TooManyStreams);
        }
        let mut streams = Vec::new();
        for s in p.stream {
            if streams.iter().any(|x: &StreamSpec| x.name == s.name) {
                return Err(ProfileError::SameName(s.name));
            }
            streams.push(stream_spec(s, duration, &at)?);
        }
        let duration = streams.iter().map(|s| s.stop).fold(0.0, f64::max);
        Ok(Profile {
            streams,
            line_rate,
            lab: p.lab,
            duration,
        })
    }
}

/// Received L2 bit/s (frames with FCS): over the receive span when there is one (n frames
/// span n − 1 gaps), else over the sending time.
pub fn received_l2_bps(m: &TrialData) -> f64 {
    let received = m.counters.received;
    let fcs_bits = 4.0 * 8.0 * received as f64;
    let span = m.rx_span.map(|s| s.as_secs_f64());
    let (bits, secs) = match span.filter(|s| *s > 0.0 && received > 1) {
        Some(span) => {
            let per_frame = (m.received_bytes as f64 * 8.0 + fcs_bits) / received as f64;
            (per_frame * (received - 1) as f64, span)
        }
        None => (
            m.received_bytes as f64 * 8.0 + fcs_bits,
            m.duration.as_secs_f64(),
        ),
    };
    if secs > 0.0 {
        bits / secs
    } else {
        0.0
    }
}

/// What running a profile gives: the table, one verdict per stream with an expectation,
/// the notes a reader must see, and the backends used.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The table.
    pub report: ProfileReport,
    /// Received rate against the expectation, per stream that has one.
    pub verdicts: Vec<Verdict>,
    /// Generator limits, frames dropped before they were counted.
    pub notes: Vec<String>,
    /// The backends, e.g. `talker:eth0: xdp, listener:eth0: ring`.
    pub backend: String,
    /// The raw streams' interval rows.
    pub intervals: Vec<model::results::IntervalRow>,
}

/// Runs every stream of `profile` at once on `trial`, then builds the table, checks each
/// expectation and says what bounds the figures.
///
/// # Errors
/// The runner's, when the streams could not run.
pub fn run<T: StreamsTrial>(profile: &Profile, trial: &mut T) -> Result<Outcome, T::Error> {
    let data = trial.run(profile)?;
    let report = report(profile, &data.streams, data.rx_drops);
    let mut verdicts = Vec::new();
    let mut notes = data.notes.clone();
    for row in &report.rows {
        if let (Some(e), Some(p), Some(t)) = (row.expected_l2_bps, row.passed, row.tolerance) {
            verdicts.push(Verdict {
                name: format!("stream {} received rate", row.name),
                passed: p,
                detail: format!(
                    "{} of L2 frames, expected {} ± {:.1} %",
                    bps(row.received_l2_bps),
                    bps(e),
                    t * 100.0
                ),
                marginal: false,
            });
        }
        if row.generator_limited {
            notes.push(format!(
                "stream {}: the generator fell behind its schedule; its figures measure the tool",
                row.name
            ));
        }
    }
    if data.rx_drops > 0 {
        notes.push(format!(
            "{} frames were dropped by a receiving socket before they were counted: losses include the tool's",
            data.rx_drops
        ));
    }
    Ok(Outcome {
        report,
        verdicts,
        notes,
        backend: data.backends.join(", "),
        intervals: data.intervals,
    })
}

/// The result table: one row per stream (expectations checked), the totals, and the frames
/// the receivers dropped before counting them.
pub fn report(profile: &Profile, measured: &[TrialData], receiver_drops: u64) -> ProfileReport {
    let line = profile.line_rate;
    let mut rows = Vec::new();
    for (s, m) in profile.streams.iter().zip(measured) {
        let rx_bps = received_l2_bps(m);
        let fps = s.fps(line);
        let passed = s.expect_bps.map(|e| (rx_bps - e).abs() <= e * s.tolerance);
        let c = m.counters;
        let lost = c.sent.saturating_sub(c.received);
        rows.push(StreamRow {
            name: s.name.clone(),
            source: s.source.clone(),
            destination: s.destination.clone(),
            protocol: s.protocol.label(),
            frame: s.frame_label.clone(),
            mean_frame_len: s.mean_len(),
            load_percent: fps * 8.0 * (s.mean_len() + 20.0) / line.0 as f64 * 100.0,
            target_fps: fps,
            sent: c.sent,
            received: c.received,
            lost,
            loss_ratio: m.loss_ratio(),
            duplicates: c.duplicates,
            reordered: c.reordered,
            received_l2_bps: rx_bps,
            active_s: m.duration.as_secs_f64(),
            generator_limited: m.generator_limited,
            latency: m.latency.as_ref().and_then(|h| h.summary()),
            expected_l2_bps: s.expect_bps,
            tolerance: s.expect_bps.map(|_| s.tolerance),
            passed,
        });
    }
    ProfileReport {
        line_rate_bps: line.0,
        total_sent: rows.iter().map(|r| r.sent).sum(),
        total_received: rows.iter().map(|r| r.received).sum(),
        total_received_l2_bps: rows.iter().map(|r| r.received_l2_bps).sum(),
        rows,
        receiver_drops,
        drops: None,
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const TWO: &str = r#"
duration = 5
line_rate = "1G"

[[stream]]
name = "udp"
source = "talker:eth0"
destination = "listener:eth0"
protocol = "udp"
size = 1518
load = "100%"
expect = "10M"

[[stream]]
name = "tcp"
source = "talker:eth0"
destination = "listener:eth0"
protocol = "tcp"
size = [64, 512, 1518]
load = "40M"
dscp = 10
start = 1
stop = 4
tolerance = "3%"
"#;

    #[test]
    fn a_profile_parses_with_defaults() {
        let p = Profile::parse(TWO).unwrap();
        assert_eq!(p.streams.len(), 2);
        assert_eq!(p.duration, 5.0);
        let u = &p.streams[0];
        assert_eq!((u.start, u.stop, u.tolerance), (0.0, 5.0, 0.02));
        assert_eq!(u.pattern, [1518]);
        // 100 % of 1G at 1518 bytes: 81,274 frames/s.
        assert!((u.fps(p.line_rate) - 81_274.38).abs() < 0.01);
        let t = &p.streams[1];
        assert_eq!(t.protocol, StreamProto::Tcp);
        assert_eq!(t.frame_label, "64,512,1518");
        assert_eq!((t.start, t.stop, t.tolerance, t.dscp), (1.0, 4.0, 0.03, 10));
        // 40 Mbit/s of L2 frames of mean 698 bytes.
        assert!((t.fps(p.line_rate) - 40e6 / (8.0 * 698.0)).abs() < 1e-6);
    }

    #[test]
    fn imix_and_size_cycling() {
        let p = Profile::parse(
            "[[stream]]\nname = \"i\"\nsource = \"a\"\ndestination = \"b\"\nsize = \"imix\"\nload = \"1kpps\"\n",
        )
        .unwrap();
        let s = &p.streams[0];
        assert_eq!(s.pattern.len(), 12);
        assert_eq!(s.pattern.iter().filter(|l| **l == 64).count(), 7);
        assert_eq!(s.pattern.iter().filter(|l| **l == 594).count(), 4);
        assert!((s.mean_len() - 361.833).abs() < 0.001);
        assert_eq!(s.fps(p.line_rate), 1000.0);
    }

    #[test]
    fn errors_name_the_stream_the_key_and_the_line() {
        let cases = [
            (
                TWO.replace("load = \"40M\"", "load = \"lots\""),
                "stream 'tcp', line 20: load 'lots'",
            ),
            (
                TWO.replace("size = 1518", "size = 40"),
                "stream 'udp', line 10: size 40",
            ),
            (
                TWO.replace("protocol = \"tcp\"", "protocol = \"sctp\""),
                "line 18: protocol 'sctp'",
            ),
            (TWO.replace("dscp = 10", "dscp = 99"), "line 21: dscp"),
            (
                TWO.replace("stop = 4", "stop = 0.5"),
                "need 0 <= start < stop",
            ),
            (
                TWO.replace("expect = \"10M\"", "expect = \"fast\""),
                "line 12: expect 'fast'",
            ),
            (
                TWO.replace("tolerance = \"3%\"", "tolerance = \"x\""),
                "tolerance 'x'",
            ),
            (TWO.replace("dscp = 10", "pcp = 3"), "pcp needs a vlan tag"),
            (
                TWO.replace("name = \"tcp\"", "name = \"udp\""),
                "two streams are named 'udp'",
            ),
            (
                TWO.replace("dscp = 10", "colour = 3"),
                "unknown field `colour`",
            ),
            ("duration = 5\n".to_owned(), "no [[stream]]"),
        ];
        for (text, needle) in cases {
            let e = Profile::parse(&text).unwrap_err().to_string();
            assert!(e.contains(needle), "want {needle:?} in: {e}");
        }
        let e = Profile::parse(&TWO.replace("dscp = 10", "colour = 3"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 21"), "{e}");
    }

    #[test]
    fn errors_name_the_stream_and_line_in_the_same_words() {
        let e = Profile::parse(&TWO.replace("dscp = 10", "dscp = 99")).unwrap_err();
        assert_eq!(
            e,
            ProfileError::Stream {
                stream: "tcp".into(),
                line: 21,
                problem: StreamProblem::Dscp
            }
        );
        assert_eq!(e.to_string(), "stream 'tcp', line 21: dscp: 0..=63");
        let e = Profile::parse(&TWO.replace("stop = 4", "stop = 0.5")).unwrap_err();
        assert!(
            e.to_string()
                .ends_with(": start 1 s / stop 0.5 s: need 0 <= start < stop"),
            "{e}"
        );
        assert_eq!(
            Profile::parse("duration = 5\n"),
            Err(ProfileError::NoStreams)
        );
    }

    /// What a stream of `len`-byte frames (without FCS) sent and received in `secs`.
    fn sent(sent: u64, received: u64, len: u64, secs: f64) -> TrialData {
        TrialData {
            counters: model::stats::Counters {
                received,
                ..Default::default()
            }
            .settle(sent),
            received_bytes: received * len,
            duration: std::time::Duration::from_secs_f64(secs),
            ..TrialData::default()
        }
    }

    #[test]
    fn the_report_checks_expectations_and_adds_up() {
        let p = Profile::parse(TWO).unwrap();
        let m = [
            // 4,117 frames of 1514 bytes (+4 FCS) in 5 s: 9.999 Mbit/s.
            sent(406_372, 4_117, 1514, 5.0),
            sent(21_490, 21_490, 694, 3.0),
        ];
        let r = report(&p, &m, 0);
        let udp = &r.rows[0];
        assert!(
            (udp.received_l2_bps - 9_999_369.6).abs() < 1.0,
            "{}",
            udp.received_l2_bps
        );
        assert_eq!(udp.passed, Some(true));
        assert_eq!(udp.lost, 406_372 - 4_117);
        assert!((udp.load_percent - 100.0).abs() < 1e-9);
        assert_eq!(r.rows[1].passed, None, "no expectation, no verdict");
        assert_eq!(r.total_sent, 406_372 + 21_490);
        assert_eq!(r.total_received, 4_117 + 21_490);
        let m2 = [sent(10, 3000, 1514, 5.0), m[1].clone()];
        assert_eq!(report(&p, &m2, 0).rows[0].passed, Some(false));
    }
}
