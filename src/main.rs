//! `wirebench`: the thin binary. It parses the command line ([`cli`]), turns it into the
//! campaign's typed requests ([`requests`]), runs them through the libraries and prints
//! what they return ([`output`]). Measuring, methods, plans, labs and rendering live in
//! the `engine`, `control`, `method`, `campaign`, `lab` and `report` crates.
//!
//! Commands: [`measure`] (one test, one document), [`campaigns`] (plans, the demo,
//! reports), [`labs`] (test networks), [`serve`] (the server and the FRER relay),
//! [`manuals`] (shell completions and man pages). None of them uses another.
//!
//! Exit codes: 0 success; 1 the test could not run (connection, refusal, protocol);
//! 2 bad command line or input; 3 the test ran but a verdict (e.g. a latency limit) failed.
#![forbid(unsafe_code)]

mod campaigns;
mod labs;
mod manuals;
mod measure;
mod output;
mod serve;

use command_line::{args as cli, requests};

use std::process::ExitCode;

use campaign::methods::client::JsonFormat;
use clap::{ArgMatches, CommandFactory, FromArgMatches};

use crate::output::{errln, Layout};
use cli::{Command, FrerCommand};

/// How a command writes its result (`-J`, `--json-format`, `--json-stream`).
fn layout(c: &Command, matches: &ArgMatches) -> Layout {
    if let Command::Client(a) = c {
        if a.json_stream {
            return Layout::Iperf3Stream;
        }
        if a.target.json && a.json_format == JsonFormat::Iperf3 {
            return Layout::Iperf3Json;
        }
    }
    if requests::json(matches).unwrap_or(false) {
        Layout::Json
    } else {
        Layout::Text
    }
}

/// A command a plan can hold: its request, run and printed.
fn test(c: &Command, matches: &ArgMatches) -> anyhow::Result<()> {
    match requests::test(matches) {
        Some(req) => {
            let req = req?;
            let layout = layout(c, matches);
            let unit = match c {
                Command::Client(a) => {
                    // -T and --timestamps decorate text; JSON carries the title inside.
                    let text = layout == Layout::Text;
                    output::configure(
                        a.logfile.as_deref(),
                        a.title.clone().filter(|_| text),
                        a.timestamps && text,
                    )?;
                    a.format
                }
                _ => None,
            };
            measure::test(&req, layout, unit)
        }
        None => Err(anyhow::anyhow!("not a test command")),
    }
}

fn run(c: &Command, matches: &ArgMatches) -> anyhow::Result<ExitCode> {
    match c {
        Command::Server(a) => serve::server(a)?,
        Command::Exporter(a) => serve::exporter(a)?,
        Command::Gen(a) => measure::gen(a)?,
        Command::Frer(f) => match &f.command {
            FrerCommand::Relay(a) => serve::relay(a)?,
            FrerCommand::Stats(a) => measure::stats(a)?,
            FrerCommand::Analyze(a) => measure::analyze(a)?,
            FrerCommand::Compare(_) => test(c, matches)?,
        },
        Command::Demo(a) => campaigns::demo(a)?,
        Command::Run(a) => campaigns::run(a)?,
        Command::Report(a) => campaigns::report(a)?,
        Command::Compare(a) => campaigns::compare(a)?,
        Command::Lab(a) => return labs::lab(a),
        Command::Completions(a) => manuals::completions(a)?,
        Command::Man(a) => manuals::man(a)?,
        _ => test(c, matches)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let argv = cli::iperf3_aliases(std::env::args_os().collect());
    if let Some(m) = cli::refused_iperf3_option(&argv) {
        errln!("wirebench: {m}");
        return ExitCode::from(2);
    }
    // The matches too: a test method's request is built from its command's own matches.
    let matches = cli::Cli::command().get_matches_from(argv);
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // A server's line per finished test (as `iperf3 -s` prints) shows by default.
    let filter = match cli.verbose {
        0 => format!("warn,{}=info", control::server::summary::TARGET),
        1 => "info".to_owned(),
        _ => "debug".to_owned(),
    };
    // Colour only on a terminal: not in logs, files or journald.
    use std::io::IsTerminal as _;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| filter.into()),
        )
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    match run(&cli.command, &matches) {
        Ok(code) => code,
        Err(e) => {
            errln!("wirebench: {e:#}");
            // A reader of -J output gets the failure on stdout too, as iperf3 prints it
            // (an interrupted test or a failed verdict has printed its document already).
            if !output::printed_document(&e) {
                output::print_error(layout(&cli.command, &matches), &format!("{e:#}"));
            }
            ExitCode::from(output::exit_code(&e))
        }
    }
}
