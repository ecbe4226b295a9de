//! What every command shares on the way out: printing a result document (`-J`, or its
//! text layout from `report`), a [`Watch`] that prints interval rows and progress, the
//! stop token Ctrl-C raises, and the exit codes.

use std::io::Write as _;
use std::sync::Mutex;

use campaign::Watch;
use model::results::{IntervalRow, RunResult};
use model::stop::Stop;

/// Where standard output goes and how its lines start (`--logfile`, `-T`, `--timestamps`).
struct Sink {
    file: Option<std::fs::File>,
    title: Option<String>,
    timestamps: bool,
    at_line_start: bool,
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// Sends what follows to `logfile` (appended) instead of standard output, and starts
/// every line with the time and `title` when asked (text only: a JSON layout passes
/// `title: None, timestamps: false`).
///
/// # Errors
/// The log file cannot be opened.
pub fn configure(
    logfile: Option<&std::path::Path>,
    title: Option<String>,
    timestamps: bool,
) -> anyhow::Result<()> {
    let file = match logfile {
        // Appended to, as iperf3 does; never through a symbolic link (refused).
        Some(p) => Some({
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(p)
                .map_err(|e| {
                    let why = if e.raw_os_error() == Some(libc::ELOOP) {
                        "is a symbolic link (not followed)".to_owned()
                    } else {
                        e.to_string()
                    };
                    usage(format!("--logfile {}: {why}", p.display()))
                })?
        }),
        None => None,
    };
    if file.is_none() && title.is_none() && !timestamps {
        return Ok(());
    }
    if let Ok(mut s) = SINK.lock() {
        *s = Some(Sink {
            file,
            title,
            timestamps,
            at_line_start: true,
        });
    }
    Ok(())
}

/// Writes to standard output (or the log file). When the reader has gone away
/// (`wirebench report F | head`), the command ends here, quietly and with success: what it
/// had to say was not wanted.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    let mut sink = SINK.lock().ok();
    let result = match sink.as_deref_mut().and_then(Option::as_mut) {
        Some(s) => {
            let text = decorate(s, &args.to_string());
            match s.file.as_mut() {
                Some(f) => f.write_all(text.as_bytes()).and_then(|()| f.flush()),
                None => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(text.as_bytes()).and_then(|()| out.flush())
                }
            }
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_fmt(args).and_then(|()| out.flush())
        }
    };
    if let Err(e) = result {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

/// Starts each line of `text` with the time and the title, as the sink asks.
fn decorate(s: &mut Sink, text: &str) -> String {
    if s.title.is_none() && !s.timestamps {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 64);
    for piece in text.split_inclusive('\n') {
        if s.at_line_start {
            if s.timestamps {
                out.push_str(&engine::env::now_rfc3339());
                out.push(' ');
            }
            if let Some(t) = &s.title {
                out.push_str(t);
                out.push_str(":  ");
            }
        }
        out.push_str(piece);
        s.at_line_start = piece.ends_with('\n');
    }
    out
}

/// Writes a line to standard error; a closed stderr is ignored.
pub fn write_err(args: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// `print!` that ends the command quietly when the reader has gone away.
macro_rules! out {
    ($($t:tt)*) => { $crate::output::write_out(format_args!($($t)*)) };
}

/// `println!` that ends the command quietly when the reader has gone away.
macro_rules! outln {
    () => { $crate::output::write_out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::output::write_out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprintln!` that ignores a closed stderr.
macro_rules! errln {
    ($($t:tt)*) => { $crate::output::write_err(format_args!($($t)*)) };
}

pub(crate) use {errln, out, outln};

/// The test ran, but a verdict it was asked to check failed (exit code 3).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct VerdictFailed(pub String);

/// A test stopped early by Ctrl-C or SIGTERM, after its partial result was printed (exit
/// code 1).
#[derive(Debug, thiserror::Error)]
#[error("interrupted: the result above is what finished before the stop")]
pub struct Interrupted;

/// A usage error (exit code 2).
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    campaign::Error::Usage(msg.into()).into()
}

/// A lab error as the campaign classes it: a failed command exits 1, the rest 2.
pub fn lab_error(e: lab::LabError) -> anyhow::Error {
    campaign::Error::from(e).into()
}

/// The exit code of an error: 3 for a failed verdict, 2 for what the campaign's error
/// classes as usage ([`campaign::Error::is_usage`]), 1 for the rest.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<VerdictFailed>().is_some() {
        3
    } else if e
        .downcast_ref::<campaign::Error>()
        .is_some_and(campaign::Error::is_usage)
    {
        2
    } else {
        1
    }
}

/// Whether the command printed its result document before it failed with `e` (a failed
/// verdict, a stop).
pub fn printed_document(e: &anyhow::Error) -> bool {
    e.downcast_ref::<VerdictFailed>().is_some() || e.downcast_ref::<Interrupted>().is_some()
}

/// Prints `doc` as JSON, or as `text` lays it out.
pub fn print(doc: &RunResult, json: bool, text: impl FnOnce(&RunResult) -> String) {
    print_as(doc, if json { Layout::Json } else { Layout::Text }, text);
}

/// Prints `doc` in `layout` (`text` for [`Layout::Text`]); a stream of events ends with
/// the `end` event.
pub fn print_as(doc: &RunResult, layout: Layout, text: impl FnOnce(&RunResult) -> String) {
    match layout {
        Layout::Text => out!("{}", text(doc)),
        Layout::Json => out!("{}", report::json::to_string(doc)),
        Layout::Iperf3Json => {
            let v = report::iperf3::document(doc);
            outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        Layout::Iperf3Stream => {
            outln!("{}", report::iperf3::event("end", report::iperf3::end(doc)))
        }
    }
}

/// A failure as the layout's reader expects it on standard output: `{"error": …}` for
/// wirebench's document, iperf3's whole error document for its layout (`start`,
/// `intervals`, an empty `end`, `error`), an `error` event for a stream; nothing for text.
pub fn print_error(layout: Layout, message: &str) {
    match layout {
        Layout::Text => {}
        Layout::Json => outln!("{}", serde_json::json!({ "error": message })),
        Layout::Iperf3Json => {
            let doc = report::iperf3::error_document(&engine::env::environment(), message);
            outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default())
        }
        Layout::Iperf3Stream => outln!("{}", report::iperf3::event("error", message.into())),
    }
}

/// Exit code 3 (after the document was printed) when one of its verdicts failed.
pub fn verdicts(doc: &RunResult, what: &str) -> anyhow::Result<()> {
    if doc.verdicts.iter().any(|v| !v.passed) {
        return Err(VerdictFailed(what.to_owned()).into());
    }
    Ok(())
}

/// How a command writes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Tables and lines.
    Text,
    /// wirebench's JSON document (`-J`).
    Json,
    /// iperf3's JSON document (`-J --json-format iperf3`).
    Iperf3Json,
    /// iperf3's JSON events, one per line as they happen (`--json-stream`).
    Iperf3Stream,
}

impl Layout {
    /// The output is JSON: nothing else goes to standard output.
    pub fn json(self) -> bool {
        self != Layout::Text
    }
}

/// Interval rows to standard output and progress to standard error, unless `quiet` (the
/// output is one JSON document); with `events`, interval events as iperf3's
/// `--json-stream` writes them.
pub struct Printer {
    /// Print nothing while it runs.
    pub quiet: bool,
    /// Write each interval as an iperf3 event.
    pub events: Option<EventStream>,
    /// Rates and amounts in one unit (`-f`).
    pub unit: Option<model::units::Fixed>,
    /// How interval rows are labelled (one stream: its id, no `SUM`).
    pub labels: report::text::RowLabels,
    /// The bar that counted progress (`[k/n] ...` lines) shows on a terminal.
    pub bar: Option<indicatif::ProgressBar>,
}

/// A progress line that counts (`[k/n] rest`): k, n and the rest.
fn counted(line: &str) -> Option<(u64, u64, &str)> {
    let (head, rest) = line.strip_prefix('[')?.split_once("] ")?;
    let (k, n) = head.split_once('/')?;
    Some((k.parse().ok()?, n.parse().ok()?, rest))
}

impl Drop for Printer {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// Interval rows gathered into iperf3's interval events.
pub struct EventStream {
    /// The test's parameters (a result with no figures yet).
    pub test: RunResult,
    /// Rows of the interval under way.
    pub rows: Vec<IntervalRow>,
}

impl Watch for Printer {
    fn interval(&mut self, row: &IntervalRow) {
        if let Some(ev) = self.events.as_mut() {
            ev.rows.push(row.clone());
            // An interval's rows end with the sum of its last direction.
            if row.stream.is_none() && row.direction == report::iperf3::last_direction(&ev.test) {
                let rows: Vec<&IntervalRow> = ev.rows.iter().collect();
                let data = report::iperf3::interval_group(&ev.test, &rows);
                outln!("{}", report::iperf3::event("interval", data));
                ev.rows.clear();
            }
        } else if !self.quiet {
            outln!(
                "{}",
                report::text::interval_line_in(row, self.unit, self.labels)
            );
        }
    }

    /// Progress: nothing with -J; on a terminal, counted lines (`[k/n] ...`) move a bar
    /// and the others print above it; in a log (not a terminal), every line as it is.
    fn progress(&mut self, line: &str) {
        use std::io::IsTerminal as _;
        if self.quiet {
            return;
        }
        if let Some((k, n, rest)) = counted(line).filter(|_| std::io::stderr().is_terminal()) {
            let bar = self.bar.get_or_insert_with(|| {
                let target = indicatif::ProgressDrawTarget::stderr();
                let b = indicatif::ProgressBar::with_draw_target(Some(n), target);
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len}, {elapsed} elapsed: {msg}",
                ) {
                    b.set_style(style);
                }
                b
            });
            bar.set_length(n);
            bar.set_position(k);
            bar.set_message(rest.to_owned());
            return;
        }
        match &self.bar {
            Some(b) => b.suspend(|| errln!("{line}")),
            None => errln!("{line}"),
        }
    }
}

/// A stop token nothing raises: the command ends when its test does (Ctrl-C ends the
/// process).
pub fn never() -> Stop {
    Stop::new()
}

/// A stop token that SIGINT and SIGTERM raise, so a run or a managed process ends its loop and
/// writes what it has instead of dying mid-write.
pub fn stop_on_signals() -> anyhow::Result<Stop> {
    let stop = never();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.shared_flag())?;
    }
    Ok(stop)
}

/// [`stop_on_signals`] for a command with nothing to put back: a second signal, while the
/// first one's stop is under way (a server that does not answer), ends the process at once
/// (exit code 130, as a shell reports an interrupt).
pub fn stop_on_signals_twice_exits() -> anyhow::Result<Stop> {
    let stop = never();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, stop.shared_flag())?;
        signal_hook::flag::register(sig, stop.shared_flag())?;
    }
    Ok(stop)
}
