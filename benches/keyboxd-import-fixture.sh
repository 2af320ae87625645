#!/usr/bin/env bash
# keyboxd-import-fixture.sh — what a real keyboxd (GnuPG 2.4.7) does on its files while gpg
# imports the Debian subset's 24 keys into a new keyboxd home: the test
# `import_into_keyboxd_makes_keyboxds_calls` holds kbxscope's replay against it.
#
# Usage:
#   keyboxd-import-fixture.sh                  # gpg --import into a new keyboxd home
#   MODE=bulk keyboxd-import-fixture.sh        # the same with --import-options bulk-import
#   MODE=again keyboxd-import-fixture.sh       # the keys imported a second time (all unchanged)
#   MODE=refresh keyboxd-import-fixture.sh     # onto the keys with their signatures made before
#                                              # 2016 only (--import-filter drop-sig): new signatures
#   MODE=delete keyboxd-import-fixture.sh      # gpg --batch --yes --delete-keys of the 1st, 5th
#                                              # and 10th key and of a fingerprint not there
#   MODE=certs keyboxd-import-fixture.sh       # gpgsm --batch --import of the mixed fixture's 24
#                                              # certificates (tests/fixtures/gnupg-mixed.certs.pem)
#   MODE=certs-delete keyboxd-import-fixture.sh  # gpgsm --batch --delete-keys of two of them and a
#                                              # fingerprint not there, between them
#   (only the last gpg run is traced; the first import of again, refresh and delete is not)
#
# Environment:
#   CHROOT=/srv/trixie    a Debian 13 (trixie) chroot with gpg 2.4, strace, sqlite3, /proc mounted:
#       debootstrap --variant=minbase --include=gnupg,gpgsm,gnupg-utils,strace,sqlite3 trixie DIR
#       mount -t proc proc DIR/proc
#   OUT=tests/fixtures/keyboxd/debian-subset.import-events.txt
#       (with MODE=bulk, again, refresh: debian-subset.MODE-import-events.txt beside it; with
#       MODE=certs and certs-delete: gnupg-mixed.certs-import-events.txt, gnupg-mixed.certs-delete-events.txt)
#
# What it does:
#   * The keys: the machine's gpg (2.2.40) exports every key of tests/fixtures/real/debian-subset.kbx
#     by fingerprint, in listing order (as the test does; the file's sha256 is written down).
#   * A new home inside the chroot with `use-keyboxd` and `keyboxd-program` pointing at a wrapper
#     that runs keyboxd under `strace -f -y`; `gpg --batch --import KEYS`, then
#     `gpgconf --kill all` (keyboxd exits, strace ends).
#   * Counts: every call naming a file of public-keys.d or a descriptor on one (strace -y), per
#     file (pubring.db, pubring.db-journal, pubring.db-wal, pubring.db.lock, the dotlock's own
#     file `.#lk*`, the directory) and system call; then each pubkey row's ubid and the sha256
#     of its keyblob, from the database keyboxd wrote.
set -euo pipefail
cd "$(dirname "$0")/.."
CHROOT=${CHROOT:-/srv/trixie}
MODE=${MODE:-new}
first=()
prog=gpg
input=keys.gpg
case $MODE in
  new) OUT=${OUT:-tests/fixtures/keyboxd/debian-subset.import-events.txt}; options=() ;;
  bulk) OUT=${OUT:-tests/fixtures/keyboxd/debian-subset.bulk-import-events.txt}; options=(--import-options bulk-import) ;;
  again) OUT=${OUT:-tests/fixtures/keyboxd/debian-subset.again-import-events.txt}; options=(); first=(--import) ;;
  refresh)
    OUT=${OUT:-tests/fixtures/keyboxd/debian-subset.refresh-import-events.txt}; options=()
    first=(--import-filter "drop-sig=sig_created_d > 2016-01-01" --import)
    ;;
  delete) OUT=${OUT:-tests/fixtures/keyboxd/debian-subset.delete-events.txt}; options=(); first=(--import) ;;
  certs) OUT=${OUT:-tests/fixtures/keyboxd/gnupg-mixed.certs-import-events.txt}; options=(); prog=gpgsm; input=certs.pem ;;
  certs-delete)
    OUT=${OUT:-tests/fixtures/keyboxd/gnupg-mixed.certs-delete-events.txt}; options=(); first=(--import)
    prog=gpgsm; input=certs.pem
    ;;
  *) echo "MODE: new, bulk, again, refresh, delete, certs or certs-delete" >&2; exit 2 ;;
esac
[ -e "$CHROOT/proc/self/stat" ] || { echo "$CHROOT: no chroot with /proc mounted" >&2; exit 1; }
work=$(mktemp -d)
inner=/tmp/kbxscope-import-fixture
outer=$CHROOT$inner
trap 'rm -rf "$work" "$outer"' EXIT
rm -rf "$outer"

mkdir -m 700 "$work/src"
cp tests/fixtures/real/debian-subset.kbx "$work/src/pubring.kbx"
fprs=$(gpg --homedir "$work/src" --batch --with-colons -k | awk -F: '/^pub:/{p=1;next} p&&/^fpr:/{print $10;p=0}')
# shellcheck disable=SC2086  # one argument per fingerprint
gpg --homedir "$work/src" --batch --output "$work/keys.gpg" --export $fprs
gpgconf --homedir "$work/src" --kill all

mkdir -p "$outer"
mkdir -m 700 "$outer/home"
cp "$work/keys.gpg" "$outer/keys.gpg"
cp tests/fixtures/gnupg-mixed.certs.pem "$outer/certs.pem"
# gpgsm as the replay assumes it: it never asks dirmngr.
printf 'disable-dirmngr\n' > "$outer/home/gpgsm.conf"
cat > "$outer/keyboxd-strace" <<WRAP
#!/bin/sh
exec strace -D -f -y -o $inner/keyboxd.trace /usr/lib/gnupg/keyboxd "\$@"
WRAP
chmod +x "$outer/keyboxd-strace"
if [ ${#first[@]} -gt 0 ]; then
  # The first import, by an untraced keyboxd.
  printf 'use-keyboxd\n' > "$outer/home/common.conf"
  chroot "$CHROOT" $prog --homedir "$inner/home" --batch "${first[@]}" "$inner/$input" 2>/dev/null || [ $prog = gpgsm ]
  chroot "$CHROOT" gpgconf --homedir "$inner/home" --kill all
  for _ in $(seq 100); do [ -e "$outer/home/public-keys.d/pubring.db.lock" ] || break; sleep 0.1; done
fi
printf 'use-keyboxd\nkeyboxd-program %s/keyboxd-strace\n' "$inner" > "$outer/home/common.conf"
if [ "$MODE" = certs-delete ]; then
  # The first certificate, one not there, the last (gpgsm deletes them last first and stops at
  # the one it cannot find).
  gone="DC724118AF31B2AFC7CA8C5576257FC4704571A5 0000000000000000000000000000000000000001 23772DCB9D901AEBFE7EB947872590F35D208C25"
  # shellcheck disable=SC2086
  summary="delete $gone: $(chroot "$CHROOT" gpgsm --homedir "$inner/home" --batch --delete-keys $gone 2>&1 | tr -s ' ' | tr '\n' ';' || true)"
elif [ "$MODE" = certs ]; then
  # gpgsm exits 2 after a certificate whose issuer it cannot find; its summary says what it did.
  summary=$(chroot "$CHROOT" gpgsm --homedir "$inner/home" --batch --import "$inner/certs.pem" 2>&1 | grep -E 'total number processed|imported:|unchanged:|not imported:' | tr -s ' ' | tr '\n' ';' || true)
elif [ "$MODE" = delete ]; then
  # shellcheck disable=SC2086  # one fingerprint per word
  set -- $fprs
  gone="$1 $5 ${10} 0000000000000000000000000000000000000000"
  # shellcheck disable=SC2086
  summary="delete $gone: $(chroot "$CHROOT" gpg --homedir "$inner/home" --batch --yes --delete-keys $gone 2>&1 | tr -s ' ' | tr '\n' ';' || true)"
else
  summary=$(chroot "$CHROOT" gpg --homedir "$inner/home" --batch "${options[@]}" --import "$inner/keys.gpg" 2>&1 | grep -E 'Total number processed|imported:|unchanged:|new signatures:|new user IDs:|new subkeys:' | tr -s ' ' | tr '\n' ';')
fi
chroot "$CHROOT" gpgconf --homedir "$inner/home" --kill all
# strace -D ends when keyboxd does.
for _ in $(seq 100); do pgrep -f "$inner/keyboxd.trace" >/dev/null || break; sleep 0.1; done

{
  what="imported the Debian subset's keys"
  [ "$MODE" != delete ] || what="deleted keys (see below) of the Debian subset's keys"
  [ "$MODE" != certs ] || what="imported the mixed fixture's certificates"
  [ "$MODE" != certs-delete ] || what="deleted certificates (see below) of the mixed fixture's"
  echo "# keyboxd 2.4.7's system calls on $inner/home/public-keys.d/* while $prog 2.4.7 ${options[*]:+(${options[*]}) }$what"
  echo "# into a new keyboxd home (benches/keyboxd-import-fixture.sh, $(date -u '+%Y-%m-%d %H:%M UTC'))"
  [ ${#first[@]} -eq 0 ] || echo "# (mode $MODE: onto the database of a first, untraced $prog ${first[*]} of the same keys)"
  echo "# keys: sha256 $(sha256sum "$outer/$input" | cut -c1-16), $(wc -c < "$outer/$input") bytes; $prog said: $summary"
  echo "# counts: calls naming the file or an fd on it (strace -y); format: count call file"
  python3 - "$outer/keyboxd.trace" "$inner/home/public-keys.d" <<'PY'
import collections, re, sys
trace, pkd = sys.argv[1], sys.argv[2]
counts = collections.Counter()
for line in open(trace):
    m = re.match(r'\d+\s+([a-z0-9_]+)\((.*)', line)
    if not m:
        continue
    call, args = m.groups()
    f = re.match(r'-?\d+<([^>]*)>', args) or re.match(r'AT_FDCWD<[^>]*>, "([^"]*)"', args) or re.match(r'"([^"]*)"', args)
    if not f or not f.group(1).startswith(pkd):
        continue
    name = f.group(1)[len(pkd):].lstrip('/') or '.'
    if name.startswith('.#lk'):
        name = '.#lk*'
    counts[(name, call)] += 1
for (name, call), n in sorted(counts.items()):
    print(f"{n:8} {call:12} {name}")
PY
  chroot "$CHROOT" sqlite3 "$inner/home/public-keys.d/pubring.db" \
    "SELECT 'ubid ' || hex(ubid) || ' ' || length(keyblob) FROM pubkey ORDER BY rowid" 
} > "$work/out.txt"
# The keyblobs' digests, with the machine's sha256sum (the chroot's sqlite3 has no hash function).
while read -r tag ubid len; do
  if [ "$tag" = ubid ]; then
    d=$(chroot "$CHROOT" sqlite3 "$inner/home/public-keys.d/pubring.db" "SELECT hex(keyblob) FROM pubkey WHERE hex(ubid)='$ubid'" | xxd -r -p | sha256sum | cut -c1-64)
    echo "ubid $ubid $len $d"
  else
    echo "$tag $ubid $len"
  fi
done < "$work/out.txt" | sed 's/ *$//' > "$OUT"
echo "wrote $OUT"
