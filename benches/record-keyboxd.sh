#!/usr/bin/env bash
# record-keyboxd.sh — `kbxscope record` of a real GnuPG 2.4.7 whose home uses keyboxd:
# gpg starts keyboxd, which inherits the interposer through the environment, and
# keyboxd's calls on public-keys.d/pubring.db are recorded; the counts are compared
# with what strace saw of keyboxd on the same workload (tests/fixtures/keyboxd/
# NAME.keyboxd-events.txt, made by benches/keyboxd-fixtures.sh).
#
# Usage: benches/record-keyboxd.sh [NAME...]     (default: gnupg-mixed gnupg-deleted)
#
# Environment:
#   CHROOT=/work/chroot-trixie   a Debian 13 chroot with gpg, gpgsm and keyboxd 2.4.7 (see
#                                benches/program-sweep-gnupg24.sh for how to make one)
#
# Per NAME and workload (the fixture's: gpg --with-colons --fixed-list-mode -k,
# gpg --with-colons --check-sigs, gpgsm --with-colons -k, gpgsm -k --with-validation
# --disable-dirmngr), on a fresh home inside the chroot (common.conf: use-keyboxd;
# public-keys.d/pubring.db a copy of NAME.db; NAME.trustlist.txt as trustlist.txt):
#   kbxscope --io-summary=json record --wait-daemons=3s -- PROGRAM --homedir H ARGS
# then `gpgconf --homedir H --kill all` (our own keyboxd, started by the run). Prints
# keyboxd's recorded preads, fstats, stats (pubring.db, -journal, -wal) and opens beside
# strace's from the fixture file.
set -euo pipefail
cd "$(dirname "$0")/.."
CHROOT=${CHROOT:-/work/chroot-trixie}
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(gnupg-mixed gnupg-deleted)
[ -x "$CHROOT/usr/lib/gnupg/keyboxd" ] || { echo "no keyboxd in $CHROOT" >&2; exit 2; }
cargo build --release --quiet
cmp -s target/release/kbxscope "$CHROOT/usr/local/bin/kbxscope" || install -m 755 target/release/kbxscope "$CHROOT/usr/local/bin/kbxscope"
mkdir -p "$CHROOT/var/cache/kbxscope"
fx=tests/fixtures/keyboxd
home=/tmp/record-keyboxd-home

# strace's count of CALL on FILE in the fixture's section for a workload.
strace_count() { # events-file workload-prefix call file
  awk -v w="## $2" -v c="$3" -v f="$4" '
    index($0, "## ") == 1 { on = (index($0, w) == 1) }
    on && $2 == c && $3 == f { n += $1 } END { print n + 0 }' "$1"
}

printf '%-14s %-34s %10s %10s %10s %10s\n' fixture workload "pread r/s" "fstat r/s" "stat r/s" "open r/s"
for name in "${names[@]}"; do
  events=$fx/$name.keyboxd-events.txt
  for w in "gpg --batch --with-colons --fixed-list-mode -k" "gpg --batch --with-colons --check-sigs" \
           "gpgsm --batch --with-colons -k" "gpgsm --batch -k --with-validation --disable-dirmngr"; do
    read -r prog rest <<<"$w"
    rm -rf "$CHROOT$home"
    mkdir -m 700 "$CHROOT$home" "$CHROOT$home/public-keys.d"
    echo use-keyboxd >"$CHROOT$home/common.conf"
    cp "$fx/$name.db" "$CHROOT$home/public-keys.d/pubring.db"
    [ -e "tests/fixtures/$name.trustlist.txt" ] && cp "tests/fixtures/$name.trustlist.txt" "$CHROOT$home/trustlist.txt"
    # shellcheck disable=SC2086
    json=$(chroot "$CHROOT" env KBXSCOPE_CACHE_DIR=/var/cache/kbxscope \
      kbxscope --io-summary=json record --wait-daemons=3s -- "$prog" --homedir "$home" $rest 2>&1 >/dev/null |
      grep '"processes"' || true)
    chroot "$CHROOT" gpgconf --homedir "$home" --kill all 2>/dev/null || true
    rec() { python3 -c '
import json, sys
d = json.loads(sys.argv[1]); c = {}
for p in d["processes"]:
    if p["program"] == "keyboxd":
        for k, v in p["calls"].items(): c[k] = c.get(k, 0) + v
print(c.get(sys.argv[2], 0))' "$json" "$1"; }
    key="$prog --homedir /tmp/keyboxd-fixtures/home $rest"
    sp=$(strace_count "$events" "$key" pread64 pubring.db)
    sf=$(strace_count "$events" "$key" fstat pubring.db)
    ss=$(( $(strace_count "$events" "$key" newfstatat pubring.db) + $(strace_count "$events" "$key" newfstatat pubring.db-journal) + $(strace_count "$events" "$key" newfstatat pubring.db-wal) ))
    so=$(strace_count "$events" "$key" openat pubring.db)
    printf '%-14s %-34s %10s %10s %10s %10s\n' "$name" "$prog $(sed 's/--batch //; s/--with-colons //; s/--fixed-list-mode //; s/--disable-dirmngr//' <<<"$rest")" \
      "$(rec pread)/$sp" "$(rec fstat)/$sf" "$(rec stat)/$ss" "$(rec open)/$so"
  done
done
