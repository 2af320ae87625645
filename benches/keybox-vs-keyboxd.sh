#!/usr/bin/env bash
# Keybox or keyboxd? The seed's two workloads — gpgsm's validation and
# gpg's --check-sigs — on the same keys in both stores, replayed by
# kbxscope with GnuPG's own access pattern (--lookup gnupg: gpgsm/gpg on
# pubring.kbx at a buffer size, or keyboxd's SQL on pubring.db), and with
# the one-pass index, round robin, RUNS rounds, each variant on a fresh
# copy made just before it.
#
# Usage: benches/keybox-vs-keyboxd.sh [KEYBOX] [RUNS] [BUFFER]
#   KEYBOX  default: the built-in keys (kbxscope gen --preset seed)
#   RUNS    default 3
#   BUFFER  the keybox's --kbx-buffer-size, default 64 (GnuPG's default)
# The database is `kbxscope convert KEYBOX`. Prints one line per run:
#   store workload lookup wall user sys events reads bytes
# (events, reads, bytes: on the store file; for the database SQLite's calls
# on pubring.db plus kbxscope's one look at its first bytes).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
K=$PWD/target/release/kbxscope
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kbx=${1:-$work/seed.kbx}
runs=${2:-3}
buffer=${3:-64}
[ -f "$kbx" ] || $K gen "$kbx" 2>/dev/null
trust="$kbx.trustlist.txt"
$K convert "$kbx" "$work/keys.db" --force 2>/dev/null
at=2026-12-01
printf '%-8s %-11s %-6s %8s %8s %8s %9s %9s %11s\n' store workload lookup wall user sys events reads bytes
run() { # store workload lookup
  local src copy
  if [ "$1" = keybox ]; then src=$kbx; copy=$work/copy.kbx; else src=$work/keys.db; copy=$work/copy.db; fi
  cp "$src" "$copy"
  local args=(list --check-sigs)
  [ "$2" = validation ] && args=(list --with-validation --at "$at" --trustlist "$trust")
  /usr/bin/time -f "%e %U %S" -o "$work/t" \
    "$K" --kbx-buffer-size "$buffer" --io-summary=json "${args[@]}" --lookup "$3" "$copy" >/dev/null 2>"$work/s" || true
  local summary
  summary=$(grep '^{' "$work/s")
  local ev rd by
  ev=$(jq '.events.total' <<<"$summary")
  rd=$(jq '.events.read' <<<"$summary")
  by=$(jq '.bytes_read' <<<"$summary")
  printf '%-8s %-11s %-6s %8s %8s %8s %9s %9s %11s\n' "$1" "$2" "$3" $(cat "$work/t") "$ev" "$rd" "$by"
}
for r in $(seq "$runs"); do
  for w in validation check-sigs; do
    for l in gnupg index; do
      for s in keybox keyboxd; do run "$s" "$w" "$l"; done
    done
  done
done
