#!/usr/bin/env bash
# The README's test command again, on a machine whose user runs GnuPG the
# way desktops do: a home of their own (~/.gnupg with a keybox,
# common.conf's use-keyboxd, gpg.conf options that change listings and
# trust), their gpg-agent and dirmngr running for it (and keyboxd, from
# the GnuPG 2.4.7 chroot when KBXSCOPE_GNUPG24_CHROOT names one), sockets
# in /run/user/UID as systemd makes them, an odd locale and time zone, a
# TMPDIR of their own and a damaged file in kbxscope's cache. No test may
# see any of it (tests/common: hermetic), so every test passes as on a
# clean machine.
#
# Usage: .ci/hostile.sh [COMMAND…]   (default: cargo test --release, the
# README's test command; benches/first-minutes.sh runs both README
# commands of a fresh clone in it)
set -euo pipefail
cd "$(dirname "$0")/.."
user=$(mktemp -d /tmp/kbxscope-hostile-XXXXXX)
gnupg=$user/.gnupg
export CARGO_HOME=${CARGO_HOME:-$HOME/.cargo} RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
made_run=
run_dir=/run/user/$(id -u)
if [ ! -d "$run_dir" ]; then
  mkdir -p -m 700 "$run_dir"
  made_run=1
fi
cleanup() {
  gpgconf --homedir "$gnupg" --kill all 2>/dev/null || true
  if [ -n "${KBXSCOPE_GNUPG24_CHROOT:-}" ]; then
    chroot "$KBXSCOPE_GNUPG24_CHROOT" gpgconf --homedir /tmp/hostile-gnupg --kill all 2>/dev/null || true
    rm -rf "$KBXSCOPE_GNUPG24_CHROOT/tmp/hostile-gnupg"
  fi
  rm -rf "$user"
  [ -z "$made_run" ] || rm -rf "$run_dir"
}
trap cleanup EXIT
mkdir -m 700 "$gnupg" "$user/tmp"
cp tests/fixtures/gnupg-mixed.kbx "$gnupg/pubring.kbx"
cp tests/fixtures/gnupg-mixed.trustlist.txt "$gnupg/trustlist.txt"
printf 'use-keyboxd\n' > "$gnupg/common.conf"
printf 'trust-model direct\nkeyserver hkps://keys.example.invalid\nno-auto-check-trustdb\nwith-fingerprint\nkeyid-format long\n' > "$gnupg/gpg.conf"
printf 'disable-crl-checks\n' > "$gnupg/gpgsm.conf"
# A damaged built-in keybox where the user's cache keeps it.
mkdir -p "$user/.cache/kbxscope"
head -c 1000 tests/fixtures/gnupg-mixed.kbx > "$user/.cache/kbxscope/seed-v2-seed1.kbx"
# The user's daemons, running for the user's home.
HOME=$user gpg-agent --homedir "$gnupg" --daemon > /dev/null
HOME=$user dirmngr --homedir "$gnupg" --daemon > /dev/null
if [ -n "${KBXSCOPE_GNUPG24_CHROOT:-}" ]; then
  mkdir -p -m 700 "$KBXSCOPE_GNUPG24_CHROOT/tmp/hostile-gnupg"
  echo use-keyboxd > "$KBXSCOPE_GNUPG24_CHROOT/tmp/hostile-gnupg/common.conf"
  chroot "$KBXSCOPE_GNUPG24_CHROOT" gpgconf --homedir /tmp/hostile-gnupg --launch keyboxd
fi
echo "== the tests again, as a user with GnuPG running: $(HOME=$user gpgconf --homedir "$gnupg" --list-dirs agent-socket)"
[ $# -gt 0 ] || set -- cargo test --release
env HOME="$user" GNUPGHOME="$gnupg" LANG=de_DE.UTF-8 LANGUAGE=de TZ=Pacific/Chatham TMPDIR="$user/tmp" \
    XDG_CACHE_HOME="$user/.cache" "$@"
