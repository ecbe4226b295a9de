#!/usr/bin/env bash
# CI's package check (root, Debian): packages the binary the tests just ran (dev profile,
# optimised; a release package is the same files with a release binary), installs it,
# uses what it installed, removes and purges it, and fails if anything is left.
# Refuses to touch a machine where a wirebench package is installed already.
set -euo pipefail
cd "$(dirname "$0")/../.."
if dpkg -s wirebench >/dev/null 2>&1; then
  echo "check.sh: a wirebench package is installed here; not replacing it" >&2
  exit 2
fi
export CARGO_TARGET_DIR="$PWD/target/deb-check"
# The binary the tests just ran (built once more only where there is none).
if [ ! -x target/debug/wirebench ]; then
  cargo build --locked --bin wirebench --target-dir target
fi
mkdir -p "$CARGO_TARGET_DIR/release"
cp target/debug/wirebench "$CARGO_TARGET_DIR/release/wirebench"
rm -f "$CARGO_TARGET_DIR"/debian/wirebench_*.deb
deploy/debian/package.sh --no-build
debs=("$CARGO_TARGET_DIR"/debian/wirebench_*.deb)
[ "${#debs[@]}" = 1 ] || { echo "check.sh: expected one .deb, found: ${debs[*]}" >&2; exit 1; }
deb="${debs[0]}"
dpkg -i "$deb"
# Whatever fails from here, the package does not stay installed.
trap 'dpkg --purge wirebench >/dev/null 2>&1 || true' EXIT
files=$(dpkg -L wirebench | while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done)
echo "== installed"
/usr/bin/wirebench --version
# Stripped: no debug sections in the installed binary; its symbols are in the .ddeb.
if readelf -SW /usr/bin/wirebench | grep -qE '\.debug_(info|line|str|abbrev|ranges)'; then
  echo "check.sh: the packaged binary has debug sections" >&2
  exit 1
fi
ls "$CARGO_TARGET_DIR"/debian/wirebench-dbgsym_*.ddeb >/dev/null
zcat /usr/share/man/man1/wirebench-server.1.gz | grep -q 'auth\\-key\\-file'
if command -v man >/dev/null 2>&1; then
  page=$(MANPAGER=cat man -l /usr/share/man/man1/wirebench-server.1.gz)
  grep -q -- '--auth-key-file' <<<"$page"
fi
said=$(bash -c 'source /usr/share/bash-completion/completions/wirebench && complete -p wirebench')
grep -q wirebench <<<"$said"
unit=/usr/lib/systemd/system/wirebench-server.service
grep -q '^DynamicUser=yes' "$unit"
grep -q '^CapabilityBoundingSet=$' "$unit"
if command -v systemd-analyze >/dev/null 2>&1; then
  systemd-analyze verify "$unit"
else
  echo "no systemd-analyze here: the unit is not verified"
fi
# Not enabled by installing.
if [ -e /etc/systemd/system/multi-user.target.wants/wirebench-server.service ]; then
  echo "check.sh: installing enabled the service" >&2
  exit 1
fi
echo "== removed"
dpkg --purge wirebench
trap - EXIT
left=""
for f in $files; do
  [ -e "$f" ] && left="$left $f"
done
if [ -n "$left" ]; then
  echo "check.sh: left behind after purge:$left" >&2
  exit 1
fi
echo "package check passed: $(basename "$deb")"
