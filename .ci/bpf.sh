#!/usr/bin/env bash
# Build record's BPF program (src/record/bpf/attach.bpf.c) with Debian's
# clang into the object committed beside it, which kbxscope embeds: a
# fresh machine builds kbxscope with the Rust toolchain alone.
#   .ci/bpf.sh           rebuild the committed object
#   .ci/bpf.sh --check   fail if the source does not compile to it (CI)
# Needs clang, llvm (llvm-strip) and libbpf-dev (Debian 12: clang 14).
set -euo pipefail
cd "$(dirname "$0")/../src/record/bpf"
out=$(mktemp --suffix=.bpf.o)
trap 'rm -f "$out"' EXIT
# Relative source path and no DWARF (only BTF, which the loader needs):
# the bytes do not depend on where the checkout is.
clang -O2 -g -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -I/usr/include/"$(uname -m)"-linux-gnu \
  -fdebug-compilation-dir=. -c attach.bpf.c -o "$out"
llvm-strip -g "$out"
if [ "${1:-}" = --check ]; then
  if ! cmp -s "$out" attach.bpf.o; then
    echo "src/record/bpf/attach.bpf.o is not what attach.bpf.c compiles to: run .ci/bpf.sh and commit" >&2
    exit 1
  fi
  echo "attach.bpf.o is what attach.bpf.c compiles to ($(clang --version | head -1))"
else
  cp "$out" attach.bpf.o
fi
