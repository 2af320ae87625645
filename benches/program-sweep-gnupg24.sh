#!/usr/bin/env bash
# program-sweep-gnupg24.sh — `kbxscope sweep --program` with GnuPG 2.4.7, which has
# --kbx-buffer-size: the seed's table from the real gpgsm, and gpg's own table (the
# benchmark the seed commit says was never conducted), each beside kbxscope's model.
#
# Usage:
#   benches/program-sweep-gnupg24.sh [JOB...]
#
#   JOB   gpgsm            sweep --program gpgsm                         (validate)
#         gpg-check-sigs   sweep --program gpg --workload check-sigs
#         gpg-with-sigs    sweep --program gpg --workload with-sigs
#         gpg-list         sweep --program gpg --workload list
#         default: "gpgsm gpg-check-sigs"
#
# Environment:
#   CHROOT=/work/chroot-trixie   a Debian 13 (trixie) chroot with gpg and gpgsm 2.4.7:
#       apt-get install debootstrap
#       debootstrap --variant=minbase --include=gnupg,gpgsm,gnupg-utils,strace \
#           trixie /work/chroot-trixie
#       mount -t proc proc /work/chroot-trixie/proc
#   KEYBOX=                      a keybox on the host; default: the built-in one
#   SIZES=0,16,32,64,128,256,512 the seed's sizes (--kbx-buffer-size, KiB)
#   RUNS=1  WARMUP=0             timed and untimed runs per size (sweep's --runs/--warmup)
#   OUT=target/program-sweep     where the tables, exports and plots go
#
# How: kbxscope is built on the host (cargo build --release) and copied into the
# chroot as /usr/local/bin/kbxscope with its cache directory /var/cache/kbxscope
# (the built-in keybox is copied there from the host's cache when it is there, so it
# is not generated again; the interposer is written there by kbxscope itself). Then,
# inside the chroot, per JOB:
#   kbxscope sweep --program PROGRAM [--workload W] --sizes $SIZES --runs $RUNS
#            --warmup $WARMUP --wide --export-markdown/json/csv --plot [KEYBOX]
# Each size runs the real PROGRAM on a fresh GNUPGHOME holding a copy of the keybox,
# with --kbx-buffer-size N, recorded from inside (the interposer), and kbxscope's own
# replay of the workload (the `model` column). Prints each table and how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."
CHROOT=${CHROOT:-/work/chroot-trixie}
SIZES=${SIZES:-0,16,32,64,128,256,512}
RUNS=${RUNS:-1}
WARMUP=${WARMUP:-0}
OUT=${OUT:-target/program-sweep}
jobs=("$@")
[ ${#jobs[@]} -gt 0 ] || jobs=(gpgsm gpg-check-sigs)

[ -x "$CHROOT/usr/bin/gpgsm" ] || { echo "no gpgsm in $CHROOT (see the header)" >&2; exit 2; }
[ -e "$CHROOT/proc/self" ] || { echo "$CHROOT/proc is not mounted: mount -t proc proc $CHROOT/proc" >&2; exit 2; }
cargo build --release --quiet
cmp -s target/release/kbxscope "$CHROOT/usr/local/bin/kbxscope" || install -m 755 target/release/kbxscope "$CHROOT/usr/local/bin/kbxscope"
mkdir -p "$CHROOT/var/cache/kbxscope" "$OUT"
host_cache=${KBXSCOPE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kbxscope}
for f in "$host_cache"/seed-*.kbx "$host_cache"/seed-*.kbx.trustlist.txt; do
  [ -e "$f" ] && [ ! -e "$CHROOT/var/cache/kbxscope/${f##*/}" ] && cp "$f" "$CHROOT/var/cache/kbxscope/"
done
file_arg=()
if [ -n "${KEYBOX:-}" ]; then
  cp "$KEYBOX" "$CHROOT/tmp/program-sweep.kbx"
  file_arg=(/tmp/program-sweep.kbx)
  [ -e "$KEYBOX.trustlist.txt" ] && cp "$KEYBOX.trustlist.txt" "$CHROOT/tmp/program-sweep.kbx.trustlist.txt"
fi
echo "gpg in the chroot: $(chroot "$CHROOT" gpg --version | head -1); gpgsm: $(chroot "$CHROOT" gpgsm --version | head -1)"

for job in "${jobs[@]}"; do
  case $job in
    gpgsm) prog=(--program gpgsm) ;;
    gpg-check-sigs) prog=(--program gpg --workload check-sigs) ;;
    gpg-with-sigs) prog=(--program gpg --workload with-sigs) ;;
    gpg-list) prog=(--program gpg --workload list) ;;
    *) echo "unknown JOB $job" >&2; exit 2 ;;
  esac
  echo
  echo "== $job: kbxscope sweep ${prog[*]} --sizes $SIZES ${file_arg[*]:-(built-in keybox)}"
  t0=$(date +%s)
  chroot "$CHROOT" env KBXSCOPE_CACHE_DIR=/var/cache/kbxscope HOME=/root TMPDIR=/tmp \
    kbxscope sweep "${prog[@]}" --sizes "$SIZES" --runs "$RUNS" --warmup "$WARMUP" --wide \
    --export-markdown "/tmp/$job.md" --export-json "/tmp/$job.json" --export-csv "/tmp/$job.csv" \
    --plot "/tmp/$job.svg" "${file_arg[@]}"
  t1=$(date +%s)
  for x in md json csv svg; do mv "$CHROOT/tmp/$job.$x" "$OUT/"; done
  echo "$job: $((t1 - t0)) s for $(tr ',' '\n' <<<"$SIZES" | wc -l) sizes; exports in $OUT/$job.{md,json,csv,svg}"
done
