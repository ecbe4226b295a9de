//! How long a method's plan takes, found by running the method itself against a stand-in
//! device that answers at once.
//!
//! What this module does: [`Rehearsal`] is a [`Trial`] runner for a device that forwards
//! every load up to a share of the line rate and loses the rest (bursts: up to a given
//! length), and adds up what the trials asked for: each load's intended duration and a
//! setup cost per trial. A search (binary, MLRsearch, the frame loss staircase, the
//! back-to-back search) asks for the trials it would ask of a real device whose limit lies
//! there, so their sum is that method's own estimate of its time.
//!
//! What it does not do: measure anything, or know where a real device's limit lies; the
//! share is a guess, and a search's number of trials depends on it only weakly (binary
//! search: not at all; the frame loss staircase: linearly).

use std::marker::PhantomData;
use std::time::Duration;

use model::spec::Rate;
use model::stats::Counters;
use wire::linerate::LineRate;

use crate::trial::{Load, Size, Trial, TrialData, TrialRequest, UDP_FRAME_OVERHEAD};

/// A stand-in device that adds up the time of the trials asked of it.
#[derive(Debug)]
pub struct Rehearsal<E> {
    line: LineRate,
    share: f64,
    longest_burst: u64,
    setup: Duration,
    /// Time asked for so far: loads and setups.
    pub time: Duration,
    /// Trials asked for so far.
    pub trials: u32,
    error: PhantomData<fn() -> E>,
}

impl<E> Rehearsal<E> {
    /// A device on `line` that forwards up to `share` (0..=1) of its frame rate and bursts
    /// of up to `longest_burst` frames; every trial costs `setup` besides its load.
    pub fn new(line: LineRate, share: f64, longest_burst: u64, setup: Duration) -> Self {
        Self {
            line,
            share: share.clamp(0.0, 1.0),
            longest_burst,
            setup,
            time: Duration::ZERO,
            trials: 0,
            error: PhantomData,
        }
    }
}

impl<E> Trial for Rehearsal<E> {
    type Error = E;

    fn run(&mut self, req: &TrialRequest) -> Result<TrialData, E> {
        self.trials += 1;
        self.time += self.setup;
        let frame = match req.size {
            Size::Frame(len) => len,
            Size::Payload(len) => len as u64 + UDP_FRAME_OVERHEAD,
        };
        let max_fps = self.line.max_fps(frame);
        let (sent, received, fps, secs) = match req.load {
            Load::Rate(rate, d) => {
                let fps = match rate {
                    Rate::Unlimited => max_fps,
                    Rate::PacketsPerSec(p) => p,
                    Rate::BitsPerSec(b) => b / (8.0 * frame as f64),
                };
                let secs = d.as_secs_f64();
                self.time += d;
                let sent = (fps * secs).round() as u64;
                let passed = if fps <= max_fps * self.share {
                    sent
                } else {
                    (max_fps * self.share * secs).round() as u64
                };
                (sent, passed.min(sent), fps, secs)
            }
            Load::Burst(n) => {
                let secs = n as f64 / max_fps;
                self.time += Duration::from_secs_f64(secs);
                (n, n.min(self.longest_burst), max_fps, secs)
            }
        };
        let bps = |frames: u64| frames as f64 * frame as f64 * 8.0 / secs.max(1e-9);
        Ok(TrialData {
            counters: Counters {
                sent,
                received,
                lost: sent - received,
                ..Counters::default()
            },
            received_bytes: received * frame,
            offered_bps: Some(bps(sent)),
            received_bps: Some(bps(received)),
            offered_pps: fps,
            duration: Duration::from_secs_f64(secs),
            ..TrialData::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rfc2544::{binary_search, SearchConfig};

    #[test]
    fn a_binary_search_rehearsed_adds_up_its_trials_and_their_setup() {
        let cfg = SearchConfig {
            duration: Duration::from_secs(2),
            width: 0.005,
            ..SearchConfig::default()
        };
        let mut r: Rehearsal<std::convert::Infallible> =
            Rehearsal::new(cfg.line_rate, 0.5, 1000, Duration::from_millis(500));
        let mut log = Vec::new();
        let found = binary_search(&mut r, 64, &cfg, &mut log).unwrap();
        // The device passes half the line rate: the search finds it within its width.
        let half = cfg.line_rate.max_fps(64) / 2.0;
        let fps = found.fps.unwrap();
        assert!(fps <= half && fps >= half * 0.99, "{fps} vs {half}");
        // Every trial is 2 s of load and 0.5 s of setup.
        assert!(r.trials >= 7, "{}", r.trials);
        assert_eq!(r.time, Duration::from_millis(2_500) * r.trials);
        // A burst costs its own length at line rate.
        let mut b: Rehearsal<std::convert::Infallible> =
            Rehearsal::new(cfg.line_rate, 1.0, 1000, Duration::ZERO);
        let d = b.run(&TrialRequest::burst(1518, 81_274)).unwrap();
        assert_eq!(d.counters.received, 1000);
        assert!((b.time.as_secs_f64() - 1.0).abs() < 0.01, "{:?}", b.time);
    }
}
