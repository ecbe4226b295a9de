//! `wirebench`: the thin binary. It parses the command line ([`cli`]), resolves it into the
//! libraries' configuration and prints what they return ([`commands`]). Measuring,
//! protocol and rendering live in the `engine`, `control`, `method` and `report` crates.
//!
//! Exit codes: 0 success; 1 the test could not run (connection, refusal, protocol);
//! 2 bad command line or input; 3 the test ran but a verdict (e.g. a latency limit) failed.
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod frercmd;
mod labcmd;
mod plan;
mod rawcmd;
mod rfc2544cmd;
mod runcmd;
mod streamscmd;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let filter = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| filter.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match &cli.command {
        cli::Command::Server(a) => commands::server(a),
        cli::Command::Client(a) => commands::client(a),
        cli::Command::Latency(a) => commands::latency(a),
        cli::Command::Sweep(a) => commands::sweep(a),
        cli::Command::Blocksize(a) => commands::blocksize(a),
        cli::Command::Demo(a) => commands::demo(a),
        cli::Command::Gen(a) => rawcmd::gen(a),
        cli::Command::Rfc2544(a) => rfc2544cmd::rfc2544(a),
        cli::Command::Streams(a) => streamscmd::streams(a),
        cli::Command::Shaping(a) => streamscmd::shaping(a),
        cli::Command::Frer(a) => frercmd::frer(a),
        cli::Command::Run(a) => runcmd::run(a),
        cli::Command::Report(a) => runcmd::report(a),
        cli::Command::Compare(a) => runcmd::compare(a),
        cli::Command::Lab(a) => match labcmd::lab(a) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wirebench: {e:#}");
            if e.downcast_ref::<commands::UsageError>().is_some() {
                ExitCode::from(2)
            } else if e.downcast_ref::<commands::VerdictFailed>().is_some() {
                ExitCode::from(3)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
