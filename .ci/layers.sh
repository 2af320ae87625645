#!/usr/bin/env bash
# The arrows between the library's modules run one way:
#   cli (binary) → sweep → workload → validate, sigs → telemetry → io → kbx (format crate)
# (gen stands beside them on the format crate.) The compiler already keeps
# the format crate free of everything of ours (it is a crate of its own)
# and the library free of the CLI (the CLI lives in the binary); this
# check keeps the arrows between the library's modules. Test code (files
# named tests.rs, and everything from a file's `#[cfg(test)]` on) may use
# anything.
set -euo pipefail
cd "$(dirname "$0")/../src"

declare -A allowed=(
  [io]="kbx units"
  [telemetry]="io kbx units"
  [validate]="io kbx telemetry"
  [sigs]="io kbx telemetry timefmt validate"
  [workload]="io kbx telemetry validate sigs timefmt"
  [gen]="kbx timefmt units"
  [sweep]="io kbx telemetry validate sigs workload gen timefmt units"
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
      | grep -v '^\s*//' | grep -oE 'crate::[a-z_]+' | sed 's/crate:://' | sort -u || true)
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
