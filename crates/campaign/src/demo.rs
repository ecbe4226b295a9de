//! The built-in campaign (`wirebench demo`): as root the lab plan (a FRER network with path
//! loss, a shaper profile, the FRER overhead), otherwise (or asked to) the loopback plan;
//! the plans are `examples/plan-demo.toml` and `examples/plan-demo-loopback.toml`, built
//! in, with the files they name written into the run directory.

use std::path::{Path, PathBuf};

use crate::Error;

/// The plan the demo runs, written into `out/demo-files/plan.toml` with the files it
/// names; `root` chooses the lab plan.
///
/// # Errors
/// The run directory cannot be written.
pub fn write_plan(out: &Path, root: bool) -> Result<PathBuf, Error> {
    let files = out.join("demo-files");
    let io = |e: std::io::Error| Error::Failed(format!("writing {}: {e}", files.display()));
    std::fs::create_dir_all(&files).map_err(io)?;
    let plan = if root {
        let write = engine::files::write_atomic;
        let shaper = include_str!("../../../examples/shaper-two-classes.toml");
        write(&files.join("shaper.toml"), shaper.as_bytes()).map_err(io)?;
        let streams = include_str!("../../../examples/streams-demo.toml");
        write(&files.join("streams.toml"), streams.as_bytes()).map_err(io)?;
        let dir = files.canonicalize().map_err(io)?.display().to_string();
        include_str!("../../../examples/plan-demo.toml").replace("{dir}", &dir)
    } else {
        include_str!("../../../examples/plan-demo-loopback.toml").to_owned()
    };
    let plan_file = files.join("plan.toml");
    engine::files::write_atomic(&plan_file, plan.as_bytes()).map_err(io)?;
    Ok(plan_file)
}
