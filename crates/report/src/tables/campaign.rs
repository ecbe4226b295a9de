//! The tables a campaign report has besides the methods': its tests, the verdicts, and
//! the environment the tests ran in.

use model::results::campaign::{Campaign, InterfaceFacts, TestEntry, TestStatus};
use model::results::Verdict;

use super::{done, Section};
use crate::table::{opt, Table};

// The campaign's own sections (see `super::sections`).
#[rustfmt::skip]
const TESTS: Section = Section { name: "tests", title: "Tests and methods", intro: "Each test is one wirebench command with -J; its full result is in results.json under tests[].result.", columns: "source|test|method|where|status|secs>|backend|command" };
#[rustfmt::skip]
const COMPLIANCE: Section = Section { name: "compliance", title: "Standards and threshold compliance", intro: "The plan's thresholds (source: plan) and the limits tests checked themselves.", columns: "source|check|result|detail" };
#[rustfmt::skip]
const INTERFACES: Section = Section { name: "interfaces", title: "Test environment", intro: "", columns: "node|interface|driver|speed Mbit/s>|MTU>|MAC|addresses|offloads on" };

/// How a test ended, for tables and details.
pub fn status(s: TestStatus) -> &'static str {
    match s {
        TestStatus::Done => "done",
        TestStatus::Failed => "FAILED",
        TestStatus::NotRun => "not run",
    }
}

fn test_row(t: &TestEntry) -> Vec<String> {
    let status = match t.status {
        TestStatus::Failed => format!("FAILED: {}", t.error.as_deref().unwrap_or("")),
        s => status(s).into(),
    };
    let backend = t.result.as_ref().and_then(|r| r.backend.clone());
    let mut row = vec![
        t.id.clone(),
        t.name.clone(),
        t.kind.clone(),
        t.node.clone(),
        status,
    ];
    row.extend([format!("{:.1}", t.duration_s), opt(backend, |b| b)]);
    row.push(format!("`{}`", t.command));
    row
}

/// Every test of the plan: where it ran, how it ended, its backend and command line.
pub fn tests(c: &Campaign) -> Table {
    TESTS.with(c.tests.iter().map(test_row).collect())
}

fn verdict_row(source: &str, v: &Verdict) -> Vec<String> {
    vec![
        source.to_owned(),
        v.name.clone(),
        v.word().into(),
        v.detail.clone(),
    ]
}

/// The plan's thresholds (source `plan`) and the limits tests checked themselves.
pub fn compliance(c: &Campaign) -> Table {
    let plan = c.verdicts.iter().map(|v| verdict_row("plan", v));
    let own = done(c).flat_map(|(t, r)| r.verdicts.iter().map(|v| verdict_row(&t.id, v)));
    let rows: Vec<Vec<String>> = plan.chain(own).collect();
    if rows.is_empty() {
        let none = "The plan set no thresholds and no test checked a limit.";
        return Section {
            intro: none,
            ..COMPLIANCE
        }
        .with(rows);
    }
    COMPLIANCE.with(rows)
}

fn interface_row(i: &InterfaceFacts) -> Vec<String> {
    let text = |v: &Option<String>| opt(v.clone(), |d| d);
    let mut row = vec![i.node.clone(), i.name.clone(), text(&i.driver)];
    row.push(opt(i.speed_mbps, |s| s.to_string()));
    row.push(opt(i.mtu, |m| m.to_string()));
    row.extend([text(&i.mac), i.addresses.join(" "), i.offloads_on.join(" ")]);
    row
}

/// The interfaces of the nodes that took part, and the controller.
pub fn interfaces(c: &Campaign) -> Table {
    let e = &c.environment;
    let model = e.cpu_model.as_deref().map(|m| format!(": {m}"));
    let intro = format!(
        "Controller {} (Linux {}, {} CPUs{}), wirebench {}. Target: {}. The backend of each test is in the tests table.",
        e.hostname,
        e.kernel,
        e.cpus,
        model.unwrap_or_default(),
        e.wirebench_version,
        c.target
    );
    let rows = c.interfaces.iter().map(interface_row).collect();
    Table {
        intro,
        ..INTERFACES.with(rows)
    }
}
