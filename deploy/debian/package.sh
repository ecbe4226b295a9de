#!/usr/bin/env bash
# Builds wirebench's .deb (target/debian/wirebench_VERSION-1_ARCH.deb): the release
# binary, its man pages and shell completions generated from the same clap definitions,
# then `cargo deb --no-build`. Needs cargo-deb (`cargo install cargo-deb`) and binutils.
# The packaged binary is stripped (release: 80.8 MB with its line tables, 14.7 MB
# without; the .deb 13.6 MB before, 4.2 MB after); its debug symbols go to a separate
# wirebench-dbgsym_VERSION-1_ARCH.ddeb beside it (/usr/lib/debug/.build-id), for
# backtraces and debuggers.
#
#   deploy/debian/package.sh            build everything, then package
#   deploy/debian/package.sh --no-build package target/release/wirebench as it is
# Other arguments go to cargo deb.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=1
if [ "${1:-}" = "--no-build" ]; then
  build=0
  shift
fi
target=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
if [ "$build" = 1 ]; then
  cargo build --release --locked --bin wirebench
fi
bin="$target/release/wirebench"
[ -x "$bin" ] || { echo "package.sh: no $bin (build it, or drop --no-build)" >&2; exit 2; }
assets=target/assets
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
"$bin" man "$assets/man"
gzip -9n "$assets"/man/*.1
"$bin" completions bash > "$assets/completions/wirebench"
"$bin" completions zsh > "$assets/completions/_wirebench"
"$bin" completions fish > "$assets/completions/wirebench.fish"
cargo deb --no-build --locked --dbgsym "$@"
