#!/usr/bin/env bash
# Runs every fuzz target for a short while from its checked-in seeds (CI's smoke: a
# panic, an input that takes over 10 s or memory over 1 GiB fails it; without a sanitizer,
# leaks are not seen). SECONDS_EACH (default 5) per target. Needs cargo-fuzz; stable Rust
# with -s none (no sanitizer).
set -euo pipefail
cd "$(dirname "$0")"
each="${SECONDS_EACH:-5}"
targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^wirebench-fuzz$')
cargo fuzz build -s none --dev
work=""
log=""
trap 'rm -rf "$work" "$log"' EXIT
for t in $targets; do
  # A scratch copy of the seeds: discoveries are not added to the repository.
  work=$(mktemp -d)
  log=$(mktemp)
  cp -r "corpus/$t/." "$work/" 2>/dev/null || true
  status=0
  cargo fuzz run -s none --dev "$t" "$work" -- -max_total_time="$each" -timeout=10 -rss_limit_mb=1024 \
    -print_final_stats=1 >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "fuzz $t: ${runs:-?} runs in ${each} s (exit $status)"
  if [ "$status" != 0 ]; then
    tail -40 "$log" >&2
    rm -rf "$work" "$log"
    exit 1
  fi
  rm -rf "$work" "$log"
done
