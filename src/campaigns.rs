//! Campaigns: `run PLAN.toml` (the campaign crate runs it; this shows its progress and
//! what it wrote), `demo` (the built-in plan), `report` (render a run again) and
//! `compare` (two runs side by side).

use std::path::Path;

use anyhow::{Context as _, Result};
use campaign::plan::Plan;
use std::sync::{Arc, Mutex};

use campaign::runner::{Progress, Run, TimeLeft};
use engine::clock::RealClock;
use model::clock::Clock as _;
use model::results::campaign::{Campaign, TestEntry, TestStatus};
use model::units;

use crate::cli::{CompareArgs, DemoArgs, ReportArgs, RunArgs};
use crate::output::{errln, out, outln};
use crate::output::{stop_on_signals, usage, VerdictFailed};

/// A progress bar on stderr (drawn on a terminal only) with a line per test started and
/// per test ended, each with its own estimate; the time left is each remaining test's
/// estimate at the pace the finished ones kept ([`TimeLeft`]).
struct Bar {
    bar: indicatif::ProgressBar,
    eta: Arc<Mutex<(TimeLeft, RealClock)>>,
}

impl Bar {
    fn new(tests: usize) -> Self {
        let target = indicatif::ProgressDrawTarget::stderr();
        let bar = indicatif::ProgressBar::with_draw_target(Some(tests as u64), target);
        let eta = Arc::new(Mutex::new((TimeLeft::default(), RealClock::new())));
        let shared = Arc::clone(&eta);
        let left = move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let (t, clock) = &*shared.lock().unwrap_or_else(|e| e.into_inner());
            let (left, unknown) = t.left(clock.mono());
            let _ = write!(w, "about {} left", units::span(left.as_secs_f64()));
            if unknown > 0 {
                let _ = write!(w, " (and {unknown} test(s) with no estimate)");
            }
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} tests, {elapsed} elapsed, {left}: {msg}",
        ) {
            bar.set_style(style.with_key("left", left));
        }
        bar.enable_steady_tick(std::time::Duration::from_secs(1));
        Self { bar, eta }
    }

    fn estimate(&self) -> Option<std::time::Duration> {
        let (t, _) = &*self.eta.lock().unwrap_or_else(|e| e.into_inner());
        t.running()
    }
}

impl Progress for Bar {
    fn planned(&mut self, estimates: &[Option<std::time::Duration>]) {
        let time_left = TimeLeft::new(estimates);
        // Before the first test: every estimate at the pace of 1.
        let (known, unknown) = time_left.left(std::time::Duration::ZERO);
        // The lock is let go before the bar draws: drawing reads the time left through it.
        self.eta.lock().unwrap_or_else(|e| e.into_inner()).0 = time_left;
        let more = if unknown > 0 {
            format!(", and {unknown} test(s) that cannot tell")
        } else {
            String::new()
        };
        self.bar.suspend(|| {
            errln!(
                "{} tests, about {} by their own estimates{more}",
                estimates.len(),
                units::span(known.as_secs_f64())
            )
        });
    }

    fn started(&mut self, e: &TestEntry) {
        self.eta.lock().unwrap_or_else(|e| e.into_inner()).1 = RealClock::new();
        self.bar.set_message(format!("{} ({})", e.name, e.kind));
        let est = self
            .estimate()
            .map(|d| format!(" (estimated {})", units::span(d.as_secs_f64())))
            .unwrap_or_default();
        self.bar
            .suspend(|| errln!("[{}] {}: {}{est}", e.id, e.name, e.command));
    }

    fn finished(&mut self, e: &TestEntry) {
        let est = self
            .estimate()
            .map(|d| format!(", estimated {}", units::span(d.as_secs_f64())))
            .unwrap_or_default();
        self.eta
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .finished(std::time::Duration::from_secs_f64(e.duration_s));
        let took = units::span(e.duration_s);
        if e.status == TestStatus::Failed {
            let err = e.error.as_deref().unwrap_or("");
            self.bar
                .suspend(|| errln!("[{}] failed after {took}{est}: {err}", e.id));
        } else {
            self.bar
                .suspend(|| errln!("[{}] done in {took}{est}", e.id));
        }
        self.bar.inc(1);
    }
}

/// `wirebench run`: exit code 3 when a threshold fails, 1 when a test did not complete.
pub fn run(a: &RunArgs) -> Result<()> {
    let shown = a.plan.display();
    let text =
        std::fs::read_to_string(&a.plan).map_err(|e| usage(format!("cannot read {shown}: {e}")))?;
    let commands = crate::requests::Parser;
    let plan =
        Plan::parse(&text, &commands).map_err(|e| campaign::Error::from(e).context(&shown))?;
    let mut run = Run {
        plan_file: shown.to_string(),
        out: a.out.clone(),
        lab_name: a.name.clone(),
        commands: &commands,
        stop: crate::output::never(),
        templates: templates(a.template.as_deref())?,
    };
    run.check(&plan)?;
    // The JUnit file's place is checked now, not after hours of tests; its directory is
    // made as --out's is (`--out run --junit run/junit.xml` on a fresh checkout).
    if let Some(path) = &a.junit {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| usage(format!("--junit {}: {e}", path.display())))?;
        }
        // Opened without following a symbolic link: one planted there (ELOOP) is left
        // alone, its target not created; the file written at the end replaces the link.
        use std::os::unix::fs::OpenOptionsExt;
        let opened = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path);
        if let Err(e) = opened {
            if e.raw_os_error() != Some(libc::ELOOP) {
                return Err(usage(format!("--junit {}: {e}", path.display())));
            }
        }
    }
    run.stop = stop_on_signals()?;
    let mut bar = Bar::new(plan.tests.len());
    let finished = run.run(&plan, &mut bar);
    bar.bar.finish_and_clear();
    let finished = finished?;
    let c = &finished.campaign;
    let done = c
        .tests
        .iter()
        .filter(|t| t.status == TestStatus::Done)
        .count();
    let failed = c.verdicts.iter().filter(|v| !v.passed).count();
    outln!(
        "{done} of {} tests done; {} of {} thresholds passed",
        c.tests.len(),
        c.verdicts.len() - failed,
        c.verdicts.len()
    );
    if let Some(s) = &c.stopped {
        outln!("stopped early: {s}");
    }
    for f in finished
        .reports
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e != "csv"))
    {
        outln!("wrote {}", f.display());
    }
    let results = a.out.join("results.json");
    outln!("wrote {} (and one CSV per table)", results.display());
    if let Some(path) = &a.junit {
        let xml = report::junit::campaign(c).map_err(|e| anyhow::anyhow!("JUnit XML: {e}"))?;
        engine::files::write_atomic(path, xml.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        outln!("wrote {}", path.display());
    }
    if c.stopped.is_some() || done < c.tests.len() {
        anyhow::bail!(
            "{} test(s) did not complete (see {})",
            c.tests.len() - done,
            results.display()
        );
    }
    if failed > 0 {
        return Err(VerdictFailed(format!("{failed} threshold(s) failed")).into());
    }
    Ok(())
}

/// `wirebench demo`: the built-in campaign, as root on labs, otherwise on loopback.
pub fn demo(a: &DemoArgs) -> Result<()> {
    let root = campaign::is_root() && !a.loopback;
    if !root && !a.loopback {
        outln!(
            "wirebench demo: not root, so on loopback; the FRER network with path loss and the shaper profile need network namespaces (run `sudo wirebench demo` for them)"
        );
    }
    let plan = campaign::demo::write_plan(&a.out, root)?;
    outln!(
        "wirebench demo: running {} (results in {})",
        if root {
            "the lab plan: a FRER network with path loss, a shaper and the FRER overhead"
        } else {
            "the loopback plan"
        },
        a.out.display()
    );
    run(&RunArgs {
        plan,
        out: a.out.clone(),
        name: a.name.clone(),
        template: None,
        junit: None,
    })?;
    outln!(
        "demo done: every figure in {} was measured just now on this machine",
        a.out.join("report.html").display()
    );
    Ok(())
}

/// The report templates: built in, or those of `dir` (`--template`), checked now so that a
/// mistake shows before a run rather than after it.
fn templates(dir: Option<&std::path::Path>) -> Result<report::campaign::Templates> {
    match dir {
        None => Ok(report::campaign::Templates::builtin()),
        Some(d) => {
            let refused = |what: &std::path::Path, e: &dyn std::fmt::Display| {
                usage(format!(
                    "--template {}: {}: {e}",
                    d.display(),
                    what.display()
                ))
            };
            std::fs::read_dir(d).map_err(|e| refused(d, &e))?;
            let read = |name: &str| -> Result<Option<String>> {
                let path = d.join(name);
                if !path.exists() {
                    return Ok(None);
                }
                std::fs::read_to_string(&path)
                    .map(Some)
                    .map_err(|e| refused(&path, &e))
            };
            let [md, html] = report::campaign::Templates::FILES;
            report::campaign::Templates::from_sources(d, read(md)?, read(html)?)
                .map_err(|e| usage(format!("--template {}: {e}", d.display())))
        }
    }
}

/// `wirebench report results.json [--format md|html|csv] [--out DIR]`: renders a finished
/// (or interrupted) run again, from its results file alone.
pub fn report(a: &ReportArgs) -> Result<()> {
    let shown = a.results.display();
    let text = std::fs::read_to_string(&a.results)
        .map_err(|e| usage(format!("cannot read {shown}: {e}")))?;
    let c = report::campaign::load(&text).map_err(|e| usage(format!("{shown}: {e}")))?;
    let t = templates(a.template.as_deref())?;
    let methods = campaign::methods::Methods::STANDARD;
    let rendered = |r: Result<String, report::campaign::TemplateError>| {
        r.map_err(|e| anyhow::anyhow!("rendering the report: {e}"))
    };
    match (a.format.as_str(), &a.out) {
        ("md", None) => out!("{}", rendered(t.markdown_with(&c, &methods))?),
        ("html", None) => out!("{}", rendered(t.html_with(&c, &methods))?),
        ("csv", None) => {
            for (name, csv) in report::campaign::csv_tables_with(&c, &methods) {
                outln!("# {name}.csv\n{csv}");
            }
        }
        (_, Some(dir)) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for f in campaign::runner::write_reports(dir, &c, &t)? {
                outln!("wrote {}", f.display());
            }
        }
        (other, None) => return Err(usage(format!("--format {other}: use md, html or csv"))),
    }
    Ok(())
}

/// `wirebench compare A.json B.json [-J]`.
pub fn compare(a: &CompareArgs) -> Result<()> {
    let figures = campaign::methods::figures;
    let read = |p: &Path| -> Result<Campaign> {
        let text = std::fs::read_to_string(p)
            .map_err(|e| usage(format!("cannot read {}: {e}", p.display())))?;
        report::campaign::load_any(&text).map_err(|e| usage(format!("{}: {e}", p.display())))
    };
    let (ca, cb) = (read(&a.a)?, read(&a.b)?);
    if !a.json {
        let (na, nb) = (a.a.display().to_string(), a.b.display().to_string());
        let md = report::campaign::compare_markdown_with(&ca, &cb, &na, &nb, &figures);
        out!("{md}");
        return Ok(());
    }
    let keys = [
        "test",
        "figure",
        "unit",
        "a",
        "b",
        "difference",
        "overhead_percent",
    ];
    let doc: Vec<serde_json::Value> = report::campaign::compare_rows_with(&ca, &cb, &figures)
        .iter()
        .map(|r| {
            let cells = keys.iter().zip(r).map(|(k, v)| {
                // Numbers as numbers ("+1.5" too); the rest as written.
                let num = v.trim_start_matches('+').parse::<f64>().ok();
                let val = num.and_then(serde_json::Number::from_f64).map_or_else(
                    || serde_json::Value::String(v.clone()),
                    serde_json::Value::Number,
                );
                ((*k).to_owned(), val)
            });
            serde_json::Value::Object(cells.collect())
        })
        .collect();
    outln!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}
