//! `wirebench lab`: build, show, use and remove test networks.

use std::process::ExitCode;

use anyhow::Result;
use lab::topology::lab_namespaces;
use lab::{Cmd, DryRun, Lab, Runner, SystemRunner, Topology};

use crate::cli::{LabArgs, LabCommand};
use crate::commands::UsageError;

fn need_root() -> Result<()> {
    if lab::cmd::is_root() {
        Ok(())
    } else {
        Err(UsageError(
            "wirebench lab needs root: it creates network namespaces (run it with sudo)".into(),
        )
        .into())
    }
}

fn lab_error(e: lab::LabError) -> anyhow::Error {
    match e {
        lab::LabError::Command { .. } => e.into(),
        other => UsageError(other.to_string()).into(),
    }
}

/// A flag that SIGINT and SIGTERM set, so a managed process ends its loop and publishes
/// its final counters instead of dying mid-write.
pub(crate) fn stop_on_signals() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// Runs a lab subcommand; `exec` passes the command's exit code through.
pub fn lab(a: &LabArgs) -> Result<ExitCode> {
    match &a.command {
        LabCommand::Up {
            topology,
            shape,
            impair,
            path_a,
            path_b,
            frer,
            name,
            dry_run,
        } => {
            let topo = resolve_topology(topology, shape.as_deref(), impair, path_a, path_b, frer)?;
            if *dry_run {
                let mut d = DryRun::default();
                Lab::up(name, &topo, &mut d).map_err(lab_error)?;
                for l in &d.lines {
                    println!("{l}");
                }
                return Ok(ExitCode::SUCCESS);
            }
            need_root()?;
            let built = Lab::up(name, &topo, &mut SystemRunner).map_err(lab_error)?;
            println!("lab '{}' ({}) is up:", built.name, topo.kind);
            print!("{}", describe(&topo, name));
            if let Some(sh) = &topo.shaper {
                println!("shaper on dut eth1 (toward the listener), HTB classes:");
                for (i, c) in sh.class.iter().enumerate() {
                    println!(
                        "  1:{:<3} {:<10} protocol {:<4} rate {} ceil {}",
                        10 + i,
                        c.name,
                        c.protocol
                            .map(|p| format!("{p:?}").to_lowercase())
                            .unwrap_or_else(|| "any".into()),
                        c.rate,
                        c.ceil.as_deref().unwrap_or(&c.rate)
                    );
                }
                println!("  1:999 default (unmatched traffic)");
            }
            for s in &topo.stages {
                let how = match s.config.mode {
                    lab::impair::stage::Mode::Bridge => "bridge",
                    lab::impair::stage::Mode::Router { .. } => "router",
                };
                println!(
                    "impairment stage on {} ({how}, {} <-> {}): forward {}; reverse {}",
                    s.node,
                    s.config.a,
                    s.config.b,
                    lab::impair::spec::ImpairSpec::describe(&s.config.spec.forward),
                    lab::impair::spec::ImpairSpec::describe(&s.config.spec.reverse),
                );
            }
            for r in &topo.relays {
                let mut what: Vec<String> = r
                    .config
                    .streams
                    .iter()
                    .flat_map(|s| {
                        let rep = s.replicate.as_ref().map(|p| {
                            format!("replicates {} {} -> {}", s.name, p.from, p.to.join(","))
                        });
                        let elim = s.eliminate.as_ref().map(|e| {
                            format!(
                                "eliminates {} {} -> {} (history {}{})",
                                s.name,
                                e.from.join(","),
                                e.to,
                                e.history,
                                if e.off { ", ELIMINATION OFF" } else { "" }
                            )
                        });
                        rep.into_iter().chain(elim)
                    })
                    .collect();
                if what.is_empty() {
                    what.push("plain forwarding, no FRER (control group)".into());
                }
                println!("FRER relay on {}: {}", r.node, what.join("; "));
            }
            if !topo.relays.is_empty() {
                println!("FRER counters: wirebench frer stats --lab {name}");
            }
            println!("run a command on a node: wirebench lab exec --name {name} NODE -- CMD...");
            println!("remove it: wirebench lab down {name}");
        }
        LabCommand::Down { name, all } => {
            need_root()?;
            let n = if *all {
                Lab::down_all(&mut SystemRunner).map_err(lab_error)?
            } else {
                let name = name.as_deref().unwrap_or_default();
                let n = Lab::down(name, &mut SystemRunner).map_err(lab_error)?;
                if n == 0 {
                    return Err(lab_error(lab::LabError::NotFound(name.to_owned())));
                }
                n
            };
            println!("removed {n} namespace(s)");
        }
        LabCommand::Status => {
            need_root()?;
            print!("{}", status(&mut SystemRunner).map_err(lab_error)?);
        }
        LabCommand::Stage {
            config,
            state,
            netns_file,
        } => {
            need_root()?;
            let cfg: lab::impair::stage::StageConfig = serde_json::from_str(config)
                .map_err(|e| UsageError(format!("--config-json: {e}")))?;
            let stop = stop_on_signals()?;
            let end =
                lab::impair::stage::run(&cfg, state.as_deref(), netns_file.as_deref(), &stop)?;
            eprintln!(
                "impairment stage stopped ({}): forward {:?}, reverse {:?}",
                end.stopped.as_deref().unwrap_or("?"),
                end.forward,
                end.reverse
            );
        }
        LabCommand::Exec { node, name, argv } => {
            need_root()?;
            let cmd = Lab::exec(name, node, argv, &mut SystemRunner).map_err(lab_error)?;
            let status = std::process::Command::new(&cmd.program)
                .args(&cmd.args)
                .status()?;
            return Ok(ExitCode::from(
                status.code().map(|c| c.clamp(0, 255) as u8).unwrap_or(1),
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads an impairment given as `key=value,...` or as a TOML file.
fn impair_spec(arg: &str, flag: &str) -> Result<lab::impair::spec::ImpairSpec> {
    let path = std::path::Path::new(arg);
    let parsed = if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| UsageError(format!("cannot read {arg}: {e}")))?;
        lab::impair::spec::ImpairSpec::parse(&text).map_err(|e| format!("{arg}: {e}"))
    } else {
        lab::impair::spec::ImpairSpec::parse_inline(arg)
    };
    Ok(parsed.map_err(|e| UsageError(format!("{flag}: {e}")))?)
}

/// The topology `lab up` builds: a built-in name with its flags, or a TOML file.
fn resolve_topology(
    topology: &str,
    shape: Option<&std::path::Path>,
    impair: &Option<String>,
    path_a: &Option<String>,
    path_b: &Option<String>,
    frer: &Option<String>,
) -> Result<Topology> {
    let is_file = topology.ends_with(".toml") || std::path::Path::new(topology).is_file();
    let wrong = |flag: &str, owner: &str| -> anyhow::Error {
        UsageError(format!("{flag} belongs to the {owner} topology")).into()
    };
    if is_file {
        if shape.is_some()
            || impair.is_some()
            || path_a.is_some()
            || path_b.is_some()
            || frer.is_some()
        {
            return Err(UsageError(
                "a topology file carries its own settings: drop --shape/--impair/--path-a/--path-b/--frer"
                    .into(),
            )
            .into());
        }
        let text = std::fs::read_to_string(topology)
            .map_err(|e| UsageError(format!("cannot read {topology}: {e}")))?;
        return Topology::from_toml(&text)
            .map_err(|e| UsageError(format!("{topology}: {e}")).into());
    }
    if shape.is_some() && topology != "shaper" {
        return Err(wrong("--shape", "shaper"));
    }
    if impair.is_some() && !matches!(topology, "impair" | "twopath" | "frer") {
        return Err(wrong("--impair", "impair, twopath or frer"));
    }
    if (path_a.is_some() || path_b.is_some()) && !matches!(topology, "twopath" | "frer") {
        return Err(wrong("--path-a/--path-b", "twopath or frer"));
    }
    if frer.is_some() && topology != "frer" {
        return Err(wrong("--frer", "frer"));
    }
    match topology {
        "shaper" => {
            let Some(path) = shape else {
                return Err(lab_error(lab::LabError::NeedsShape));
            };
            let text = std::fs::read_to_string(path)
                .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
            let spec = lab::shaper::ShaperSpec::parse(&text).map_err(|e| {
                lab_error(lab::LabError::BadShape(format!("{}: {e}", path.display())))
            })?;
            Ok(Topology::shaper(spec))
        }
        "impair" => Ok(Topology::impair(match impair {
            Some(s) => impair_spec(s, "--impair")?,
            None => Default::default(),
        })),
        "twopath" | "frer" => {
            let both = match impair {
                Some(s) => impair_spec(s, "--impair")?,
                None => Default::default(),
            };
            let a = match path_a {
                Some(s) => impair_spec(s, "--path-a")?,
                None => both,
            };
            let b = match path_b {
                Some(s) => impair_spec(s, "--path-b")?,
                None => both,
            };
            if topology == "twopath" {
                return Ok(Topology::twopath(a, b));
            }
            let opts = match frer {
                Some(s) => lab::topology::FrerLabOptions::parse_inline(s)
                    .map_err(|e| UsageError(format!("--frer: {e}")))?,
                None => Default::default(),
            };
            Ok(Topology::frer(a, b, opts))
        }
        other => Topology::builtin(other).map_err(lab_error),
    }
}

/// How to reach each node of a freshly built lab.
fn describe(topo: &Topology, name: &str) -> String {
    let rows: Vec<Vec<String>> = topo
        .links
        .iter()
        .flat_map(|l| [&l.a, &l.b])
        .map(|i| {
            vec![
                i.node.clone(),
                lab::naming::namespace(name, &i.node),
                i.name.clone(),
                i.addr
                    .map(|a| format!("{a}/{}", i.prefix))
                    .unwrap_or_else(|| {
                        if topo.relays.iter().any(|r| r.node == i.node) {
                            "- (relay port)".into()
                        } else {
                            "- (stage port)".into()
                        }
                    }),
            ]
        })
        .collect();
    report::table::render(
        &[
            ("node", report::table::Align::Left),
            ("namespace", report::table::Align::Left),
            ("interface", report::table::Align::Left),
            ("address", report::table::Align::Left),
        ],
        &rows,
    )
}

/// The labs that are up, read back from the namespaces themselves.
fn status(runner: &mut dyn Runner) -> Result<String, lab::LabError> {
    let mut rows = Vec::new();
    let namespaces = lab_namespaces(runner)?;
    for (ns, labname, node) in &namespaces {
        let addrs = runner.run(&Cmd::brief_addrs(ns))?;
        let ifaces: Vec<String> = addrs
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let name = f.next()?.split('@').next()?.to_owned();
                let state = f.next()?.to_owned();
                let addrs: Vec<&str> = f.collect();
                (name != "lo").then(|| format!("{name} {state} {}", addrs.join(" ")))
            })
            .collect();
        rows.push(vec![
            labname.clone(),
            node.clone(),
            ns.clone(),
            ifaces.join("; "),
        ]);
    }
    if rows.is_empty() {
        return Ok("no labs are up\n".into());
    }
    // Shaper classes and their counters, for labs whose dut shapes its egress.
    let mut classes = Vec::new();
    for (ns, labname, node) in &namespaces {
        if node != "dut" {
            continue;
        }
        let Ok(text) = runner.run(&Cmd::class_stats(ns, "eth1")) else {
            continue;
        };
        for c in lab::shaper::parse_class_stats(&text) {
            classes.push(vec![
                labname.clone(),
                c.id,
                c.rate,
                c.packets.to_string(),
                c.bytes.to_string(),
                c.dropped.to_string(),
            ]);
        }
    }
    let mut out = report::table::render(
        &[
            ("lab", report::table::Align::Left),
            ("node", report::table::Align::Left),
            ("namespace", report::table::Align::Left),
            ("interfaces", report::table::Align::Left),
        ],
        &rows,
    );
    // Impairment stages and their counters.
    let mut labs: Vec<&str> = namespaces.iter().map(|(_, l, _)| l.as_str()).collect();
    labs.dedup();
    let mut stages = Vec::new();
    for &labname in &labs {
        for (node, st) in Lab::stage_states(labname) {
            let alive = lab::topology::process_runs(st.pid);
            let state = match (st.running && alive, &st.stopped) {
                (true, _) => "running".to_owned(),
                (false, Some(why)) => format!("stopped: {why}"),
                (false, None) => "gone".to_owned(),
            };
            // Frames lost before the stage saw them (both sides together): the stage
            // itself was the bottleneck.
            let overload = (st.kernel_drops > 0).then(|| {
                format!(
                    "{} frames (both directions) dropped before the stage read them: overloaded",
                    st.kernel_drops
                )
            });
            for (dir, c) in [("forward", st.forward), ("reverse", st.reverse)] {
                stages.push(vec![
                    labname.to_owned(),
                    node.clone(),
                    dir.to_owned(),
                    c.frames_in.to_string(),
                    c.dropped_loss.to_string(),
                    c.duplicated.to_string(),
                    c.reordered.to_string(),
                    c.delayed.to_string(),
                    c.dropped_queue.to_string(),
                    c.frames_out.to_string(),
                    match (&overload, dir) {
                        (Some(o), "forward") => format!("{state}; {o}"),
                        _ => state.clone(),
                    },
                ]);
            }
        }
    }
    if !classes.is_empty() {
        use report::table::Align::{Left as L, Right as R};
        out.push_str("\nshaper classes (dut eth1, toward the listener)\n");
        out.push_str(&report::table::render(
            &[
                ("lab", L),
                ("class", L),
                ("rate", R),
                ("packets", R),
                ("bytes", R),
                ("dropped", R),
            ],
            &classes,
        ));
    }
    for &labname in &labs {
        for (label, path) in crate::frercmd::state_files(Some(labname)) {
            if let Ok(st) = lab::frer::process::RelayState::read(&path) {
                out.push_str(&crate::frercmd::render_state(&label, &st));
            }
        }
    }
    if !stages.is_empty() {
        use report::table::Align::{Left as L, Right as R};
        out.push_str("\nimpairment stages (forward = toward the listener)\n");
        out.push_str(&report::table::render(
            &[
                ("lab", L),
                ("node", L),
                ("direction", L),
                ("frames in", R),
                ("lost", R),
                ("duplicated", R),
                ("reordered", R),
                ("delayed", R),
                ("queue drops", R),
                ("frames out", R),
                ("state", L),
            ],
            &stages,
        ));
    }
    Ok(out)
}
