//! `y1564`: Ethernet service activation as ITU-T Y.1564 describes it, over raw ports (lab
//! ports, this host's, or a server's lent ports) and over UDP through a server: per
//! service alone, the configuration test (CIR steps, CIR + EIR, traffic policing), then
//! every service at its CIR at once, the performance test, each judged against the
//! service's acceptance criteria (SAC).
//!
//! - [`run`]: each step and the performance test as a multi-stream profile
//!   (`jobs::streams`), their rows turned into Y.1564's figures;
//! - [`show`]: the tester's tables in a terminal and in the campaign report;
//! - [`request`], [`result`]: what a run is asked and what it found (its result part);
//! - here: the method's command line and figures.
//!
//! The service list, the steps and the verdicts are `method::y1564`'s; the burst tests
//! (CBS, EBS) are not run, and a list that asks for them is refused.

mod request;
mod result;
mod run;
mod show;

pub use request::Y1564Request;
pub use result::{part, Y1564Result, PART};

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use method::y1564::services::ServiceList;
use method::y1564::AvailabilityRule;
use model::results::figures::{Figure, Named, Unit};
use model::results::RunResult;
use model::stop::Stop;
use model::units::{self, Fixed};

use super::args::{backend, usage, FrameBackend, Repeat};
use super::method::{Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::{Error, Watch};

/// The `y1564` method.
pub struct Y1564;

const IR: Named = Named {
    name: "y1564_ir_bps",
    label: "information rate",
    unit: Unit::BitsPerSec,
    higher_is_better: true,
};
const FLR: Named = Named {
    name: "y1564_flr",
    label: "frame loss ratio",
    unit: Unit::Ratio,
    higher_is_better: false,
};
const FTD: Named = Named {
    name: "y1564_ftd",
    label: "frame transfer delay (mean)",
    unit: Unit::Micros,
    higher_is_better: false,
};
const FDV: Named = Named {
    name: "y1564_fdv",
    label: "frame delay variation",
    unit: Unit::Micros,
    higher_is_better: false,
};
const AVAILABILITY: Named = Named {
    name: "y1564_availability",
    label: "availability",
    unit: Unit::Ratio,
    higher_is_better: true,
};

const THRESHOLDS: [ThresholdMetric; 5] = [
    shared::named(IR),
    shared::named(FLR),
    shared::named(FTD),
    shared::named(FDV),
    shared::named(AVAILABILITY),
];

impl Method for Y1564 {
    type Request = Box<Y1564Request>;
    type Args = Y1564Args;

    fn kind(&self) -> &'static str {
        "y1564"
    }

    fn request(&self, a: &Y1564Args) -> Result<Self::Request, Error> {
        request(a).map(Box::new)
    }

    fn json(&self, a: &Y1564Args) -> bool {
        a.json
    }

    fn needs_root(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &Box<Y1564Request>,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        run::run(req, watch, stop)
    }

    fn estimate(&self, req: &Box<Y1564Request>) -> Option<Duration> {
        // Each profile run opens its ports and drains its receivers (streams: 1.5 s).
        let setup = Duration::from_millis(1_500);
        let mut t = Duration::ZERO;
        if req.configuration {
            for s in &req.list.services {
                let n = method::y1564::configuration_steps(&s.profile, &req.percents, 0.0).len();
                t += (req.step_time + setup) * u32::try_from(n).unwrap_or(u32::MAX);
            }
        }
        if req.performance {
            t += req.duration + setup;
        }
        Some(t)
    }

    fn text(&self, _req: &Box<Y1564Request>, r: &RunResult, _unit: Option<Fixed>) -> String {
        show::text(r)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::StopTwiceExits
    }

    fn failed_verdict(&self) -> Option<&'static str> {
        Some("a service missed its acceptance criteria")
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &THRESHOLDS
    }

    /// Per service: the performance test's figures, or without it the 100 % CIR step's.
    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        let Some(p) = part(r) else { return Vec::new() };
        let mut out = Vec::new();
        let service = |name: &str, ir: f64, flr: f64, d: Option<result::Delay>| {
            let delay = d.map(|d| [FTD.at(name, d.mean_us), FDV.at(name, d.fdv_us)]);
            [IR.at(name, ir), FLR.at(name, flr)]
                .into_iter()
                .chain(delay.into_iter().flatten())
        };
        match &p.performance {
            Some(perf) => {
                for s in &perf.services {
                    out.extend(service(&s.service, s.ir_bps, s.flr, s.delay));
                    if let Some(a) = s.availability_pct {
                        out.push(AVAILABILITY.at(s.service.as_str(), a / 100.0));
                    }
                }
            }
            None => {
                for c in &p.configuration {
                    let full = c
                        .steps
                        .iter()
                        .rfind(|s| matches!(s.step.kind, method::y1564::StepKind::Cir { .. }));
                    if let Some(s) = full {
                        out.extend(service(&c.service, s.ir_bps, s.green_flr, s.delay));
                    }
                }
            }
        }
        out
    }

    fn report_tables(&self, tests: &[(&str, &RunResult)]) -> Vec<report::table::Table> {
        show::tables(tests)
    }

    fn report_charts(&self, id: &str, r: &RunResult) -> Vec<report::campaign::Chart> {
        show::charts(id, r)
    }

    fn findings(&self, r: &RunResult) -> Vec<String> {
        show::findings(r)
    }
}

/// Which of the two tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tests {
    /// The service configuration test, then the performance test.
    Both,
    /// Each service alone, step by step.
    Configuration,
    /// Every service at its CIR at once.
    Performance,
}

/// `y1564`'s command line.
#[derive(Debug, Args)]
pub struct Y1564Args {
    /// The service list (TOML: `[[service]]` tables with the flow as a stream's, `size`
    /// or `emix`, `cir`, `eir`, `yellow_dscp`/`yellow_pcp`, and `[service.sac]` with flr,
    /// ftd, fdv, availability, ir_tolerance; see examples/y1564-*.toml).
    pub services: PathBuf,
    /// Lab whose nodes NODE:IFACE names (default: the list's `lab`, else "lab").
    #[arg(long)]
    pub lab: Option<String>,
    /// Which tests run.
    #[arg(long, value_enum, default_value_t = Tests::Both)]
    pub tests: Tests,
    /// Seconds of each configuration step (testers use 60).
    #[arg(short = 't', long, value_parser = units::seconds, default_value = "60")]
    pub step_time: Duration,
    /// The CIR steps, % of CIR.
    #[arg(long, value_delimiter = ',', default_value = "25,50,75,100", value_parser = step_percent)]
    pub steps: Vec<f64>,
    /// How far the policing step offers above CIR + EIR, % of CIR + EIR.
    #[arg(long, value_parser = overshoot, default_value = "25%")]
    pub overshoot: f64,
    /// The performance test's length: seconds, or with m or h (15m, 2h, 24h as the
    /// Recommendation lists).
    #[arg(long, value_parser = duration, default_value = "15m")]
    pub duration: Duration,
    /// A second whose FLR is above this is severely errored (availability, after Y.1563).
    #[arg(long, value_parser = units::percent_ratio, default_value = "50%")]
    pub severe_flr: f64,
    /// Severely errored seconds in a row that make a service unavailable (and good ones
    /// that make it available again).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub availability_window: u32,
    /// Frame I/O backend for every sender.
    #[arg(long, value_enum, default_value_t = FrameBackend::Auto)]
    pub backend: FrameBackend,
    /// Pre-shared key file of the servers whose ports are ends of services.
    #[arg(long)]
    pub auth_key_file: Option<PathBuf>,
    /// Control port of those servers, unless an end says HOST:PORT/IFACE.
    #[arg(short, long, default_value_t = control::DEFAULT_PORT)]
    pub port: u16,
    /// Print one JSON document.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: Repeat,
}

/// A CIR step: a % of CIR above 0, at most 100.
fn step_percent(s: &str) -> Result<f64, String> {
    s.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| *p > 0.0 && *p <= 100.0)
        .ok_or_else(|| format!("'{s}' is not a % of CIR in (0, 100]"))
}

/// The policing overshoot: a % from 1 to 1000.
fn overshoot(s: &str) -> Result<f64, String> {
    units::percent(s)
        .filter(|p| (1.0..=1000.0).contains(p))
        .map(|p| p / 100.0)
        .ok_or_else(|| format!("'{s}' is not a percentage from 1% to 1000%"))
}

/// Seconds, or minutes and hours (`15m`, `2h`).
fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('h') => (&t[..t.len() - 1], 3600.0),
        Some('m') => (&t[..t.len() - 1], 60.0),
        Some('s') => (&t[..t.len() - 1], 1.0),
        _ => (t, 1.0),
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * mult)
        .filter(|v| v.is_finite() && *v >= 1.0 && *v <= 7.0 * 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("'{s}' is not a duration from 1 s to 7 days (e.g. 60, 15m, 2h)"))
}

/// `y1564`: the list read and checked.
fn request(a: &Y1564Args) -> Result<Y1564Request, Error> {
    let file = a.services.display().to_string();
    let text = std::fs::read_to_string(&a.services)
        .map_err(|e| usage(format!("cannot read {file}: {e}")))?;
    let list = ServiceList::parse(&text).map_err(|e| usage(format!("{file}: {e}")))?;
    let lab = a
        .lab
        .clone()
        .or(list.lab.clone())
        .unwrap_or_else(|| "lab".into());
    let mut percents = a.steps.clone();
    percents.sort_by(f64::total_cmp);
    percents.dedup();
    Ok(Y1564Request {
        file,
        list,
        lab,
        configuration: a.tests != Tests::Performance,
        performance: a.tests != Tests::Configuration,
        step_time: a.step_time,
        percents,
        overshoot: a.overshoot,
        duration: a.duration,
        availability: AvailabilityRule {
            flr_threshold: a.severe_flr,
            window: a.availability_window as usize,
        },
        backend: backend(a.backend),
        agents: crate::request::Agents {
            port: a.port,
            key_file: a.auth_key_file.clone(),
            synced_clocks: false,
        },
    })
}

#[cfg(test)]
mod test;
