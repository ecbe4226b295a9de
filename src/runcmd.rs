//! `wirebench run PLAN.toml --out DIR`: a whole campaign from one plan. It checks the plan,
//! sets up the target (a server of its own on loopback, a given host, or a lab it builds
//! and removes), runs every test as this program's own command with `-J`, writes
//! `results.json` after each test (atomically, so an interrupted run keeps what it
//! finished and says where it stopped), evaluates the thresholds, and renders the
//! reports into DIR. Exit code 3 when a threshold fails, 1 when a test could not run.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use model::results::campaign::{Campaign, InterfaceFacts, TestEntry, TestStatus, SCHEMA};
use model::results::RunResult;

use crate::cli::RunArgs;
use crate::commands::{UsageError, VerdictFailed};
use crate::plan::{evaluate, Context, Plan, Target};

/// What the runner set up, torn down when dropped.
pub(crate) struct Setup {
    /// Where tests are pointed.
    pub(crate) ctx: Context,
    /// The lab's name, when it built one.
    lab: Option<String>,
    /// The server it started in the lab.
    server: Option<Child>,
    /// The loopback server it runs in-process.
    _loopback: Option<control::server::ServerHandle>,
    /// How the target is described in the results.
    described: String,
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(s) = &mut self.server {
            let _ = s.kill();
            let _ = s.wait();
        }
        if let Some(l) = &self.lab {
            let _ = lab::Lab::down(l, &mut lab::SystemRunner);
        }
    }
}

fn exe() -> String {
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "wirebench".into())
}

/// The listener's address in a topology (built-in or file).
fn listener_address(topology: &str) -> Option<std::net::Ipv4Addr> {
    let topo = if Path::new(topology).is_file() {
        lab::Topology::from_toml(&std::fs::read_to_string(topology).ok()?).ok()?
    } else if topology == "shaper" {
        lab::Topology::builtin("router").ok()?
    } else {
        lab::Topology::builtin(topology).ok()?
    };
    topo.address_of("listener")
}

/// Sets up `target`: a loopback server of our own, a given host, or a lab (built as
/// `lab_name`) with a server on its listener.
pub(crate) fn set_up(target: &Target, lab_name: &str) -> Result<Setup> {
    match target {
        Target::Loopback => {
            let server = control::server::Server::bind(control::server::ServerConfig {
                bind: "127.0.0.1:0".parse()?,
                limits: control::messages::Limits::default(),
                key: None,
                handshake_timeout: control::server::HANDSHAKE_TIMEOUT,
            })
            .context("cannot start the loopback server")?;
            let handle = server.spawn()?;
            let port = handle.addr().port();
            Ok(Setup {
                ctx: Context {
                    host: "127.0.0.1".into(),
                    port,
                    lab: None,
                    raw: None,
                },
                lab: None,
                server: None,
                _loopback: Some(handle),
                described: format!("loopback (a wirebench server of this run on 127.0.0.1:{port})"),
            })
        }
        Target::Host { host, port, tx, rx } => Ok(Setup {
            ctx: Context {
                host: host.clone(),
                port: *port,
                lab: None,
                raw: tx.clone().zip(rx.clone()),
            },
            lab: None,
            server: None,
            _loopback: None,
            described: format!("host {host} (wirebench server on port {port})"),
        }),
        Target::Lab { topology, args } => {
            let listener = listener_address(topology).ok_or_else(|| {
                UsageError(format!(
                    "topology '{topology}' has no listener node with an address"
                ))
            })?;
            let mut argv: Vec<String> = vec![
                "lab".into(),
                "up".into(),
                topology.clone(),
                "--name".into(),
                lab_name.into(),
            ];
            argv.extend(args.iter().cloned());
            let out = Command::new(exe()).args(&argv).output()?;
            if !out.status.success() {
                anyhow::bail!(
                    "`wirebench {}` failed: {}",
                    argv.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            let mut setup = Setup {
                ctx: Context {
                    host: listener.to_string(),
                    port: control::DEFAULT_PORT,
                    lab: Some(lab_name.into()),
                    raw: Some(("talker:eth0".into(), "listener:eth0".into())),
                },
                lab: Some(lab_name.into()),
                server: None,
                _loopback: None,
                described: format!("lab '{lab_name}': {topology} {}", args.join(" "))
                    .trim_end()
                    .to_owned(),
            };
            let server = Command::new(exe())
                .args([
                    "lab",
                    "exec",
                    "--name",
                    lab_name,
                    "listener",
                    "--",
                    &exe(),
                    "server",
                    "--bind",
                    &listener.to_string(),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            setup.server = Some(server);
            std::thread::sleep(Duration::from_millis(500));
            Ok(setup)
        }
    }
}

/// Interfaces of the nodes that took part (`ip -j -d addr`, `ethtool -i/-k`).
fn interface_facts(setup: &Setup) -> Vec<InterfaceFacts> {
    let nodes: Vec<(String, Option<String>)> = match &setup.lab {
        Some(l) => lab::topology::lab_namespaces(&mut lab::SystemRunner)
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, lab, _)| lab == l)
            .map(|(ns, _, node)| (node, Some(ns)))
            .collect(),
        None => vec![("host".into(), None)],
    };
    // A loopback run touches only lo.
    let only_lo = setup.lab.is_none() && setup.ctx.host == "127.0.0.1";
    let mut out = Vec::new();
    for (node, ns) in nodes {
        let mut cmd = Command::new("ip");
        if let Some(ns) = &ns {
            cmd.args(["-n", ns]);
        }
        let Ok(o) = cmd.args(["-j", "-d", "addr", "show"]).output() else {
            continue;
        };
        let Ok(list) = serde_json::from_slice::<serde_json::Value>(&o.stdout) else {
            continue;
        };
        for i in list.as_array().into_iter().flatten() {
            let name = i["ifname"].as_str().unwrap_or("").to_owned();
            if name.is_empty() || name == "lo" && setup.lab.is_some() || only_lo && name != "lo" {
                continue;
            }
            let ethtool = |flag: &str| -> Option<String> {
                let mut c = match &ns {
                    Some(ns) => {
                        let mut c = Command::new("ip");
                        c.args(["netns", "exec", ns, "ethtool", flag, &name]);
                        c
                    }
                    None => {
                        let mut c = Command::new("ethtool");
                        c.args([flag, &name]);
                        c
                    }
                };
                c.stderr(Stdio::null());
                let o = c.output().ok()?;
                o.status
                    .success()
                    .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
            };
            let driver = ethtool("-i")
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix("driver: ").map(str::to_owned))
                })
                .or_else(|| i["linkinfo"]["info_kind"].as_str().map(str::to_owned));
            let offloads_on = ethtool("-k")
                .map(|t| {
                    t.lines()
                        .filter(|l| !l.starts_with('\t') && !l.starts_with(' '))
                        .filter_map(|l| l.split_once(": "))
                        .filter(|(_, v)| v.starts_with("on"))
                        .map(|(k, _)| k.to_owned())
                        .filter(|k| {
                            matches!(
                                k.as_str(),
                                "rx-checksumming"
                                    | "tx-checksumming"
                                    | "scatter-gather"
                                    | "tcp-segmentation-offload"
                                    | "generic-segmentation-offload"
                                    | "generic-receive-offload"
                                    | "large-receive-offload"
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let speed = {
                let path = format!("/sys/class/net/{name}/speed");
                let text = match &ns {
                    Some(ns) => Command::new("ip")
                        .args(["netns", "exec", ns, "cat", &path])
                        .stderr(Stdio::null())
                        .output()
                        .ok()
                        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned()),
                    None => std::fs::read_to_string(&path).ok(),
                };
                text.and_then(|t| t.trim().parse::<i64>().ok())
                    .filter(|s| *s > 0)
                    .map(|s| s as u64)
            };
            out.push(InterfaceFacts {
                node: node.clone(),
                name: name.clone(),
                driver,
                speed_mbps: speed,
                mtu: i["mtu"].as_u64().map(|m| m as u32),
                mac: i["address"].as_str().map(str::to_owned),
                addresses: i["addr_info"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|a| {
                        Some(format!(
                            "{}/{}",
                            a["local"].as_str()?,
                            a["prefixlen"].as_u64()?
                        ))
                    })
                    .collect(),
                offloads_on,
            });
        }
    }
    out
}

/// The pids and counters of a lab's FRER relays (split, merge), if it has them.
fn relay_states(lab: &str) -> Option<[(u32, lab::frer::relay::RelayCounters); 2]> {
    let read = |node: &str| {
        lab::frer::process::RelayState::read(
            &lab::managed::run_dir(lab).join(format!("{node}.relay.json")),
        )
        .ok()
        .map(|s| (s.pid, s.counters))
    };
    Some([read("split")?, read("merge")?])
}

/// What each path carried between two snapshots of the relays, per stream one relay
/// replicates and the other eliminates. Nothing when a relay restarted in between (its
/// counters started again) or a counter went backwards.
fn frer_paths(
    before: &[(u32, lab::frer::relay::RelayCounters); 2],
    after: &[(u32, lab::frer::relay::RelayCounters); 2],
) -> Vec<model::results::campaign::FrerPathRow> {
    if before[0].0 != after[0].0 || before[1].0 != after[1].0 {
        return vec![];
    }
    let before = [&before[0].1, &before[1].1];
    let after = [&after[0].1, &after[1].1];
    let mut out = Vec::new();
    // Split replicates toward the listener and merge eliminates; the other way round back.
    for (r, e) in [(0, 1), (1, 0)] {
        for st in &after[r].streams {
            let Some(rep) = &st.replication else { continue };
            let rep_before = before[r]
                .streams
                .iter()
                .find(|s| s.name == st.name)
                .and_then(|s| s.replication.as_ref())
                .map_or(0, |r| r.frames);
            let Some(sent) = rep.frames.checked_sub(rep_before) else {
                return vec![];
            };
            let elim = |c: &lab::frer::relay::RelayCounters| {
                c.streams
                    .iter()
                    .find(|s| s.name == st.name)
                    .and_then(|s| s.elimination.clone())
            };
            let (Some(e1), e0) = (elim(after[e]), elim(before[e])) else {
                continue;
            };
            let passed_before: u64 = e0
                .as_ref()
                .map_or(0, |e| e.paths.iter().map(|p| p.passed).sum());
            let Some(passed) = e1
                .paths
                .iter()
                .map(|p| p.passed)
                .sum::<u64>()
                .checked_sub(passed_before)
            else {
                return vec![];
            };
            for p in &e1.paths {
                let b = e0
                    .as_ref()
                    .and_then(|e| e.paths.iter().find(|q| q.port == p.port));
                let (Some(received), Some(first)) = (
                    p.received.checked_sub(b.map_or(0, |q| q.received)),
                    p.passed.checked_sub(b.map_or(0, |q| q.passed)),
                ) else {
                    return vec![];
                };
                out.push(model::results::campaign::FrerPathRow {
                    stream: st.name.clone(),
                    path: p.port.clone(),
                    sent,
                    received,
                    first,
                    passed,
                });
            }
        }
    }
    out.retain(|r| r.sent > 0);
    out
}

fn write_results(dir: &Path, c: &Campaign) -> Result<()> {
    lab::managed::write_json_atomic(&dir.join("results.json"), c)
        .with_context(|| format!("writing {}", dir.join("results.json").display()))
}

/// Writes report.md, report.html and one CSV per table into `dir`, atomically each.
pub fn write_reports(dir: &Path, c: &Campaign) -> Result<Vec<PathBuf>> {
    let mut files = vec![
        ("report.md".to_owned(), report::campaign::markdown(c)),
        ("report.html".to_owned(), report::campaign::html(c)),
    ];
    for (name, csv) in report::campaign::csv_tables(c) {
        files.push((format!("{name}.csv"), csv));
    }
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(&name);
        lab::managed::write_atomic(&path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

fn progress(plan: &Plan) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(plan.tests.len() as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:30} {pos}/{len} tests, {elapsed} elapsed, about {eta} left: {msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

/// `wirebench run`.
pub fn run(a: &RunArgs) -> Result<()> {
    let text = std::fs::read_to_string(&a.plan)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", a.plan.display())))?;
    let plan = Plan::parse(&text).map_err(|e| UsageError(format!("{}: {e}", a.plan.display())))?;
    // Tests with a lab of their own append their number to the name.
    lab::naming::check(&format!("{}{}", a.name, plan.tests.len())).map_err(|e| {
        UsageError(format!(
            "--name {}: {e} (with the test number appended)",
            a.name
        ))
    })?;
    if plan.needs_root() && !lab::cmd::is_root() {
        return Err(UsageError(
            "this plan builds a lab or sends raw frames: run it as root (sudo)".into(),
        )
        .into());
    }
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
    let stop = crate::labcmd::stop_on_signals()?;
    let mut campaign = Campaign {
        schema: SCHEMA.into(),
        title: plan.title.clone(),
        description: plan.description.clone(),
        metadata: plan.metadata.clone(),
        target: String::new(),
        plan_file: a.plan.display().to_string(),
        started_at: engine::env::now_rfc3339(),
        finished_at: None,
        environment: engine::env::environment(),
        interfaces: vec![],
        tests: plan
            .tests
            .iter()
            .enumerate()
            .map(|(i, t)| TestEntry {
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
            })
            .collect(),
        verdicts: vec![],
        stopped: None,
    };
    write_results(&a.out, &campaign)?;
    let setup = match set_up(&plan.target, &a.name) {
        Ok(s) => s,
        Err(e) => {
            campaign.stopped = Some(format!("the target could not be set up: {e:#}"));
            campaign.finished_at = Some(engine::env::now_rfc3339());
            write_results(&a.out, &campaign)?;
            return Err(e);
        }
    };
    campaign.target = setup.described.clone();
    campaign.interfaces = interface_facts(&setup);
    write_results(&a.out, &campaign)?;
    let bar = progress(&plan);
    for (i, t) in plan.tests.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            campaign.stopped = Some(format!(
                "interrupted before test {} ({})",
                campaign.tests[i].id, t.name
            ));
            break;
        }
        bar.set_message(format!("{} ({})", t.name, t.kind.name()));
        // A test with a lab of its own runs there; the lab goes when the test is done.
        let own = match &t.lab {
            Some((topology, args)) => {
                let target = Target::Lab {
                    topology: topology.clone(),
                    args: args.clone(),
                };
                match set_up(&target, &format!("{}{}", a.name, i + 1)) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        let entry = &mut campaign.tests[i];
                        entry.status = TestStatus::Failed;
                        entry.error = Some(format!("its lab could not be built: {e:#}"));
                        campaign.verdicts = verdicts(&plan, &campaign);
                        write_results(&a.out, &campaign)?;
                        bar.inc(1);
                        continue;
                    }
                }
            }
            None => None,
        };
        let setup = own.as_ref().unwrap_or(&setup);
        let mut argv = t.argv(&setup.ctx);
        argv[0] = exe();
        // Server-based tests run on the talker of a lab; the rest name their ports.
        let on_talker = setup.lab.is_some() && t.kind.needs_server(&argv);
        let (program, args, node) = match (&setup.lab, on_talker) {
            (Some(l), true) => {
                let ns = lab::naming::namespace(l, "talker");
                let mut v = vec!["netns".to_owned(), "exec".into(), ns];
                v.extend(argv.iter().cloned());
                ("ip".to_owned(), v, format!("talker of lab {l}"))
            }
            _ => (argv[0].clone(), argv[1..].to_vec(), "this host".to_owned()),
        };
        let entry = &mut campaign.tests[i];
        entry.command = format!("wirebench {}", argv[1..].join(" "));
        entry.node = node;
        bar.suspend(|| eprintln!("[{}] {}: {}", entry.id, t.name, entry.command));
        let relays_before = setup.lab.as_deref().and_then(relay_states);
        let started = Instant::now();
        let out = run_child(&program, &args, &stop);
        entry.duration_s = started.elapsed().as_secs_f64();
        if let (Some(before), Some(lab)) = (&relays_before, setup.lab.as_deref()) {
            // The relays publish every 200 ms.
            std::thread::sleep(Duration::from_millis(400));
            if let Some(after) = relay_states(lab) {
                entry.frer_paths = frer_paths(before, &after);
            }
        }
        match out {
            Ok(o) if o.status.success() || o.status.code() == Some(3) => {
                match serde_json::from_slice::<RunResult>(&o.stdout) {
                    Ok(r) => {
                        entry.status = TestStatus::Done;
                        entry.result = Some(r);
                    }
                    Err(e) => {
                        entry.status = TestStatus::Failed;
                        entry.error = Some(format!("its output is not a result document: {e}"));
                    }
                }
            }
            Ok(o) => {
                entry.status = TestStatus::Failed;
                let err = String::from_utf8_lossy(&o.stderr);
                let tail: Vec<&str> = err.lines().rev().take(3).collect();
                entry.error = Some(format!(
                    "exit status {}: {}",
                    o.status.code().map_or("signal".into(), |c| c.to_string()),
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ));
            }
            Err(e) => {
                entry.status = TestStatus::Failed;
                entry.error = Some(format!("cannot start it: {e}"));
            }
        }
        if stop.load(Ordering::Relaxed) && entry.status != TestStatus::Done {
            entry.error = Some("interrupted".into());
            campaign.stopped = Some(format!("interrupted during test {} ({})", entry.id, t.name));
        }
        if entry.status == TestStatus::Failed {
            let msg = format!(
                "[{}] failed: {}",
                entry.id,
                entry.error.as_deref().unwrap_or("")
            );
            bar.suspend(|| eprintln!("{msg}"));
        }
        drop(own);
        campaign.verdicts = verdicts(&plan, &campaign);
        write_results(&a.out, &campaign)?;
        bar.inc(1);
        if campaign.stopped.is_some() {
            break;
        }
    }
    bar.finish_and_clear();
    drop(setup);
    campaign.finished_at = Some(engine::env::now_rfc3339());
    campaign.verdicts = verdicts(&plan, &campaign);
    write_results(&a.out, &campaign)?;
    let files = write_reports(&a.out, &campaign)?;
    let done = campaign
        .tests
        .iter()
        .filter(|t| t.status == TestStatus::Done)
        .count();
    let failed_verdicts = campaign.verdicts.iter().filter(|v| !v.passed).count();
    println!(
        "{done} of {} tests done; {} of {} thresholds passed",
        campaign.tests.len(),
        campaign.verdicts.len() - failed_verdicts,
        campaign.verdicts.len()
    );
    if let Some(s) = &campaign.stopped {
        println!("stopped early: {s}");
    }
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e != "csv"))
    {
        println!("wrote {}", f.display());
    }
    println!(
        "wrote {} (and one CSV per table)",
        a.out.join("results.json").display()
    );
    if campaign.stopped.is_some() || done < campaign.tests.len() {
        anyhow::bail!(
            "{} test(s) did not complete (see {})",
            campaign.tests.len() - done,
            a.out.join("results.json").display()
        );
    }
    if failed_verdicts > 0 {
        return Err(VerdictFailed(format!("{failed_verdicts} threshold(s) failed")).into());
    }
    Ok(())
}

/// Runs a test's command and collects its output; when the run is interrupted, the test
/// is interrupted too (SIGINT), so the run stops now rather than after it.
fn run_child(
    program: &str,
    args: &[String],
    stop: &std::sync::atomic::AtomicBool,
) -> std::io::Result<std::process::Output> {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id().to_string();
    let waiter = std::thread::spawn(move || child.wait_with_output());
    let mut signalled = false;
    while !waiter.is_finished() {
        if stop.load(Ordering::Relaxed) && !signalled {
            let _ = Command::new("kill").args(["-INT", &pid]).status();
            signalled = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    waiter
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the test's reader thread panicked")))
}

fn verdicts(plan: &Plan, c: &Campaign) -> Vec<model::results::Verdict> {
    let tests: Vec<(String, String, String, Option<&RunResult>)> = c
        .tests
        .iter()
        // A test that has not run (yet, or because the run stopped) measured nothing; a
        // threshold that names it fails as "no test measured it".
        .filter(|t| t.status != TestStatus::NotRun)
        .map(|t| {
            (
                t.id.clone(),
                t.name.clone(),
                t.kind.clone(),
                t.result.as_ref(),
            )
        })
        .collect();
    evaluate(&plan.thresholds, &tests)
}

/// `wirebench report results.json [--format md|html|csv] [--out DIR]`: renders a finished
/// (or interrupted) run again, from its results file alone.
pub fn report(a: &crate::cli::ReportArgs) -> Result<()> {
    let text = std::fs::read_to_string(&a.results)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", a.results.display())))?;
    let c = report::campaign::load(&text)
        .map_err(|e| UsageError(format!("{}: {e}", a.results.display())))?;
    match (a.format.as_str(), &a.out) {
        ("md", None) => print!("{}", report::campaign::markdown(&c)),
        ("html", None) => print!("{}", report::campaign::html(&c)),
        ("csv", None) => {
            for (name, csv) in report::campaign::csv_tables(&c) {
                println!("# {name}.csv\n{csv}");
            }
        }
        (_, Some(dir)) => {
            std::fs::create_dir_all(dir)?;
            for f in write_reports(dir, &c)? {
                println!("wrote {}", f.display());
            }
        }
        (other, None) => {
            return Err(UsageError(format!("--format {other}: use md, html or csv")).into())
        }
    }
    Ok(())
}

/// `wirebench compare A.json B.json`.
pub fn compare(a: &crate::cli::CompareArgs) -> Result<()> {
    let read = |p: &Path| -> Result<Campaign> {
        let text = std::fs::read_to_string(p)
            .map_err(|e| UsageError(format!("cannot read {}: {e}", p.display())))?;
        Ok(report::campaign::load_any(&text)
            .map_err(|e| UsageError(format!("{}: {e}", p.display())))?)
    };
    let (ca, cb) = (read(&a.a)?, read(&a.b)?);
    if a.json {
        let rows = report::campaign::compare_rows(&ca, &cb);
        let keys = [
            "test",
            "figure",
            "unit",
            "a",
            "b",
            "difference",
            "overhead_percent",
        ];
        let doc: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::Value::Object(
                    keys.iter()
                        .zip(r)
                        .map(|(k, v)| {
                            let val = v
                                .trim_start_matches('+')
                                .parse::<f64>()
                                .ok()
                                .and_then(serde_json::Number::from_f64)
                                .map(serde_json::Value::Number)
                                .unwrap_or_else(|| serde_json::Value::String(v.clone()));
                            ((*k).to_owned(), val)
                        })
                        .collect(),
                )
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!(
            "{}",
            report::campaign::compare_markdown(
                &ca,
                &cb,
                &a.a.display().to_string(),
                &a.b.display().to_string()
            )
        );
    }
    Ok(())
}
