#!/usr/bin/env bash
# The Debian mirror this machine's apt uses (and its security mirror), for
# the scripts that make chroots or fetch kernels: sourced, it sets MIRROR
# and SECURITY from /etc/apt/sources.list and /etc/apt/sources.list.d
# (one-line and deb822 forms), with no fixed host to fall back to: a
# machine that only reaches its own mirror gets that one, and one with no
# Debian source at all is told so in one line (status 1).
apt_uris() {
  grep -hsoE '^[[:space:]]*(URIs:|deb)[[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk '{print $NF}' | sed 's:/*$::'
}
MIRROR=$(apt_uris | grep -E '/debian$' | head -1 || true)
SECURITY=$(apt_uris | grep -E '/debian-security$' | head -1 || true)
if [ -z "$MIRROR" ]; then
  echo "$(basename "${BASH_SOURCE[1]:-$0}"): this machine's apt names no Debian mirror (a URI ending in /debian in /etc/apt/sources.list or sources.list.d); add one, the script uses no other" >&2
  return 1 2>/dev/null || exit 1
fi
SECURITY=${SECURITY:-${MIRROR%/debian}/debian-security}
