#!/usr/bin/env bash
# Boot Debian's own kernels in qemu (KVM) and check that record's BPF object
# (src/record/bpf/attach.bpf.o) passes their verifier and that kbxscope's
# loader (aya, `record --pid`) loads, attaches and counts on them.
#
#   sudo .ci/bpf-kernels.sh                  # bookworm (6.1) and trixie (6.12)
#   sudo .ci/bpf-kernels.sh trixie           # one suite (any Debian suite name)
#
# Run as root (apt-get, mknod for the initramfs, /dev/kvm). Builds nothing:
# it uses an already built kbxscope and Debian's bpftool. Environment:
#   KBXSCOPE=PATH        kbxscope binary (default: target/release/kbxscope; copied first)
#   BPF_OBJ=PATH         object to check (default: src/record/bpf/attach.bpf.o)
#   WORK=DIR             downloads, initramfs, logs (default: /tmp/bpf-kernels)
#   ACCEL=auto|kvm|tcg   qemu accelerator (auto: kvm when /dev/kvm is usable and
#                        the CPU has vmx/svm, else tcg: software emulation)
#   BOOT_TIMEOUT=SECS    per boot (default: 600; 1800 with VERIFIER_STATS=1 under tcg)
#   GUEST_MEM=MiB        guest memory (default: 2048; the verifier-stats pass
#                        makes libbpf hold the whole level-2 verifier log)
#   VERIFIER_STATS=0|1   after the checks, also run `bpftool -d prog loadall` in
#                        the guest and print each program's "processed N insns"
#                        (default: 1 under kvm, 0 under tcg, where it takes
#                        3 min (6.1) and 10 min (6.12) more per kernel)
# Under tcg the checks themselves take about 1.5 min per kernel.
#
# Per suite it downloads the kernel that suite's linux-image-amd64 depends on
# (newest of SUITE and SUITE-security) with a private apt configuration
# (the machine's apt state is left alone), takes boot/vmlinuz out of it, and
# boots it with one initramfs (busybox, bpftool, kbxscope, their libraries,
# the object, /init). No modules are needed: BTF, bpf, raw tracepoints, the
# ring buffer, devtmpfs, gzip initramfs and the 8250 console are built into
# Debian's kernels. The guest prints `KBXS-RESULT key=value` lines; the full
# serial log of each boot is kept in $WORK/logs/SUITE.log.
#
# Guest checks (each PASS/FAIL; any FAIL or a boot that does not finish makes
# the exit status 1):
#   bpftool   `bpftool prog loadall OBJ` (every program, trace_events=0)
#   record    `kbxscope record --pid P --for 2s` (raw tracepoints)
#   summary   the same with --io-summary: counts > 0 on a busybox sh loop
#             reading pubring.kbx
#   events    --trace-out --trace-level event (trace_events=1: the ring
#             buffer branch, which the verifier prunes when it is 0)
#   syscalls  KBXSCOPE_ATTACH_PROBES=syscalls (per-call syscall tracepoints)
#   name      record --name kbxreader: a process that execs later (on_exec)
#   detach    none of the object's programs remain after kbxscope exits
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/bpf-kernels}
KBXSCOPE=${KBXSCOPE:-$repo/target/release/kbxscope}
BPF_OBJ=${BPF_OBJ:-$repo/src/record/bpf/attach.bpf.o}
GUEST_MEM=${GUEST_MEM:-2048}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(bookworm trixie)

say() { printf '%s\n' "bpf-kernels: $*" >&2; }
die() { say "$*"; exit 2; }

[ "$(id -u)" = 0 ] || die "run as root"
[ -x "$KBXSCOPE" ] || die "no kbxscope binary at $KBXSCOPE (build it first; this script builds nothing)"
[ -f "$BPF_OBJ" ] || die "no BPF object at $BPF_OBJ"

# --- host tools -------------------------------------------------------------
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v bpftool >/dev/null || need+=(bpftool)
command -v cpio >/dev/null || need+=(cpio)
if ! { [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; }; then need+=(busybox-static); fi
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
BPFTOOL=$(command -v bpftool)
# Debian's /usr/sbin/bpftool may be a wrapper script picking a versioned binary.
if ! file -L "$BPFTOOL" | grep -q ELF; then
  BPFTOOL=$(ls /usr/lib/linux-tools*/bpftool 2>/dev/null | sort -V | tail -1)
fi
[ -n "$BPFTOOL" ] || die "no bpftool binary"

mkdir -p "$WORK"/{debs,kernels,logs}
work_bin="$WORK/bin"
mkdir -p "$work_bin"
cp "$KBXSCOPE" "$work_bin/kbxscope.new" && mv "$work_bin/kbxscope.new" "$work_bin/kbxscope"
cp "$BPF_OBJ" "$work_bin/attach.bpf.o"
say "kbxscope $(sha256sum "$work_bin/kbxscope" | cut -c1-16)…, object $(sha256sum "$work_bin/attach.bpf.o" | cut -c1-16)…"

# --- a private apt configuration for the suites -------------------------------
apt_dir="$WORK/apt"
mkdir -p "$apt_dir"/{lists/partial,cache/archives/partial,prefs}
: >"$apt_dir/status"
# The mirrors this machine's apt uses (no fixed host: one line and stop
# when it names none).
. "$(dirname "${BASH_SOURCE[0]}")/apt-mirror.sh"
mirror=$MIRROR security=$SECURITY
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
{
  for s in "${suites[@]}"; do
    echo "deb [signed-by=$keyring] $mirror $s main"
    case $s in sid | unstable | experimental) ;; *) echo "deb [signed-by=$keyring] $security $s-security main" ;; esac
  done
} >"$apt_dir/sources.list"
apt_opts=(
  -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o Dir::Etc::Preferences=/nonexistent -o Dir::Etc::PreferencesParts="$apt_dir/prefs"
  -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status="$apt_dir/status"
  -o Dir::Cache="$apt_dir/cache" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
  -o APT::Sandbox::User=root -o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o Acquire::Languages=none
  -o Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false
  -o Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false
  -o Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false
)
say "apt-get update (private lists in $apt_dir) for ${suites[*]}"
apt-get "${apt_opts[@]}" -q update >"$WORK/logs/apt-update.log" 2>&1 || {
  tail -20 "$WORK/logs/apt-update.log" >&2
  die "apt-get update failed"
}

# The kernel package SUITE's linux-image-amd64 depends on: prints "NAME VERSION".
kernel_package() {
  local suite=$1 best="" v
  while read -r v; do
    if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
  done < <(apt-cache "${apt_opts[@]}" madison linux-image-amd64 |
    awk -F'|' -v s="$suite" '{gsub(/ /,"",$2); split($3,a," "); split(a[2],b,"/"); if (b[1]==s || b[1]==s"-security") print $2}')
  [ -n "$best" ] || return 1
  apt-cache "${apt_opts[@]}" show "linux-image-amd64=$best" | sed -n 's/^Depends: //p' | head -1 |
    grep -oE 'linux-image-[^ ,]+ \(= [^)]+\)' | head -1 | sed -E 's/ \(= (.*)\)/ \1/'
}

# --- the initramfs (one for every kernel) -------------------------------------
root="$WORK/initramfs"
rm -rf "$root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,root,data,etc,run}
cp /bin/busybox "$root/bin/busybox"
for a in $(/bin/busybox --list); do [ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"; done
copy_with_libs() { # FILE DEST: the file and the shared libraries ldd names, at their own paths
  install -D -m 0755 "$1" "$root$2"
  ldd "$1" | grep -oE '/[^ ]+' | while read -r lib; do
    [ -e "$root$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
  done
}
copy_with_libs "$BPFTOOL" /bin/bpftool
copy_with_libs "$work_bin/kbxscope" /bin/kbxscope
cp "$work_bin/attach.bpf.o" "$root/attach.bpf.o"
mknod -m 600 "$root/dev/console" c 5 1
mknod -m 666 "$root/dev/null" c 1 3
echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"
# A file with one of kbxscope's default watched names; the readers read it a
# byte at a time (busybox sh's `read`): open, fcntl(F_DUPFD), read, close.
awk 'BEGIN { for (i = 0; i < 1600; i++) print "kbxscope bpf-kernels test line 0123456789" }' >"$root/data/pubring.kbx"
cat >"$root/bin/kbxreader" <<'EOF'
#!/bin/sh
while :; do while read -r l; do :; done </data/pubring.kbx; done
EOF
chmod 755 "$root/bin/kbxreader"
cat >"$root/init" <<'EOF'
#!/bin/sh
export PATH=/bin HOME=/root TMPDIR=/tmp USER=root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || mount -t debugfs debugfs /sys/kernel/debug
echo 0 >/proc/sys/kernel/printk 2>/dev/null
result() { echo "KBXS-RESULT $1"; }
section() { echo; echo "===== $* ====="; }
pf() { if [ "$1" = 0 ]; then echo PASS; else echo FAIL; fi; }
echo "KBXS-BEGIN"
result "uname=$(uname -r)"
result "version=$(cat /proc/version)"
[ -e /sys/kernel/btf/vmlinux ] && result "btf=yes" || result "btf=no"
result "lockdown=$(cat /sys/kernel/security/lockdown 2>/dev/null || echo n/a)"

section "bpftool prog loadall"
bpftool version
if bpftool prog loadall /attach.bpf.o /sys/fs/bpf/k >/tmp/load.log 2>&1; then
  result "bpftool=PASS"
  for p in /sys/fs/bpf/k/*; do bpftool prog show pinned "$p"; done
  for p in /sys/fs/bpf/k/*; do
    bpftool -j prog show pinned "$p" | sed -E 's/.*"name":"([^"]*)".*"bytes_xlated":([0-9]+).*"bytes_jited":([0-9]+).*/\1 \2 \3/' |
      { read -r n x j; result "xlated_$n=$((x / 8))insns/jited${j}B"; }
  done
else
  result "bpftool=FAIL"
  echo "--- verifier / libbpf log (last 60 lines) ---"
  tail -n 60 /tmp/load.log
fi
rm -rf /sys/fs/bpf/k

# A process that reads pubring.kbx in a loop, then kbxscope's own loader.
/bin/kbxreader &
reader=$!
sleep 1
counts() { awk '/^record: total over/ { t = 1; next } t && $2 ~ /^[0-9]+$/ { printf "%s=%s ", $1, $2 } t && $1 == "bytes" { printf "bytes_read=%s", $3; exit }' "$1"; }
total() { awk '/^record: total over/ { t = 1 } t && $1 == "total" { print $2; exit }' "$1"; }
check() { # NAME RC FILE WANT: PASS when kbxscope exited 0 and said it attached (WANT=1: and counted > 0)
  ok=1
  if [ "$2" = 0 ] && grep -q 'attached to' "$3"; then
    n=$(total "$3")
    if [ "$4" = 0 ] || [ "${n:-0}" -gt 0 ]; then ok=0; fi
  fi
  result "$1=$(pf $ok) rc=$2 $(counts "$3")"
}
run() { # NAME WANT FILE ARGS...: kbxscope ARGS, output to FILE and the console
  name=$1 want=$2 out=$3; shift 3
  section "$name: $*"
  "$@" >"$out" 2>&1
  rc=$?
  cat "$out"
  check "$name" "$rc" "$out" "$want"
}
section "kbxscope record --help (first lines)"
kbxscope record --help 2>&1 | grep -E -- '--pid|--name|--for' | head -3
run record 0 /tmp/r1.txt kbxscope record --pid "$reader" --for 2s
run summary 1 /tmp/r2.txt kbxscope --io-summary record --pid "$reader" --for 2s
run events 1 /tmp/r3.txt kbxscope --io-summary --trace-out /tmp/trace.json --trace-level event record --pid "$reader" --for 2s
[ -s /tmp/trace.json ] && result "trace_json_bytes=$(wc -c </tmp/trace.json)" || result "trace_json_bytes=0"
run syscalls 1 /tmp/r4.txt env KBXSCOPE_ATTACH_PROBES=syscalls kbxscope --io-summary record --pid "$reader" --for 2s
kill "$reader"
wait "$reader" 2>/dev/null

section "name: kbxscope --io-summary record --name kbxreader --for 4s (the reader starts 1s after the attach)"
kbxscope --io-summary record --name kbxreader --for 4s >/tmp/r5.txt 2>&1 &
k=$!
i=0
while [ $i -lt 60 ] && ! grep -q 'attached to' /tmp/r5.txt; do sleep 1; i=$((i + 1)); done
sleep 1
/bin/kbxreader &
reader=$!
wait "$k"
rc=$?
kill "$reader"
wait "$reader" 2>/dev/null
cat /tmp/r5.txt
check name "$rc" /tmp/r5.txt 1

sleep 1
left=$(bpftool prog show | grep -cE 'name (sys_enter|sys_exit|on_fork|on_exec|tp_enter|tp_exit) ')
[ "$left" = 0 ] && result "detach=PASS" || { result "detach=FAIL left=$left"; bpftool prog show; }
result "uptime=$(cut -d' ' -f1 /proc/uptime)"
echo "KBXS-DONE"

if [ "$(sed -n 's/.*kbxs_stats=\([01]\).*/\1/p' /proc/cmdline)" = 1 ]; then
  section "verifier statistics: bpftool -d prog loadall (log level 1+2+4, filtered)"
  bpftool -d prog loadall /attach.bpf.o /sys/fs/bpf/kd 2>&1 |
    awk '/^libbpf: prog .*-- BEGIN PROG LOAD LOG --/ { p = $3; gsub(/[^a-z_]/, "", p) }
         /^processed [0-9]+ insns/ { print "KBXS-RESULT processed_" p "=" $2 " (" $0 ")" }
         /^verification time/ { print "KBXS-RESULT vtime_" p "=" $3 "us" }
         /^libbpf: .*(failed|error|Error)/ { print }'
  rm -rf /sys/fs/bpf/kd
  result "stats_uptime=$(cut -d' ' -f1 /proc/uptime)"
fi
echo "KBXS-END"
poweroff -f
EOF
chmod 755 "$root/init"
initrd="$WORK/initrd.gz"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -6 >"$initrd"
say "initramfs $(du -h "$initrd" | cut -f1) ($initrd)"

# --- boot each kernel -----------------------------------------------------------
# KVM needs the processor's virtualization extensions: a /dev/kvm without
# vmx/svm (e.g. a software "kvm_pvm" module inside a VM) cannot run an
# unmodified Debian kernel (it dies in the zstd decompressor with "KVM
# internal error ... emulation failure" on a BMI2 instruction, or crawls).
ACCEL=${ACCEL:-auto}
if [ "$ACCEL" = auto ]; then
  ACCEL=tcg
  if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; fi
fi
case $ACCEL in
  kvm) accel=(-accel kvm -cpu host) ;;
  tcg) accel=(-accel tcg) ;;
  *) die "ACCEL must be auto, kvm or tcg" ;;
esac
if [ "$ACCEL" = kvm ]; then VERIFIER_STATS=${VERIFIER_STATS:-1}; else VERIFIER_STATS=${VERIFIER_STATS:-0}; fi
if [ "$ACCEL$VERIFIER_STATS" = tcg1 ]; then BOOT_TIMEOUT=${BOOT_TIMEOUT:-1800}; else BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}; fi
say "accelerator: $ACCEL$([ "$ACCEL" = tcg ] && echo ' (software emulation: no usable hardware virtualization here; slow)')"
qpid=""
trap '[ -n "$qpid" ] && kill "$qpid" 2>/dev/null; true' EXIT INT TERM
status=0
summary=()
for suite in "${suites[@]}"; do
  pkg="" ver=""
  read -r pkg ver < <(kernel_package "$suite") || true
  if [ -z "$pkg" ]; then
    say "$suite: no linux-image-amd64 found"
    summary+=("$suite: no kernel package found")
    status=1
    continue
  fi
  deb=$(ls "$WORK/debs/${pkg}_${ver}_amd64.deb" 2>/dev/null || true)
  if [ -z "$deb" ]; then
    say "$suite: downloading $pkg $ver"
    (cd "$WORK/debs" && apt-get "${apt_opts[@]}" -q download "$pkg=$ver" >/dev/null)
    deb=$(ls "$WORK/debs/${pkg}_${ver}_amd64.deb")
  fi
  kdir="$WORK/kernels/$pkg"
  if ! ls "$kdir"/boot/vmlinuz-* >/dev/null 2>&1; then
    rm -rf "$kdir" && mkdir -p "$kdir"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$kdir" --wildcards './boot/vmlinuz-*' './boot/config-*'
  fi
  vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -1)
  config=$(ls "$kdir"/boot/config-* | head -1)
  log="$WORK/logs/$suite.log"
  {
    echo "# $suite: $pkg $ver ($vmlinuz)"
    grep -E '^CONFIG_(BPF_SYSCALL|DEBUG_INFO_BTF|BPF_JIT|BPF_EVENTS|FTRACE_SYSCALLS|KPROBES|FUNCTION_TRACER|SERIAL_8250_CONSOLE|DEVTMPFS|RD_GZIP|SECURITY_LOCKDOWN_LSM)=' "$config" | sed 's/^/# /'
  } >"$log"
  say "$suite: booting $(basename "$vmlinuz") with $ACCEL (timeout ${BOOT_TIMEOUT}s, log $log)"
  start=$(date +%s.%N)
  rc=0 why=""
  qemu-system-x86_64 "${accel[@]}" -m "$GUEST_MEM" -smp 1 \
    -nodefaults -no-user-config -display none -monitor none -serial stdio -no-reboot \
    -kernel "$vmlinuz" -initrd "$initrd" \
    -append "console=ttyS0 panic=-1 quiet loglevel=4 kbxs_stats=$VERIFIER_STATS" \
    </dev/null >>"$log" 2>&1 &
  qpid=$!
  deadline=$((SECONDS + BOOT_TIMEOUT))
  while kill -0 "$qpid" 2>/dev/null; do
    # qemu stops (and stays) on a KVM internal error: do not wait for the timeout.
    if grep -q 'KVM internal error' "$log"; then why="KVM internal error"; fi
    if [ "$SECONDS" -ge "$deadline" ]; then why="timeout after ${BOOT_TIMEOUT}s"; fi
    if [ -n "$why" ]; then kill "$qpid" 2>/dev/null || true; break; fi
    sleep 1
  done
  wait "$qpid" || rc=$?
  qpid=""
  secs=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
  clean=$(tr -d '\r' <"$log")
  get() { sed -n "s/^KBXS-RESULT $1=//p" <<<"$clean" | head -1; }
  line="$suite $pkg $ver: uname=$(get uname) qemu=${secs}s guest-uptime-at-done=$(get uptime)s"
  line=${line/guest-uptime-at-done=s/guest-uptime-at-done=?}
  if ! grep -q '^KBXS-DONE' <<<"$clean"; then
    line+=" BOOT-INCOMPLETE(${why:-qemu exit $rc}; see $log)"
    status=1
  elif [ "$VERIFIER_STATS" = 1 ] && ! grep -q '^KBXS-END' <<<"$clean"; then
    line+=" (verifier-stats pass incomplete: ${why:-qemu exit $rc})"
  fi
  for c in bpftool record summary events syscalls name detach; do
    v=$(get "$c")
    v=${v:-MISSING}
    line+=" $c=${v%% *}"
    [ "${v%% *}" = PASS ] || status=1
  done
  line+=" | counts: $(get summary | cut -d' ' -f3-)"
  p=$(grep -oE '^KBXS-RESULT processed_[a-z_]+=[0-9]+' <<<"$clean" | sed 's/^KBXS-RESULT processed_//' | tr '\n' ' ' || true)
  [ -n "$p" ] && line+=" | verifier processed insns: $p"
  summary+=("$line")
  say "$line"
done

echo
for l in "${summary[@]}"; do echo "$l"; done
exit "$status"
