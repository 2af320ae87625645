#!/usr/bin/env bash
# import-keyboxd.sh — GnuPG 2.4's import of a real keyring, keybox against keyboxd against keyboxd
# with bulk import: the real gpg 2.4.7 (Debian 13 chroot) beside kbxscope's replay of each.
#
# Usage: benches/import-keyboxd.sh [KEYRING]   (default /usr/share/keyrings/debian-keyring.gpg)
#
# Environment:
#   CHROOT=/srv/trixie  a Debian 13 chroot with gnupg 2.4.7 and /proc mounted (see
#                       benches/keyboxd-import-fixture.sh)
#   K=…/kbxscope        the kbxscope to run (default: built here)
#
# One round, interleaved: for each variant the real gpg into a fresh empty home, then the
# replay onto a fresh private copy; the wall time is taken around the whole command. The
# replay's calls come from its --io-summary=json (per file: the store, its journal).
set -euo pipefail
cd "$(dirname "$0")/.."
CHROOT=${CHROOT:-/srv/trixie}
KEYRING=${1:-/usr/share/keyrings/debian-keyring.gpg}
if [ -z "${K:-}" ]; then cargo build --release --quiet; K=$PWD/target/release/kbxscope; fi
[ -e "$CHROOT/proc/self/stat" ] || { echo "$CHROOT: no chroot with /proc mounted" >&2; exit 1; }
inner=/tmp/kbxscope-import-bench
outer=$CHROOT$inner
trap 'chroot "$CHROOT" gpgconf --homedir "$inner/home" --kill all 2>/dev/null || true; rm -rf "$outer"' EXIT
rm -rf "$outer"; mkdir -p "$outer"
cp "$KEYRING" "$outer/keys.gpg"
now() { date +%s.%N; }

gpg24() { # VARIANT: a fresh home, gpg 2.4.7's import, the wall
  rm -rf "$outer/home"; mkdir -m 700 "$outer/home"
  local opts=()
  case $1 in
    keybox) ;;
    keyboxd) echo use-keyboxd > "$outer/home/common.conf" ;;
    bulk) echo use-keyboxd > "$outer/home/common.conf"; opts=(--import-options bulk-import) ;;
  esac
  local t0 t1
  t0=$(now)
  chroot "$CHROOT" gpg --homedir "$inner/home" --batch "${opts[@]}" --import "$inner/keys.gpg" 2>"$outer/gpg.err"
  chroot "$CHROOT" gpgconf --homedir "$inner/home" --kill all
  t1=$(now)
  echo "gpg 2.4.7 $1: $(grep 'Total number processed' "$outer/gpg.err" | tr -s ' '), wall $(echo "$t1 - $t0" | bc)s"
}

replay() { # VARIANT
  local opts=()
  case $1 in
    keybox) ;;
    keyboxd) opts=(--onto keyboxd) ;;
    bulk) opts=(--onto keyboxd --bulk-import) ;;
  esac
  local t0 t1
  t0=$(now)
  "$K" --gnupg-version 2.4 --io-summary=json import "${opts[@]}" "$KEYRING" 2>"$outer/k.err"
  t1=$(now)
  echo "replay $1: wall $(echo "$t1 - $t0" | bc)s"
  grep '^{"buffer_size"' "$outer/k.err" | jq -r '.files[] | select(.events.total > 0) |
    "  \(.path | split("/") | last): \(.events | to_entries | map(select(.value > 0 and .key != "total")) | map("\(.key) \(.value)") | join(", "))"'
}

for v in keybox keyboxd bulk; do
  gpg24 "$v"
  replay "$v"
done
