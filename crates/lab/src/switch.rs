//! A lab switch's bridge while a method tests it: forgetting the addresses it learned
//! between trials, and reading how many it holds against its limit. A topology file's
//! switch node has one bridge, [`BRIDGE`]. It does not build switches (`topology` does).

use crate::cmd::{Cmd, Runner};
use crate::{naming, LabError};

/// The bridge of a topology file's switch node.
pub const BRIDGE: &str = "br0";

/// Flushes the learned entries of lab `lab`'s switch `node`
/// (`ip link set br0 type bridge fdb_flush`).
///
/// # Errors
/// No such node or bridge.
pub fn flush(runner: &mut dyn Runner, lab: &str, node: &str) -> Result<(), LabError> {
    naming::check(node)?;
    runner
        .run(&Cmd::bridge_flush(&naming::namespace(lab, node), BRIDGE))
        .map(drop)
}

/// How many addresses lab `lab`'s switch `node` learned, and its limit (0: none); `None`
/// on a kernel that does not report them (before 6.7).
///
/// # Errors
/// No such node or bridge.
pub fn learned(lab: &str, node: &str) -> Result<Option<(u32, u32)>, LabError> {
    naming::check(node)?;
    let ns = naming::namespace(lab, node);
    let got =
        engine::frameio::in_netns(Some(&ns), || engine::bridge::learned(BRIDGE)).map_err(|e| {
            LabError::Command {
                cmd: format!("entering namespace {ns}"),
                detail: e.to_string(),
            }
        })?;
    match got {
        Ok(l) => Ok(Some((l.entries, l.limit))),
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => Ok(None),
        Err(e) => Err(LabError::Command {
            cmd: format!("reading {BRIDGE}'s learned addresses in {ns}"),
            detail: e.to_string(),
        }),
    }
}
