//! A shaper whose rate a method sets between trials ([`ShaperDut`]): the first class of a
//! lab's shaper (read before, emptied between cells, put back after), or any device
//! through a shell command template.
//!
//! Every command goes through a `lab::Runner` (the system's, or a fake in tests). It
//! does not build the shaper (the lab does) nor measure through it (the streams runner
//! does).

use std::time::Duration;

use lab::shaper::ClassStats;
use lab::{Cmd, LabError, Runner};
use method::Dut;
use model::clock::Clock;
use model::wait::{Poll, Polled, Wait};

use crate::{usage, Error};

/// A shaper whose rate a method sets: the first class of a lab's shaper, or any device
/// through a shell command template (`{bandwidth}`, `{bandwidth_k}`, `{bandwidth_m}` are
/// replaced; its exit status is checked).
pub enum ShaperDut {
    /// Class 1:10 of the shaper on a lab's dut.
    Lab {
        /// The lab.
        lab: String,
        /// The class before the matrix (rate, ceil and buckets as tc wrote them).
        before: Option<ClassStats>,
    },
    /// A command template.
    Command(String),
}

/// Longest a shaper's queue may take to empty (at the line rate it is raised to).
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// Rate a lab's class is opened to while its queue empties.
const OPEN_BPS: f64 = 10e9;

impl ShaperDut {
    /// Class 1:10 of lab `lab`'s shaper, its rate, ceil and buckets read now so that they can
    /// be put back.
    ///
    /// # Errors
    /// The lab has no shaper class 1:10.
    pub fn lab(lab: &str) -> Result<Self, Error> {
        Self::lab_with(lab, &mut lab::SystemRunner)
    }

    /// [`ShaperDut::lab`], its class read through `runner`.
    fn lab_with(lab: &str, runner: &mut dyn Runner) -> Result<Self, Error> {
        let classes = lab::shaper::classes(lab, runner)?;
        let first = classes
            .into_iter()
            .find(|c| c.id == "1:10")
            .ok_or_else(|| usage(format!("lab '{lab}' has no shaper class 1:10 to set")))?;
        Ok(ShaperDut::Lab {
            lab: lab.to_owned(),
            before: Some(first),
        })
    }

    /// The command that sets `bps`: the lab class's rate, or the template filled in.
    fn bandwidth_cmd(&self, bps: f64) -> Cmd {
        match self {
            ShaperDut::Lab { lab, .. } => lab::shaper::set_first_class_rate(lab, bps),
            ShaperDut::Command(t) => Cmd::shell(
                &t.replace("{bandwidth}", &(bps.round() as u64).to_string())
                    .replace("{bandwidth_k}", &format!("{}", bps / 1e3))
                    .replace("{bandwidth_m}", &format!("{}", bps / 1e6)),
            ),
        }
    }

    fn set_bandwidth_with(&mut self, runner: &mut dyn Runner, bps: f64) -> Result<(), Error> {
        let cmd = self.bandwidth_cmd(bps);
        let what = || format!("setting the bandwidth to {}", model::units::bps(bps));
        run(runner, &cmd, what)
    }

    /// [`Dut::drain`] through `runner`, the queue read every `poll`.
    fn drain_with(
        &mut self,
        runner: &mut dyn Runner,
        clock: &dyn Clock,
        poll: Duration,
    ) -> Result<Option<Duration>, Error> {
        let ShaperDut::Lab { lab, .. } = self else {
            return Ok(None);
        };
        let lab = lab.clone();
        let start = clock.mono();
        let queued = |runner: &mut dyn Runner| -> Result<u64, Error> {
            let classes = lab::shaper::classes(&lab, runner)?;
            Ok(classes.iter().map(|c| c.backlog_packets).sum())
        };
        if queued(runner)? == 0 {
            return Ok(Some(Duration::ZERO));
        }
        let open = lab::shaper::set_first_class_rate(&lab, OPEN_BPS);
        run(runner, &open, || {
            "opening the shaper to empty its queue".into()
        })?;
        let drained = Wait::on(clock)
            .until(start + DRAIN_LIMIT)
            .poll(|| match queued(runner) {
                Ok(0) => Poll::Ready(Ok(())),
                Ok(_) => Poll::Wait(poll),
                Err(e) => Poll::Ready(Err(e)),
            });
        match drained {
            Polled::Ready(r) => r?,
            Polled::TimedOut | Polled::Stopped => {
                return Err(Error::Failed(format!(
                    "the shaper of lab '{lab}' still holds frames after {DRAIN_LIMIT:?}"
                )))
            }
        }
        Ok(Some(clock.mono() - start))
    }

    fn restore_with(&mut self, runner: &mut dyn Runner) -> Result<(), Error> {
        let ShaperDut::Lab {
            lab,
            before: Some(was),
        } = self
        else {
            return Ok(());
        };
        let cmd = lab::shaper::change_first_class(lab, was);
        let what = || format!("restoring the shaper's rate {}", was.rate);
        run(runner, &cmd, what)
    }
}

/// Runs `cmd`; a failure says `what` was being done.
fn run(runner: &mut dyn Runner, cmd: &Cmd, what: impl FnOnce() -> String) -> Result<(), Error> {
    match runner.run(cmd) {
        Ok(_) => Ok(()),
        Err(LabError::Command { cmd, detail }) => Err(usage(format!(
            "{} failed: `{cmd}` exited with {detail}",
            what()
        ))),
        Err(e) => Err(usage(format!("{} failed: {e}", what()))),
    }
}

impl Dut for ShaperDut {
    type Error = Error;

    fn set_bandwidth(&mut self, bps: f64) -> Result<(), Error> {
        self.set_bandwidth_with(&mut lab::SystemRunner, bps)
    }

    fn describe(&self) -> String {
        match self {
            ShaperDut::Lab { lab, .. } => format!("lab {lab} shaper class 1:10 (tc class change)"),
            ShaperDut::Command(t) => t.clone(),
        }
    }

    /// A lab's shaper: when frames of the previous cell still wait in its queue, the
    /// class is opened to 10 Gbit/s until the queue reads empty (the next cell sets its
    /// own rate); how long that took is the answer. A command's device cannot be read.
    fn drain(&mut self) -> Result<Option<Duration>, Error> {
        let clock = engine::clock::RealClock::new();
        self.drain_with(&mut lab::SystemRunner, &clock, Duration::from_millis(10))
    }

    fn restore(&mut self) -> Result<(), Error> {
        self.restore_with(&mut lab::SystemRunner)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::trials::fakes::FakeRunner;
    use model::clock::VirtualClock;

    /// `tc -s class show` of a shaper whose class 1:10 has buckets of its own and
    /// `queued` packets waiting.
    fn classes(queued: u64) -> String {
        format!(
            "class htb 1:11 root prio 0 rate 40Mbit ceil 50Mbit burst 1600b cburst 1600b \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n\nclass htb 1:10 root prio 0 rate 10Mbit ceil 20Mbit burst 2500b cburst 5Kb \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog {}b {queued}p requeues 0\n",
            queued * 1500
        )
    }

    /// The value after `key` in `cmd`'s arguments.
    fn arg<'a>(cmd: &'a Cmd, key: &str) -> Option<&'a str> {
        let i = cmd.args.iter().position(|a| a == key)?;
        cmd.args.get(i + 1).map(String::as_str)
    }

    #[test]
    fn restore_puts_back_the_rate_ceil_and_buckets_it_read() {
        let mut runner = FakeRunner::answering(vec![classes(0)]);
        let mut dut = ShaperDut::lab_with("s1", &mut runner).expect("class 1:10");
        dut.set_bandwidth_with(&mut runner, 5e6).expect("set");
        dut.restore_with(&mut runner).expect("restore");
        let put_back = runner.ran.last().expect("a restore command");
        assert_eq!(put_back.program, "tc");
        assert_eq!(arg(put_back, "classid"), Some("1:10"));
        assert_eq!(arg(put_back, "rate"), Some("10Mbit"));
        assert_eq!(arg(put_back, "ceil"), Some("20Mbit"));
        assert_eq!(arg(put_back, "burst"), Some("2500b"));
        assert_eq!(arg(put_back, "cburst"), Some("5Kb"));
    }

    #[test]
    fn a_lab_without_class_1_10_is_refused() {
        let only_11 = classes(0)
            .split("\n\n")
            .next()
            .unwrap_or_default()
            .to_owned();
        let mut runner = FakeRunner::answering(vec![only_11]);
        let e = ShaperDut::lab_with("s1", &mut runner).err();
        assert!(
            matches!(&e, Some(Error::Usage(m)) if m.contains("no shaper class 1:10")),
            "{e:?}"
        );
    }

    #[test]
    fn set_bandwidth_sets_the_first_class_or_fills_in_the_template() {
        let mut runner = FakeRunner::answering(vec![classes(0)]);
        let mut dut = ShaperDut::lab_with("s1", &mut runner).expect("class 1:10");
        dut.set_bandwidth_with(&mut runner, 5e6).expect("set");
        let set = runner.ran.last().expect("a command");
        assert_eq!(arg(set, "rate"), Some("5000000bit"));
        assert_eq!(arg(set, "ceil"), Some("5000000bit"));

        let mut dut = ShaperDut::Command("shape {bandwidth} {bandwidth_k}k {bandwidth_m}M".into());
        dut.set_bandwidth_with(&mut runner, 2.5e6).expect("set");
        let shell = runner.ran.last().expect("a command");
        assert_eq!(shell.program, "sh");
        assert_eq!(shell.args, ["-c", "shape 2500000 2500k 2.5M"]);
    }

    #[test]
    fn a_failing_command_says_what_it_was_setting() {
        let mut runner = FakeRunner::failing();
        let mut dut = ShaperDut::Command("false {bandwidth}".into());
        let e = dut.set_bandwidth_with(&mut runner, 1e6).err();
        let msg = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.starts_with("setting the bandwidth to "), "{msg}");
        assert!(msg.contains("`sh -c 'false 1000000'` exited with"), "{msg}");
    }

    #[test]
    fn drain_opens_the_class_until_its_queue_reads_empty() {
        // Read: 5 queued, then (after opening) 2, then none.
        let mut runner =
            FakeRunner::answering(vec![classes(5), String::new(), classes(2), classes(0)]);
        let mut dut = ShaperDut::Lab {
            lab: "s1".into(),
            before: None,
        };
        let took = dut
            .drain_with(
                &mut runner,
                &VirtualClock::default(),
                Duration::from_millis(1),
            )
            .expect("drain");
        // Two reads after opening, one poll between them.
        assert_eq!(took, Some(Duration::from_millis(1)));
        let opened: Vec<&Cmd> = runner
            .ran
            .iter()
            .filter(|c| c.args.iter().any(|a| a == "change"))
            .collect();
        assert_eq!(opened.len(), 1);
        assert_eq!(arg(opened[0], "rate"), Some("10000000000bit"));
        assert_eq!(runner.ran.len(), 4, "read, open, read, read");
    }

    #[test]
    fn an_empty_queue_needs_no_draining_and_a_command_cannot_be_read() {
        let mut runner = FakeRunner::answering(vec![classes(0)]);
        let mut dut = ShaperDut::Lab {
            lab: "s1".into(),
            before: None,
        };
        let clock = VirtualClock::default();
        let took = dut.drain_with(&mut runner, &clock, Duration::from_millis(1));
        assert_eq!(took.ok().flatten(), Some(Duration::ZERO));
        assert_eq!(runner.ran.len(), 1, "one read, nothing changed");
        let mut cmd = ShaperDut::Command("x".into());
        assert_eq!(
            cmd.drain_with(&mut runner, &clock, Duration::ZERO).ok(),
            Some(None)
        );
        assert_eq!(cmd.restore_with(&mut runner).ok(), Some(()));
        assert_eq!(runner.ran.len(), 1, "a command's device is not touched");
    }

    #[test]
    fn a_queue_that_never_empties_fails_after_the_drain_limit() {
        // 30 s of 1 s polls: every read says 5 frames are still queued.
        let mut runner = FakeRunner::answering(vec![classes(5); 40]);
        let mut dut = ShaperDut::Lab {
            lab: "s1".into(),
            before: None,
        };
        let clock = VirtualClock::default();
        let e = dut
            .drain_with(&mut runner, &clock, Duration::from_secs(1))
            .expect_err("never empty");
        assert!(
            e.to_string().contains("still holds frames after 30s"),
            "{e}"
        );
        assert_eq!(
            clock.mono(),
            Duration::from_secs(30),
            "gave up after the read at 30 s, none past it"
        );
    }
}
