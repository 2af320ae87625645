#!/usr/bin/env bash
# keyboxd-fixtures.sh — keyboxd databases (public-keys.d/pubring.db) made by a real
# GnuPG 2.4 from the fixture keyboxes, with what GnuPG printed for them and what
# keyboxd did on the file.
#
# Usage:
#   keyboxd-fixtures.sh [NAME...]
#
#   NAME...   fixture keyboxes tests/fixtures/NAME.kbx; default:
#             "gnupg-mixed gnupg-deleted gnupg24-v5"
#
# Environment:
#   CHROOT=/work/chroot-trixie     a Debian 13 (trixie) chroot with gpg 2.4, strace, sqlite3:
#       apt-get install debootstrap
#       debootstrap --variant=minbase --include=gnupg,gpgsm,gnupg-utils,strace,sqlite3 \
#           trixie /work/chroot-trixie
#       mount -t proc proc /work/chroot-trixie/proc
#   OUT=tests/fixtures/keyboxd     where the files go (made if missing; existing ones replaced)
#   KEEP=0                         1: keep the work directory (homes, exports, traces)
#
# What it makes, per NAME (all GnuPG commands run inside the chroot, with --batch):
#   * Export: a home holding a copy of NAME.kbx as pubring.kbx (no common.conf, so no
#     keyboxd): `gpg --export` (all OpenPGP keys, one file) and, for every certificate
#     `gpgsm --with-colons -k` lists, `gpgsm --export FINGERPRINT` (one DER file each:
#     gpgsm --export without a pattern writes only one certificate).
#   * Two pristine homes fed the same files in the same order (`gpg --import`, then
#     `gpgsm --import` once per certificate), each with NAME.trustlist.txt copied in as
#     gpg-agent's trustlist.txt (when there is one):
#       keyboxd  `use-keyboxd` in common.conf: the keys go to public-keys.d/pubring.db
#       keybox   no common.conf: gpg 2.4.7 makes pubring.kbx
#     then `gpgconf --homedir H --kill all`. The keyboxd one's pubring.db is NAME.db.
#   * Listings, each on a fresh copy of a pristine home (same path every time, so the
#     outputs compare), daemons killed after each run:
#       NAME.gpg24-k-colons.txt            gpg --with-colons --fixed-list-mode -k
#       NAME.gpg24-check-sigs-colons.txt   gpg --with-colons --check-sigs
#       NAME.gpgsm24-k-colons.txt          gpgsm --with-colons -k
#       NAME.gpgsm24-k-validation.txt      gpgsm -k --with-validation --disable-dirmngr
#     from the keyboxd home, and the same as NAME.kbx.gpg24-*.txt / NAME.kbx.gpgsm24-*.txt
#     from the keybox home; NAME.kbx-vs-keyboxd.txt says how each pair differs (as
#     printed, and with the keys/certificates put in one order).
#   * NAME.sqlite-schema.txt: sqlite3 on a copy of NAME.db: .schema, PRAGMA page_size,
#     PRAGMA journal_mode, the config table, row counts per table, keyblob sizes per type;
#     if python3 is on the host, what the keyblobs hold (OpenPGP packet counts, the
#     ring-trust packets) and whether each is byte for byte the keyblock / certificate
#     stored in NAME.kbx.
#   * NAME.keyboxd-events.txt: keyboxd's system calls on public-keys.d/* during each
#     workload (the four listings above), on a fresh copy of the keyboxd home whose
#     common.conf also says `keyboxd-program WRAPPER`; gpg/gpgsm start keyboxd on
#     demand through it as `WRAPPER --homedir H --daemon`, and WRAPPER runs
#       strace -D -f -y -o TRACE /usr/lib/gnupg/keyboxd --homedir H --daemon
#     (-D: strace runs as a detached grandchild, so the started process is keyboxd
#     itself and exits as keyboxd's parent does; -f follows the daemon and its
#     threads). The trace ends after `gpgconf --kill all`. Counted per file: every
#     call that names the file or an fd on it (strace -y), split by result for
#     ENOENT and by lock type for fcntl; plus the sha256 and mtime of pubring.db before
#     and after, and what public-keys.d held while keyboxd ran and after it ended.
#     The client (gpg/gpgsm) is traced too, without -f (strace -y -e trace=%file,%desc),
#     to show that it never opens pubring.db or a pubring.kbx itself.
#
# Run it niced on a shared machine: nice -n 10 benches/keyboxd-fixtures.sh
set -euo pipefail
shopt -s inherit_errexit

repo=$(cd "$(dirname "$0")/.." && pwd)
fixtures=$repo/tests/fixtures
[ $# -gt 0 ] || set -- gnupg-mixed gnupg-deleted gnupg24-v5
case "${1:-}" in -h|--help) sed -n '2,60p' "$0"; exit 0 ;; esac
CHROOT=$(realpath "${CHROOT:-/work/chroot-trixie}")
OUT=${OUT:-$fixtures/keyboxd}
KEEP=${KEEP:-0}
for n in "$@"; do [ -f "$fixtures/$n.kbx" ] || { echo "no keybox: $fixtures/$n.kbx" >&2; exit 2; }; done
[ -r "$CHROOT/proc/self/stat" ] || { echo "$CHROOT/proc is not mounted: mount -t proc proc $CHROOT/proc" >&2; exit 2; }
for t in gpg gpgsm gpgconf strace sqlite3; do
  chroot "$CHROOT" sh -c "command -v $t" >/dev/null || { echo "$t missing in $CHROOT" >&2; exit 2; }
done
[ -x "$CHROOT/usr/lib/gnupg/keyboxd" ] || { echo "no keyboxd in $CHROOT" >&2; exit 2; }
command -v strace >/dev/null || { echo "strace missing on the host" >&2; exit 2; }
gpgver=$(chroot "$CHROOT" gpg --version | head -1 | awk '{print $3}')
case "$gpgver" in 2.4.*|2.5.*) ;; *) echo "gpg in $CHROOT is $gpgver, not 2.4" >&2; exit 2 ;; esac
gpgsmver=$(chroot "$CHROOT" gpgsm --version | head -1 | awk '{print $3}')
kbdver=$(chroot "$CHROOT" /usr/lib/gnupg/keyboxd --version | head -1 | awk '{print $3}')
sqlver=$(chroot "$CHROOT" sqlite3 --version | awk '{print $1}')
if grep -qs . "$CHROOT/etc/gnupg/common.conf"; then
  echo "$CHROOT/etc/gnupg/common.conf is not empty: the homes' common.conf must decide" >&2; exit 2
fi
have_python=0; command -v python3 >/dev/null && have_python=1

inner=/tmp/keyboxd-fixtures          # as GnuPG sees it; fixed, so that listings compare
outer=$CHROOT$inner
home=$inner/home                     # every listing and workload runs in this home
if [ -e "$outer" ]; then
  echo "$outer exists (another run, or KEEP=1 left it): remove it first" >&2; exit 2
fi
mkdir -p "$outer" "$OUT"
cleanup() {
  for h in "$outer"/*/; do
    [ -e "$h/S.gpg-agent" ] || [ -e "$h/S.keyboxd" ] || [ -e "$h/S.dirmngr" ] || continue
    chroot "$CHROOT" gpgconf --homedir "$inner/$(basename "$h")" --kill all >/dev/null 2>&1 || true
  done
  if [ "$KEEP" = 1 ]; then echo "kept: $outer" >&2; else rm -rf "$outer"; fi
}
trap cleanup EXIT

g() { chroot "$CHROOT" "$@"; }                 # a command inside the chroot
kill_all() { g gpgconf --homedir "$1" --kill all >/dev/null 2>&1 || true; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

# wait_gone STRING: until no process's command line holds STRING (the tracer of one
# trace file), at most 30 s.
wait_gone() {
  local i
  for ((i = 0; i < 300; i++)); do
    grep -qsF -- "$1" /proc/[0-9]*/cmdline || return 0
    sleep 0.1
  done
  echo "a process still holds $1 after 30 s" >&2; return 1
}

# fresh HOMEDIR-PRISTINE: the work home made anew as a copy of a pristine home.
fresh() {
  [ ! -e "$outer/home" ] || { kill_all "$home"; rm -rf "$outer/home"; }
  cp -a "$outer/$1" "$outer/home"
  rm -f "$outer"/home/S.*
}

# The listings, as (file suffix, command) pairs; run in $home.
suffixes=(gpg24-k-colons gpg24-check-sigs-colons gpgsm24-k-colons gpgsm24-k-validation)
command_of() {
  case "$1" in
    gpg24-k-colons)          echo "gpg --homedir $home --batch --with-colons --fixed-list-mode -k" ;;
    gpg24-check-sigs-colons) echo "gpg --homedir $home --batch --with-colons --check-sigs" ;;
    gpgsm24-k-colons)        echo "gpgsm --homedir $home --batch --with-colons -k" ;;
    gpgsm24-k-validation)    echo "gpgsm --homedir $home --batch -k --with-validation --disable-dirmngr" ;;
  esac
}

# The keyboxd wrapper (inside the chroot): strace on keyboxd; the trace file is named in
# $inner/trace-name, written before each workload.
cat >"$outer/keyboxd-strace" <<EOF
#!/bin/sh
# started by gpg/gpgsm as: keyboxd-strace --homedir H --daemon
echo "\$*" >>$inner/keyboxd-args.txt
exec strace -D -f -y -o "\$(cat $inner/trace-name)" /usr/lib/gnupg/keyboxd "\$@"
EOF
chmod 755 "$outer/keyboxd-strace"

# count_kbd TRACE: "count syscall file [detail]" for keyboxd's calls on public-keys.d/*.
# Calls split by strace (<unfinished ...> / <... resumed>) are counted at their start.
count_kbd() {
  awk -v dir="$home/public-keys.d" '
    { sub(/^[0-9]+ +/, "") }
    /^<\.\.\./ || /^\+\+\+/ || /^---/ { next }
    { p = index($0, "("); if (!p) next
      name = substr($0, 1, p - 1); a = substr($0, p + 1)
      file = ""
      if (match(a, /^[0-9]+<[^>]*>/)) {                 # fd first: read, pread64, fcntl, ...
        file = substr(a, RSTART, RLENGTH); sub(/^[0-9]+</, "", file); sub(/>$/, "", file)
      } else if (match(a, /^(AT_FDCWD<[^>]*>, )?"[^"]*"/)) {   # a path: openat, newfstatat, ...
        file = substr(a, RSTART, RLENGTH); sub(/^[^"]*"/, "", file); sub(/"$/, "", file)
      }
      if (file != dir && index(file, dir "/") != 1) next
      f = (file == dir) ? "public-keys.d/" : substr(file, length(dir) + 2)
      if (f ~ /^\.#lk/) f = ".#lk* (dotlock temp)"
      detail = ""
      if (name == "fcntl") {
        match(a, /F_[A-Z0-9]+/); cmd = substr(a, RSTART, RLENGTH)
        lt = ""; if (match(a, /l_type=F_[A-Z]+/)) lt = " " substr(a, RSTART + 7, RLENGTH - 7)
        rg = ""; if (match(a, /l_start=[0-9]+, l_len=[0-9]+/)) {
          rg = substr(a, RSTART, RLENGTH); gsub(/l_start=|l_len=/, "", rg); sub(/, /, "+", rg); rg = " @" rg }
        detail = cmd lt rg
      } else if (name == "openat") {
        if (match(a, /O_[A-Z_|]+/)) detail = substr(a, RSTART, RLENGTH)
      } else if (name == "link") {
        detail = (index(a, "pubring.db.lock") ? "-> pubring.db.lock" : "-> .#lk*x")
      }
      if ($0 ~ /= -1 ENOENT/) detail = detail (detail == "" ? "" : " ") "ENOENT"
      n[name "\t" f "\t" detail]++
    }
    END { for (k in n) { split(k, x, "\t"); printf "%6d  %-11s %-22s %s\n", n[k], x[1], x[2], x[3] } }
  ' "$1" | sort -k3,3 -k2,2 -k4
}

# count_client TRACE: the client's calls naming pubring.* / public-keys.d.
count_client() {
  awk '
    /^<\.\.\./ || /^\+\+\+/ || /^---/ { next }
    { p = index($0, "("); if (!p) next; name = substr($0, 1, p - 1); a = substr($0, p + 1)
      if (match(a, /(pubring\.(kbx|db)[^">]*|public-keys\.d[^">]*)/)) {
        f = substr(a, RSTART, RLENGTH); sub(/^.*\//, "", f)
        r = ($0 ~ /= -1 ENOENT/) ? " ENOENT" : ""
        n[name " " f r]++ } }
    END { for (k in n) printf "%6d  %s\n", n[k], k }' "$1" | sort -k2
}

# order LISTING: the primary fingerprints of the listing's keys/certificates, in order.
order() {
  awk -F: '$1 == "pub" || $1 == "crt" || $1 == "crs" { w = 1; next }
           $1 == "fpr" && w { print $10; w = 0 }
           /^ +(fingerprint|sha1 fpr): / { f = $0; sub(/^ +(fingerprint|sha1 fpr): /, "", f); gsub(/:/, "", f); print f }' "$1"
}
# records LISTING: one line per key/certificate (its lines joined), sorted.
records() {
  awk '/^(pub|crt|crs):/ || /^ +ID: 0x/ { if (r != "") print r; r = "" }
       r != "" || /^(pub|crt|crs):/ || /^ +ID: 0x/ { r = r $0 "\\n" }
       END { if (r != "") print r }' "$1" | sort
}
order_of_import() { case "$l" in gpgsm*) cat "$exp/fprs" ;; *) cat "$exp/pgp-fprs" ;; esac; }
listing_diff() {   # listing_diff KEYBOX-LISTING KEYBOXD-LISTING LABEL
  local a=$1 b=$2 l=$3
  if cmp -s "$a" "$b"; then echo "$l: identical ($(order "$a" | wc -l) keys/certificates)"; return; fi
  echo "$l: differ as printed ($(diff "$a" "$b" | grep -c '^[<>]' || true) lines of diff)"
  local ha hb
  ha=$(awk '/^(pub|crt|crs):/ || /^ +ID: 0x/ { exit } { print }' "$a")
  hb=$(awk '/^(pub|crt|crs):/ || /^ +ID: 0x/ { exit } { print }' "$b")
  if [ "$ha" = "$hb" ]; then echo "  lines before the first key: the same"
  else
    echo "  lines before the first key, keybox:"; printf '%s\n' "$ha" | sed 's/^/    /'
    echo "  lines before the first key, keyboxd:"; printf '%s\n' "$hb" | sed 's/^/    /'
  fi
  if [ "$(records "$a")" = "$(records "$b")" ]; then
    echo "  the keys/certificates: the same lines, in another order"
  else
    echo "  the keys/certificates DIFFER even when put in one order:"
    diff <(records "$a" | sed 's/\\n/\n/g') <(records "$b" | sed 's/\\n/\n/g') | sed 's/^/    /' | head -60 || true
  fi
  local oa ob
  oa=$(order "$a"); ob=$(order "$b")
  echo "  keybox order = import order (the export's order): $([ "$oa" = "$(order_of_import)" ] && echo yes || echo no)"
  echo "  keyboxd order = ascending primary fingerprint (ubid): $([ "$ob" = "$(printf '%s\n' "$ob" | LC_ALL=C sort)" ] && echo yes || echo no)"
  echo "  order, keybox:  $(printf '%s\n' "$oa" | cut -c1-8 | tr '\n' ' ')"
  echo "  order, keyboxd: $(printf '%s\n' "$ob" | cut -c1-8 | tr '\n' ' ')"
}

stamp=$(date -u '+%Y-%m-%d %H:%M UTC')
for n in "$@"; do
  echo "== $n" >&2
  src=$outer/src-$n exp=$outer/exp-$n
  rm -rf "$src" "$exp"; mkdir -m 700 "$src"; mkdir "$exp"
  cp "$fixtures/$n.kbx" "$src/pubring.kbx"
  # 1. export, from a copy of the keybox (gpg may compact the copy: deleted blobs)
  g gpg --homedir "$inner/src-$n" --batch --export >"$exp/openpgp.pgp" 2>"$exp/export.err"
  g gpgsm --homedir "$inner/src-$n" --batch --with-colons -k 2>>"$exp/export.err" \
    | awk -F: '$1 == "crt" || $1 == "crs" { w = 1; next } $1 == "fpr" && w { print $10; w = 0 }' >"$exp/fprs"
  i=0
  while read -r f; do
    i=$((i + 1))
    g gpgsm --homedir "$inner/src-$n" --batch --export "$f" >"$exp/cert-$(printf %03d $i).der" 2>>"$exp/export.err"
    [ -s "$exp/cert-$(printf %03d $i).der" ] || { echo "gpgsm exported nothing for $f" >&2; exit 1; }
  done <"$exp/fprs"
  kill_all "$inner/src-$n"
  ncert=$i
  g gpg --homedir "$inner/src-$n" --batch --with-colons -k 2>/dev/null \
    | awk -F: '$1 == "pub" { w = 1; next } $1 == "fpr" && w { print $10; w = 0 }' >"$exp/pgp-fprs"
  npgp=$(grep -c . "$exp/pgp-fprs" || true)
  kill_all "$inner/src-$n"
  echo "   exported $npgp OpenPGP keys ($(stat -c %s "$exp/openpgp.pgp") bytes), $ncert certificates" >&2

  # 2. the two pristine homes
  for store in keyboxd keybox; do
    h=$outer/$store-$n
    rm -rf "$h"; mkdir -m 700 "$h"
    [ "$store" = keybox ] || echo use-keyboxd >"$h/common.conf"
    [ ! -f "$fixtures/$n.trustlist.txt" ] || cp "$fixtures/$n.trustlist.txt" "$h/trustlist.txt"
    if [ -s "$exp/openpgp.pgp" ]; then
      g gpg --homedir "$inner/$store-$n" --batch --import "$inner/exp-$n/openpgp.pgp" >"$exp/import-$store.log" 2>&1
    fi
    for c in "$exp"/cert-*.der; do
      [ -e "$c" ] || continue
      g gpgsm --homedir "$inner/$store-$n" --batch --import "$inner/exp-$n/${c##*/}" >>"$exp/import-$store.log" 2>&1
    done
    kill_all "$inner/$store-$n"
    rm -f "$h"/S.*
  done
  db=$outer/keyboxd-$n/public-keys.d/pubring.db
  [ -f "$db" ] || { echo "no pubring.db in the keyboxd home" >&2; exit 1; }
  [ ! -e "$outer/keyboxd-$n/pubring.kbx" ] || { echo "the keyboxd home has a pubring.kbx" >&2; exit 1; }
  [ -f "$outer/keybox-$n/pubring.kbx" ] || { echo "no pubring.kbx in the keybox home" >&2; exit 1; }
  [ ! -e "$outer/keybox-$n/public-keys.d/pubring.db" ] || { echo "the keybox home has a pubring.db" >&2; exit 1; }
  leftover=$(ls -A "$outer/keyboxd-$n/public-keys.d" | grep -vx pubring.db || true)
  [ -z "$leftover" ] || { echo "public-keys.d holds more than pubring.db after kill: $leftover" >&2; exit 1; }
  cp "$db" "$OUT/$n.db"
  dbsha=$(sha "$OUT/$n.db")

  # 3. listings, keyboxd and keybox
  for store in keyboxd keybox; do
    for s in "${suffixes[@]}"; do
      fresh "$store-$n"
      if [ "$store" = keyboxd ]; then o=$OUT/$n.$s.txt; else o=$OUT/$n.kbx.$s.txt; fi
      # shellcheck disable=SC2046
      g $(command_of "$s") >"$o" 2>"$outer/listing.err" || true
      kill_all "$home"
      if [ "$store" = keyboxd ] && [ "$(sha "$outer/home/public-keys.d/pubring.db")" != "$dbsha" ]; then
        echo "note: $s changed pubring.db" >&2
      fi
    done
  done
  {
    echo "# $n: gpg $gpgver listings, keybox (pubring.kbx, left, <) vs keyboxd (pubring.db, right, >)"
    echo "# homes fed the same export in the same order; both listed at $home; $stamp"
    for s in "${suffixes[@]}"; do echo; listing_diff "$OUT/$n.kbx.$s.txt" "$OUT/$n.$s.txt" "$s"; done
  } >"$OUT/$n.kbx-vs-keyboxd.txt"

  # 4. the schema and the rows, on a copy
  cp "$OUT/$n.db" "$outer/q.db"
  {
    echo "# sqlite3 $sqlver on a copy of $n.db ($(stat -c %s "$OUT/$n.db") bytes, sha256 $dbsha)"
    echo "# made by keyboxd $kbdver: gpg --import / gpgsm --import into a home with use-keyboxd"
    echo "## .schema"
    g sqlite3 "$inner/q.db" .schema
    echo "## PRAGMA page_size; PRAGMA journal_mode; PRAGMA page_count; PRAGMA foreign_keys;"
    g sqlite3 "$inner/q.db" 'PRAGMA page_size;' 'PRAGMA journal_mode;' 'PRAGMA page_count;' 'PRAGMA foreign_keys;'
    echo "## SELECT * FROM config"
    g sqlite3 "$inner/q.db" 'SELECT * FROM config;'
    echo "## row counts"
    for t in $(g sqlite3 "$inner/q.db" "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name;"); do
      echo "$t|$(g sqlite3 "$inner/q.db" "SELECT count(*) FROM $t;")"
    done
    echo "## pubkey: type|rows|sum(length(keyblob))|min|max|ephemeral|revoked"
    g sqlite3 "$inner/q.db" 'SELECT type, count(*), sum(length(keyblob)), min(length(keyblob)), max(length(keyblob)), sum(ephemeral), sum(revoked) FROM pubkey GROUP BY type;'
    echo "## fingerprint: subkey|rows|length(fpr)|length(kid)|length(keygrip)"
    g sqlite3 "$inner/q.db" 'SELECT subkey > 0, count(*), length(fpr), length(kid), length(keygrip) FROM fingerprint GROUP BY subkey > 0, length(fpr), length(kid), length(keygrip);'
    echo "## userid: type|rows|with addrspec"
    g sqlite3 "$inner/q.db" 'SELECT type, count(*), count(addrspec) FROM userid GROUP BY type;'
    echo "## ubid = the first 20 bytes of the primary fingerprint (v5 keys: of 32)"
    g sqlite3 "$inner/q.db" 'SELECT count(*), sum(p.ubid = substr(f.fpr, 1, 20)) FROM pubkey p JOIN fingerprint f ON f.ubid = p.ubid AND f.subkey = 0;'
    if [ "$have_python" = 1 ]; then
      echo "## keyblob contents (python3 on the host, read-only)"
      python3 - "$OUT/$n.db" "$fixtures/$n.kbx" <<'EOF'
import collections, sqlite3, struct, sys
db, kbx = sys.argv[1:]
def packets(b):
    i = 0
    while i < len(b):
        h = b[i]; i += 1
        if h & 0x40:
            tag = h & 0x3f; l = b[i]; i += 1
            if 192 <= l < 224: l = ((l - 192) << 8) + b[i] + 192; i += 1
            elif l == 255: l = int.from_bytes(b[i:i + 4], 'big'); i += 4
        else:
            tag = (h >> 2) & 0xf; w = [1, 2, 4][h & 3]
            l = int.from_bytes(b[i:i + w], 'big'); i += w
        yield tag, b[i:i + l]; i += l
con = sqlite3.connect('file:' + db + '?mode=ro', uri=True)
rows = [(t, bytes(k)) for t, k in con.execute('SELECT type, keyblob FROM pubkey')]
tags, rt = collections.Counter(), collections.Counter()
for t, k in rows:
    if t != 1: continue
    prev = None
    for tag, body in packets(k):
        tags[tag] += 1
        if tag == 12: rt[(prev, body[:2].hex(), body[2:5] == b'gpg', len(body))] += 1
        prev = tag
print('OpenPGP keyblobs: packets by tag:', ', '.join(f'{k}: {v}' for k, v in sorted(tags.items())))
print('ring-trust packets (tag 12) by preceding packet tag, trust/sigcache bytes, "gpg" magic, length:')
for k, v in sorted(rt.items(), key=str): print(f'  {v} x {k}')
x509 = [k for t, k in rows if t == 2]
print(f'X.509 keyblobs: {len(x509)}, all DER SEQUENCEs: {all(k[:1] == bytes([0x30]) for k in x509)}')
b = open(kbx, 'rb').read(); i = 0; kinds = collections.Counter(); pgp, x509s = {}, collections.Counter()
while i < len(b):
    ln, typ = struct.unpack('>IB', b[i:i + 5]); kinds[typ] += 1
    if typ in (2, 3):
        off, dl = struct.unpack('>II', b[i + 8:i + 16]); k = b[i + off:i + off + dl]
        if typ == 2: pgp[next(packets(k))[1]] = k
        else: x509s[k] += 1
    i += ln
print(f'source keybox {kbx.split("/")[-1]}: blobs by type {dict(sorted(kinds.items()))} (0 deleted, 1 header, 2 OpenPGP, 3 X.509)')
same = rt_only = other = missing = 0; changes = collections.Counter()
for t, k in rows:
    if t != 1: continue
    pk = list(packets(k)); src = pgp.get(pk[0][1])
    if src is None: missing += 1; continue
    if src == k: same += 1; continue
    sp = list(packets(src))
    if [p for p in sp if p[0] != 12] != [p for p in pk if p[0] != 12] or len(sp) != len(pk): other += 1; continue
    rt_only += 1
    prev = None
    for (ta, ba), (td, bd) in zip(sp, pk):
        if ba != bd: changes[(prev, ba.hex(), bd.hex())] += 1
        prev = ta
print(f'OpenPGP keyblobs vs the keyblock in the keybox blob with the same primary key packet: {same} byte-identical, '
      f'{rt_only} differ only in ring-trust packets, {other} differ otherwise, {missing} not in the keybox')
for (prev, a_, b_), v in sorted(changes.items(), key=str):
    print(f'  {v} ring-trust packet(s) after a tag-{prev} packet: keybox {a_} -> db {b_}')
dx = collections.Counter(k for t, k in rows if t == 2)
print(f'X.509 keyblobs byte-identical to a certificate in the keybox: {sum((dx & x509s).values())} of {len(x509)}; '
      f'certificates only in the keybox: {sum((x509s - dx).values())}')
EOF
    fi
  } >"$OUT/$n.sqlite-schema.txt"
  rm -f "$outer/q.db"

  # 5. keyboxd's file events per workload
  ev=$OUT/$n.keyboxd-events.txt
  {
    echo "# $n: keyboxd $kbdver's system calls on $home/public-keys.d/* per workload; $stamp"
    echo "# each workload on a fresh copy of the home NAME.db was taken from (its pubring.db: sha256 ${dbsha:0:16}),"
    echo "# whose common.conf says:  use-keyboxd / keyboxd-program $inner/keyboxd-strace"
    echo "# keyboxd-strace runs:     exec strace -D -f -y -o TRACE /usr/lib/gnupg/keyboxd \"\$@\""
    echo "# the client runs under:   strace -y -e trace=%file,%desc -o CLIENT chroot $CHROOT COMMAND"
    echo "# after it:                gpgconf --homedir $home --kill all   (ends keyboxd, hence the trace)"
    echo "# counts: calls naming the file or an fd on it (strace -y); a call split by strace counted once"
  } >"$ev"
  for s in "${suffixes[@]}"; do
    fresh "keyboxd-$n"
    printf 'use-keyboxd\nkeyboxd-program %s/keyboxd-strace\n' "$inner" >"$outer/home/common.conf"
    trace=$inner/trace-$n-$s.txt client=$outer/client-$n-$s.txt
    echo "$trace" >"$outer/trace-name"; rm -f "$outer/keyboxd-args.txt"
    before=$(sha "$outer/home/public-keys.d/pubring.db"); mt0=$(stat -c %y "$outer/home/public-keys.d/pubring.db")
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046
    strace -y -e trace=%file,%desc -o "$client" chroot "$CHROOT" $(command_of "$s") >"$outer/ev.out" 2>"$outer/ev.err" || true
    t1=$(date +%s.%N)
    during=$(ls -A "$outer/home/public-keys.d" | sed 's/^\.#lk.*/.#lk* (dotlock temp)/' | sort | tr '\n' ' ')
    kill_all "$home"
    wait_gone "$trace"
    after=$(sha "$outer/home/public-keys.d/pubring.db"); mt1=$(stat -c %y "$outer/home/public-keys.d/pubring.db")
    left=$(ls -A "$outer/home/public-keys.d" | tr '\n' ' ')
    [ -s "$CHROOT$trace" ] || { echo "no keyboxd trace for $s (keyboxd not started through the wrapper?)" >&2; cat "$outer/ev.err" >&2; exit 1; }
    cmp -s "$outer/ev.out" "$OUT/$n.$s.txt" && same="the same as $n.$s.txt" || same="DIFFERS from $n.$s.txt"
    {
      echo
      echo "## $(command_of "$s")"
      echo "output: $(wc -l <"$outer/ev.out") lines, $same; client wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s (traced)"
      echo "keyboxd started as: keyboxd-strace $(head -1 "$outer/keyboxd-args.txt" 2>/dev/null || echo '(not started)')  ($(grep -c . "$outer/keyboxd-args.txt" 2>/dev/null || echo 0) start)"
      echo "keyboxd processes/threads traced: $(awk '{print $1}' "$CHROOT$trace" | sort -u | wc -l)"
      echo "pubring.db sha256 before ${before:0:16} after ${after:0:16}: $([ "$before" = "$after" ] && echo unchanged || echo CHANGED); mtime $([ "$mt0" = "$mt1" ] && echo unchanged || echo "CHANGED $mt0 -> $mt1")"
      echo "public-keys.d while keyboxd ran: $during"
      echo "public-keys.d after --kill all:  $left"
      echo "SQLite read transactions (shared locks taken): $(grep -c 'F_RDLCK, l_whence=SEEK_SET, l_start=1073741826, l_len=510' "$CHROOT$trace" || true)"
      echo "requests keyboxd read from its clients (gpgconf --kill sends KILLKEYBOXD): $(grep -E 'recvmsg' "$CHROOT$trace" | grep -oE 'iov_base="[A-Z][A-Z_]+' | sed 's/.*iov_base="//' | sort | uniq -c | awk '{ printf "%s %d, ", $2, $1 }' | sed 's/, $//')"
      echo "SEARCH/NEXT requests read while one shared lock was held (no unlock between): $(awk '
        /F_RDLCK, l_whence=SEEK_SET, l_start=1073741826, l_len=510/ { held = 1; inside = 0 }
        /pubring\.db>, F_SETLK, \{l_type=F_UNLCK, l_whence=SEEK_SET, l_start=0, l_len=0\}/ { if (held && inside > max) max = inside; held = 0 }
        /recvmsg/ && /iov_base="(SEARCH|NEXT)/ { all++; if (held) inside++ }
        END { if (held && inside > max) max = inside; printf "at most %d of %d", max, all }' "$CHROOT$trace")"
      echo "count  call        file                   detail"
      count_kbd "$CHROOT$trace"
      echo "totals on pubring.db: $(count_kbd "$CHROOT$trace" | awk '$3 == "pubring.db" { n[$2] += $1 } END { for (k in n) printf "%s %d, ", k, n[k] }' | sed 's/, $//')"
      echo "pread64 on pubring.db: $(awk -v db="$home/public-keys.d/pubring.db" '
        { pid = $1; line = $0; sub(/^[0-9]+ +/, "", line); tail = ""
          if (index(line, "pread64(") == 1 && index(line, "<" db ">")) {
            if (line ~ /<unfinished \.\.\.>$/) pend[pid] = 1; else tail = line
          } else if (index(line, "<... pread64 resumed>") == 1 && pend[pid]) { delete pend[pid]; tail = line }
          if (tail != "" && match(tail, /, [0-9]+, [0-9]+\) += [0-9]+$/)) {
            split(substr(tail, RSTART + 2), x, /[,) =]+/); n++; bytes += x[3]; seen[x[2] "+" x[1]]++ } }
        END { d = 0; for (k in seen) d++; printf "%d calls, %d bytes, %d distinct (offset, length)", n, bytes, d }' "$CHROOT$trace")"
      echo "writes on pubring.db / journal / wal: $(count_kbd "$CHROOT$trace" | awk '$3 ~ /^pubring\.db(-journal|-wal|-shm)?$/ && $2 ~ /^(write|pwrite64|pwritev2?|writev|ftruncate|fsync|fdatasync)$/ { w += $1 } END { print w + 0 }')"
      echo "the client's own calls naming pubring.* or public-keys.d:"
      c=$(count_client "$client"); [ -n "$c" ] && echo "$c" || echo "     0  (none)"
    } >>"$ev"
    if [ "$KEEP" != 1 ]; then rm -f "$CHROOT$trace" "$client"; fi
  done
  rm -rf "$outer/home"
  echo "   $n.db $(stat -c %s "$OUT/$n.db") bytes" >&2
done
echo "done: $OUT ($stamp; gpg $gpgver, gpgsm $gpgsmver, keyboxd $kbdver, sqlite3 $sqlver)" >&2
