#!/usr/bin/env bash
# Builds the BPF objects in bpf/ from their C sources with Debian's clang 14 (the objects
# are checked in, so building wirebench needs no BPF toolchain):
#
#   apt install clang-14 llvm-14 libbpf-dev
#   bpf/build.sh            # rebuild bpf/*.o
#   bpf/build.sh --check    # rebuild into a temporary directory; fail if an object differs
#
# The build is reproducible: no absolute paths (-fdebug-prefix-map), DWARF stripped (the
# BTF the loader needs stays).
set -euo pipefail
cd "$(dirname "$0")"
CLANG=${CLANG:-clang-14}
STRIP=${STRIP:-llvm-strip-14}
check=0
[ "${1:-}" = "--check" ] && check=1
out=.
if [ $check = 1 ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
status=0
for src in *.c; do
  obj=${src%.c}.o
  "$CLANG" -target bpf -O2 -g -Wall -Werror -fdebug-prefix-map="$PWD"=. \
    -I"/usr/include/$(uname -m)-linux-gnu" -c "$src" -o "$out/$obj"
  "$STRIP" -g "$out/$obj"
  if [ $check = 1 ]; then
    if cmp -s "$out/$obj" "$obj"; then
      echo "bpf/$obj matches bpf/$src"
    else
      echo "bpf/$obj does not match bpf/$src: run bpf/build.sh and commit the object" >&2
      status=1
    fi
  else
    echo "built bpf/$obj"
  fi
done
exit $status
