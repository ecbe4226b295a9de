//! A run as JUnit XML, the report CI systems (Jenkins, GitLab, GitHub) show natively.
//!
//! What it holds: one test suite named after the run; a testcase per test (class `test.KIND`:
//! a test that could not run is an error with its reason, one that did not run is skipped)
//! and per verdict (class `threshold` for the plan's thresholds, `verdict.ID` for a test's
//! own limits such as `--latency-limit`; a failed one is a failure whose message is the
//! verdict's detail). What it does not do: judge anything (the verdicts are the run's).

use std::time::Duration;

use model::results::campaign::{Campaign, TestStatus};
use model::results::Verdict;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

/// A verdict as a testcase.
fn verdict(class: &str, v: &Verdict) -> TestCase {
    let status = if v.passed {
        TestCaseStatus::success()
    } else {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(v.detail.clone());
        s.set_type("threshold");
        s
    };
    let mut tc = TestCase::new(v.name.clone(), status);
    tc.set_classname(class.to_owned());
    tc.set_system_out(format!("{}: {}", v.word(), v.detail));
    tc
}

/// The XML writer failed (it does not on the documents a run writes; the message says why
/// if it ever does).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct JunitError(#[from] quick_junit::SerializeError);

/// The run's JUnit XML.
///
/// # Errors
/// The XML writer fails.
pub fn campaign(c: &Campaign) -> Result<String, JunitError> {
    let mut suite = TestSuite::new(format!("wirebench run: {}", c.title));
    for t in &c.tests {
        let status = match t.status {
            TestStatus::Done => TestCaseStatus::success(),
            TestStatus::Failed => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(t.error.clone().unwrap_or_else(|| "failed".into()));
                s
            }
            TestStatus::NotRun => {
                let mut s = TestCaseStatus::skipped();
                s.set_message("the run stopped before this test");
                s
            }
        };
        let mut tc = TestCase::new(format!("{}: {}", t.id, t.name), status);
        tc.set_classname(format!("test.{}", t.kind));
        if t.duration_s.is_finite() && t.duration_s >= 0.0 {
            tc.set_time(Duration::from_secs_f64(t.duration_s));
        }
        tc.set_system_out(t.command.clone());
        suite.add_test_case(tc);
        for v in t.result.iter().flat_map(|r| &r.verdicts) {
            suite.add_test_case(verdict(&format!("verdict.{}", t.id), v));
        }
    }
    for v in &c.verdicts {
        suite.add_test_case(verdict("threshold", v));
    }
    let mut report = Report::new("wirebench");
    report.add_test_suite(suite);
    Ok(report.to_string()?)
}
