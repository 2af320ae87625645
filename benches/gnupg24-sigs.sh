#!/usr/bin/env bash
# gnupg24-sigs.sh — GnuPG 2.4's real keybox reads against kbxscope's gpg model,
# at every --kbx-buffer-size.
#
# Usage:
#   gnupg24-sigs.sh [with-sigs|check-sigs] KEYBOX [SIZE...]
#
#   with-sigs   gpg --list-sigs   vs  kbxscope list --with-sigs  --lookup gnupg
#   check-sigs  gpg --check-sigs  vs  kbxscope list --check-sigs --lookup gnupg
#   KEYBOX      a pubring.kbx (any path on the host)
#   SIZE...     --kbx-buffer-size values in KiB, as GnuPG takes them (0 = 8 KiB);
#               default: $SIZES, else "0 16 32 64 128 256 512"
#
# Environment:
#   CHROOT=/work/chroot-trixie     a Debian 13 (trixie) chroot with gpg 2.4 and strace:
#       apt-get install debootstrap
#       debootstrap --variant=minbase --include=gnupg,gpgsm,gnupg-utils,strace \
#           trixie /work/chroot-trixie
#       mount -t proc proc /work/chroot-trixie/proc
#   KBXSCOPE=target/release/kbxscope   the kbxscope binary (run on the host, outside the chroot;
#                                  built with cargo build --release when it is the default)
#   GPG=gpg                        gpg inside the chroot (its PATH)
#   TIMING=1                       0: skip the timed runs (no strace) of gpg and kbxscope
#   STATUS=1                       0: skip the per-signature status comparison
#   STATUS_LOOKUP=gnupg            kbxscope's --lookup for the status comparison
#   SETTLE=1                       0: do not let gpg settle the keybox first (see below)
#   COLONS=1                       0: measure gpg's human-readable listing (no --with-colons).
#                                  gpg 2.4 reads less there: it prints "[self-signature]"
#                                  instead of looking up a self-signature's signer, which the
#                                  colon listing (and gpg 2.2 in both forms) still does.
#                                  The status comparison then uses an extra colon run.
#   KEEP=0                         1: keep the work directories (homes, traces, outputs)
#   COUNTER=strace                 perf: count gpg's reads with the kernel's tracepoint
#                                  (`perf stat -e syscalls:sys_enter_read`) instead of strace,
#                                  for runs that take hours under strace (see below)
#
# What it measures, per size N:
#   * gpg: a fresh GNUPGHOME inside the chroot (mode 700; `gpg --batch -k` run once
#     there so that its trustdb exists, then the keybox copied in as pubring.kbx),
#     and under `strace -f -y -e trace=openat,read,lseek,close,fstat,newfstatat,statx`
#       chroot CHROOT gpg --homedir H --batch --kbx-buffer-size N [--with-colons]
#                         --list-sigs|--check-sigs        (--with-colons unless COLONS=0)
#     Counted: only the calls on H/pubring.kbx itself (strace -y names each fd's
#     file; pubring.kbx.tmp and .lock are not counted): opens, reads, lseeks,
#     closes (stat calls are traced too, as kbxscope counts them, but not shown:
#     gpg 2.4 makes none on the keybox; it uses access(2)).
#   * kbxscope, on the host, on a fresh copy of the same bytes in a directory of its own:
#       kbxscope --kbx-buffer-size N --io-summary=json list --with-sigs|--check-sigs
#                --lookup gnupg COPY
#     and its "events" (open, read, seek, close, stat).
#   * the read ratio kbxscope/gpg and whether it is within ±5% (tests/gpg_live.rs's bound).
#   * with TIMING=1, wall/user/sys seconds (/usr/bin/time) of gpg without strace and of
#     kbxscope without --io-summary, one run each, each on a fresh copy.
#   * with STATUS=1, once (at the first size given, normally 0): every signature's
#     (mark, signer key id, class) per key fingerprint from gpg's colon listing
#     against kbxscope's `list --json` (the comparison of tests/gpg_live.rs), and
#     kbxscope's `status` checked against its mark (good !, bad -, no-key ?, error %).
#
# COUNTER=perf: strace stops gpg at every system call, which makes gpg --check-sigs
# on the built-in keybox below 64 KiB run for hours (tens of millions of reads).
# perf stat counts every read(2) of the process in the kernel, without a stop, but
# whatever the file. The reads of other files (trustdb.gpg, locale and library
# files) are measured once, before the sizes, under strace in a --list-sigs run at
# 512 KiB in a fresh home (on the tiny keybox they are the same for --list-sigs and
# --check-sigs: 167 each way), and taken off every perf count. The same --list-sigs
# run is then counted with perf too: perf's total less those must equal strace's
# keybox reads, or the script stops. Only reads are counted in this mode (opens,
# lseeks and closes show as -).
#
# The keybox gpg reads must stay the bytes kbxscope reads:
#   * gpg's first run over a keybox with deleted blobs rewrites it compacted (its
#     compress check). With SETTLE=1 (default) the keybox is first copied into a
#     scratch home and listed once with `gpg -k`; if gpg rewrote it, the rewritten
#     file is what both gpg and kbxscope read from then on (as tests/gpg_live.rs does
#     for gnupg-deleted.kbx), and the script says so.
#   * after every gpg run the home's pubring.kbx is compared (sha256) with that
#     reference; a row where gpg changed it is marked "CHANGED".
#   * gpg 2.4 can use keyboxd (`use-keyboxd` in common.conf) instead of pubring.kbx;
#     the script refuses a chroot whose /etc/gnupg/common.conf says so, the fresh
#     homes have no common.conf, and a run that never opened pubring.kbx is an error.
#
# Output: a Markdown table on stdout, one row per size, then the status comparison.
# Run it niced on a shared machine: nice -n 10 gnupg24-sigs.sh check-sigs small.kbx 64 512
set -euo pipefail
shopt -s inherit_errexit

usage() { sed -n '2,20p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
mode=$1; keybox=$2; shift 2
case "$mode" in
  with-sigs) gpgcmd=--list-sigs ;;
  check-sigs) gpgcmd=--check-sigs ;;
  *) usage ;;
esac
[ -f "$keybox" ] || { echo "no keybox: $keybox" >&2; exit 2; }
if [ $# -gt 0 ]; then sizes="$*"; else sizes=${SIZES:-"0 16 32 64 128 256 512"}; fi
CHROOT=$(realpath "${CHROOT:-/work/chroot-trixie}")
if [ -z "${KBXSCOPE:-}" ]; then
  (cd "$(dirname "$0")/.." && cargo build --release --quiet)
  KBXSCOPE=$(cd "$(dirname "$0")/.." && pwd)/target/release/kbxscope
fi
GPG=${GPG:-gpg}
TIMING=${TIMING:-1}
STATUS=${STATUS:-1}
STATUS_LOOKUP=${STATUS_LOOKUP:-gnupg}
SETTLE=${SETTLE:-1}
KEEP=${KEEP:-0}
COLONS=${COLONS:-1}
COUNTER=${COUNTER:-strace}
case "$COUNTER" in strace|perf) ;; *) echo "COUNTER is strace or perf" >&2; exit 2 ;; esac
[ "$COUNTER" = strace ] || command -v perf >/dev/null || { echo "perf missing (apt-get install linux-perf)" >&2; exit 2; }
if [ "$COLONS" = 1 ]; then colons=(--with-colons); listing=colons; else colons=(); listing="human-readable"; fi

[ -x "$KBXSCOPE" ] || { echo "no kbxscope at $KBXSCOPE" >&2; exit 2; }
[ -x "$CHROOT/usr/bin/strace" ] || [ -x /usr/bin/strace ] || { echo "strace missing" >&2; exit 2; }
command -v strace >/dev/null || { echo "strace missing on the host" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing (apt-get install time)" >&2; exit 2; }
[ -r "$CHROOT/proc/self/stat" ] || { echo "$CHROOT/proc is not mounted: mount -t proc proc $CHROOT/proc" >&2; exit 2; }
gpgver=$(chroot "$CHROOT" "$GPG" --version | head -1 | awk '{print $3}')
case "$gpgver" in 2.4.*|2.5.*) ;; *) echo "gpg in $CHROOT is $gpgver, not 2.4" >&2; exit 2 ;; esac
opts=$(chroot "$CHROOT" "$GPG" --dump-options)
grep -qx -- --kbx-buffer-size <<<"$opts" \
  || { echo "gpg $gpgver does not take --kbx-buffer-size" >&2; exit 2; }
if grep -qs '^[[:space:]]*use-keyboxd' "$CHROOT/etc/gnupg/common.conf"; then
  echo "$CHROOT/etc/gnupg/common.conf turns on use-keyboxd: gpg would not read pubring.kbx" >&2; exit 2
fi

# Work directories: gpg's homes inside the chroot, kbxscope's copies on the host.
inner=/tmp/gnupg24-sigs.$$            # as gpg sees it
outer=$CHROOT$inner                   # as the host sees it
kwork=$(mktemp -d /tmp/gnupg24-sigs-kbx.XXXXXX)
mkdir -p "$outer"
cleanup() {
  for h in "$outer"/home-*; do
    [ -d "$h" ] && chroot "$CHROOT" gpgconf --homedir "$inner/${h##*/}" --kill all >/dev/null 2>&1 || true
  done
  if [ "$KEEP" = 1 ]; then echo "kept: $outer $kwork" >&2; else rm -rf "$outer" "$kwork"; fi
}
trap cleanup EXIT

sha() { sha256sum "$1" | cut -d' ' -f1; }

# fresh_home NAME: a new GNUPGHOME with gpg's trustdb and the reference keybox.
# Prints the home's path inside the chroot.
fresh_home() {
  local h=$inner/home-$1
  rm -rf "$CHROOT$h"; mkdir -m 700 "$CHROOT$h"
  chroot "$CHROOT" "$GPG" --homedir "$h" --batch -k >/dev/null 2>&1
  [ ! -e "$CHROOT$h/common.conf" ] || { echo "unexpected $h/common.conf" >&2; exit 1; }
  cp "$ref" "$CHROOT$h/pubring.kbx"
  echo "$h"
}

# count TRACE HOME: "opens reads lseeks closes stats" on HOME/pubring.kbx.
count() {
  awk -v tag="<$CHROOT$2/pubring.kbx>" -v q="\"$2/pubring.kbx\"" '
    { sub(/^[0-9]+ +/, "")
      p = index($0, "("); if (!p) next
      name = substr($0, 1, p - 1); a = substr($0, p + 1); fd = a
      sub(/^[0-9]+/, "", fd); onfd = (substr(fd, 1, length(tag)) == tag)
      if (name == "openat") { if (index(a, q)) o++ }
      else if (name == "read") { if (onfd) r++ }
      else if (name == "lseek") { if (onfd) s++ }
      else if (name == "close") { if (onfd) c++ }
      else if (name ~ /^(fstat|newfstatat|statx)$/) { if (onfd || index(a, q)) st++ }
    }
    END { printf "%d %d %d %d %d\n", o, r, s, c, st }' "$1"
}

# timed CMD...: runs CMD (stdout, stderr to /dev/null), prints "wall user sys exit".
timed() {
  local tf=$kwork/time.txt
  /usr/bin/time -f "%e %U %S %x" -o "$tf" "$@" >/dev/null 2>&1 || true
  tail -1 "$tf"
}

fmt() { printf "%s" "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }   # thousands separators

# The reference keybox: what gpg leaves after its first run (SETTLE=1).
ref=$kwork/reference.kbx
cp "$keybox" "$ref"
note_settle=""
if [ "$SETTLE" = 1 ]; then
  h=$(fresh_home settle)
  chroot "$CHROOT" "$GPG" --homedir "$h" --batch -k >/dev/null 2>&1 || true
  if [ "$(sha "$CHROOT$h/pubring.kbx")" != "$(sha "$ref")" ]; then
    note_settle="gpg's first run rewrote the keybox ($(stat -c %s "$ref") -> $(stat -c %s "$CHROOT$h/pubring.kbx") bytes, compacted); both read the rewritten one"
    cp "$CHROOT$h/pubring.kbx" "$ref"
  fi
  rm -rf "$CHROOT$h"
fi
refsha=$(sha "$ref")

echo "# gpg $gpgver ($CHROOT) $gpgcmd ($listing listing) vs kbxscope $("$KBXSCOPE" --version | awk '{print $2}') list --$mode --lookup gnupg"
echo "# keybox: $keybox ($(stat -c %s "$ref") bytes, sha256 ${refsha:0:16}); $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$note_settle" ] || echo "# note: $note_settle"
echo
# perf_reads OUT ERR GPG-ARGS...: gpg's read(2) calls, all files, counted by perf.
perf_reads() {
  local out=$1 err=$2; shift 2
  perf stat -x, -e syscalls:sys_enter_read -o "$kwork/perf.txt" -- \
    chroot "$CHROOT" "$GPG" "$@" >"$out" 2>"$err" || return $?
  awk -F, '/sys_enter_read/ { print $1 }' "$kwork/perf.txt"
}
if [ "$COUNTER" = perf ]; then
  h=$(fresh_home calibrate)
  strace -f -y -e trace=read -o "$kwork/calibrate.txt" \
    chroot "$CHROOT" "$GPG" --homedir "$h" --batch --kbx-buffer-size 512 ${colons[@]+"${colons[@]}"} --list-sigs \
    >/dev/null 2>&1 || true
  cal_all=$(grep -c "^[0-9 ]*read(" "$kwork/calibrate.txt" || true)
  cal_kbx=$(grep -c "^[0-9 ]*read([0-9]*<$CHROOT$h/pubring.kbx>" "$kwork/calibrate.txt" || true)
  other=$((cal_all - cal_kbx))
  cp "$ref" "$CHROOT$h/pubring.kbx"
  cal_perf=$(perf_reads /dev/null /dev/null --homedir "$h" --batch --kbx-buffer-size 512 ${colons[@]+"${colons[@]}"} --list-sigs)
  echo "# perf calibration (--list-sigs, 512 KiB): strace $cal_kbx keybox reads + $other of other files; perf $cal_perf in all"
  [ $((cal_perf - other)) = "$cal_kbx" ] || { echo "perf's count less the other files ($((cal_perf - other))) is not strace's ($cal_kbx)" >&2; exit 1; }
  rm -rf "$CHROOT$h"
  echo
fi

if [ "$TIMING" = 1 ]; then
  echo "| N (KiB) | gpg reads | gpg opens | gpg lseeks | gpg closes | kbxscope reads | kbxscope opens | kbxscope seeks | kbxscope closes | reads kbxscope/gpg | ±5% | gpg wall/user/sys (s) | kbxscope wall/user/sys (s) | gpg counted (wall s) |"
  echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:-:|--:|--:|--:|"
else
  echo "| N (KiB) | gpg reads | gpg opens | gpg lseeks | gpg closes | kbxscope reads | kbxscope opens | kbxscope seeks | kbxscope closes | reads kbxscope/gpg | ±5% | gpg counted (wall s) |"
  echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:-:|--:|"
fi

status_done=0
notes=()
for n in $sizes; do
  h=$(fresh_home "$n")
  trace=$kwork/trace-$n.txt
  # gpg under strace (stdout kept: the colon listing for the status comparison).
  t0=$(date +%s.%N)
  rc=0
  if [ "$COUNTER" = perf ]; then
    total=$(perf_reads "$kwork/gpg-$n.out" "$kwork/gpg-$n.err" \
      --homedir "$h" --batch --kbx-buffer-size "$n" ${colons[@]+"${colons[@]}"} "$gpgcmd") || rc=$?
    gr=$((total - other)); go=-; gs=-; gc=-
  else
    strace -f -y -e trace=openat,read,lseek,close,fstat,newfstatat,statx -o "$trace" \
      chroot "$CHROOT" "$GPG" --homedir "$h" --batch --kbx-buffer-size "$n" ${colons[@]+"${colons[@]}"} "$gpgcmd" \
      >"$kwork/gpg-$n.out" 2>"$kwork/gpg-$n.err" || rc=$?
    read -r go gr gs gc gst < <(count "$trace" "$h")
    [ "$KEEP" = 1 ] || rm -f "$trace"
    [ "$go" -gt 0 ] || { echo "gpg never opened $h/pubring.kbx at N=$n (keyboxd?); stderr:" >&2; cat "$kwork/gpg-$n.err" >&2; exit 1; }
  fi
  t1=$(date +%s.%N)
  swall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  [ "$rc" = 0 ] || notes+=("N=$n: gpg exited $rc: $(head -c 300 "$kwork/gpg-$n.err" | tr '\n' ' ')")
  changed=""
  [ "$(sha "$CHROOT$h/pubring.kbx")" = "$refsha" ] || { changed=" CHANGED"; notes+=("N=$n: gpg changed pubring.kbx during the strace run"); }

  # kbxscope's model, on a fresh copy of its own.
  cp "$ref" "$kwork/k.kbx"
  "$KBXSCOPE" --kbx-buffer-size "$n" --io-summary=json list "--$mode" --lookup gnupg "$kwork/k.kbx" \
    >/dev/null 2>"$kwork/kbx-$n.err"
  read -r ko kr ks kc < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{") and "\"events\"" in line:
        e = json.loads(line)["events"]
        print(e["open"], e["read"], e["seek"], e["close"])
        break
else:
    sys.exit("no io summary in " + sys.argv[1])' "$kwork/kbx-$n.err")
  ratio=$(awk -v k="$kr" -v g="$gr" 'BEGIN { if (g) printf "%.4f", k / g; else print "-" }')
  ok=$(awk -v k="$kr" -v g="$gr" 'BEGIN { d = k - g; if (d < 0) d = -d; print (d * 20 <= g) ? "yes" : "NO" }')

  row="| $n | $(fmt "$gr") | $go | $(fmt "$gs") | $gc | $(fmt "$kr") | $ko | $(fmt "$ks") | $kc | $ratio | $ok$changed |"
  if [ "$TIMING" = 1 ]; then
    cp "$ref" "$CHROOT$h/pubring.kbx"
    read -r gw gu gy gx < <(timed chroot "$CHROOT" "$GPG" --homedir "$h" --batch --kbx-buffer-size "$n" ${colons[@]+"${colons[@]}"} "$gpgcmd")
    gt="$gw $gu $gy"
    [ "$gx" = 0 ] || notes+=("N=$n: timed gpg exited $gx")
    [ "$(sha "$CHROOT$h/pubring.kbx")" = "$refsha" ] || notes+=("N=$n: gpg changed pubring.kbx during the timed run")
    cp "$ref" "$kwork/k.kbx"
    read -r kw ku ky kx < <(timed "$KBXSCOPE" --kbx-buffer-size "$n" list "--$mode" --lookup gnupg "$kwork/k.kbx")
    kt="$kw $ku $ky"
    [ "$kx" = 0 ] || notes+=("N=$n: timed kbxscope exited $kx")
    row="$row ${gt// / / } | ${kt// / / } | $swall |"
  else
    row="$row $swall |"
  fi
  echo "$row"

  if [ "$STATUS" = 1 ] && [ "$status_done" = 0 ]; then
    status_done=1
    status_n=$n
    cp "$ref" "$kwork/k.kbx"
    "$KBXSCOPE" --kbx-buffer-size "$n" list "--$mode" --json --lookup "$STATUS_LOOKUP" "$kwork/k.kbx" \
      >"$kwork/kbx-status.json" 2>"$kwork/kbx-status.err" || true
    if [ "$COLONS" = 1 ]; then
      cp "$kwork/gpg-$n.out" "$kwork/gpg-status.out"
    else
      cp "$ref" "$CHROOT$h/pubring.kbx"
      chroot "$CHROOT" "$GPG" --homedir "$h" --batch --kbx-buffer-size "$n" --with-colons "$gpgcmd" \
        >"$kwork/gpg-status.out" 2>/dev/null || true
    fi
  fi
  # the listing without its tru: line (the trustdb's creation time differs per home),
  # nor the text listing's keybox name and its underline (the home differs per size)
  grep -v -e '^tru:' -e "^$inner/home-" -e '^-*$' "$kwork/gpg-$n.out" | sha256sum | cut -d' ' -f1 >>"$kwork/gpg-out-shas"
  [ "$n" = "${status_n:-}" ] || [ "$KEEP" = 1 ] || rm -f "$kwork/gpg-$n.out"
  rm -rf "$CHROOT$h"
done

echo
if [ "$(sort -u "$kwork/gpg-out-shas" | wc -l)" = 1 ]; then
  echo "gpg's $listing listing (less tru: line / keybox name): identical at every size"
else
  echo "gpg's $listing listing (less tru: line / keybox name): DIFFERS between sizes"
fi
if [ "$STATUS" = 1 ]; then
  python3 - "$kwork/gpg-status.out" "$kwork/kbx-status.json" "$mode" "$status_n" "$STATUS_LOOKUP" <<'EOF'
import json, sys
gpg_out, ours_json, mode, n, lookup = sys.argv[1:]

def gpg_colons(text):
    # (mark, signer key id, class) of every sig/rev line, per key fingerprint
    out, want_fpr = [], False
    for line in text.splitlines():
        f = line.split(":")
        if f[0] == "pub":
            want_fpr = True
        elif f[0] == "fpr" and want_fpr:
            out.append((f[9], []))
            want_fpr = False
        elif f[0] in ("sig", "rev"):
            out[-1][1].append((f[1], f[4], f[10]))
    return out

MARK = {"good": "!", "bad": "-", "no-key": "?", "error": "%"}
ours, inconsistent = [], 0
for line in open(ours_json, encoding="utf-8"):
    if not line.strip():
        continue
    v = json.loads(line)
    sigs = []
    for g in v["signatures"]:
        for s in g["sigs"]:
            mark = s["mark"].strip()
            st = s.get("status")
            if mode == "check-sigs" and st is not None and MARK.get(st) != mark:
                inconsistent += 1
            sigs.append((mark, s["signer_key_id"], s["class"]))
    ours.append((v["fingerprint"], sigs))

want = gpg_colons(open(gpg_out, encoding="utf-8", errors="replace").read())
wd, od = dict(want), dict(ours)
nsig = sum(len(s) for _, s in want)
diff_sigs, diff_keys, shown = 0, 0, []
for fpr in list(wd) + [f for f in od if f not in wd]:
    a, b = wd.get(fpr, []), od.get(fpr, [])
    d = sum(1 for i in range(max(len(a), len(b)))
            if (a[i] if i < len(a) else None) != (b[i] if i < len(b) else None))
    if d or fpr not in wd or fpr not in od:
        diff_keys += 1
        diff_sigs += d
        if len(shown) < 5:
            shown.append(f"  {fpr}: gpg {len(a)} sigs, kbxscope {len(b)}, {d} differ")
marks = {}
for _, s in want:
    for m, _, _ in s:
        marks[m or "(none)"] = marks.get(m or "(none)", 0) + 1
order = [fpr for fpr, _ in want] == [fpr for fpr, _ in ours]
summary = (f"statuses at N={n} (gpg --with-colons vs kbxscope --json --lookup {lookup}): "
           f"{len(want)} keys, {nsig} signatures (gpg marks: "
           + ", ".join(f"{k} {v}" for k, v in sorted(marks.items())) + "): ")
if diff_sigs == 0 and diff_keys == 0:
    summary += "EQUAL, 0 differ" + ("" if order else " (key order differs)")
else:
    summary += f"DIFFER: {diff_sigs} signatures in {diff_keys} keys"
print(summary)
if mode == "check-sigs":
    print(f"kbxscope status vs its own mark: {inconsistent} inconsistent")
for s in shown:
    print(s)
EOF
fi
for m in "${notes[@]+"${notes[@]}"}"; do echo "note: $m"; done
