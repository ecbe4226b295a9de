//! The help of every command and subcommand, short (`-h`) and long (`--help`), against
//! `help.txt`: moving a definition between modules or crates must not change a byte a
//! user reads. After a deliberate change of the help, write the file again with
//! `WIREBENCH_WRITE_HELP=1 cargo test -p wirebench-cli --test help` and review its diff.

use clap::CommandFactory;
use command_line::args::Cli;

fn collect(cmd: &mut clap::Command, path: &str, out: &mut String) {
    let path = if path.is_empty() {
        cmd.get_name().to_string()
    } else {
        format!("{path} {}", cmd.get_name())
    };
    out.push_str(&format!("===== {path} -h\n{}\n", cmd.render_help()));
    out.push_str(&format!(
        "===== {path} --help\n{}\n",
        cmd.render_long_help()
    ));
    for sub in cmd.get_subcommands_mut() {
        collect(sub, &path, out);
    }
}

#[test]
fn the_help_of_every_command_is_as_written_in_help_txt() {
    // As wide as the binary prints it at most, whatever the terminal running the test.
    let mut cmd = Cli::command().term_width(100);
    cmd.build();
    let mut got = String::new();
    collect(&mut cmd, "", &mut got);
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/help.txt");
    if std::env::var_os("WIREBENCH_WRITE_HELP").is_some() {
        std::fs::write(&file, &got).unwrap();
    }
    let want = std::fs::read_to_string(&file).unwrap_or_default();
    if got != want {
        let first = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "the help differs from tests/help.txt at line {}:\n  got:  {:?}\n  want: {:?}",
            first + 1,
            got.lines().nth(first),
            want.lines().nth(first)
        );
    }
}
