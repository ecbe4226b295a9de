//! `wirebench lab`: build, show, use and remove test networks.

use std::process::ExitCode;

use anyhow::Result;
use lab::topology::lab_namespaces;
use lab::{Cmd, DryRun, Lab, Runner, SystemRunner, Topology};

use crate::cli::{DemoArgs, LabArgs, LabCommand};
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

/// Runs a lab subcommand; `exec` passes the command's exit code through.
pub fn lab(a: &LabArgs) -> Result<ExitCode> {
    match &a.command {
        LabCommand::Up {
            topology,
            shape,
            name,
            dry_run,
        } => {
            let topo = match (topology.as_str(), shape) {
                ("shaper", Some(path)) => {
                    let text = std::fs::read_to_string(path)
                        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))?;
                    let spec = lab::shaper::ShaperSpec::parse(&text).map_err(|e| {
                        lab_error(lab::LabError::BadShape(format!("{}: {e}", path.display())))
                    })?;
                    Topology::shaper(spec)
                }
                (_, Some(_)) => {
                    return Err(UsageError("--shape belongs to the shaper topology".into()).into())
                }
                _ => Topology::builtin(topology).map_err(lab_error)?,
            };
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
                format!("{}/{}", i.addr, i.prefix),
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
    Ok(out)
}

/// A lab that is removed when dropped.
struct LabGuard(String);

impl Drop for LabGuard {
    fn drop(&mut self) {
        let _ = Lab::down(&self.0, &mut SystemRunner);
    }
}

/// `wirebench demo` as root: builds a `router` lab, starts a server on the listener and runs
/// the demo tour from the talker, across the dut's forwarding path; removes the lab after.
pub fn demo_in_lab(a: &DemoArgs) -> Result<()> {
    use std::io::BufRead;
    let name = format!("demo{:x}", std::process::id() & 0xfff);
    let topo = Topology::builtin("router").map_err(lab_error)?;
    // The name carries our pid: a lab of that name was left by a killed earlier process.
    let _ = Lab::down(&name, &mut SystemRunner);
    Lab::up(&name, &topo, &mut SystemRunner).map_err(lab_error)?;
    let _guard = LabGuard(name.clone());
    let exe = std::env::current_exe()?;
    let exe = exe.to_string_lossy().into_owned();
    let listener = topo
        .address_of("listener")
        .map(|a| a.to_string())
        .unwrap_or_default();
    let in_ns = |node: &str, argv: &[&str]| {
        let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
        Lab::exec(&name, node, &argv, &mut SystemRunner).map_err(lab_error)
    };
    let server_cmd = in_ns(
        "listener",
        &[
            &exe,
            "server",
            "--bind",
            &listener,
            "-p",
            "5301",
            "--run-for",
            "600",
        ],
    )?;
    let mut server = std::process::Command::new(&server_cmd.program)
        .args(&server_cmd.args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let mut first = String::new();
    if let Some(err) = server.stderr.take() {
        let _ = std::io::BufReader::new(err).read_line(&mut first);
    }
    if !first.contains("listening on") {
        let _ = server.kill();
        anyhow::bail!("the lab's server did not start: {}", first.trim());
    }
    if !a.json {
        println!(
            "wirebench demo: running as root, so across lab '{name}' (router): talker {} -> dut (forwarding) -> listener {listener}",
            topo.address_of("talker").map(|a| a.to_string()).unwrap_or_default()
        );
    }
    let secs = a.time.as_secs_f64().to_string();
    let server_addr = format!("{listener}:5301");
    let mut argv = vec![exe.as_str(), "demo", "--server", &server_addr, "-t", &secs];
    if a.json {
        argv.push("-J");
    }
    let client_cmd = in_ns("talker", &argv)?;
    let status = std::process::Command::new(&client_cmd.program)
        .args(&client_cmd.args)
        .status();
    let _ = server.kill();
    let _ = server.wait();
    if !status?.success() {
        anyhow::bail!("the demo inside lab '{name}' failed");
    }
    if !a.json {
        println!("lab '{name}' removed.");
    }
    Ok(())
}
