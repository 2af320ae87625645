#!/usr/bin/env bash
# What metrics cost, side by side in one run (issue #14's overhead goal):
#
#   benches/metrics-overhead.sh [ROUNDS] [-- KBXSCOPE ARGS…]
#
# Runs `--kbx-buffer-size 0 list --with-validation` on the built-in keybox
# (made on first use) ROUNDS times (default 7) with metrics off and with
# metrics on (`--metrics-out`), alternating which goes first, each run on a
# fresh copy of the keybox. Prints the median wall, user and sys time and
# the largest resident set of each variant, and on/off.
set -euo pipefail
rounds=${1:-7}
shift || true
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--kbx-buffer-size 0 list --with-validation)
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/target/release/kbxscope"
(cd "$here" && cargo build --release --quiet)
cache=${KBXSCOPE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kbxscope}
"$bin" stats > /dev/null
src=$(ls "$cache"/seed-*.kbx | head -n1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {
    cp "$src" "$work/k.kbx"
    [ -f "$src.trustlist.txt" ] && cp "$src.trustlist.txt" "$work/k.kbx.trustlist.txt"
    local extra=()
    [ "$1" = on ] && extra=(--metrics-out "$work/m.prom")
    /usr/bin/time -a -o "$work/times" -f "$1 %e %U %S %M" \
        "$bin" "${extra[@]}" "${args[@]}" "$work/k.kbx" > /dev/null 2>> "$work/stderr"
}
for r in $(seq "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then run off; run on; else run on; run off; fi
done
grep -q '^kbx_file_events_total' "$work/m.prom" || { echo "no metrics written"; exit 1; }
median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
for v in off on; do
    wall=$(awk -v v=$v '$1==v {print $2}' "$work/times" | median)
    user=$(awk -v v=$v '$1==v {print $3}' "$work/times" | median)
    sys=$(awk -v v=$v '$1==v {print $4}' "$work/times" | median)
    rss=$(awk -v v=$v '$1==v && $5>m {m=$5} END {print m}' "$work/times")
    printf '%-4s wall %7.2f s  user %6.2f s  sys %6.2f s  max RSS %7d KiB  (median of %d)\n' "$v" "$wall" "$user" "$sys" "$rss" "$rounds"
    eval "wall_$v=$wall"
done
awk -v a="$wall_on" -v b="$wall_off" 'BEGIN {printf "metrics on / off, wall: %.3f (%+.1f%%)\n", a/b, (a/b-1)*100}'
cat "$work/times"
