#!/usr/bin/env bash
# record-overhead.sh — what `kbxscope record` costs a real gpg: gpg
# --check-sigs plain, recorded (histograms + metrics), the same with the
# kernel's clock instead of the TSC (KBXSCOPE_RECORD_CLOCK=monotonic, see
# crates/kbx-record/PROTOCOL.md), recorded with an event-level trace, with
# --stacks (every call, and one call in 100), and under strace, side by side
# in one run.
#
# Usage: benches/record-overhead.sh [ROUNDS]     (default 11)
#
# Environment:
#   PRESET=small   the `kbxscope gen` preset whose OpenPGP keys are exported
#                  and imported into an empty GNUPGHOME, so that the keybox
#                  measured is one gpg wrote (small: 162 keys, ~5 MiB)
#   GPG=gpg        the gpg to run
#   STRACE_ROUNDS=1  rounds that include the strace variant
#   VARIANTS="plain record …"  which variants to run (default: all seven)
#
# Each round runs the four variants in turn (interleaved), each on a fresh
# copy of the GnuPG-made keybox; the wall time of each run is taken around
# the whole command (for `record`: kbxscope's start, the preload, gpg, the
# decoding and the summary or exports). Prints every run, then the median
# per variant and its ratio to plain.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
K=$PWD/target/release/kbxscope
ROUNDS=${1:-11}
STRACE_ROUNDS=${STRACE_ROUNDS:-1}
PRESET=${PRESET:-small}
GPG=${GPG:-gpg}
work=$(mktemp -d)
trap 'for h in "$work"/h*; do gpgconf --homedir "$h" --kill all 2>/dev/null || true; done; rm -rf "$work"' EXIT

"$K" gen --preset "$PRESET" "$work/gen.kbx" >/dev/null 2>&1
mkdir -m 700 "$work/h0" "$work/h1"
cp "$work/gen.kbx" "$work/h0/pubring.kbx"
"$GPG" --homedir "$work/h0" --batch --export >"$work/keys.pgp" 2>/dev/null
"$GPG" --homedir "$work/h1" --batch --import "$work/keys.pgp" 2>/dev/null || true
"$GPG" --homedir "$work/h1" --batch -k >/dev/null 2>&1 # the trustdb, outside the runs
cp "$work/h1/pubring.kbx" "$work/made.kbx"
echo "GnuPG-made keybox: $(stat -c %s "$work/made.kbx") bytes, $("$K" stats "$work/made.kbx" | head -1)"

gpg_cmd=("$GPG" --homedir "$work/h1" --batch --check-sigs)
declare -A times
read -r -a variants <<<"${VARIANTS:-plain record record-monotonic record-trace record-stacks record-stacks-100 strace}"
run() {
  case $1 in
    plain) "${gpg_cmd[@]}" ;;
    record) "$K" --metrics-out "$work/m.prom" record -- "${gpg_cmd[@]}" ;;
    record-monotonic) KBXSCOPE_RECORD_CLOCK=monotonic "$K" --metrics-out "$work/m.prom" record -- "${gpg_cmd[@]}" ;;
    record-trace) "$K" --trace-out "$work/t.json" --trace-level event record -- "${gpg_cmd[@]}" ;;
    record-stacks) "$K" record --stacks "$work/s.json" -- "${gpg_cmd[@]}" ;;
    record-stacks-100) "$K" record --stacks "$work/s.json" --stack-every 100 -- "${gpg_cmd[@]}" ;;
    strace) strace -f -qq -o /dev/null -e trace=openat,read,lseek,close,access "${gpg_cmd[@]}" ;;
  esac
}
for r in $(seq 1 "$ROUNDS"); do
  for v in "${variants[@]}"; do
    # strace costs about 14 plain runs a round and is far outside the noise:
    # its first STRACE_ROUNDS rounds are enough.
    [ "$v" = strace ] && [ "$r" -gt "$STRACE_ROUNDS" ] && continue
    cp "$work/made.kbx" "$work/h1/pubring.kbx"
    t0=$(date +%s%N)
    run "$v" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000000 ))
    times[$v]="${times[$v]:-} $ms"
    echo "round $r $v ${ms} ms"
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
plain=$(echo "${times[plain]}" | median)
for v in "${variants[@]}"; do
  m=$(echo "${times[$v]}" | median)
  printf '%-13s median %6s ms  %s× plain\n' "$v" "$m" "$(awk -v a="$m" -v b="$plain" 'BEGIN {printf "%.3f", a / b}')"
done
