#!/usr/bin/env bash
# The arrows between the library's modules run one way:
#   cli (binary) → sweep → workload → x509, openpgp → lookup → store → keyboxd → telemetry → io → events → kbx (format crate)
#   x509 → crypto, openpgp → crypto; never x509 ⇄ openpgp
# (generate stands beside them on the format crate; units, timefmt and gnupg_version are
# leaves any module may use.) The compiler already keeps the format crate
# free of everything of ours (it is a crate of its own) and the library
# free of the CLI (the CLI lives in the binary); this check keeps the
# arrows between the library's modules. Test code (files named tests.rs,
# and everything from a file's `#[cfg(test)]` on) may use anything.
set -euo pipefail
cd "$(dirname "$0")/../src"

declare -A allowed=(
  [events]="kbx units"
  [io]="events kbx units gnupg_version"
  [telemetry]="events kbx units"
  [crypto]=""
  [keyboxd]="io events kbx telemetry"
  [store]="keyboxd io events kbx telemetry"
  [lookup]="keyboxd io events kbx telemetry"
  [x509]="crypto lookup keyboxd io events kbx telemetry timefmt"
  [openpgp]="crypto lookup keyboxd io events kbx telemetry timefmt gnupg_version"
  [workload]="x509 openpgp lookup store keyboxd io events kbx telemetry timefmt gnupg_version trustdb"
  [generate]="kbx timefmt units"
  [record]="events units"
  [trustdb]=""
  [doctor]="trustdb sweep workload x509 openpgp lookup store keyboxd io events kbx telemetry timefmt units gnupg_version"
  [sweep]="workload x509 openpgp lookup store keyboxd io events kbx telemetry generate timefmt units gnupg_version"
)
status=0
for dir in */; do
  module=${dir%/}
  [ "$module" = cli ] && continue
  if [ -z "${allowed[$module]+x}" ]; then
    echo "layering: src/$module is not in .ci/layers.sh: say which modules it may use" >&2
    status=1
    continue
  fi
  while IFS= read -r file; do
    used=$(awk '/#\[cfg\(test\)\]/ { exit } { print }' "$file" \
      | grep -v '^\s*//' | grep -oE 'crate::[a-z_0-9]+' | sed 's/crate:://' | sort -u || true)
    for u in $used; do
      [ "$u" = "$module" ] && continue
      case " ${allowed[$module]} " in
        *" $u "*) ;;
        *) echo "layering: src/$file uses crate::$u, against the flow (src/$module may use: ${allowed[$module]})" >&2
           status=1 ;;
      esac
    done
  done < <(find "$module" -name '*.rs' ! -name tests.rs)
done
exit $status
