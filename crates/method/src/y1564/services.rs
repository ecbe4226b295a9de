//! A Y.1564 service list (TOML): each service's flow as a multi-stream profile writes a
//! stream (its ends, protocol, marking, ports), its frame sizes (a size, a list, or an
//! EMIX pattern), its bandwidth profile (CIR, EIR, and the colour mode: yellow frames
//! marked apart or not) and its service acceptance criteria. Errors name the service, the
//! key and the line.
//!
//! ```toml
//! line_rate = "1G"                  # the ports' rate (only for the generator's checks)
//! lab = "s1"                        # optional: the lab whose NODE:IFACE the ends name
//!
//! [[service]]
//! name = "voice"
//! source = "talker:eth0"            # as a stream's: IFACE, NODE:IFACE, HOST/IFACE
//! destination = "listener:eth0"
//! protocol = "udp"                  # optional; dscp, vlan, pcp, dst_ip, ports as a stream's
//! dscp = 46
//! emix = "abceg"                    # or size = 512, or size = [64, 1518]
//! cir = "20M"                       # L2 bit/s, frames with FCS
//! eir = "5M"                        # optional
//! yellow_dscp = 10                  # optional: the excess marked apart (colour-aware)
//! [service.sac]
//! flr = "0.1%"
//! ftd = "10ms"                      # mean one-way frame transfer delay, at most
//! fdv = "2ms"                       # frame delay variation (p99 - min), at most
//! availability = "99.9%"            # optional (default 99.9 %)
//! ir_tolerance = "1%"               # optional (default 1 %)
//! ```

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;
use wire::linerate::LineRate;

use super::{emix, EmixError, Profile, Sac};
use crate::streams::{
    line_of, stream_spec, ProfileError, SizeToml, StreamProblem, StreamSpec, StreamToml,
};
use model::units::{percent, percent_ratio, positive_rate_bps, rate_bps, time_us};

/// The marking of a service's excess (yellow) frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marking {
    /// DSCP.
    pub dscp: u8,
    /// 802.1Q priority (with the flow's VLAN tag).
    pub pcp: u8,
}

/// One checked service.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    /// Its flow: ends, protocol, green marking, frame sizes; its load is its CIR.
    pub flow: StreamSpec,
    /// How its yellow frames are marked (the green marking when colour-blind).
    pub yellow: Marking,
    /// CIR, EIR and the colour mode.
    pub profile: Profile,
    /// What every step must meet.
    pub sac: Sac,
}

impl Service {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.flow.name
    }
}

/// A checked service list.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceList {
    /// The services, in file order.
    pub services: Vec<Service>,
    /// The ports' rate (1 Gbit/s unless given).
    pub line_rate: LineRate,
    /// The lab whose `NODE:IFACE` the ends name, if the file says.
    pub lab: Option<String>,
}

/// What is wrong with a service list.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// TOML syntax, an unknown key or a value of the wrong type; the text names the line.
    #[error("{0}")]
    Syntax(String),
    /// No service.
    #[error("the list has no [[service]]")]
    NoServices,
    /// More services than run at once.
    #[error("at most 64 services")]
    TooMany,
    /// Two services of one name.
    #[error("two services are named '{0}'")]
    SameName(String),
    /// A line rate that is not a bit rate above zero.
    #[error("line {line}: line_rate '{value}' is not a bit rate (e.g. 1G)")]
    LineRate {
        /// Its line.
        line: usize,
        /// As written.
        value: String,
    },
    /// A flow key a stream would refuse (ends, protocol, marking, sizes, ports).
    #[error("service '{service}', line {line}: {problem}")]
    Flow {
        /// The service.
        service: String,
        /// The line of the value.
        line: usize,
        /// What is wrong, as a stream's.
        problem: StreamProblem,
    },
    /// A service's own key.
    #[error("service '{service}', line {line}: {problem}")]
    Service {
        /// The service.
        service: String,
        /// The line of the value.
        line: usize,
        /// What is wrong.
        problem: ServiceProblem,
    },
}

/// What is wrong with one of a service's own keys.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceProblem {
    /// Neither or both of `size` and `emix`.
    #[error("give the frame sizes once: size = 512 (or a list), or emix = \"abceg\"")]
    Sizes,
    /// An EMIX pattern that does not read.
    #[error("emix: {0}")]
    Emix(EmixError),
    /// A rate that is not one.
    #[error("{key} '{value}' is not a bit rate{above}")]
    Rate {
        /// `cir` or `eir`.
        key: &'static str,
        /// As written.
        value: String,
        /// What else it must be.
        above: &'static str,
    },
    /// A yellow DSCP above 63 or PCP above 7, or a PCP without a VLAN tag.
    #[error("{0}")]
    Yellow(&'static str),
    /// The burst tests are not run.
    #[error(
        "{0}: the CBS/EBS burst tests are not implemented; leave cbs and ebs out (the \
         service configuration and performance tests run without them)"
    )]
    Burst(&'static str),
    /// A SAC value that does not read.
    #[error("sac.{key} '{value}': {want}")]
    Sac {
        /// The key.
        key: &'static str,
        /// As written.
        value: String,
        /// What it must be.
        want: &'static str,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListToml {
    line_rate: Option<Spanned<String>>,
    lab: Option<String>,
    #[serde(default)]
    service: Vec<ServiceToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceToml {
    name: String,
    source: Spanned<String>,
    destination: Spanned<String>,
    protocol: Option<Spanned<String>>,
    size: Option<Spanned<SizeToml>>,
    emix: Option<Spanned<String>>,
    /// The IP MTU whose frame EMIX's `h` is (default 1500: 1518 bytes).
    mtu: Option<u32>,
    /// EMIX's `u`, bytes with FCS.
    user_size: Option<u32>,
    dscp: Option<Spanned<u8>>,
    vlan: Option<Spanned<u16>>,
    pcp: Option<Spanned<u8>>,
    dst_ip: Option<Spanned<String>>,
    dst_mac: Option<Spanned<String>>,
    src_port: Option<u16>,
    dst_port: Option<u16>,
    cir: Spanned<String>,
    eir: Option<Spanned<String>>,
    yellow_dscp: Option<Spanned<u8>>,
    yellow_pcp: Option<Spanned<u8>>,
    cbs: Option<Spanned<String>>,
    ebs: Option<Spanned<String>>,
    sac: Spanned<SacToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SacToml {
    flr: String,
    ftd: String,
    fdv: String,
    availability: Option<String>,
    ir_tolerance: Option<String>,
}

impl ServiceList {
    /// Parses and checks a service list.
    ///
    /// # Errors
    /// The first value that does not read or cannot run, named with its service, key and
    /// line.
    pub fn parse(text: &str) -> Result<Self, ServiceError> {
        let l: ListToml = toml::from_str(text)
            .map_err(|e| ServiceError::Syntax(e.to_string().trim().to_owned()))?;
        let at = |span: std::ops::Range<usize>| line_of(text, span);
        let line_rate =
            match &l.line_rate {
                Some(r) => LineRate(positive_rate_bps(r.get_ref()).ok_or_else(|| {
                    ServiceError::LineRate {
                        line: at(r.span()),
                        value: r.get_ref().clone(),
                    }
                })? as u64),
                None => LineRate(1_000_000_000),
            };
        if l.service.is_empty() {
            return Err(ServiceError::NoServices);
        }
        if l.service.len() > 64 {
            return Err(ServiceError::TooMany);
        }
        let mut services: Vec<Service> = Vec::new();
        for s in l.service {
            if services.iter().any(|x| x.name() == s.name) {
                return Err(ServiceError::SameName(s.name));
            }
            services.push(service(s, &at)?);
        }
        Ok(Self {
            services,
            line_rate,
            lab: l.lab,
        })
    }
}

/// One service checked.
fn service(
    s: ServiceToml,
    at: &dyn Fn(std::ops::Range<usize>) -> usize,
) -> Result<Service, ServiceError> {
    let name = s.name.clone();
    let bad = |span: std::ops::Range<usize>, problem| ServiceError::Service {
        service: name.clone(),
        line: at(span),
        problem,
    };
    for (key, v) in [("cbs", &s.cbs), ("ebs", &s.ebs)] {
        if let Some(v) = v {
            return Err(bad(v.span(), ServiceProblem::Burst(key)));
        }
    }
    let size = match (s.size, &s.emix) {
        (Some(size), None) => size,
        (None, Some(e)) => {
            let mtu_frame = s.mtu.unwrap_or(1500).saturating_add(18);
            let sizes = emix(e.get_ref(), mtu_frame.min(9018), s.user_size)
                .map_err(|err| bad(e.span(), ServiceProblem::Emix(err)))?;
            Spanned::new(
                e.span(),
                SizeToml::List(sizes.into_iter().map(u64::from).collect()),
            )
        }
        (Some(size), Some(_)) => return Err(bad(size.span(), ServiceProblem::Sizes)),
        (None, None) => return Err(bad(s.cir.span(), ServiceProblem::Sizes)),
    };
    let cir = positive_rate_bps(s.cir.get_ref()).ok_or_else(|| {
        bad(
            s.cir.span(),
            ServiceProblem::Rate {
                key: "cir",
                value: s.cir.get_ref().clone(),
                above: " above zero (e.g. 20M)",
            },
        )
    })?;
    let eir = match &s.eir {
        Some(e) => rate_bps(e.get_ref())
            .ok()
            .filter(|v| *v >= 0.0)
            .ok_or_else(|| {
                bad(
                    e.span(),
                    ServiceProblem::Rate {
                        key: "eir",
                        value: e.get_ref().clone(),
                        above: " (e.g. 5M, or 0)",
                    },
                )
            })?,
        None => 0.0,
    };
    let sac_span = s.sac.span();
    let sac = sac(s.sac.into_inner()).map_err(|p| bad(sac_span, p))?;
    let has_vlan = s.vlan.is_some();
    let yellow_dscp = s.yellow_dscp.as_ref().map(|d| (*d.get_ref(), d.span()));
    let yellow_pcp = s.yellow_pcp.as_ref().map(|p| (*p.get_ref(), p.span()));
    let flow = stream_spec(
        StreamToml {
            name: s.name,
            source: s.source,
            destination: s.destination,
            protocol: s.protocol,
            size,
            load: Spanned::new(s.cir.span(), s.cir.get_ref().clone()),
            dscp: s.dscp,
            vlan: s.vlan,
            pcp: s.pcp,
            dst_ip: s.dst_ip,
            dst_mac: s.dst_mac,
            src_port: s.src_port,
            dst_port: s.dst_port,
            start: None,
            stop: None,
            expect: None,
            tolerance: None,
        },
        1.0,
        at,
    )
    .map_err(|e| match e {
        ProfileError::Stream {
            stream,
            line,
            problem,
        } => ServiceError::Flow {
            service: stream,
            line,
            problem,
        },
        other => ServiceError::Syntax(other.to_string()),
    })?;
    if let Some((_, span)) = yellow_dscp.clone().filter(|(d, _)| *d > 63) {
        return Err(bad(span, ServiceProblem::Yellow("yellow_dscp: 0..=63")));
    }
    if let Some((p, span)) = yellow_pcp.clone() {
        if p > 7 {
            return Err(bad(span, ServiceProblem::Yellow("yellow_pcp: 0..=7")));
        }
        if !has_vlan {
            return Err(bad(
                span,
                ServiceProblem::Yellow("yellow_pcp needs a vlan tag (vlan = ID)"),
            ));
        }
    }
    let yellow = Marking {
        dscp: yellow_dscp.map_or(flow.dscp, |(d, _)| d),
        pcp: yellow_pcp.map_or(flow.pcp, |(p, _)| p),
    };
    // Marked apart, the network can tell the excess from the committed frames.
    let colour_aware = yellow.dscp != flow.dscp || yellow.pcp != flow.pcp;
    Ok(Service {
        flow,
        yellow,
        profile: Profile {
            cir_bps: cir,
            eir_bps: eir,
            colour_aware,
        },
        sac,
    })
}

/// The acceptance criteria.
fn sac(t: SacToml) -> Result<Sac, ServiceProblem> {
    let problem = |key, value: &str, want| ServiceProblem::Sac {
        key,
        value: value.to_owned(),
        want,
    };
    let time = |key, v: &str| {
        time_us(v)
            .map(|us| Duration::from_secs_f64(us / 1e6))
            .map_err(|_| problem(key, v, "a time with its unit, e.g. 10ms"))
    };
    let flr = percent_ratio(&t.flr)
        .ok()
        .filter(|r| (0.0..=1.0).contains(r))
        .ok_or_else(|| problem("flr", &t.flr, "a percentage, e.g. 0.1%"))?;
    let availability = match &t.availability {
        Some(a) => percent(a)
            .filter(|p| (0.0..=100.0).contains(p))
            .ok_or_else(|| problem("availability", a, "a percentage, e.g. 99.9%"))?,
        None => 99.9,
    };
    let ir_tolerance = match &t.ir_tolerance {
        Some(a) => percent_ratio(a)
            .ok()
            .filter(|r| (0.0..0.5).contains(r))
            .ok_or_else(|| problem("ir_tolerance", a, "a percentage below 50, e.g. 1%"))?,
        None => 0.01,
    };
    Ok(Sac {
        flr_max: flr,
        ftd_max: time("ftd", &t.ftd)?,
        fdv_max: time("fdv", &t.fdv)?,
        availability_min: availability,
        ir_tolerance,
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use model::units::FrameRate;

    const LIST: &str = r#"line_rate = "100M"
lab = "s1"

[[service]]
name = "voice"
source = "talker:eth0"
destination = "listener:eth0"
dscp = 46
emix = "abceg"
cir = "20M"
eir = "5M"
yellow_dscp = 10
[service.sac]
flr = "0.1%"
ftd = "10ms"
fdv = "2ms"

[[service]]
name = "data"
source = "talker:eth0"
destination = "listener:eth0"
size = 1518
cir = "8M"
[service.sac]
flr = "0%"
ftd = "20ms"
fdv = "5ms"
availability = "99.99%"
ir_tolerance = "2%"
"#;

    #[test]
    fn a_list_reads_flows_profiles_and_criteria() {
        let l = ServiceList::parse(LIST).unwrap();
        assert_eq!(
            (l.line_rate, l.lab.as_deref()),
            (LineRate(100_000_000), Some("s1"))
        );
        let v = &l.services[0];
        assert_eq!(v.name(), "voice");
        assert_eq!(v.flow.pattern, [64, 128, 256, 1024, 1518]);
        assert_eq!(v.flow.frame_label, "64,128,256,1024,1518");
        assert!((v.flow.mean_len() - 598.0).abs() < 1e-9);
        assert_eq!(v.flow.load, FrameRate::L2Bps(20e6));
        assert_eq!((v.flow.dscp, v.yellow.dscp), (46, 10));
        assert_eq!(
            v.profile,
            Profile {
                cir_bps: 20e6,
                eir_bps: 5e6,
                colour_aware: true
            }
        );
        assert_eq!(v.sac.flr_max, 0.001);
        assert_eq!(v.sac.ftd_max, Duration::from_millis(10));
        assert_eq!((v.sac.availability_min, v.sac.ir_tolerance), (99.9, 0.01));
        let d = &l.services[1];
        assert_eq!(d.flow.pattern, [1518]);
        // No yellow marking of its own: colour-blind.
        assert!(!d.profile.colour_aware);
        assert_eq!((d.profile.eir_bps, d.sac.flr_max), (0.0, 0.0));
        assert_eq!((d.sac.availability_min, d.sac.ir_tolerance), (99.99, 0.02));
    }

    #[test]
    fn errors_name_the_service_the_key_and_the_line() {
        let err = |from: &str, to: &str| {
            let text = LIST.replacen(from, to, 1);
            ServiceList::parse(&text).unwrap_err().to_string()
        };
        let cases = [
            (
                "emix = \"abceg\"",
                "emix = \"abxeg\"",
                "service 'voice', line 9: emix: EMIX letter 'x' (place 3)",
            ),
            (
                "emix = \"abceg\"",
                "emix = \"abceg\"\nsize = 64",
                "service 'voice', line 10: give the frame sizes once",
            ),
            (
                "cir = \"20M\"",
                "cir = \"fast\"",
                "service 'voice', line 10: cir 'fast'",
            ),
            (
                "eir = \"5M\"",
                "eir = \"5M\"\ncbs = \"12k\"",
                "line 12: cbs: the CBS/EBS burst tests are not implemented",
            ),
            (
                "yellow_dscp = 10",
                "yellow_dscp = 64",
                "line 12: yellow_dscp: 0..=63",
            ),
            (
                "yellow_dscp = 10",
                "yellow_pcp = 3",
                "line 12: yellow_pcp needs a vlan tag",
            ),
            (
                "dscp = 46",
                "dscp = 64",
                "service 'voice', line 8: dscp: 0..=63",
            ),
            (
                "flr = \"0.1%\"",
                "flr = \"lots\"",
                "sac.flr 'lots': a percentage",
            ),
            (
                "ftd = \"10ms\"",
                "ftd = \"10\"",
                "sac.ftd '10': a time with its unit",
            ),
            (
                "name = \"data\"",
                "name = \"voice\"",
                "two services are named 'voice'",
            ),
            (
                "lab = \"s1\"",
                "lab = \"s1\"\ncolour = 1",
                "unknown field `colour`",
            ),
        ];
        for (from, to, want) in cases {
            let e = err(from, to);
            assert!(e.contains(want), "{to}: {e}");
        }
        assert_eq!(
            ServiceList::parse("line_rate = \"1G\"\n").unwrap_err(),
            ServiceError::NoServices
        );
    }

    #[test]
    fn the_example_list_reads() {
        let text = include_str!("../../../../examples/y1564-two-services.toml");
        let l = ServiceList::parse(text).unwrap();
        let names: Vec<&str> = l.services.iter().map(Service::name).collect();
        assert_eq!(names, ["voice", "video"]);
        assert!(l.services[0].profile.colour_aware && !l.services[1].profile.colour_aware);
    }
}
