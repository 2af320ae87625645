#!/usr/bin/env bash
# Time `gpg --list-sigs` or `gpg --check-sigs` (GnuPG 2.2: fixed 8 KiB
# reads) and kbxscope's `list --with-sigs` / `--check-sigs` with its three
# lookup strategies (8 KiB reads) on the same keybox, side by side in one
# run, round robin, RUNS rounds; then medians and the ratios the goals are
# stated in (gpg's wall time / index's, kbxscope gnupg's user time / gpg's).
#
# Usage: benches/sigs-vs-gpg.sh [with-sigs|check-sigs] [KEYBOX] [RUNS]
# Default keybox: the built-in one (generated with `kbxscope gen --preset seed`).
#
# Environment:
#   SKIP_SCAN=1   leave out --lookup scan (one rescan per signature: hours on
#                 the built-in keybox)
#   COUNT=1       also count gpg's reads of the keybox, outside the timed rounds
#                 (untimed runs; see below), next to kbxscope's --io-summary
#
# Counting without strace: gpg --check-sigs on the built-in keybox makes tens
# of millions of read(2) calls, which take hours under strace. With COUNT=1
# gpg runs once under `perf stat -e syscalls:sys_enter_read` (the kernel's
# own tracepoint count: every read(2) of the process, whatever the file, and
# no stop per call). The reads of other files (trustdb.gpg, locale and
# library files) are then taken off: they are counted under strace -y in a
# `gpg --list-sigs` run on the same home, whose reads of other files are the
# same as --check-sigs' (168 on the tiny keybox, both ways, under strace).
# That run's own keybox reads check the perf count: perf's total minus the
# other files must equal strace's keybox reads for --list-sigs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
K=target/release/kbxscope
work=$(mktemp -d)
trap 'gpgconf --homedir "$work/home" --kill all 2>/dev/null || true; rm -rf "$work"' EXIT
mode=${1:-with-sigs}
kbx=${2:-$work/seed.kbx}
runs=${3:-3}
case "$mode" in
  with-sigs) gpgcmd=--list-sigs ;;
  check-sigs) gpgcmd=--check-sigs ;;
  *) echo "usage: $0 [with-sigs|check-sigs] [KEYBOX] [RUNS]" >&2; exit 2 ;;
esac
[ -f "$kbx" ] || $K gen "$kbx" 2>/dev/null
mkdir -m 700 "$work/home"
gpg --homedir "$work/home" --batch -k >/dev/null 2>&1 || true   # its trustdb, once, outside the rounds
gpgname="gpg $(gpg --version | head -1 | awk '{print $3}') $gpgcmd"
echo "# $gpgname vs kbxscope list --$mode, 8 KiB reads; keybox $kbx ($(stat -c %s "$kbx") bytes)"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $runs round(s)"
t() { /usr/bin/time -f "%e %U %S" -o "$work/t" "$@" >/dev/null 2>&1 || true; tail -1 "$work/t"; }
lookups="gnupg scan index"
[ "${SKIP_SCAN:-}" = 1 ] && lookups="gnupg index"
: >"$work/times"
printf '%-34s %8s %8s %8s\n' variant wall user sys
# Every variant reads a fresh copy, made the same way just before it (see
# validation-vs-gpgsm.sh: the page cache's folio layout changes sys time).
for r in $(seq "$runs"); do
  cp "$kbx" "$work/home/pubring.kbx"    # gpg may rewrite its keybox: a fresh copy each time
  line=$(t gpg --homedir "$work/home" --batch "$gpgcmd")
  echo "gpg $line" >>"$work/times"
  printf '%-34s %8s %8s %8s\n' "$gpgname" $line
  for l in $lookups; do
    cp "$kbx" "$work/copy.kbx"
    line=$(t $K --kbx-buffer-size 0 list "--$mode" --lookup "$l" "$work/copy.kbx")
    echo "$l $line" >>"$work/times"
    printf '%-34s %8s %8s %8s\n' "kbxscope --lookup $l" $line
  done
done
# median VARIANT FIELD (2 wall, 3 user, 4 sys)
median() { awk -v v="$1" -v f="$2" '$1 == v { print $f }' "$work/times" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo
echo "medians: gpg wall $(median gpg 2) s, user $(median gpg 3) s; gnupg wall $(median gnupg 2) s, user $(median gnupg 3) s; index wall $(median index 2) s"
awk -v g="$(median gpg 2)" -v i="$(median index 2)" -v gu="$(median gpg 3)" -v nu="$(median gnupg 3)" \
  'BEGIN { printf "index is %.0fx faster than gpg (wall); kbxscope gnupg user time is %.2f of gpg'"'"'s\n", g / i, nu / gu }'

if [ "${COUNT:-}" = 1 ]; then
  echo
  cp "$kbx" "$work/home/pubring.kbx"
  strace -f -y -e trace=read -o "$work/list.trace" gpg --homedir "$work/home" --batch --list-sigs >/dev/null 2>&1 || true
  list_kbx=$(grep -c "^[0-9 ]*read([0-9]*<$work/home/pubring.kbx>" "$work/list.trace" || true)
  list_all=$(grep -c "^[0-9 ]*read(" "$work/list.trace" || true)
  other=$((list_all - list_kbx))
  perf_reads() {
    cp "$kbx" "$work/home/pubring.kbx"
    perf stat -x, -e syscalls:sys_enter_read -o "$work/perf" -- gpg --homedir "$work/home" --batch "$1" >/dev/null 2>&1 || true
    awk -F, '/sys_enter_read/ { print $1 }' "$work/perf"
  }
  list_perf=$(perf_reads --list-sigs)
  echo "gpg --list-sigs: strace $list_kbx reads of the keybox + $other of other files; perf $list_perf reads in all ($((list_perf - other)) of the keybox)"
  gpg_reads=$list_perf
  [ "$gpgcmd" = --check-sigs ] && gpg_reads=$(perf_reads --check-sigs)
  cp "$kbx" "$work/copy.kbx"
  ours=$($K --kbx-buffer-size 0 --io-summary=json list "--$mode" --lookup gnupg "$work/copy.kbx" 2>&1 >/dev/null | tail -1 | jq .events.read)
  awk -v g="$((gpg_reads - other))" -v o="$ours" -v c="$gpgcmd" \
    'BEGIN { printf "gpg %s: %d reads of the keybox (perf, less the other files); kbxscope --lookup gnupg: %d (%+.2f%%)\n", c, g, o, (o / g - 1) * 100 }'
fi
