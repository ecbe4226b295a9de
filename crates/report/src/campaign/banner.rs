//! The verdict banner that opens a report: PASS, FAIL, INCOMPLETE or MEASURED (every test
//! ran, but no threshold judged anything) in one glance, the
//! thresholds passed of their total, each threshold that failed and why, and each test that
//! did not run. It judges nothing itself: it counts the verdicts the plan and the tests
//! recorded and the tests' status.

use std::fmt::Write as _;

use model::results::campaign::{Campaign, TestStatus};

use crate::table::{html_escape, md_escape};

/// The run's outcome, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// A threshold failed.
    Fail,
    /// No threshold failed, but a test did not run (or the run stopped early).
    Incomplete,
    /// Every test ran and every threshold passed (there was at least one).
    Pass,
    /// Every test ran, and no threshold was set: nothing was judged, so nothing passed.
    Measured,
}

impl Outcome {
    fn word(self) -> &'static str {
        match self {
            Outcome::Fail => "FAIL",
            Outcome::Incomplete => "INCOMPLETE",
            Outcome::Pass => "PASS",
            Outcome::Measured => "MEASURED",
        }
    }
}

/// What the banner says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Banner {
    pub(super) outcome: Outcome,
    /// Thresholds passed, of `total`.
    pub(super) passed: usize,
    pub(super) total: usize,
    /// Each failed threshold: where (`plan` or a test id), its name, why.
    pub(super) failed: Vec<(String, String, String)>,
    /// Each test that did not run: id, name, why.
    pub(super) missing: Vec<(String, String, String)>,
    /// Why the run stopped early, if it did.
    pub(super) stopped: Option<String>,
}

/// The banner of a campaign.
pub(super) fn banner(c: &Campaign) -> Banner {
    let plan = c.verdicts.iter().map(|v| ("plan".to_owned(), v));
    let own = c
        .tests
        .iter()
        .filter_map(|t| Some((t, t.result.as_ref()?)))
        .flat_map(|(t, r)| r.verdicts.iter().map(move |v| (t.id.clone(), v)));
    let all: Vec<_> = plan.chain(own).collect();
    let failed: Vec<(String, String, String)> = all
        .iter()
        .filter(|(_, v)| !v.passed)
        .map(|(at, v)| (at.clone(), v.name.clone(), v.detail.clone()))
        .collect();
    let missing: Vec<(String, String, String)> = c
        .tests
        .iter()
        .filter(|t| t.status != TestStatus::Done)
        .map(|t| {
            let why = match t.status {
                TestStatus::NotRun => "not run: the run stopped before it".to_owned(),
                _ => t.error.clone().unwrap_or_else(|| "failed".into()),
            };
            (t.id.clone(), t.name.clone(), why)
        })
        .collect();
    let outcome = if !failed.is_empty() {
        Outcome::Fail
    } else if !missing.is_empty() || c.stopped.is_some() {
        Outcome::Incomplete
    } else if all.is_empty() {
        Outcome::Measured
    } else {
        Outcome::Pass
    };
    Banner {
        outcome,
        passed: all.len() - failed.len(),
        total: all.len(),
        failed,
        missing,
        stopped: c.stopped.clone(),
    }
}

impl Banner {
    /// The headline: outcome, thresholds and tests in one line.
    fn headline(&self, tests: usize) -> String {
        let thresholds = match self.total {
            0 if self.outcome == Outcome::Measured => {
                "no thresholds set, so nothing was judged".to_owned()
            }
            0 => "no thresholds set".to_owned(),
            n => format!("{} of {n} thresholds passed", self.passed),
        };
        format!(
            "{}: {thresholds}; {} of {tests} tests ran",
            self.outcome.word(),
            tests - self.missing.len()
        )
    }

    /// The banner as Markdown (a quote block).
    pub(super) fn markdown(&self, tests: usize) -> String {
        let mut s = format!("> **{}**\n", self.headline(tests));
        for (at, name, why) in &self.failed {
            let _ = writeln!(
                s,
                ">\n> - FAIL {at}: {}: {}",
                md_escape(name),
                md_escape(why)
            );
        }
        for (id, name, why) in &self.missing {
            let _ = writeln!(s, ">\n> - {id} {}: {}", md_escape(name), md_escape(why));
        }
        if let Some(why) = &self.stopped {
            let _ = writeln!(s, ">\n> - the run stopped early: {}", md_escape(why));
        }
        s.push('\n');
        s
    }

    /// The banner as HTML (a box coloured by the outcome; test ids link to the tests).
    pub(super) fn html(&self, tests: usize) -> String {
        let class = match self.outcome {
            Outcome::Fail => "verdict fail-box",
            Outcome::Incomplete => "verdict incomplete-box",
            Outcome::Pass => "verdict pass-box",
            Outcome::Measured => "verdict measured-box",
        };
        let link = |at: &str| {
            if at == "plan" {
                "plan".to_owned()
            } else {
                format!("<a href=\"#{at}\">{at}</a>", at = html_escape(at))
            }
        };
        let mut s = format!(
            "<div class=\"{class}\"><p><b>{}</b></p>",
            html_escape(&self.headline(tests))
        );
        if !self.failed.is_empty() || !self.missing.is_empty() || self.stopped.is_some() {
            s.push_str("<ul>");
            for (at, name, why) in &self.failed {
                let _ = write!(
                    s,
                    "<li>FAIL {}: {}: {}</li>",
                    link(at),
                    html_escape(name),
                    html_escape(why)
                );
            }
            for (id, name, why) in &self.missing {
                let _ = write!(
                    s,
                    "<li>{} {}: {}</li>",
                    link(id),
                    html_escape(name),
                    html_escape(why)
                );
            }
            if let Some(why) = &self.stopped {
                let _ = write!(s, "<li>the run stopped early: {}</li>", html_escape(why));
            }
            s.push_str("</ul>");
        }
        s.push_str("</div>\n");
        s
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use model::results::campaign::TestEntry;
    use model::results::{RunResult, Verdict};

    fn verdict(name: &str, passed: bool) -> Verdict {
        Verdict {
            name: name.into(),
            passed,
            detail: format!("{name} measured"),
            marginal: false,
        }
    }

    fn campaign(statuses: &[TestStatus], plan: Vec<Verdict>, own: Vec<Verdict>) -> Campaign {
        let mut c: Campaign = serde_json::from_value(serde_json::json!({
            "schema": model::results::campaign::SCHEMA, "title": "t", "target": "x",
            "plan_file": "p.toml", "started_at": "2026-12-01T00:00:00.000Z",
            "environment": {"hostname": "h", "kernel": "k", "cpus": 2, "wirebench_version": "0"},
            "tests": [], "verdicts": []
        }))
        .expect("a campaign");
        c.verdicts = plan;
        for (i, st) in statuses.iter().enumerate() {
            let mut r = RunResult::new(
                "client",
                serde_json::json!({}),
                String::new(),
                c.environment.clone(),
            );
            if i == 0 {
                r.verdicts = own.clone();
            }
            c.tests.push(TestEntry {
                id: format!("t{}", i + 1),
                name: format!("test {}", i + 1),
                kind: "client".into(),
                command: "wirebench client".into(),
                node: String::new(),
                status: *st,
                error: (*st == TestStatus::Failed).then(|| "connection refused".into()),
                duration_s: 1.0,
                result: (*st == TestStatus::Done).then_some(r),
                frer_paths: vec![],
            });
        }
        c
    }

    #[test]
    fn pass_fail_and_incomplete() {
        use TestStatus::*;
        let b = banner(&campaign(
            &[Done, Done],
            vec![verdict("loss", true)],
            vec![],
        ));
        assert_eq!(b.outcome, Outcome::Pass);
        assert_eq!(
            b.headline(2),
            "PASS: 1 of 1 thresholds passed; 2 of 2 tests ran"
        );
        // A test's own limit that failed makes the run FAIL, even with a test missing.
        let c = campaign(
            &[Done, Failed],
            vec![verdict("loss", true)],
            vec![verdict("p99", false)],
        );
        let b = banner(&c);
        assert_eq!(b.outcome, Outcome::Fail);
        assert_eq!((b.passed, b.total), (1, 2));
        assert_eq!(
            b.failed,
            [("t1".into(), "p99".into(), "p99 measured".into())]
        );
        assert_eq!(b.missing[0].2, "connection refused");
        let md = b.markdown(2);
        assert!(
            md.starts_with("> **FAIL: 1 of 2 thresholds passed; 1 of 2 tests ran**"),
            "{md}"
        );
        let html = b.html(2);
        assert!(
            html.contains("fail-box") && html.contains("<a href=\"#t2\">t2</a>"),
            "{html}"
        );
        // Every test ran, and no threshold was set: not a PASS.
        let b = banner(&campaign(&[Done, Done], vec![], vec![]));
        assert_eq!(b.outcome, Outcome::Measured);
        assert_eq!(
            b.headline(2),
            "MEASURED: no thresholds set, so nothing was judged; 2 of 2 tests ran"
        );
        assert!(b.html(2).contains("measured-box"));
        // Nothing failed, but a test did not run.
        let b = banner(&campaign(&[Done, NotRun], vec![], vec![]));
        assert_eq!(b.outcome, Outcome::Incomplete);
        assert_eq!(
            b.headline(2),
            "INCOMPLETE: no thresholds set; 1 of 2 tests ran"
        );
    }
}
