#!/usr/bin/env bash
# import.sh — gpg's import of a real keyring into an empty keybox: the real
# gpg beside kbxscope's replay (`kbxscope import`) at several buffer sizes,
# side by side in one run.
#
# Usage: benches/import.sh [KEYRING] [ROUNDS]
#        (default /usr/share/keyrings/archlinux.gpg, 3 rounds)
#
# Environment:
#   GPG=gpg          the gpg to run (its version is the replay's: 2.2)
#   SIZES="8 64 512" the replay's buffer sizes in KiB
#
# Each round runs gpg, then the replay at each size, in turn (interleaved),
# each into a fresh empty home or private copy; the wall time is taken
# around the whole command. The replay's calls per run come from its
# `--io-summary=json`. Prints every run, then the median wall per variant.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
K=$PWD/target/release/kbxscope
KEYRING=${1:-/usr/share/keyrings/archlinux.gpg}
ROUNDS=${2:-3}
GPG=${GPG:-gpg}
SIZES=${SIZES:-8 64 512}
work=$(mktemp -d)
trap 'for h in "$work"/h*; do gpgconf --homedir "$h" --kill all 2>/dev/null || true; done; rm -rf "$work"' EXIT

now() { date +%s.%N; }
declare -A walls
for round in $(seq 1 "$ROUNDS"); do
  h="$work/h$round"
  mkdir -m 700 "$h"
  t0=$(now)
  "$GPG" --homedir "$h" --batch --import "$KEYRING" 2>"$work/gpg.err"
  t1=$(now)
  gpgconf --homedir "$h" --kill all 2>/dev/null || true
  w=$(echo "$t1 - $t0" | bc)
  walls[gpg]+="$w "
  echo "round $round gpg: $(grep 'Total number processed' "$work/gpg.err"), wall ${w}s"
  for kib in $SIZES; do
    t0=$(now)
    "$K" --gnupg-version 2.2 --kbx-buffer-size "$kib" --io-summary=json import "$KEYRING" 2>"$work/k.err"
    t1=$(now)
    w=$(echo "$t1 - $t0" | bc)
    walls[$kib]+="$w "
    calls=$(grep '^{"buffer_size"' "$work/k.err" | jq -r '"events \(.events.total), reads \(.events.read), writes \(.events.write // 0), bytes read \(.bytes_read)"')
    echo "round $round replay ${kib} KiB: $calls, wall ${w}s"
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median wall: gpg $(echo "${walls[gpg]}" | median)s"
for kib in $SIZES; do
  echo "median wall: replay ${kib} KiB $(echo "${walls[$kib]}" | median)s"
done
