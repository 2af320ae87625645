#!/usr/bin/env bash
# Time `gpg --list-sigs` or `gpg --check-sigs` (GnuPG 2.2: fixed 8 KiB
# reads) and kbxscope's `list --with-sigs` / `--check-sigs` with its three
# lookup strategies on the same keybox, round robin, RUNS rounds.
# Usage: benches/sigs-vs-gpg.sh [with-sigs|check-sigs] [KEYBOX] [RUNS]
# Default keybox: the built-in one (generated with `kbxscope gen --preset seed`).
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
t() { /usr/bin/time -f "%e %U %S" -o "$work/t" "$@" >/dev/null 2>&1 || true; cat "$work/t" | tail -1; }
printf '%-28s %8s %8s %8s\n' variant wall user sys
# Every variant reads a fresh copy, made the same way just before it (see
# validation-vs-gpgsm.sh: the page cache's folio layout changes sys time).
for r in $(seq "$runs"); do
  cp "$kbx" "$work/home/pubring.kbx"    # gpg may rewrite its keybox: a fresh copy each time
  printf '%-28s %8s %8s %8s\n' "gpg $(gpg --version | head -1 | awk '{print $3}') $gpgcmd" $(t gpg --homedir "$work/home" --batch "$gpgcmd")
  for l in gnupg scan index; do
    [ "$l" = scan ] && [ "${SKIP_SCAN:-}" = 1 ] && continue
    cp "$kbx" "$work/copy.kbx"
    printf '%-28s %8s %8s %8s\n' "kbxscope --lookup $l" $(t $K --kbx-buffer-size 0 list "--$mode" --lookup "$l" "$work/copy.kbx")
  done
done
