//! ITU-T Y.1564 (Ethernet service activation) as plans and verdicts: a service's frame
//! sizes (EMIX letters), the service configuration test's steps (CIR steps, CIR + EIR,
//! traffic policing), each step's verdict against the service acceptance criteria (SAC),
//! and availability over a run's seconds.
//!
//! What it does not do: send or count frames, or read a clock. The runner offers each
//! step's load, measures it and hands the figures back here. The Recommendation's own text
//! was not at hand: step percentages, the policing overshoot and the availability window
//! are configuration with the defaults testers use (`../shared/spec/y1564.md`).

pub mod services;

use std::time::Duration;

use model::units;
use serde::{Deserialize, Serialize};
use wire::linerate::MIN_FRAME;

/// What is wrong with an EMIX pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmixError {
    /// No letters.
    #[error("an empty EMIX pattern: give letters a-h or u, e.g. \"abceg\"")]
    Empty,
    /// A letter that is not one of Y.1564's.
    #[error("EMIX letter '{letter}' (place {place}) is not one of a-h or u")]
    UnknownLetter {
        /// The letter.
        letter: char,
        /// Its place in the pattern, from 1.
        place: usize,
    },
    /// `u` without a user size.
    #[error("EMIX letter 'u' (place {place}) needs a user size")]
    NoUserSize {
        /// Its place in the pattern, from 1.
        place: usize,
    },
    /// A size the port cannot send.
    #[error("EMIX letter '{letter}' (place {place}) is a {size}-byte frame, outside 64..={max}")]
    OutOfRange {
        /// The letter.
        letter: char,
        /// Its place in the pattern, from 1.
        place: usize,
        /// Its frame size, bytes.
        size: u32,
        /// The largest frame, bytes.
        max: u32,
    },
}

/// An EMIX pattern's frame sizes (Y.1564 §8.1.1's letters): a=64, b=128, c=256, d=512,
/// e=1024, f=1280, g=1518, h=the MTU's frame, u=the user's size; frames in Ethernet
/// bytes with FCS.
///
/// # Errors
/// An empty pattern, a letter outside a–h and u (named, with its place), `u` without a
/// user size, or a size outside 64..=`mtu_frame`.
pub fn emix(pattern: &str, mtu_frame: u32, user: Option<u32>) -> Result<Vec<u32>, EmixError> {
    if pattern.is_empty() {
        return Err(EmixError::Empty);
    }
    let mut sizes = Vec::with_capacity(pattern.len());
    for (i, letter) in pattern.chars().enumerate() {
        let place = i + 1;
        let size = match letter {
            'a' => 64,
            'b' => 128,
            'c' => 256,
            'd' => 512,
            'e' => 1024,
            'f' => 1280,
            'g' => 1518,
            'h' => mtu_frame,
            'u' => user.ok_or(EmixError::NoUserSize { place })?,
            _ => return Err(EmixError::UnknownLetter { letter, place }),
        };
        if !(MIN_FRAME as u32..=mtu_frame).contains(&size) {
            return Err(EmixError::OutOfRange {
                letter,
                place,
                size,
                max: mtu_frame,
            });
        }
        sizes.push(size);
    }
    Ok(sizes)
}

/// A service's bandwidth profile (Y.1564 §6.2.1), bit/s of information rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Committed information rate.
    pub cir_bps: f64,
    /// Excess information rate (0: none).
    pub eir_bps: f64,
    /// Colour-aware (§6.2.1's colour mode): the excess (yellow) frames are marked apart
    /// from the committed (green) ones, so the network can drop the excess alone and
    /// green frames keep the SAC in every step. Colour-blind, the network cannot tell them
    /// apart: above CIR only the information rate is judged.
    pub colour_aware: bool,
}

/// The service acceptance criteria: what every step must meet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sac {
    /// Frame loss ratio, at most (0.001 = 0.1 %).
    pub flr_max: f64,
    /// Frame transfer delay (mean), at most.
    pub ftd_max: Duration,
    /// Frame delay variation, at most.
    pub fdv_max: Duration,
    /// Availability over the performance test, at least, % (99.9).
    pub availability_min: f64,
    /// How far an information rate may fall short of the offered one, as a fraction
    /// (0.01 = 1 %), for the share of frames a tester's own framing and timing cost.
    pub ir_tolerance: f64,
}

/// What a service configuration test step is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StepKind {
    /// A step of the CIR test, at this % of CIR.
    Cir {
        /// % of CIR.
        percent: f64,
    },
    /// CIR + EIR: green frames at CIR, yellow at EIR.
    CirEir,
    /// Traffic policing: above CIR + EIR, the excess to be dropped.
    Policing,
}

/// One step of the service configuration test: what is offered, as green (committed) and
/// yellow (excess) information rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// What it is.
    #[serde(flatten)]
    pub kind: StepKind,
    /// Green information rate offered, bit/s.
    pub green_bps: f64,
    /// Yellow information rate offered, bit/s.
    pub yellow_bps: f64,
}

impl Step {
    /// Everything offered, bit/s.
    pub fn offered_bps(&self) -> f64 {
        self.green_bps + self.yellow_bps
    }
}

/// The service configuration test's steps for `p` (Y.1564 §8.1.2): the CIR steps at
/// `percents` of CIR (testers use 25, 50, 75, 100), CIR + EIR when there is an EIR, and
/// the policing step at `overshoot` (0.25) above CIR + EIR, its excess yellow.
pub fn configuration_steps(p: &Profile, percents: &[f64], overshoot: f64) -> Vec<Step> {
    let mut steps: Vec<Step> = percents
        .iter()
        .map(|&percent| Step {
            kind: StepKind::Cir { percent },
            green_bps: p.cir_bps * percent / 100.0,
            yellow_bps: 0.0,
        })
        .collect();
    if p.eir_bps > 0.0 {
        steps.push(Step {
            kind: StepKind::CirEir,
            green_bps: p.cir_bps,
            yellow_bps: p.eir_bps,
        });
    }
    steps.push(Step {
        kind: StepKind::Policing,
        green_bps: p.cir_bps,
        yellow_bps: p.eir_bps + (p.cir_bps + p.eir_bps) * overshoot,
    });
    steps
}

/// What a step measured, per colour where it matters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Information rate received, all colours, bit/s.
    pub ir_bps: f64,
    /// Green information rate received, bit/s.
    pub green_ir_bps: f64,
    /// Frame loss ratio of green frames.
    pub green_flr: f64,
    /// Frame transfer delay of green frames: mean (`None`: not measured, e.g. between
    /// ends without a shared clock; a step that is judged on it then fails).
    pub ftd_mean: Option<Duration>,
    /// Frame delay variation of green frames (`None`: not measured, as for FTD).
    pub fdv: Option<Duration>,
}

/// A step's verdict: the criteria it missed, each in words (none: it passed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The criteria missed.
    pub missed: Vec<String>,
}

impl Verdict {
    /// Every criterion met.
    pub fn pass(&self) -> bool {
        self.missed.is_empty()
    }
}

/// A step's verdict (Y.1564 §8.1.3):
/// - every CIR step, and the CIR + EIR and policing steps of a colour-aware service: the
///   green frames' FLR, FTD and FDV within the SAC (a delay not measured misses it);
/// - a CIR step: the IR at least what was offered, less the tolerance;
/// - CIR + EIR: the IR at least CIR and at most CIR + EIR (each with the tolerance);
/// - policing: the IR at most CIR + EIR (the excess dropped) and the committed rate kept:
///   the green IR at least CIR when colour-aware, the IR when colour-blind.
pub fn verdict(step: &Step, p: &Profile, sac: &Sac, m: &Measured) -> Verdict {
    let mut missed = Vec::new();
    let low = 1.0 - sac.ir_tolerance;
    let high = 1.0 + sac.ir_tolerance;
    let criteria = p.colour_aware || matches!(step.kind, StepKind::Cir { .. });
    if criteria && m.green_flr > sac.flr_max {
        missed.push(format!(
            "FLR {:.4} % above {:.4} %",
            m.green_flr * 100.0,
            sac.flr_max * 100.0
        ));
    }
    for (what, v, max) in [
        ("FTD", m.ftd_mean, sac.ftd_max),
        ("FDV", m.fdv, sac.fdv_max),
    ] {
        match v.filter(|_| criteria) {
            Some(v) if v > max => missed.push(format!(
                "{what} {:.3} ms above {:.3} ms",
                v.as_secs_f64() * 1e3,
                max.as_secs_f64() * 1e3
            )),
            None if criteria => missed.push(format!("{what} not measured")),
            _ => {}
        }
    }
    let committed = p.cir_bps + p.eir_bps;
    match step.kind {
        StepKind::Cir { .. } => {
            if m.ir_bps < step.offered_bps() * low {
                missed.push(format!(
                    "IR {} below the {} offered",
                    units::bps(m.ir_bps),
                    units::bps(step.offered_bps())
                ));
            }
        }
        StepKind::CirEir => {
            if m.ir_bps < p.cir_bps * low {
                missed.push(format!(
                    "IR {} below CIR {}",
                    units::bps(m.ir_bps),
                    units::bps(p.cir_bps)
                ));
            }
            if m.ir_bps > committed * high {
                missed.push(format!(
                    "IR {} above CIR + EIR {}",
                    units::bps(m.ir_bps),
                    units::bps(committed)
                ));
            }
        }
        StepKind::Policing => {
            if m.ir_bps > committed * high {
                missed.push(format!(
                    "IR {} above CIR + EIR {}: the excess was not policed",
                    units::bps(m.ir_bps),
                    units::bps(committed)
                ));
            }
            let (what, kept) = if p.colour_aware {
                ("green IR", m.green_ir_bps)
            } else {
                ("IR", m.ir_bps)
            };
            if kept < p.cir_bps * low {
                missed.push(format!(
                    "{what} {} below CIR {}",
                    units::bps(kept),
                    units::bps(p.cir_bps)
                ));
            }
        }
    }
    Verdict { missed }
}

/// The service performance test's verdict for one service (Y.1564 §8.2): at its CIR
/// with every service running, the IR at least CIR (less the tolerance), the FLR, FTD and
/// FDV within the SAC, and the availability at least the SAC's (`None`: not decided,
/// which fails).
pub fn performance_verdict(
    p: &Profile,
    sac: &Sac,
    m: &Measured,
    availability_pct: Option<f64>,
) -> Verdict {
    let step = Step {
        kind: StepKind::Cir { percent: 100.0 },
        green_bps: p.cir_bps,
        yellow_bps: 0.0,
    };
    let mut v = verdict(&step, p, sac, m);
    match availability_pct {
        Some(a) if a < sac.availability_min => v.missed.push(format!(
            "availability {a:.3} % below {:.3} %",
            sac.availability_min
        )),
        Some(_) => {}
        None => v
            .missed
            .push("availability not measured (no seconds)".into()),
    }
    v
}

/// How availability is decided over a run's seconds (after ITU-T Y.1563 and MEF 10.3):
/// a second is severely errored when its frame loss ratio is above `flr_threshold`; the
/// service becomes unavailable at the first of `window` severely errored seconds in a
/// row, and available again at the first of `window` good seconds in a row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AvailabilityRule {
    /// A second's FLR above this is severely errored (0.5 in Y.1563).
    pub flr_threshold: f64,
    /// Seconds in a row that change the state (10 in Y.1563).
    pub window: usize,
}

impl Default for AvailabilityRule {
    fn default() -> Self {
        Self {
            flr_threshold: 0.5,
            window: 10,
        }
    }
}

/// Availability over per-second frame loss ratios, %: the seconds the service was
/// available of all of them. `None` without seconds.
pub fn availability_percent(per_second_flr: &[f64], rule: &AvailabilityRule) -> Option<f64> {
    if per_second_flr.is_empty() {
        return None;
    }
    let window = rule.window.max(1);
    let bad: Vec<bool> = per_second_flr
        .iter()
        .map(|&f| f > rule.flr_threshold)
        .collect();
    let mut available = true;
    let mut unavailable = 0usize;
    for run in bad.chunk_by(|a, b| a == b) {
        // While available, `window` severely errored seconds in a row make the service
        // unavailable from the first of them on; while unavailable, `window` good ones in a
        // row make it available again.
        let errored = run[0];
        if errored == available && run.len() >= window {
            available = !available;
        }
        if !available {
            unavailable += run.len();
        }
    }
    let n = bad.len();
    Some((n - unavailable) as f64 / n as f64 * 100.0)
}

#[cfg(test)]
mod test {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn sac() -> Sac {
        Sac {
            flr_max: 0.001,
            ftd_max: ms(10),
            fdv_max: ms(2),
            availability_min: 99.9,
            ir_tolerance: 0.01,
        }
    }

    #[test]
    fn emix_letters_give_the_sizes_and_bad_ones_are_named() {
        assert_eq!(
            emix("abceg", 1518, None).as_deref(),
            Ok(&[64, 128, 256, 1024, 1518][..])
        );
        assert_eq!(
            emix("dfh", 1518, None).as_deref(),
            Ok(&[512, 1280, 1518][..])
        );
        assert_eq!(
            emix("hu", 9018, Some(2000)).as_deref(),
            Ok(&[9018, 2000][..])
        );
        let e = emix("abz", 1518, None).unwrap_err();
        assert_eq!(
            e,
            EmixError::UnknownLetter {
                letter: 'z',
                place: 3
            }
        );
        assert_eq!(
            e.to_string(),
            "EMIX letter 'z' (place 3) is not one of a-h or u"
        );
        assert_eq!(
            emix("au", 1518, None),
            Err(EmixError::NoUserSize { place: 2 })
        );
        assert_eq!(emix("", 1518, None), Err(EmixError::Empty));
        // A user size beyond the MTU's frame.
        let e = emix("u", 1518, Some(9000)).unwrap_err();
        assert!(e.to_string().contains("outside 64..=1518"), "{e}");
    }

    /// CIR 20 Mbit/s, EIR 5 Mbit/s, and its steps at the testers' 25/50/75/100 % and a
    /// 25 % overshoot.
    fn cir_20m_eir_5m() -> (Profile, Vec<Step>) {
        let p = Profile {
            cir_bps: 20e6,
            eir_bps: 5e6,
            colour_aware: true,
        };
        let steps = configuration_steps(&p, &[25.0, 50.0, 75.0, 100.0], 0.25);
        (p, steps)
    }

    #[test]
    fn configuration_steps_ramp_to_cir_then_add_eir_then_overshoot() {
        let (_, steps) = cir_20m_eir_5m();
        let offered: Vec<f64> = steps.iter().map(Step::offered_bps).collect();
        assert_eq!(offered, [5e6, 10e6, 15e6, 20e6, 25e6, 31.25e6]);
        assert_eq!(steps[4].kind, StepKind::CirEir);
        assert_eq!((steps[4].green_bps, steps[4].yellow_bps), (20e6, 5e6));
        assert_eq!(steps[5].kind, StepKind::Policing);
        assert_eq!(steps[5].green_bps, 20e6);
        // Without EIR: no CIR + EIR step, and the policing step overshoots CIR.
        let p = Profile {
            cir_bps: 10e6,
            eir_bps: 0.0,
            colour_aware: false,
        };
        let steps = configuration_steps(&p, &[50.0, 100.0], 0.25);
        let kinds: Vec<StepKind> = steps.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                StepKind::Cir { percent: 50.0 },
                StepKind::Cir { percent: 100.0 },
                StepKind::Policing
            ]
        );
        assert_eq!(steps[2].offered_bps(), 12.5e6);
    }

    fn measured(ir: f64, green_ir: f64, flr: f64) -> Measured {
        Measured {
            ir_bps: ir,
            green_ir_bps: green_ir,
            green_flr: flr,
            ftd_mean: Some(ms(1)),
            fdv: Some(ms(1)),
        }
    }

    #[test]
    fn verdicts_follow_the_step_and_the_criteria() {
        let (p, steps) = cir_20m_eir_5m();
        let s = sac();
        // A CIR step carried in full, and one 2 % short.
        assert!(verdict(&steps[3], &p, &s, &measured(19.9e6, 19.9e6, 0.0)).pass());
        let v = verdict(&steps[3], &p, &s, &measured(19.6e6, 19.6e6, 0.0));
        assert!(
            !v.pass() && v.missed[0].contains("below the 20.00 Mbit/s offered"),
            "{v:?}"
        );
        // Loss above the SAC fails any step.
        let v = verdict(&steps[0], &p, &s, &measured(5e6, 5e6, 0.002));
        assert!(
            !v.pass() && v.missed[0].starts_with("FLR 0.2000 %"),
            "{v:?}"
        );
        // CIR + EIR: anything from CIR to CIR + EIR passes.
        assert!(verdict(&steps[4], &p, &s, &measured(20e6, 20e6, 0.0)).pass());
        assert!(verdict(&steps[4], &p, &s, &measured(25e6, 20e6, 0.0)).pass());
        assert!(!verdict(&steps[4], &p, &s, &measured(18e6, 18e6, 0.0)).pass());
        // Policing: the excess dropped passes; 31 Mbit/s through fails.
        assert!(verdict(&steps[5], &p, &s, &measured(25.1e6, 20e6, 0.0)).pass());
        let v = verdict(&steps[5], &p, &s, &measured(31e6, 20e6, 0.0));
        assert!(!v.pass() && v.missed[0].contains("not policed"), "{v:?}");
        // ... and so does a policer that drops green frames.
        let v = verdict(&steps[5], &p, &s, &measured(25e6, 15e6, 0.0));
        assert!(!v.pass() && v.missed[0].contains("green IR"), "{v:?}");
        // Delay and its variation.
        let slow = Measured {
            ftd_mean: Some(ms(11)),
            fdv: Some(ms(3)),
            ..measured(5e6, 5e6, 0.0)
        };
        let v = verdict(&steps[0], &p, &s, &slow);
        assert_eq!(v.missed.len(), 2, "{v:?}");
    }

    #[test]
    fn the_performance_verdict_adds_availability_to_the_cir_criteria() {
        let (p, _) = cir_20m_eir_5m();
        let s = sac();
        let m = measured(19.9e6, 19.9e6, 0.0);
        assert!(performance_verdict(&p, &s, &m, Some(100.0)).pass());
        let v = performance_verdict(&p, &s, &m, Some(99.0));
        assert!(
            !v.pass() && v.missed[0].starts_with("availability 99.000 %"),
            "{v:?}"
        );
        assert!(!performance_verdict(&p, &s, &m, None).pass());
        let v = performance_verdict(&p, &s, &measured(19e6, 19e6, 0.0), Some(100.0));
        assert!(!v.pass() && v.missed[0].starts_with("IR "), "{v:?}");
    }

    #[test]
    fn a_colour_blind_service_is_judged_by_its_rate_above_cir() {
        let (mut p, steps) = cir_20m_eir_5m();
        p.colour_aware = false;
        let s = sac();
        // The network cannot tell the excess from the committed frames: a policer drops
        // from both, which is no fault above CIR.
        let lossy = measured(20e6, 16e6, 0.2);
        assert!(verdict(&steps[4], &p, &s, &lossy).pass());
        assert!(verdict(&steps[5], &p, &s, &lossy).pass());
        // ... but the committed rate must still be carried, and the excess policed.
        let v = verdict(&steps[5], &p, &s, &measured(18e6, 14e6, 0.3));
        assert!(!v.pass() && v.missed[0].starts_with("IR "), "{v:?}");
        assert!(!verdict(&steps[5], &p, &s, &measured(31e6, 20e6, 0.0)).pass());
        // In the CIR steps the SAC applies as to any service.
        assert!(!verdict(&steps[3], &p, &s, &measured(20e6, 20e6, 0.01)).pass());
    }

    #[test]
    fn availability_counts_runs_of_severely_errored_seconds() {
        let rule = AvailabilityRule {
            flr_threshold: 0.5,
            window: 3,
        };
        let good = 0.0;
        let bad = 1.0;
        // No bad second: 100 %.
        assert_eq!(availability_percent(&[good; 10], &rule), Some(100.0));
        // Two bad seconds in a row are fewer than the window: still available.
        let s = [good, bad, bad, good, good, good, good, good, good, good];
        assert_eq!(availability_percent(&s, &rule), Some(100.0));
        // Four bad seconds: unavailable from the first of them; available again from the
        // first of three good seconds (the good one between does not end it).
        let s = [good, bad, bad, bad, bad, good, bad, good, good, good];
        // Unavailable: seconds 2-7 (bad, bad, bad, bad, good, bad) = 6 of 10.
        assert_eq!(availability_percent(&s, &rule), Some(40.0));
        // A run that ends the test still unavailable.
        let s = [good, good, bad, bad, bad];
        assert_eq!(availability_percent(&s, &rule), Some(40.0));
        assert_eq!(availability_percent(&[], &rule), None);
        // The threshold: 0.5 itself is not above it.
        assert_eq!(availability_percent(&[0.5; 5], &rule), Some(100.0));
    }
}
