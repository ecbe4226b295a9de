//! The README and the user guide (docs/guide): every shell example is tagged with what it
//! needs, every `wirebench` command line in them parses with the real command line, and
//! every example tagged as running on one machine runs as written.
//!
//! Tags (a fenced block's info string): `sh` runs on one machine as written (this test
//! runs it, as root, from the repository's root, `wirebench` on PATH); `sh,hosts` needs
//! other hosts; `sh,hardware` needs NICs, switches or a device; `sh,setup` installs or
//! configures this machine, or runs for minutes. None of these but `sh` is run here.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::bin;

/// One fenced shell block: where, its tag, its text.
pub(crate) struct Block {
    file: String,
    line: usize,
    tag: String,
    pub(crate) text: String,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every chapter of the guide.
fn documents() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let dir = root().join("docs/guide/src");
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    chapters.sort();
    out.extend(chapters);
    out
}

/// The shell blocks of `path` (`sh` and `sh,TAG`), and the untagged or otherwise tagged
/// blocks that run wirebench (which must be tagged).
pub(crate) fn blocks(path: &Path) -> (Vec<Block>, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
    let file = path
        .strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string();
    let (mut out, mut untagged) = (Vec::new(), Vec::new());
    let mut open: Option<(usize, String, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(info) = t.strip_prefix("```") {
            match open.take() {
                Some((at, info, body)) => {
                    if let Some(tag) = info.strip_prefix("sh") {
                        out.push(Block {
                            file: file.clone(),
                            line: at,
                            tag: tag.trim_start_matches(',').to_owned(),
                            text: body,
                        });
                    } else if !matches!(info.as_str(), "toml" | "json" | "text" | "yaml")
                        && body.lines().any(|l| {
                            let l = l.trim_start().trim_start_matches("sudo ");
                            l.starts_with("wirebench ")
                        })
                    {
                        untagged.push(format!("{file}:{at}: ```{info}"));
                    }
                }
                None => open = Some((i + 1, info.trim().to_owned(), String::new())),
            }
        } else if let Some((_, _, body)) = open.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    (out, untagged)
}

/// The shell commands of a block: continuation lines joined, comments dropped, split at
/// `&&`, `;`, `|` and a trailing `&`, `sudo ` taken off.
pub(crate) fn commands(text: &str) -> Vec<String> {
    let mut joined = Vec::new();
    let mut open = String::new();
    for line in text.lines() {
        let code = match line.find(" #") {
            Some(i) => &line[..i],
            None if line.trim_start().starts_with('#') => "",
            None => line,
        };
        match code.trim_end().strip_suffix('\\') {
            Some(head) => {
                open.push_str(head);
                open.push(' ');
            }
            None => {
                open.push_str(code);
                joined.push(std::mem::take(&mut open));
            }
        }
    }
    joined
        .iter()
        .flat_map(|l| {
            l.split("&&")
                .flat_map(|p| p.split(';'))
                .flat_map(|p| p.split(" | "))
                .map(|p| p.trim().trim_end_matches('&').trim().to_owned())
                .collect::<Vec<_>>()
        })
        .map(|c| c.trim_start_matches("sudo ").to_owned())
        .filter(|c| !c.is_empty())
        .collect()
}

/// Words of a command, quoted parts ('…' and "…") kept whole; `None` when it holds shell
/// expansions a parse cannot follow (`$(…)`, `<(…)`).
fn words(cmd: &str) -> Option<Vec<String>> {
    if cmd.contains("$(") || cmd.contains("<(") || cmd.contains('`') {
        return None;
    }
    let cmd = cmd.split(" > ").next().unwrap_or(cmd);
    let mut out = Vec::new();
    let (mut word, mut quote, mut any) = (String::new(), None::<char>, false);
    for c in cmd.chars() {
        match (c, quote) {
            ('\'' | '"', None) => {
                quote = Some(c);
                any = true;
            }
            (c, Some(q)) if c == q => quote = None,
            (c, None) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (c, _) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(word);
    }
    Some(out)
}

/// Every shell block is tagged, and every `wirebench` command line in the README and the
/// guide parses with the real command line (a renamed or removed flag fails here).
fn every_example_is_tagged_and_every_command_line_parses() {
    use clap::Parser as _;
    let (mut all, mut untagged) = (Vec::new(), Vec::new());
    for d in documents() {
        let (b, u) = blocks(&d);
        all.extend(b);
        untagged.extend(u);
    }
    assert!(
        untagged.is_empty(),
        "blocks running wirebench need a tag: {untagged:#?}"
    );
    let chapters = documents().len() - 1;
    assert!(chapters >= 12, "{chapters} chapters");
    let mut parsed = 0;
    let mut bad = Vec::new();
    for b in &all {
        assert!(
            matches!(b.tag.as_str(), "" | "hosts" | "hardware" | "setup"),
            "{}:{}: unknown tag sh,{}",
            b.file,
            b.line,
            b.tag
        );
        for c in commands(&b.text) {
            if !c.starts_with("wirebench ") {
                continue;
            }
            let Some(w) = words(&c) else { continue };
            let argv = command_line::args::iperf3_aliases(w.iter().map(Into::into).collect());
            match command_line::args::Cli::try_parse_from(&argv) {
                Ok(_) => parsed += 1,
                Err(e) => bad.push(format!("{}:{}: `{c}`: {}", b.file, b.line, e.kind())),
            }
        }
    }
    assert!(bad.is_empty(), "command lines that do not parse: {bad:#?}");
    assert!(parsed >= 60, "{parsed} command lines parsed");
}

/// Every example tagged `sh` runs as written, as root, from the repository's root, one at
/// a time, each within 60 s: exit 0, or 3 where a verdict failed on a machine too busy for
/// its expectation (the example says when it can). Its labs are taken down and its
/// processes ended afterwards whatever happened.
fn every_example_that_needs_no_hardware_runs_as_written() {
    let dir = std::env::temp_dir().join(format!("wb-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(bin(), dir.join("wirebench")).unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for d in documents() {
        for b in blocks(&d).0.into_iter().filter(|b| b.tag.is_empty()) {
            // Setting up the machine is not an example: those are tagged setup.
            let script = format!("set -eo pipefail\nsudo() {{ \"$@\"; }}\n{}", b.text);
            let labs: Vec<String> = commands(&b.text)
                .iter()
                .filter_map(|c| words(c))
                .flat_map(|w| {
                    w.windows(2)
                        .filter(|p| p[0] == "--name" || (p[0] == "down" && !p[1].starts_with('-')))
                        .map(|p| p[1].clone())
                        .collect::<Vec<_>>()
                })
                .collect();
            let t0 = Instant::now();
            let mut child = Command::new("bash")
                .args(["-c", &script])
                .current_dir(root())
                .env("PATH", &path)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .unwrap();
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break Some(s);
                }
                if t0.elapsed() > Duration::from_secs(60) {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(50));
            };
            // Whatever it left running, and its labs, go.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let out = child.wait_with_output().unwrap();
            for lab in &labs {
                let _ = Command::new(bin()).args(["lab", "down", lab]).output();
            }
            let said = format!(
                "{}:{} ({:.1} s)\n{}\nstdout:\n{}\nstderr:\n{}",
                b.file,
                b.line,
                t0.elapsed().as_secs_f64(),
                b.text,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let code = status.and_then(|s| s.code());
            assert!(matches!(code, Some(0 | 3)), "exit {code:?}: {said}");
            if code == Some(3) {
                eprintln!("a verdict failed (exit 3), as the example allows: {said}");
            }
            ran += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(ran >= 8, "{ran} examples ran");
}

pub fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need;
    vec![
        crate::harness::case!(every_example_is_tagged_and_every_command_line_parses),
        crate::harness::case!(
            every_example_that_needs_no_hardware_runs_as_written,
            Need::Root
        ),
    ]
}
