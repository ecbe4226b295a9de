#!/usr/bin/env bash
# Runs the lab tier (`cargo nextest run --profile lab`, the tests that need root) N times in
# a row beside two busy loops, one per core of the project's 2-core machine, with no retry,
# and prints each run's outcome and, at the end, every test that failed with how often.
# A test that fails here measures against the wrong thing (a wall clock, a tolerance that
# the machine's noise crosses) rather than the lab's own counters.
#
#   sudo bench/stress-lab.sh [RUNS] [extra nextest arguments...]   (RUNS: 20)
#
# STRESS_PROFILE=peers runs the peer-program tier instead (iperf3, tshark, Prometheus,
# Chromium as the peers), and STRESS_PROFILE=default every test.
#
# Bounded: each run is bounded by nextest's slow-timeout; the busy loops end with the script.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
shift || true
profile=${STRESS_PROFILE:-lab}
if [ "$profile" != peers ] && [ "$(id -u)" != 0 ]; then
  echo "the lab tier needs root" >&2
  exit 2
fi
cargo nextest run --workspace --profile "$profile" --no-run >/dev/null

busy=()
for _ in 1 2; do
  ( while :; do :; done ) &
  busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null || true' EXIT

failures=$(mktemp)
# The output of every run that failed is kept here.
logs=target/stress-lab
mkdir -p "$logs"
passed_runs=0
for i in $(seq 1 "$runs"); do
  log=$(mktemp)
  start=$SECONDS
  if cargo nextest run --workspace --profile "$profile" --retries 0 --no-fail-fast "$@" >"$log" 2>&1; then
    passed_runs=$((passed_runs + 1))
  else
    cp "$log" "$logs/run-$i.log"
  fi
  summary=$(grep -E '^ +Summary' "$log" | tail -1 | sed -E 's/^ +//')
  printf 'run %2d/%d (%4d s): %s\n' "$i" "$runs" $((SECONDS - start)) "${summary:-no summary (build or harness error)}"
  grep -E '^ +FAIL \[' "$log" | sed -E 's/.* (root|peers)::/\1::/' | sort -u >>"$failures" || true
  rm -f "$log"
done

echo
echo "$passed_runs of $runs runs passed, beside two busy loops"
if [ -s "$failures" ]; then
  echo "failed tests (runs; the failing runs' output is in $logs/):"
  sort "$failures" | uniq -c | sort -rn
fi
rm -f "$failures"
[ "$passed_runs" = "$runs" ]
