//! `completions` and `man`: shell completion scripts and manual pages, both generated from
//! the same clap definitions as the command line itself, so they cannot drift from it.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs, Shell};
use crate::output::{out, outln};

/// `wirebench completions bash|zsh|fish`: the script on standard output.
pub fn completions(a: &CompletionsArgs) -> Result<()> {
    let shell = match a.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "wirebench", &mut out);
    out!("{}", String::from_utf8_lossy(&out));
    Ok(())
}

/// `wirebench man [DIR]`: wirebench.1 on standard output, or every page into DIR
/// (wirebench.1, and wirebench-COMMAND.1 for each command and subcommand).
pub fn man(a: &ManArgs) -> Result<()> {
    let cmd = Cli::command();
    let Some(dir) = &a.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        std::io::stdout().write_all(&page)?;
        return Ok(());
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for path in write_pages(cmd, "wirebench", dir)? {
        outln!("wrote {}", path.display());
    }
    Ok(())
}

/// Writes `name.1` for `cmd` and each of its subcommands (named `name-sub`), recursively.
fn write_pages(cmd: clap::Command, name: &str, dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let cmd = cmd
        .display_name(name.to_owned())
        .bin_name(name.replace('-', " "));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    let path = dir.join(format!("{name}.1"));
    engine::files::write_atomic(&path, &page)
        .with_context(|| format!("writing {}", path.display()))?;
    let mut written = vec![path];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let sub_name = format!("{name}-{}", sub.get_name());
        written.extend(write_pages(sub.clone(), &sub_name, dir)?);
    }
    Ok(written)
}
