//! A whole campaign from one plan: set up the target, run every test in this process
//! through its typed request (on the lab's talker where it talks to a server), write
//! `results.json` after every test (atomically, so an interrupted run keeps what it
//! finished and says where it stopped), evaluate the thresholds, and render the reports.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lab::relay::state::{frer_paths, Snapshot};
use model::clock::Clock;
use model::results::campaign::{Campaign, TestEntry, TestStatus, SCHEMA};
use model::results::Verdict;
use model::stop::Stop;
use report::campaign::Templates;

use crate::hosts::{HostSource, PlanHost};
use crate::plan::{Commands, Plan, PlanTest};
use crate::target::{Setup, Target};
use crate::verdicts::{evaluate, Outcome};
use crate::{usage, Error, Quiet};

/// What a run tells while it runs.
pub trait Progress {
    /// How long each test of the plan will take, in order, by its own estimate
    /// ([`crate::methods::Registered::estimate`]; `None`: it cannot tell), before the first
    /// starts.
    fn planned(&mut self, _estimates: &[Option<Duration>]) {}
    /// A test starts (its entry has its command line and where it runs).
    fn started(&mut self, _entry: &TestEntry) {}
    /// A test ended (done or failed).
    fn finished(&mut self, _entry: &TestEntry) {}
}

/// A [`Progress`] that says nothing.
impl Progress for Quiet {}

/// The time left of a run: each test's own estimate, scaled by how long the finished
/// tests took against theirs (this machine's pace, between half and three times).
#[derive(Debug, Clone, Default)]
pub struct TimeLeft {
    estimates: Vec<Option<Duration>>,
    /// Finished tests: (took, its estimate).
    taken: Vec<(Duration, Option<Duration>)>,
}

impl TimeLeft {
    /// Before the first test.
    pub fn new(estimates: &[Option<Duration>]) -> Self {
        Self {
            estimates: estimates.to_vec(),
            taken: Vec::new(),
        }
    }

    /// The next test ended after `took`.
    pub fn finished(&mut self, took: Duration) {
        let est = self.estimates.get(self.taken.len()).copied().flatten();
        self.taken.push((took, est));
    }

    /// Actual time over estimated time of the finished tests that had an estimate.
    pub fn pace(&self) -> f64 {
        let (took, est) = self
            .taken
            .iter()
            .filter_map(|(t, e)| Some((t.as_secs_f64(), e.as_ref()?.as_secs_f64())))
            .fold((0.0, 0.0), |(a, b), (t, e)| (a + t, b + e));
        if est > 0.0 {
            (took / est).clamp(0.5, 3.0)
        } else {
            1.0
        }
    }

    /// The estimate of the running test, when there is one.
    pub fn running(&self) -> Option<Duration> {
        self.estimates.get(self.taken.len()).copied().flatten()
    }

    /// Time left with the running test `running_for` in, and how many tests not yet
    /// finished have no estimate.
    pub fn left(&self, running_for: Duration) -> (Duration, usize) {
        let pace = self.pace();
        let rest = self.estimates.iter().skip(self.taken.len());
        let mut left = 0.0;
        let mut unknown = 0;
        for (i, e) in rest.enumerate() {
            match e {
                Some(e) if i == 0 => {
                    left += (e.as_secs_f64() * pace - running_for.as_secs_f64()).max(0.0);
                }
                Some(e) => left += e.as_secs_f64() * pace,
                None => unknown += 1,
            }
        }
        (Duration::from_secs_f64(left), unknown)
    }
}

/// Writes `results.json` into `dir`, atomically.
fn write_results(dir: &Path, c: &Campaign) -> Result<(), Error> {
    let path = dir.join("results.json");
    engine::files::write_json_atomic(&path, c)
        .map_err(|e| Error::Failed(format!("writing {}: {e}", path.display())))
}

/// Writes report.md, report.html (through `templates`) and one CSV per table into `dir`,
/// atomically each; the files written.
///
/// # Errors
/// A file that cannot be written, or
/// A template that fails while rendering.
pub fn write_reports(
    dir: &Path,
    c: &Campaign,
    templates: &Templates,
) -> Result<Vec<PathBuf>, Error> {
    let rendered = |r: Result<String, report::campaign::TemplateError>| {
        r.map_err(|e| Error::Failed(format!("rendering the report: {e}")))
    };
    // The sections of methods the report does not know itself.
    let methods = crate::methods::Methods::STANDARD;
    let mut files = vec![
        (
            "report.md".to_owned(),
            rendered(templates.markdown_with(c, &methods))?,
        ),
        (
            "report.html".to_owned(),
            rendered(templates.html_with(c, &methods))?,
        ),
    ];
    for (name, csv) in report::campaign::csv_tables_with(c, &methods) {
        files.push((format!("{name}.csv"), csv));
    }
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(&name);
        engine::files::write_atomic(&path, text.as_bytes())
            .map_err(|e| Error::Failed(format!("writing {}: {e}", path.display())))?;
        written.push(path);
    }
    Ok(written)
}

/// The counters of a `frer` lab's two relays (split, merge), when it has them.
fn relays(lab: &str) -> Option<[Snapshot; 2]> {
    Some([Snapshot::of(lab, "split")?, Snapshot::of(lab, "merge")?])
}

/// The same once the relays have published what they counted during the test.
fn relays_settled(lab: &str) -> Option<[Snapshot; 2]> {
    Some([
        Snapshot::settled(lab, "split")?,
        Snapshot::of(lab, "merge")?,
    ])
}

/// The verdicts of the plan's thresholds over the tests that ran so far.
fn verdicts(plan: &Plan, c: &Campaign) -> Vec<Verdict> {
    let tests: Vec<Outcome<'_>> = c
        .tests
        .iter()
        // A test that has not run (yet, or because the run stopped) measured nothing; a
        // threshold that names it fails as "no test measured it".
        .filter(|t| t.status != TestStatus::NotRun)
        .map(|t| Outcome {
            id: &t.id,
            name: &t.name,
            kind: &t.kind,
            // A test cut short keeps its partial figures in the results, but they are not
            // what it was to measure: its thresholds fail as "not measured".
            result: t.result.as_ref().filter(|_| t.status == TestStatus::Done),
        })
        .collect();
    evaluate(&plan.thresholds, &tests)
}

/// Everything a run needs besides the plan.
pub struct Run<'a> {
    /// The plan file, as named (it is recorded in the results).
    pub plan_file: String,
    /// The run directory.
    pub out: PathBuf,
    /// Name of the lab a lab target builds; a test with a lab of its own appends its
    /// number.
    pub lab_name: String,
    /// Reads each test's command line into its request.
    pub commands: &'a dyn Commands,
    /// Set by Ctrl-C: the running test is interrupted and the run stops.
    pub stop: Stop,
    /// What report.md and report.html are rendered with.
    pub templates: Templates,
}

/// What a finished (or stopped) run wrote.
pub struct Finished {
    /// The campaign, as in `results.json`.
    pub campaign: Campaign,
    /// The reports written (`report.md`, `report.html`, the CSV files).
    pub reports: Vec<PathBuf>,
}

impl Run<'_> {
    /// Checks what the plan needs before anything is written: a usable lab name, root
    /// for labs and raw frames.
    ///
    /// # Errors
    /// A usage error saying what is missing.
    pub fn check(&self, plan: &Plan) -> Result<(), Error> {
        lab::naming::check(&format!("{}{}", self.lab_name, plan.tests.len())).map_err(|e| {
            usage(format!(
                "--name {}: {e} (with the test number appended)",
                self.lab_name
            ))
        })?;
        if plan.needs_root() && !crate::is_root() {
            return Err(usage(
                "this plan builds a lab or sends raw frames: run it as root (sudo)",
            ));
        }
        Ok(())
    }

    /// Runs every test of `plan` in order, until the end or until `stop`.
    ///
    /// # Errors
    /// The run directory cannot be written, or the target cannot be set up (the results
    /// say so).
    pub fn run(&self, plan: &Plan, progress: &mut dyn Progress) -> Result<Finished, Error> {
        self.check(plan)?;
        std::fs::create_dir_all(&self.out)
            .map_err(|e| Error::Failed(format!("creating {}: {e}", self.out.display())))?;
        let mut campaign = Campaign {
            schema: SCHEMA.into(),
            title: plan.title.clone(),
            description: plan.description.clone(),
            metadata: plan.metadata.clone(),
            target: String::new(),
            plan_file: self.plan_file.clone(),
            started_at: engine::env::now_rfc3339(),
            finished_at: None,
            environment: engine::env::environment(),
            interfaces: vec![],
            tests: plan.tests.iter().enumerate().map(entry).collect(),
            verdicts: vec![],
            stopped: None,
        };
        write_results(&self.out, &campaign)?;
        // The plan's hosts as they are now (a DNS name gives its addresses of this moment).
        let hosts = match plan.hosts.as_ref().map(HostSource::resolve).transpose() {
            Ok(h) => h.unwrap_or_default(),
            Err(e) => {
                campaign.stopped = Some(format!("the plan's hosts could not be found: {e}"));
                campaign.finished_at = Some(engine::env::now_rfc3339());
                write_results(&self.out, &campaign)?;
                return Err(e.into());
            }
        };
        let setup = match Setup::new(&plan.target, &self.lab_name) {
            Ok(s) => s,
            Err(e) => {
                campaign.stopped = Some(format!("the target could not be set up: {e}"));
                campaign.finished_at = Some(engine::env::now_rfc3339());
                write_results(&self.out, &campaign)?;
                return Err(e);
            }
        };
        campaign.target = match (&plan.target, hosts.is_empty()) {
            (Target::Hosts, false) => HostSource::describe(&hosts),
            (_, false) => format!("{}; {}", setup.described, HostSource::describe(&hosts)),
            (_, true) => setup.described.clone(),
        };
        campaign.interfaces = setup.interfaces();
        write_results(&self.out, &campaign)?;
        let estimates: Vec<Option<Duration>> = plan
            .tests
            .iter()
            .map(|t| {
                let req = self
                    .commands
                    .test(&t.argv(&self.context(&setup, &hosts)))
                    .ok()?;
                req.method().estimate(&req)
            })
            .collect();
        progress.planned(&estimates);
        for (i, t) in plan.tests.iter().enumerate() {
            if self.stop.is_raised() {
                let id = &campaign.tests[i].id;
                campaign.stopped = Some(format!("interrupted before test {id} ({})", t.name));
                break;
            }
            self.test(plan, i, t, (&setup, &hosts), &mut campaign, progress)?;
            if campaign.stopped.is_some() {
                break;
            }
        }
        drop(setup);
        campaign.finished_at = Some(engine::env::now_rfc3339());
        campaign.verdicts = verdicts(plan, &campaign);
        write_results(&self.out, &campaign)?;
        let reports = write_reports(&self.out, &campaign, &self.templates)?;
        Ok(Finished { campaign, reports })
    }

    /// What a test's command line is made against: `setup`'s target, the plan's `hosts`
    /// as resolved, and the run's lab name for the labs a test builds of its own.
    fn context(&self, setup: &Setup, hosts: &[PlanHost]) -> crate::target::Context {
        crate::target::Context {
            hosts: hosts.to_vec(),
            labs: self.lab_name.clone(),
            ..setup.ctx.clone()
        }
    }

    /// Runs test `i` on `setup` (or on a lab of its own) into its entry, then writes the
    /// results.
    fn test(
        &self,
        plan: &Plan,
        i: usize,
        t: &PlanTest,
        (setup, hosts): (&Setup, &[PlanHost]),
        campaign: &mut Campaign,
        progress: &mut dyn Progress,
    ) -> Result<(), Error> {
        // A test with a lab of its own runs there; the lab goes when the test is done.
        let own = match &t.lab {
            Some(_) => match Setup::new(
                &t.target(&plan.target),
                &format!("{}{}", self.lab_name, i + 1),
            ) {
                Ok(s) => Some(s),
                Err(e) => {
                    let entry = &mut campaign.tests[i];
                    entry.status = TestStatus::Failed;
                    entry.error = Some(format!("its lab could not be built: {e}"));
                    progress.finished(entry);
                    campaign.verdicts = verdicts(plan, campaign);
                    return write_results(&self.out, campaign);
                }
            },
            None => None,
        };
        let setup = own.as_ref().unwrap_or(setup);
        let argv = t.argv(&self.context(setup, hosts));
        // Server-based tests run on the talker of a lab; the rest name their ports.
        let on_talker = setup.lab().is_some() && t.hosts.is_none() && t.kind.needs_server(&argv);
        let entry = &mut campaign.tests[i];
        entry.command = format!("wirebench {}", argv[1..].join(" "));
        entry.node = if on_talker {
            setup.client_node()
        } else {
            "this host".into()
        };
        progress.started(entry);
        let before = setup.lab().and_then(relays);
        let started = engine::clock::RealClock::new();
        let ns = if on_talker {
            setup.client_ns()
        } else {
            Ok(None)
        };
        let stop = &self.stop;
        let outcome = ns
            .and_then(|ns| Ok((ns, self.commands.test(&argv)?)))
            .and_then(|(ns, req)| {
                engine::frameio::in_netns(ns.as_deref(), || {
                    crate::methods::run(&req, &mut Quiet, stop)
                })?
            });
        entry.duration_s = started.mono().as_secs_f64();
        if let (Some(before), Some(lab)) = (&before, setup.lab()) {
            if let Some(after) = relays_settled(lab) {
                if let (Some(split), Some(merge)) =
                    (after[0].since(&before[0]), after[1].since(&before[1]))
                {
                    entry.frer_paths = frer_paths(&split, &merge);
                }
            }
        }
        match outcome {
            // Stopped part-way (Ctrl-C): what it measured is kept, but the test did not run
            // its course, so no table or threshold counts it.
            Ok(r) if r.interrupted => {
                entry.status = TestStatus::Failed;
                entry.error = Some(format!(
                    "interrupted after {:.1} s (its partial figures are in results.json)",
                    entry.duration_s
                ));
                entry.result = Some(r);
            }
            Ok(r) => {
                entry.status = TestStatus::Done;
                entry.result = Some(r);
            }
            Err(e) => {
                entry.status = TestStatus::Failed;
                entry.error = Some(e.to_string());
            }
        }
        if self.stop.is_raised() && entry.status != TestStatus::Done {
            entry.error.get_or_insert_with(|| "interrupted".into());
            campaign.stopped = Some(format!("interrupted during test {} ({})", entry.id, t.name));
        }
        progress.finished(entry);
        drop(own);
        campaign.verdicts = verdicts(plan, campaign);
        write_results(&self.out, campaign)
    }
}

/// The entry of test `i` before it runs.
fn entry((i, t): (usize, &PlanTest)) -> TestEntry {
    TestEntry {
        id: format!("t{}", i + 1),
        name: t.name.clone(),
        kind: t.kind.name().into(),
        command: String::new(),
        node: String::new(),
        status: TestStatus::NotRun,
        error: None,
        duration_s: 0.0,
        result: None,
        frer_paths: vec![],
    }
}

#[cfg(test)]
#[path = "runner_tests.rs"]
mod test;
