#!/usr/bin/env bash
# Where each second goes: every workload and lookup on one keybox against
# the floor this machine's hardware sets (BENCHMARKS, "Where each second
# goes").
#
# 1. `cargo bench --bench floor -- --json` on a fresh copy of the keybox:
#    the unit costs (read(2) per call and per byte, lseek, open+fstat+close,
#    one verification of each algorithm with the fastest well-kept crate,
#    on one core and on all).
# 2. Each workload (validation; check-sigs) with each lookup, on a fresh
#    copy, with `--io-summary=json`: its system calls, bytes and the
#    signatures it verified or took from GnuPG's cache. gnupg and scan at
#    8 KiB (GnuPG 2.2's reads), index at 64 KiB (the default).
# 3. The floor of what each run did: its system calls at their measured
#    cost and its bytes at the copy rate (one thread must make them), and
#    its verifications at the measured cost on all cores:
#        floor = max(io, io / cores + verifications on all cores)
#    and the distance: measured wall time / floor.
#
# Usage: benches/cost-model.sh KEYBOX [RUNS]
#   KEYBOX's trustlist is KEYBOX.trustlist.txt (as `gen` and
#   benches/gnupg-made-keybox.sh write it). RUNS (default 3): the median
#   wall time of that many runs; SIGS_RUNS (default RUNS) for check-sigs
#   with `--lookup gnupg` (gpg's 60 M reads: 2 minutes a run on 42 MiB).
#   SCAN_SIGS=1 also runs check-sigs with `--lookup scan` (one rescan per
#   signer: tens of minutes on 42 MiB). LOOKUPS (default "gnupg scan
#   index"): only these lookups.
set -euo pipefail
cd "$(dirname "$0")/.."
keybox=${1:?usage: benches/cost-model.sh KEYBOX [RUNS]}
runs=${2:-3}
cargo build --release --quiet
K=$PWD/target/release/kbxscope
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$keybox" "$work/floor.kbx"
KBXSCOPE_FLOOR_FILE=$work/floor.kbx cargo bench --quiet --bench floor -- --json >"$work/units.json"

one() { # workload lookup size -> appends "workload lookup size wall user sys summary-json" to rows
  local workload=$1 lookup=$2 size=$3 flag runs=$runs
  [ "$workload $lookup" = "check-sigs gnupg" ] && runs=${SIGS_RUNS:-$runs}
  case $workload in
    validation) flag=(--with-validation --trustlist "$keybox.trustlist.txt") ;;
    check-sigs) flag=(--check-sigs) ;;
  esac
  : >"$work/walls"
  for _ in $(seq "$runs"); do
    cp "$keybox" "$work/copy.kbx"
    /usr/bin/time -f "%e %U %S" -o "$work/t" "$K" --kbx-buffer-size "$size" --io-summary=json \
      list "${flag[@]}" --lookup "$lookup" "$work/copy.kbx" >/dev/null 2>"$work/summary" || true
    echo "$(cat "$work/t") $(tail -1 "$work/summary")" >>"$work/walls"
  done
  sort -n "$work/walls" | sed -n "$(((runs + 1) / 2))p" | sed "s/^/$workload $lookup $size /" >>"$work/rows"
  echo "  $workload --lookup $lookup: $(sort -n "$work/walls" | sed -n "$(((runs + 1) / 2))p" | cut -d' ' -f1-3)" >&2
}

: >"$work/rows"
echo "running each workload and lookup ($runs runs each)…" >&2
for lookup in ${LOOKUPS:-gnupg scan index}; do
  size=0
  [ "$lookup" = index ] && size=64
  one validation "$lookup" "$size"
  if [ "$lookup" != scan ] || [ "${SCAN_SIGS:-0}" = 1 ]; then
    one check-sigs "$lookup" "$size"
  fi
done

python3 - "$work/units.json" "$work/rows" "$keybox" <<'PY'
import json, sys
units = json.load(open(sys.argv[1]))
cores = units["cores"]
verify = units["verify"]
nearest = {"rsa-1024": "rsa-2048", "rsa-larger": "rsa-4096", "ecdsa-other": "p256", "ed448": "ed25519", "other": "rsa-2048"}
print(f"Keybox: {sys.argv[3]}; {cores} cores; copy {1 / units['copy_ns_per_byte']:.2f} GB/s, "
      f"read(2) {units['read_call_ns']:.0f} ns a call, of 8 KiB {units['read_8k_ns']:.0f} ns, "
      f"lseek {units['lseek_ns']:.0f} ns, open+fstat+close {units['open_fstat_close_ns']:.0f} ns")
print("verification, µs on one core / each on all cores: " + ", ".join(
    f"{k} {v['us_one_core']:.1f} / {v['us_all_cores']:.1f} ({v['crate']})" for k, v in verify.items()))
print()
print("| workload | lookup | buffer | file events | bytes read | verified | from gpg's cache | I/O floor (s) | verification floor (s) | floor (s) | wall (s) | user (s) | wall / floor |")
print("|---|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|")
for line in open(sys.argv[2]):
    workload, lookup, size, wall, user, sys_, summary = line.split(" ", 6)
    s = json.loads(summary)
    ev = s["events"]
    io = (ev["read"] * units["read_call_ns"] + s["bytes_read"] * units["copy_ns_per_byte"]
          + ev["seek"] * units["lseek_ns"] + ev["open"] * units["open_fstat_close_ns"]) / 1e9
    sigs = s.get("signatures", {})
    ver = sigs.get("verified", {})
    crypto = sum(n * verify[nearest.get(k, k)]["us_all_cores"] for k, n in ver.items()) / 1e6
    floor = max(io, io / cores + crypto)
    buffer = "8 KiB" if size == "0" else f"{size} KiB"
    verified = ", ".join(f"{k} {n:,}" for k, n in ver.items()) or "–"
    print(f"| {workload} | {lookup} | {buffer} | {ev['total']:,} | {s['bytes_read']:,} | {verified} | "
          f"{sigs.get('cached', 0):,} | {io:.3f} | {crypto:.3f} | {floor:.3f} | {float(wall):.3f} | {user} | "
          f"{float(wall) / floor:.2f} |")
PY
