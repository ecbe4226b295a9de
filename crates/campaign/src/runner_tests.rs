//! Unit tests of a whole run over a scripted method: what each test's entry says after it
//! passed, failed or was cut short, where a stop ends the run, and which tests the
//! thresholds judge. The target is a host that is never contacted (the scripted method
//! talks to no one); the run directory is a temporary one.

use std::sync::Mutex;

use model::results::{RunResult, Summary};
use model::units::Fixed;

use super::*;
use crate::methods::{shared, Method, Methods, Registered, TestRequest, ThresholdMetric};
use crate::plan::CommandError;
use crate::Watch;

/// A method that does what its command line says: `--bps RATE` measured, `--fail MSG`
/// fails, `--interrupted` gives figures cut short, `--ctrl-c` raises the run's stop
/// while it runs (and then ends as interrupted).
struct Scripted;

#[derive(Debug, Clone, PartialEq)]
struct Script {
    bps: f64,
    fail: Option<String>,
    interrupted: bool,
    ctrl_c: bool,
}

#[derive(Debug, clap::Args)]
struct ScriptArgs {}

const THRESHOLDS: [ThresholdMetric; 1] = [shared::RECEIVED_BPS];

impl Method for Scripted {
    type Request = Script;
    type Args = ScriptArgs;

    fn request(&self, _a: &ScriptArgs) -> Result<Script, Error> {
        Err(usage("scripted tests come from their command line"))
    }

    fn json(&self, _a: &ScriptArgs) -> bool {
        true
    }

    fn kind(&self) -> &'static str {
        "scripted"
    }

    fn needs_server(&self, _args: &[String]) -> bool {
        true
    }

    fn run(&self, s: &Script, _watch: &mut dyn Watch, stop: &Stop) -> Result<RunResult, Error> {
        if s.ctrl_c {
            stop.raise();
            return Err(Error::Interrupted);
        }
        if let Some(m) = &s.fail {
            return Err(Error::Failed(m.clone()));
        }
        let mut r = RunResult::new(
            "scripted",
            serde_json::json!({}),
            String::new(),
            Default::default(),
        );
        r.summary = Some(Summary {
            received_bps: Some(s.bps),
            ..Summary::default()
        });
        r.interrupted = s.interrupted;
        Ok(r)
    }

    /// A failing test cannot tell; the others take 2 s at 100M and 1 s faster.
    fn estimate(&self, s: &Script) -> Option<Duration> {
        s.fail
            .is_none()
            .then(|| Duration::from_secs(if s.bps < 500e6 { 2 } else { 1 }))
    }

    fn text(&self, _req: &Script, _r: &RunResult, _unit: Option<Fixed>) -> String {
        String::new()
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &THRESHOLDS
    }

    fn figures(&self, r: &RunResult) -> Vec<model::results::figures::Figure> {
        model::results::figures::figures(r)
    }
}

static ONLY_SCRIPTED: &[&dyn Registered] = &[&Scripted];

/// Reads a scripted test's command line and remembers every one it was given.
#[derive(Default)]
struct ScriptCommands {
    asked: Mutex<Vec<String>>,
}

impl Commands for ScriptCommands {
    fn test(&self, argv: &[String]) -> Result<TestRequest, CommandError> {
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(argv.join(" "));
        let after = |flag: &str| {
            let i = argv.iter().position(|a| a == flag)?;
            argv.get(i + 1).cloned()
        };
        let has = |flag: &str| argv.iter().any(|a| a == flag);
        let bps = match after("--bps") {
            Some(b) => {
                model::units::rate_bps(&b).map_err(|e| CommandError::Refused(e.to_string()))?
            }
            None => 0.0,
        };
        Ok(TestRequest::new(
            &Scripted,
            Script {
                bps,
                fail: after("--fail"),
                interrupted: has("--interrupted"),
                ctrl_c: has("--ctrl-c"),
            },
        ))
    }

    fn lab(&self, _: &str, _: &[String]) -> Result<lab::topology::Request, CommandError> {
        Err(CommandError::Refused("no labs".into()))
    }

    fn methods(&self) -> Methods {
        Methods::new(ONLY_SCRIPTED)
    }
}

/// What progress heard: `started ID COMMAND` and `finished ID STATUS`.
#[derive(Default)]
struct Heard(Vec<String>);

impl Progress for Heard {
    fn planned(&mut self, estimates: &[Option<Duration>]) {
        self.0.push(format!("planned {estimates:?}"));
    }

    fn started(&mut self, e: &TestEntry) {
        self.0.push(format!("started {} {}", e.id, e.command));
    }

    fn finished(&mut self, e: &TestEntry) {
        self.0.push(format!("finished {} {:?}", e.id, e.status));
    }
}

/// A run directory of its own, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("wb-runner-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A plan against a host of `tests` (`(name, args)`), every test's received rate at
/// least 500 Mbit/s, and test `b` in particular.
fn plan(tests: &[(&str, &str)], cmds: &ScriptCommands) -> Plan {
    let mut text = "[target]\nhost = \"198.18.0.1\"\n".to_owned();
    for (name, args) in tests {
        text += &format!("[[test]]\nname = \"{name}\"\nkind = \"scripted\"\nargs = \"{args}\"\n");
    }
    text += "[[threshold]]\nmetric = \"received_bps\"\nmin = \"500M\"\n";
    Plan::parse(&text, cmds).expect("the plan parses")
}

/// Runs `plan` into `dir` with `stop`; the campaign and what progress heard.
fn run(plan: &Plan, cmds: &ScriptCommands, dir: &TempDir, stop: Stop) -> (Campaign, Vec<String>) {
    let run = Run {
        plan_file: "plan.toml".into(),
        out: dir.0.clone(),
        lab_name: "wbt".into(),
        commands: cmds,
        stop,
        templates: Templates::builtin(),
    };
    let mut heard = Heard::default();
    let done = run.run(plan, &mut heard).expect("the run ends");
    (done.campaign, heard.0)
}

/// (status, error) of each test.
fn statuses(c: &Campaign) -> Vec<(TestStatus, Option<&str>)> {
    c.tests
        .iter()
        .map(|t| (t.status, t.error.as_deref()))
        .collect()
}

/// (passed, name) of each verdict.
fn verdicts_of(c: &Campaign) -> Vec<(bool, &str)> {
    c.verdicts
        .iter()
        .map(|v| (v.passed, v.name.as_str()))
        .collect()
}

#[test]
fn time_left_is_each_tests_estimate_at_the_pace_the_finished_ones_kept() {
    let s = Duration::from_secs;
    let mut t = TimeLeft::new(&[Some(s(10)), Some(s(40)), None, Some(s(10))]);
    assert_eq!(t.left(s(0)), (s(60), 1));
    // The running test's time counts down, not below zero.
    assert_eq!(t.left(s(4)), (s(56), 1));
    assert_eq!(t.left(s(30)), (s(50), 1));
    // The first took twice its estimate: the rest are expected at that pace.
    t.finished(s(20));
    assert!((t.pace() - 2.0).abs() < 1e-9);
    assert_eq!(t.running(), Some(s(40)));
    assert_eq!(t.left(s(0)), (s(100), 1));
    // A test without an estimate leaves the pace alone, and the count of unknowns drops.
    t.finished(s(80));
    t.finished(s(5));
    assert_eq!(t.left(s(0)), (s(20), 0));
    // The pace is held between half and three times.
    let mut slow = TimeLeft::new(&[Some(s(1)), Some(s(10))]);
    slow.finished(s(100));
    assert_eq!(slow.left(s(0)), (s(30), 0));
}

#[test]
fn each_test_runs_its_command_line_against_the_target_and_is_recorded() {
    let cmds = ScriptCommands::default();
    let p = plan(&[("fast", "--bps 900M"), ("slow", "--bps 100M")], &cmds);
    cmds.asked.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let dir = TempDir::new("recorded");
    let (c, heard) = run(&p, &cmds, &dir, Stop::new());
    let line = |bps: &str| format!("wirebench scripted 198.18.0.1 -p 5301 --bps {bps} -J");
    // Each command line is read twice: for its estimate before the first test, and to run.
    assert_eq!(
        *cmds.asked.lock().unwrap_or_else(|e| e.into_inner()),
        [line("900M"), line("100M"), line("900M"), line("100M")]
    );
    assert_eq!(
        heard,
        [
            "planned [Some(1s), Some(2s)]".into(),
            format!("started t1 {}", line("900M")),
            "finished t1 Done".into(),
            format!("started t2 {}", line("100M")),
            "finished t2 Done".into(),
        ]
    );
    assert_eq!(
        statuses(&c),
        [(TestStatus::Done, None), (TestStatus::Done, None)]
    );
    assert_eq!(c.tests[0].node, "this host");
    assert_eq!(c.target, "host 198.18.0.1 (wirebench server on port 5301)");
    assert!(c.stopped.is_none() && c.finished_at.is_some());
    assert_eq!(
        verdicts_of(&c),
        [
            (true, "received_bps of fast (t1)"),
            (false, "received_bps of slow (t2)")
        ]
    );
    // results.json holds the same campaign, and the reports are written beside it.
    let written: Campaign =
        serde_json::from_slice(&std::fs::read(dir.0.join("results.json")).expect("results.json"))
            .expect("a campaign");
    assert_eq!(written.verdicts, c.verdicts);
    assert!(dir.0.join("report.md").exists() && dir.0.join("report.html").exists());
}

#[test]
fn a_failed_test_keeps_its_error_and_the_run_goes_on() {
    let cmds = ScriptCommands::default();
    let p = plan(&[("broken", "--fail boom"), ("fast", "--bps 900M")], &cmds);
    let dir = TempDir::new("failed");
    let (c, _) = run(&p, &cmds, &dir, Stop::new());
    assert_eq!(
        statuses(&c),
        [(TestStatus::Failed, Some("boom")), (TestStatus::Done, None)]
    );
    assert!(c.tests[0].result.is_none());
    assert!(c.stopped.is_none());
    // The failed test would have measured the rate: its threshold fails, not passes.
    let v = &c.verdicts[0];
    assert_eq!(
        (v.passed, v.name.as_str()),
        (false, "received_bps of broken (t1)")
    );
    assert!(v.detail.starts_with("not measured"), "{v:?}");
}

#[test]
fn a_test_cut_short_keeps_its_figures_but_no_threshold_counts_them() {
    let cmds = ScriptCommands::default();
    let p = plan(&[("cut", "--bps 900M --interrupted")], &cmds);
    let dir = TempDir::new("cut");
    let (c, _) = run(&p, &cmds, &dir, Stop::new());
    let t = &c.tests[0];
    assert_eq!(t.status, TestStatus::Failed);
    let error = t.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("interrupted after "), "{error}");
    assert!(
        error.ends_with("(its partial figures are in results.json)"),
        "{error}"
    );
    let kept = t.result.as_ref().and_then(|r| r.summary.as_ref());
    assert_eq!(kept.and_then(|s| s.received_bps), Some(900e6));
    // Its 900 Mbit/s would pass; measured part-way, they are not measured.
    assert_eq!(verdicts_of(&c), [(false, "received_bps of cut (t1)")]);
    assert!(
        c.verdicts[0].detail.starts_with("not measured"),
        "{:?}",
        c.verdicts
    );
}

#[test]
fn a_stop_during_a_test_ends_the_run_there_and_the_rest_is_not_run() {
    let cmds = ScriptCommands::default();
    let p = plan(
        &[
            ("fast", "--bps 900M"),
            ("stopped", "--ctrl-c"),
            ("after", "--bps 900M"),
        ],
        &cmds,
    );
    let dir = TempDir::new("stopped");
    let (c, heard) = run(&p, &cmds, &dir, Stop::new());
    assert_eq!(
        statuses(&c),
        [
            (TestStatus::Done, None),
            (TestStatus::Failed, Some("interrupted")),
            (TestStatus::NotRun, None),
        ]
    );
    assert_eq!(
        c.stopped.as_deref(),
        Some("interrupted during test t2 (stopped)")
    );
    assert_eq!(heard.len(), 5, "planned, then t3 never started: {heard:?}");
    // t2 would have measured; t3 did not run, so no verdict names it.
    assert_eq!(
        verdicts_of(&c),
        [
            (true, "received_bps of fast (t1)"),
            (false, "received_bps of stopped (t2)")
        ]
    );
}

#[test]
fn a_run_stopped_before_it_starts_runs_nothing_and_says_where() {
    let cmds = ScriptCommands::default();
    let p = plan(&[("fast", "--bps 900M")], &cmds);
    let dir = TempDir::new("before");
    let (c, heard) = run(&p, &cmds, &dir, Stop::raised());
    assert_eq!(heard, ["planned [Some(1s)]"], "nothing started");
    assert_eq!(statuses(&c), [(TestStatus::NotRun, None)]);
    assert_eq!(
        c.stopped.as_deref(),
        Some("interrupted before test t1 (fast)")
    );
    // The threshold had nothing to judge: it fails by its line.
    assert_eq!(verdicts_of(&c), [(false, "received_bps (line 8)")]);
}

#[test]
fn a_lab_name_too_long_with_its_test_numbers_is_refused_before_anything_is_written() {
    let cmds = ScriptCommands::default();
    let p = plan(&[("fast", "--bps 900M")], &cmds);
    let dir = TempDir::new("name");
    let run = Run {
        plan_file: "plan.toml".into(),
        out: dir.0.clone(),
        lab_name: "a-lab-name-far-too-long-for-namespaces".into(),
        commands: &cmds,
        stop: Stop::new(),
        templates: Templates::builtin(),
    };
    let e = run.run(&p, &mut Quiet).err().map(|e| e.to_string());
    assert!(
        e.as_deref()
            .is_some_and(|e| e.starts_with("--name a-lab-name")),
        "{e:?}"
    );
    assert!(!dir.0.exists(), "nothing written");
}

#[test]
fn tests_that_have_not_run_are_left_out_of_the_verdicts() {
    let cmds = ScriptCommands::default();
    let p = plan(&[("fast", "--bps 900M"), ("later", "--bps 900M")], &cmds);
    let mut c = Campaign {
        schema: SCHEMA.into(),
        title: String::new(),
        description: None,
        metadata: Default::default(),
        target: String::new(),
        plan_file: String::new(),
        started_at: String::new(),
        finished_at: None,
        environment: Default::default(),
        interfaces: vec![],
        tests: p.tests.iter().enumerate().map(entry).collect(),
        verdicts: vec![],
        stopped: None,
    };
    assert_eq!(
        c.tests
            .iter()
            .map(|t| (t.id.as_str(), t.kind.as_str()))
            .collect::<Vec<_>>(),
        [("t1", "scripted"), ("t2", "scripted")]
    );
    // Only the first has run; the second, which would have measured the rate, is not
    // named as "not measured".
    let mut fast = RunResult::new(
        "scripted",
        serde_json::json!({}),
        String::new(),
        Default::default(),
    );
    fast.summary = Some(Summary {
        received_bps: Some(900e6),
        ..Summary::default()
    });
    c.tests[0].status = TestStatus::Done;
    c.tests[0].result = Some(fast);
    let v = verdicts(&p, &c);
    assert_eq!(
        v.iter()
            .map(|v| (v.passed, v.name.as_str()))
            .collect::<Vec<_>>(),
        [(true, "received_bps of fast (t1)")]
    );
}
