#!/usr/bin/env bash
# Runs every fuzz target for a short while from its checked-in seeds (CI's smoke: a
# panic, an input that takes over 10 s or memory over 1 GiB fails it; without a sanitizer,
# leaks are not seen). SECONDS_EACH (default 5) per target, two targets at a time (one per
# core of the project's machine). Needs cargo-fuzz; stable Rust with -s none (no sanitizer).
set -euo pipefail
cd "$(dirname "$0")"
export each="${SECONDS_EACH:-5}"
targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^wirebench-fuzz$')
cargo fuzz build -s none --dev

# One target from a scratch copy of its seeds (discoveries are not added to the
# repository); prints its run count, and on failure the end of its output.
run_one() {
  local t=$1 work log status=0 runs
  work=$(mktemp -d)
  log=$(mktemp)
  cp -r "corpus/$t/." "$work/" 2>/dev/null || true
  cargo fuzz run -s none --dev "$t" "$work" -- -max_total_time="$each" -timeout=10 -rss_limit_mb=1024 \
    -print_final_stats=1 >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "fuzz $t: ${runs:-?} runs in ${each} s (exit $status)"
  if [ "$status" != 0 ]; then
    tail -40 "$log" >&2
  fi
  rm -rf "$work" "$log"
  return "$status"
}
export -f run_one
# xargs exits non-zero when any target failed.
printf '%s\n' $targets | xargs -P 2 -I{} bash -c 'run_one "$1"' _ {}
