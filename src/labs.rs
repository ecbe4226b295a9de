//! `wirebench lab`: build, show, use and remove test networks (the `lab` crate does it),
//! and the hidden `lab stage` a lab starts on its impairment nodes.

use std::process::ExitCode;

use anyhow::Result;
use lab::{DryRun, Lab, SystemRunner};
use report::table::Table;

use crate::cli::{LabArgs, LabCommand, LabUpArgs};
use crate::output::{errln, out, outln};
use crate::output::{lab_error, stop_on_signals, usage};

fn need_root() -> Result<()> {
    let why = "wirebench lab needs root: it creates network namespaces (run it with sudo)";
    Ok(campaign::need_root(why)?)
}

/// Runs a lab subcommand; `exec` passes the command's exit code through.
pub fn lab(a: &LabArgs) -> Result<ExitCode> {
    match &a.command {
        LabCommand::Up(up) => self::up(up)?,
        LabCommand::Down {
            name,
            name_flag,
            all,
            stale,
        } => {
            need_root()?;
            if *stale {
                let gone = Lab::down_stale(&mut SystemRunner).map_err(lab_error)?;
                outln!(
                    "removed {} stale lab(s){}{}",
                    gone.len(),
                    if gone.is_empty() { "" } else { ": " },
                    gone.join(", ")
                );
                return Ok(ExitCode::SUCCESS);
            }
            let n = if *all {
                Lab::down_all(&mut SystemRunner).map_err(lab_error)?
            } else {
                let name = name.as_deref().or(name_flag.as_deref()).unwrap_or_default();
                match Lab::down(name, &mut SystemRunner).map_err(lab_error)? {
                    0 => return Err(lab_error(lab::LabError::NotFound(name.to_owned()))),
                    n => n,
                }
            };
            outln!("removed {n} namespace(s)");
        }
        LabCommand::Status => {
            need_root()?;
            let st = lab::status::status(&mut SystemRunner).map_err(lab_error)?;
            out!("{}", report::text::lab_status(&st));
        }
        LabCommand::Stage {
            config,
            state,
            netns_file,
        } => {
            need_root()?;
            let cfg: lab::impair::stage::StageConfig =
                serde_json::from_str(config).map_err(|e| usage(format!("--config-json: {e}")))?;
            let stop = stop_on_signals()?;
            let end =
                lab::impair::stage::run(&cfg, state.as_deref(), netns_file.as_deref(), &stop)?;
            errln!(
                "impairment stage stopped ({}): forward {:?}, reverse {:?}",
                end.stopped.as_deref().unwrap_or("?"),
                end.forward,
                end.reverse
            );
        }
        LabCommand::Exec { node, name, argv } => {
            need_root()?;
            let cmd = Lab::exec(name, node, argv, &mut SystemRunner).map_err(lab_error)?;
            let code = lab::cmd::run_attached(&cmd).map_err(lab_error)?;
            return Ok(ExitCode::from(code.clamp(0, 255) as u8));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `lab up`: builds the topology (or prints its commands) and says how to reach it.
fn up(a: &LabUpArgs) -> Result<()> {
    let topo = crate::requests::lab_up(a).resolve().map_err(lab_error)?;
    let name = &a.name;
    if a.dry_run {
        let mut d = DryRun::default();
        Lab::up(name, &topo, &mut d).map_err(lab_error)?;
        for l in &d.lines {
            outln!("{l}");
        }
        return Ok(());
    }
    need_root()?;
    // Ctrl-C or SIGTERM while building removes what was built.
    let stop = stop_on_signals()?;
    let built =
        Lab::up_owned(name, &topo, &mut SystemRunner, true, Some(&stop)).map_err(lab_error)?;
    outln!("lab '{}' ({}) is up:", built.name, topo.kind);
    let d = lab::status::describe(&topo, name);
    let spec = "node|namespace|interface|address";
    out!("{}", Table::plain(spec, d.interfaces).text());
    for line in &d.devices {
        outln!("{line}");
    }
    if !topo.relays.is_empty() {
        outln!("FRER counters: wirebench frer stats --lab {name}");
    }
    outln!("run a command on a node: wirebench lab exec --name {name} NODE -- CMD...");
    outln!("remove it: wirebench lab down {name}");
    Ok(())
}
