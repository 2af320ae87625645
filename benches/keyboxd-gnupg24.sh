#!/usr/bin/env bash
# The real GnuPG 2.4 on the same keys in both stores, and the real keyboxd's
# preads against kbxscope's replay of it.
#
# Usage: benches/keyboxd-gnupg24.sh [KEYBOX]
#   KEYBOX  default: the built-in keys (kbxscope gen --preset seed); its
#           trustlist is KEYBOX.trustlist.txt
#
# Environment:
#   CHROOT=/work/chroot-trixie   a Debian 13 chroot with gpg 2.4, gpgsm, strace:
#       debootstrap --variant=minbase --include=gnupg,gpgsm,gnupg-utils,strace,sqlite3 \
#           trixie /work/chroot-trixie
#       mount -t proc proc /work/chroot-trixie/proc
#
# What it does (all GnuPG commands inside the chroot, --batch):
#   * kbxscope convert KEYBOX → a database; two homes: one with use-keyboxd and
#     the database as public-keys.d/pubring.db, one with the keybox as
#     pubring.kbx; the trustlist in both.
#   * keyboxd under strace -f (common.conf's keyboxd-program): `gpg --check-sigs`
#     and `gpgsm -k --with-validation --disable-dirmngr`; keyboxd's pread64 calls
#     on pubring.db beside kbxscope's --lookup gnupg on the same database
#     (SQLite's reads of the file, from --io-summary=json), and the statuses
#     and verdicts of both.
#   * untraced, one after the other, on fresh copies: both workloads with the
#     keybox at --kbx-buffer-size 64 and with keyboxd; /usr/bin/time of the
#     client (keyboxd is a daemon: its own CPU is not in the client's).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
K=$PWD/target/release/kbxscope
CHROOT=$(realpath "${CHROOT:-/work/chroot-trixie}")
[ -r "$CHROOT/proc/self/stat" ] || { echo "$CHROOT/proc is not mounted: mount -t proc proc $CHROOT/proc" >&2; exit 2; }
inner=/tmp/keyboxd-gnupg24
outer=$CHROOT$inner
[ ! -e "$outer" ] || { echo "$outer exists: remove it first" >&2; exit 2; }
mkdir -p "$outer"
cleanup() {
  for h in kd kb; do chroot "$CHROOT" gpgconf --homedir "$inner/$h" --kill all >/dev/null 2>&1 || true; done
  rm -rf "$outer"
}
trap cleanup EXIT
kbx=${1:-$outer/seed.kbx}
[ -f "$kbx" ] || "$K" gen "$kbx" 2>/dev/null
trust="$kbx.trustlist.txt"
"$K" convert "$kbx" "$outer/keys.db" --force 2>/dev/null
mkdir -m 700 "$outer/kd" "$outer/kb"
mkdir -m 700 "$outer/kd/public-keys.d"
cp "$trust" "$outer/kd/trustlist.txt"
cp "$trust" "$outer/kb/trustlist.txt"
cat >"$outer/kbd-strace" <<EOF
#!/bin/sh
exec strace -D -f -y -o $inner/kbd.trace /usr/lib/gnupg/keyboxd "\$@"
EOF
chmod 755 "$outer/kbd-strace"
g() { chroot "$CHROOT" "$@"; }
kd_fresh() { # keyboxd home with a fresh copy of the database; $1: traced or not
  cp "$outer/keys.db" "$outer/kd/public-keys.d/pubring.db"
  echo use-keyboxd >"$outer/kd/common.conf"
  [ "$1" = traced ] && echo "keyboxd-program $inner/kbd-strace" >>"$outer/kd/common.conf"
  rm -f "$outer/kbd.trace"
}
preads() { grep -c 'pread64([0-9]*</.*pubring\.db>' "$outer/kbd.trace"; }
ours_reads() { # kbxscope's reads of the database (SQLite's calls) for ARGS
  "$K" --io-summary=json "$@" "$outer/keys.db" 2>&1 >/dev/null | grep '^{' |
    jq --arg p "$outer/keys.db" '.files[] | select(.path == $p) | .events.read'
}
echo "== keyboxd's preads (strace) against kbxscope's replay (--lookup gnupg)"
kd_fresh traced
g gpg --homedir "$inner/kd" --batch --with-colons --check-sigs >"$outer/cs.txt" 2>/dev/null || true
g gpgconf --homedir "$inner/kd" --kill all; sleep 1
echo "gpg --check-sigs: keyboxd $(preads), kbxscope $(ours_reads list --check-sigs --lookup gnupg)"
echo "  gpg's marks:      good $(grep -c '^sig:!' "$outer/cs.txt"), no key $(grep -c '^sig:?' "$outer/cs.txt"), bad $(grep -c '^sig:-' "$outer/cs.txt" || true)"
"$K" list --check-sigs --json --lookup gnupg "$outer/keys.db" 2>/dev/null |
  jq -r '.signatures[].sigs[].mark' | sort | uniq -c | sed 's/^/  kbxscope marks: /'
kd_fresh traced
g gpgsm --homedir "$inner/kd" --batch -k --with-validation --disable-dirmngr >"$outer/v.txt" 2>/dev/null || true
g gpgconf --homedir "$inner/kd" --kill all; sleep 1
echo "gpgsm -k --with-validation: keyboxd $(preads), kbxscope $(ours_reads list --with-validation --lookup gnupg --trustlist "$trust")"
echo "  gpgsm good: $(grep -c 'certificate is good' "$outer/v.txt"), kbxscope good: $("$K" list --with-validation --lookup gnupg --trustlist "$trust" "$outer/keys.db" 2>/dev/null | grep -c 'certificate is good')"
echo "== the real programs' time (untraced): wall user sys"
t() { /usr/bin/time -f "%e %U %S" -o "$outer/t" "$@" >/dev/null 2>&1 || true; cat "$outer/t"; }
cp "$kbx" "$outer/kb/pubring.kbx"
echo "gpgsm validation, keybox 64 KiB: $(t g gpgsm --homedir "$inner/kb" --batch -k --with-validation --disable-dirmngr --kbx-buffer-size 64)"
kd_fresh untraced
echo "gpgsm validation, keyboxd:       $(t g gpgsm --homedir "$inner/kd" --batch -k --with-validation --disable-dirmngr)"
g gpgconf --homedir "$inner/kd" --kill all
kd_fresh untraced
echo "gpg --check-sigs, keyboxd:       $(t g gpg --homedir "$inner/kd" --batch --check-sigs)"
g gpgconf --homedir "$inner/kd" --kill all
cp "$kbx" "$outer/kb/pubring.kbx"
echo "gpg --check-sigs, keybox 64 KiB: $(t g gpg --homedir "$inner/kb" --batch --check-sigs --kbx-buffer-size 64)"
