//! `wirebench run` end to end on loopback (no root): a short plan, every report file, every
//! number of report.md's tables traced back to results.json, thresholds that fail (exit
//! 3), an interrupted run that keeps what it finished, `wirebench report` re-rendering, and
//! the HTML report opened in headless Chromium.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

fn out_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wb-run-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn write_plan(dir: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

const SHORT_PLAN: &str = r#"
[plan]
title = "short loopback plan"
metadata = { purpose = "integration test" }

[target]
loopback = true

[[test]]
name = "udp"
kind = "client"
args = "-u -b 100M -t 1"

[[test]]
name = "sweep"
kind = "sweep"
args = "--from 50M --to 100M --step 50M -t 0.5"

[[test]]
name = "pingpong"
kind = "latency"
args = "-l 64 -t 0.5"

[[test]]
name = "rfc2544"
kind = "rfc2544"
args = "--sizes 1518 -t 0.5 --tests throughput,latency --latency-trials 1"

[[test]]
name = "latency under load"
kind = "rrul"
args = "-t 1 --idle 0.3 -P 1 --ping-rate 50"

[[threshold]]
test = "udp"
metric = "loss"
max = "5%"

[[threshold]]
test = "pingpong"
metric = "latency_p50"
max = "1us"
"#;

/// Every number of the JSON document, at any depth.
fn json_numbers(v: &serde_json::Value, out: &mut Vec<f64>) {
    match v {
        serde_json::Value::Number(n) => out.extend(n.as_f64()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_numbers(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| json_numbers(x, out)),
        _ => {}
    }
}

/// The right-aligned (numeric) cells of report.md's tables.
fn numeric_cells(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines: Vec<&str> = md.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if !l.starts_with("|---") && !l.starts_with("| ---") {
            continue;
        }
        let right: Vec<bool> = l
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().ends_with(':'))
            .collect();
        for row in lines[i + 1..].iter().take_while(|r| r.starts_with('|')) {
            for (cell, r) in row.trim_matches('|').split('|').zip(&right) {
                let c = cell.trim();
                if *r && !c.is_empty() && c != "-" {
                    // A sign, or the mark of a lower bound ("≥ 98.70": an RFC 2544
                    // throughput the generator capped), qualifies the number shown.
                    let number = c.trim_start_matches('+').trim_start_matches("≥ ");
                    out.push(number.to_owned());
                }
            }
        }
    }
    out
}

/// The JUnit file as a JUnit reader sees it: (tests, failures, errors, skipped, the failed
/// testcases' names). Debian's python3-junitparser when installed (`.ci/run` installs it),
/// else Python's own XML parser, which the output names.
fn junit_counts(path: &Path) -> (u64, u64, u64, u64, Vec<String>) {
    let with_junitparser = r#"
import sys, junitparser
x = junitparser.JUnitXml.fromfile(sys.argv[1])
cases = [c for s in x for c in s]
bad = lambda c, k: any(isinstance(r, k) for r in c.result)
print(len(cases), sum(bad(c, junitparser.Failure) for c in cases),
      sum(bad(c, junitparser.Error) for c in cases), sum(bad(c, junitparser.Skipped) for c in cases))
for c in cases:
    if bad(c, junitparser.Failure): print(c.name)
"#;
    let with_etree = r#"
import sys, xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
cases = list(cases)
has = lambda c, t: c.find(t) is not None
print(len(cases), sum(has(c, "failure") for c in cases), sum(has(c, "error") for c in cases),
      sum(has(c, "skipped") for c in cases))
for c in cases:
    if has(c, "failure"): print(c.get("name"))
"#;
    let python = "/usr/bin/python3";
    let have = Command::new(python)
        .args(["-c", "import junitparser"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        // CI installs it: there the JUnit reader is required.
        assert!(
            std::env::var_os("CI").is_none(),
            "CI without python3-junitparser"
        );
        eprintln!("python3-junitparser is not installed: reading the JUnit file with xml.etree");
    }
    let script = if have { with_junitparser } else { with_etree };
    let out = Command::new(python)
        .args(["-c", script, path.to_str().unwrap()])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = text.lines();
    let n: Vec<u64> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    (n[0], n[1], n[2], n[3], lines.map(str::to_owned).collect())
}

fn a_plan_runs_and_every_reported_number_comes_from_the_results() {
    let dir = out_dir("ok");
    let plan = write_plan(&dir, SHORT_PLAN);
    let junit = dir.join("junit.xml");
    let (out, children) = run_watching_children(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    // Every test runs in the run's own process: no wirebench was started for them (the
    // interface facts come from `ip`, which is allowed).
    let again: Vec<&String> = children
        .iter()
        .filter(|c| {
            c.split(' ')
                .next()
                .is_some_and(|p| p.ends_with("wirebench"))
        })
        .collect();
    assert!(again.is_empty(), "wirebench started itself: {again:?}");
    // The 1 us latency threshold cannot hold on loopback: exit code 3, and it says so.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("5 of 5 tests done; 1 of 2 thresholds passed"),
        "{stdout}"
    );
    // The JUnit file: a testcase per test and per threshold; the one failed threshold is
    // its only failure, named as the verdict.
    let (tests, failures, errors, skipped, failed) = junit_counts(&junit);
    assert_eq!(
        (tests, failures, errors, skipped),
        (7, 1, 0, 0),
        "{failed:?}"
    );
    assert!(
        failed[0].contains("latency_p50") || failed[0].contains("latency"),
        "{failed:?}"
    );
    for f in [
        "results.json",
        "report.md",
        "report.html",
        "tests.csv",
        "compliance.csv",
        "sweep.csv",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["schema"], "wirebench.campaign/1");
    assert!(results["tests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "done"));
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("| plan | latency_p50 at 64 B of pingpong (t3) | FAIL |"),
        "{md}"
    );
    // The verdict banner opens the report: the failed threshold, named, with its figures.
    let banner = md
        .lines()
        .find(|l| l.starts_with("> **"))
        .expect("a verdict banner");
    assert!(
        banner.starts_with("> **FAIL: ") && banner.contains(" tests ran"),
        "{banner}"
    );
    assert!(
        md.contains("> - FAIL plan: latency_p50 at 64 B of pingpong (t3): "),
        "{md}"
    );
    assert!(md.find("> **FAIL").unwrap() < md.find("## Summary of key findings").unwrap());
    numbers_come_from_results(&md, &results);
    // Re-rendered from results.json alone, the Markdown is the same.
    let again = run(&["report", dir.join("results.json").to_str().unwrap()]);
    assert!(again.status.success());
    assert_eq!(String::from_utf8_lossy(&again.stdout), md);
    // Chromium opens the HTML report without console errors and takes a screenshot.
    chromium_renders(&dir.join("report.html"), &dir.join("report.png"));
    let (charts, problems) = chart_problems(&dir.join("report.html"));
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(charts >= 3, "{charts} charts");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every number in report.md's tables is a number of results.json as shown (scaled to
/// Mbit/s or %, or kept), or line-rate arithmetic on them (RFC 2544 theoretical rate and
/// efficiency).
fn numbers_come_from_results(md: &str, results: &serde_json::Value) {
    let mut nums = Vec::new();
    json_numbers(results, &mut nums);
    let mut shown: BTreeSet<String> = BTreeSet::new();
    for v in &nums {
        for scaled in [*v, v / 1e6, v * 100.0] {
            for d in 0..=4 {
                shown.insert(format!("{scaled:.d$}"));
            }
        }
    }
    for t in results["tests"].as_array().unwrap() {
        for row in t["result"]["rfc2544"]["throughput"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let len = row["frame_len"].as_f64().unwrap();
            let line = t["result"]["rfc2544"]["line_rate_bps"].as_f64().unwrap();
            for fps in [row["fps"].as_f64(), row["max_fps"].as_f64()]
                .into_iter()
                .flatten()
            {
                shown.insert(format!("{:.2}", fps * len * 8.0 / 1e6));
                shown.insert(format!("{:.2}", fps * (len + 20.0) * 8.0 / line * 100.0));
            }
        }
    }
    // FRER per path: loss and first-delivery shares of the relays' counts.
    for t in results["tests"].as_array().unwrap() {
        for p in t["frer_paths"].as_array().into_iter().flatten() {
            let n = |k: &str| p[k].as_f64().unwrap_or(0.0);
            if n("sent") > 0.0 {
                shown.insert(format!(
                    "{:.3}",
                    (n("sent") - n("received")) / n("sent") * 100.0
                ));
            }
            if n("passed") > 0.0 {
                shown.insert(format!("{:.1}", n("first") / n("passed") * 100.0));
            }
        }
    }
    let cells = numeric_cells(md);
    assert!(cells.len() > 20, "{cells:?}");
    for c in cells {
        assert!(
            shown.contains(&c),
            "report.md shows {c}, which results.json does not hold"
        );
    }
}

/// The Chromium on PATH (Debian's `chromium`, or `chromium-browser`).
fn browser() -> &'static str {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .expect("chromium (the harness checked it is on PATH)")
}

fn chromium_renders(html: &Path, png: &Path) {
    let browser = browser();
    let out = Command::new(browser)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1200,3000",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--screenshot={}", png.display()),
            &format!("file://{}", html.display()),
        ])
        .output()
        .expect("chromium");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium: {log}");
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    let size = std::fs::metadata(png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "screenshot of {size} bytes");
}

/// Every chart of a report as headless Chromium lays it out (tests/data/chart-check.js,
/// injected into a copy): no text on text, no legend entry on a data point or a bar, a
/// unit on every axis label. The number of charts and the problems found.
fn chart_problems(html: &Path) -> (u64, Vec<String>) {
    let page = std::fs::read_to_string(html).unwrap();
    let script = include_str!("data/chart-check.js");
    let copy = html.with_file_name("checked.html");
    std::fs::write(
        &copy,
        page.replace("</body>", &format!("<script>{script}</script></body>")),
    )
    .unwrap();
    let out = Command::new(browser())
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1200,3000",
            "--virtual-time-budget=3000",
            "--dump-dom",
            &format!("file://{}", copy.display()),
        ])
        .output()
        .expect("chromium");
    let _ = std::fs::remove_file(&copy);
    let dom = String::from_utf8_lossy(&out.stdout);
    let found = dom
        .split("<pre id=\"chart-check\">")
        .nth(1)
        .and_then(|r| r.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "no check result in the page: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let text = found
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let problems = v["problems"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| p.as_str().unwrap_or("?").to_owned())
                .collect()
        })
        .unwrap_or_default();
    (v["charts"].as_u64().unwrap_or(0), problems)
}

/// Every chart of each example plan's report (rendered again from results those plans
/// measured on this machine, tests/data/plans: 8 lab and loopback plans; the two plans over
/// other hosts have none) reads well in Chromium: see [`chart_problems`]. The demo's own
/// report is checked by its test.
fn every_chart_of_the_example_plans_reads_well_in_chromium() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/plans");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{files:?}");
    let mut all = Vec::new();
    let mut charts = 0;
    for f in &files {
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        let dir = out_dir(&format!("cc-{stem}"));
        let out = run(&[
            "report",
            f.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{stem}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (n, problems) = chart_problems(&dir.join("report.html"));
        charts += n;
        all.extend(problems.into_iter().map(|p| format!("{stem}: {p}")));
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(all.is_empty(), "{all:#?}");
    assert!(charts >= 30, "{charts} charts checked");
}

/// On a terminal (a pseudo-terminal from `script`) `run` draws its bar, with the time left
/// from the tests' estimates, and ends: drawing the bar once waited on the lock that the
/// first line of progress held, and the run hung before its first test.
fn a_run_on_a_terminal_draws_its_bar_and_ends() {
    let dir = out_dir("tty");
    let plan = write_plan(
        &dir,
        "[target]\nloopback = true\n[[test]]\nname = \"one\"\nkind = \"client\"\nargs = \"-u -b 10M -t 1\"\n",
    );
    let cmd = format!(
        "{} run {} --out {}",
        bin(),
        plan.display(),
        dir.join("o").display()
    );
    let out = Command::new("timeout")
        .args(["60", "script", "-q", "-e", "-c", &cmd, "/dev/null"])
        .output()
        .expect("script (util-linux)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("1 tests, about "), "{text}");
    assert!(text.contains("[t1] done in "), "{text}");
    assert!(
        text.contains("left: one (client)"),
        "the bar was drawn: {text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn an_interrupted_run_keeps_what_it_finished() {
    let dir = out_dir("int");
    let plan = write_plan(
        &dir,
        "[target]\nloopback = true\n[[test]]\nname = \"first\"\nkind = \"client\"\nargs = \"-u -b 10M -t 1\"\n[[test]]\nname = \"long\"\nkind = \"client\"\nargs = \"-u -b 10M -t 30\"\n[[test]]\nname = \"never\"\nkind = \"client\"\nargs = \"-t 1\"\n",
    );
    let child = Command::new(bin())
        .args([
            "run",
            plan.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt it during the second test.
    std::thread::sleep(Duration::from_millis(2500));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let status: Vec<&str> = r["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(status[0], "done");
    // The test the stop cut short: failed, its partial figures kept and marked.
    assert_eq!(status[1], "failed");
    assert_eq!(r["tests"][1]["result"]["interrupted"], true);
    assert!(r["tests"][1]["error"]
        .as_str()
        .unwrap()
        .contains("interrupted after"));
    assert_eq!(status[2], "not-run");
    assert!(
        r["stopped"].as_str().unwrap().contains("interrupted"),
        "{}",
        r["stopped"]
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("The run stopped early: interrupted"), "{md}");
    assert!(
        md.contains("> **INCOMPLETE: no thresholds set; 1 of 3 tests ran**"),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn bad_plans_fail_before_anything_runs() {
    let dir = out_dir("bad");
    for (text, want) in [
        ("[target]\nloopback = true\n[[test]]\nkind = \"iperf\"\n", "line 4: test 1: unknown kind 'iperf'"),
        ("[target]\nloopback = true\n[[test]]\nkind = \"client\"\nargs = \"-b 1X\"\n", "line 5"),
        ("[target]\nloopback = true\n[[test]]\nkind = \"client\"\nargs = \"-b fast\"\n", "line 5: test 'client 1': invalid value 'fast'"),
        ("[target]\nloopback = true\n[[test]]\nkind = \"client\"\nargs = \"-u -l 10\"\n", "len 10 out of range"),
        ("[target]\nlab = \"frer\"\nlab_args = \"--path-a\"\n[[test]]\nkind = \"client\"\n", "line 1: lab_args"),
        ("[[test]]\nkind = \"client\"\n", "no [target]"),
        ("[target]\nloopback = true\n[[test]]\nkind = \"client\"\n[[threshold]]\nmetric = \"loss\"\nmax = \"lots\"\n", "line 7: threshold max"),
    ] {
        let plan = write_plan(&dir, text);
        let out = run(&["run", plan.to_str().unwrap(), "--out", dir.join("o").to_str().unwrap()]);
        assert_fails(&out, 2, want);
        assert!(!dir.join("o").exists(), "nothing was written for a bad plan");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `wirebench demo` end to end, as on a fresh machine (no ethtool, tshark, chromium,
/// iperf3 or ping on PATH): as root the whole story (FRER lab with path loss, shaper
/// profile, FRER overhead), otherwise on loopback; every section and chart of its kind is
/// there and every number traces back to results.json.
fn demo_writes_the_whole_report() {
    let dir = out_dir("demo");
    let root = lab::cmd::is_root();
    let started = std::time::Instant::now();
    let path = fresh_path("demo");
    let out = run_with_path(
        &["demo", "--out", dir.to_str().unwrap(), "--name", "dmw"],
        &path,
    );
    drop(path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "the demo took {:?}",
        started.elapsed()
    );
    assert!(
        stdout.contains("report.html"),
        "it says where the report is: {stdout}"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let mut sections = vec![
        "## Summary of key findings",
        "## Tests and methods",
        "## Throughput",
        "## Zero-loss sweep",
        "## Throughput by frame size (RFC 2544)",
        "## Latency by frame size",
        "## Standards and threshold compliance",
        "## Test environment",
    ];
    let mut charts = vec![
        "throughput against offered load",
        "latency by frame size",
        "latency by percentile",
        "round-trip latency by percentile",
    ];
    if root {
        sections.extend([
            "## Multi-stream profile",
            "## Overhead against a control group (FRER)",
            "## FRER per path",
        ]);
        charts.extend(["FRER overhead", "FRER per-path loss"]);
    } else {
        eprintln!("not root: the demo ran its loopback plan (the lab parts need root)");
    }
    for s in sections {
        assert!(md.contains(s), "{s} missing from the demo report");
    }
    for c in charts {
        assert!(html.contains(c), "chart '{c}' missing from report.html");
    }
    assert!(results["tests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "done"));
    numbers_come_from_results(&md, &results);
    // Progress: the plan's estimate first, then every test with its own, also in a log
    // (stderr is not a terminal here, so no bar is drawn).
    let tests = results["tests"].as_array().unwrap().len();
    assert!(
        stderr.starts_with(&format!("{tests} tests, about ")),
        "{stderr}"
    );
    for i in 1..=tests {
        assert!(
            stderr.contains(&format!("[t{i}] done in ")),
            "t{i}: {stderr}"
        );
    }
    assert_eq!(stderr.matches(", estimated ").count(), tests, "{stderr}");
    assert!(
        !stderr.contains('\x1b'),
        "no terminal codes in a log: {stderr}"
    );
    if root {
        interfaces_come_from_the_kernel(&results);
        // Every lab of the run is named after --name: the target's, a test's own, and
        // the FRER comparison's two.
        let text = results.to_string();
        for lab in ["dmw", "dmw6", "dmwc", "dmwf"] {
            assert!(
                text.contains(&format!("\"lab\":\"{lab}\"")),
                "lab {lab} missing"
            );
        }
        assert!(
            !text.contains("\"lab\":\"demo"),
            "a lab of the default name"
        );
    }
    chromium_renders(&dir.join("report.html"), &dir.join("report.png"));
    let (charts, problems) = chart_problems(&dir.join("report.html"));
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(charts >= if root { 10 } else { 5 }, "{charts} charts");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The lab's interfaces as the kernel's ethtool interface reports them: veth at 10 Gbit/s,
/// the end hosts' checksum and segmentation offloads off (the lab turned them off for the
/// relays), the relays' path ports' still on.
fn interfaces_come_from_the_kernel(results: &serde_json::Value) {
    let ifaces = results["interfaces"].as_array().expect("interfaces");
    let find = |node: &str, name: &str| {
        ifaces
            .iter()
            .find(|i| i["node"] == node && i["name"] == name)
            .unwrap_or_else(|| panic!("{node} {name} missing: {ifaces:?}"))
    };
    let on = |i: &serde_json::Value, o: &str| {
        i["offloads_on"].as_array().unwrap().iter().any(|x| x == o)
    };
    for i in ifaces {
        assert_eq!(i["driver"], "veth", "{i}");
        assert_eq!(i["speed_mbps"], 10000, "{i}");
    }
    let talker = find("talker", "eth0");
    assert!(
        !on(talker, "tx-checksumming") && !on(talker, "tcp-segmentation-offload"),
        "{talker}"
    );
    let split = find("split", "eth1");
    assert!(
        on(split, "tx-checksumming") && on(split, "scatter-gather"),
        "{split}"
    );
}

/// The CI examples (examples/ci) run exactly this command line; run here from the
/// repository's root, it passes its gate on loopback and writes a JUnit file with a
/// testcase per test and per threshold, none failed. Each example is valid YAML (where
/// python3-yaml is installed) and runs the same command.
fn the_ci_example_gate_runs_as_its_jobs_run_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let command = "wirebench run examples/ci/plan.toml --out run --junit run/junit.xml";
    for job in ["github-actions.yml", "gitlab-ci.yml", "Jenkinsfile"] {
        let text = std::fs::read_to_string(root.join("examples/ci").join(job)).unwrap();
        assert!(text.contains(command), "{job} does not run `{command}`");
        if job.ends_with(".yml") {
            let out = std::process::Command::new("/usr/bin/python3")
                .args(["-c", "import sys, yaml; yaml.safe_load(open(sys.argv[1]))"])
                .arg(root.join("examples/ci").join(job))
                .output();
            match out {
                Ok(o) if o.status.success() => {}
                Ok(o) if String::from_utf8_lossy(&o.stderr).contains("No module named") => {
                    // The machine's base system has it: in CI its absence is a failure.
                    assert!(std::env::var_os("CI").is_none(), "CI without python3-yaml");
                    eprintln!("no python3-yaml here: {job} is not parsed");
                }
                Ok(o) => panic!("{job}: {}", String::from_utf8_lossy(&o.stderr)),
                Err(e) => eprintln!("no python3 here ({e}): {job} is not parsed"),
            }
        }
    }
    // The same arguments, with the run directory elsewhere.
    let dir = out_dir("ci-example");
    let junit = dir.join("junit.xml");
    let out = std::process::Command::new(bin())
        .current_dir(root)
        .args(["run", "examples/ci/plan.toml", "--out"])
        .arg(&dir)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (tests, failures, errors, skipped, failed) = junit_counts(&junit);
    assert_eq!(
        (tests, failures, errors, skipped),
        (4, 0, 0, 0),
        "{failed:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::Chromium;
    vec![
        crate::harness::case!(
            a_plan_runs_and_every_reported_number_comes_from_the_results,
            Chromium
        ),
        crate::harness::case!(an_interrupted_run_keeps_what_it_finished),
        crate::harness::case!(a_run_on_a_terminal_draws_its_bar_and_ends),
        crate::harness::case!(bad_plans_fail_before_anything_runs),
        crate::harness::case!(demo_writes_the_whole_report, Chromium),
        crate::harness::case!(
            every_chart_of_the_example_plans_reads_well_in_chromium,
            Chromium
        ),
        crate::harness::case!(the_ci_example_gate_runs_as_its_jobs_run_it),
    ]
}
