#!/usr/bin/env bash
# Time `gpgsm -k --with-validation --disable-dirmngr` (GnuPG 2.2: fixed 8 KiB
# reads) and kbxscope's three lookup strategies on the same keybox, round
# robin, RUNS rounds. Usage: benches/validation-vs-gpgsm.sh [KEYBOX] [RUNS]
# Default keybox: the built-in one (generated with `kbxscope gen --preset seed`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
K=target/release/kbxscope
work=$(mktemp -d)
trap 'gpgconf --homedir "$work/home" --kill all 2>/dev/null || true; rm -rf "$work"' EXIT
kbx=${1:-$work/seed.kbx}
runs=${2:-3}
[ -f "$kbx" ] || $K gen "$kbx" 2>/dev/null
trust="$kbx.trustlist.txt"
mkdir -m 700 "$work/home"
cp "$trust" "$work/home/trustlist.txt"
gpgsm --homedir "$work/home" --batch -k >/dev/null 2>&1 || true   # start gpg-agent once
t() { /usr/bin/time -f "%e %U %S" -o "$work/t" "$@" >/dev/null 2>&1; cat "$work/t"; }
printf '%-24s %8s %8s %8s\n' variant wall user sys
# Every variant reads a fresh copy, made the same way just before it: how
# the page cache holds a file (large folios after a `cp`, small ones after
# small reads) changes the system time of the same read(2) calls by up to
# 2x, so gpgsm and kbxscope must not read differently cached files.
for r in $(seq "$runs"); do
  cp "$kbx" "$work/home/pubring.kbx"    # gpgsm may rewrite its keybox: give it a fresh copy
  printf '%-24s %8s %8s %8s\n' "gpgsm $(gpgsm --version | head -1 | awk '{print $3}')" $(t gpgsm --homedir "$work/home" --batch -k --with-validation --disable-dirmngr)
  for l in gnupg scan index; do
    cp "$kbx" "$work/copy.kbx"
    printf '%-24s %8s %8s %8s\n' "kbxscope --lookup $l" $(t $K --kbx-buffer-size 0 list --with-validation --lookup "$l" --trustlist "$trust" "$work/copy.kbx")
  done
done
# /usr/bin/time rounds to 10 ms, too coarse for `index`: time it 20 more
# times to the microsecond and print the median.
cp "$kbx" "$work/copy.kbx"
python3 - "$K" "$trust" "$work/copy.kbx" <<'PY'
import statistics, subprocess, sys, time
k, trust, kbx = sys.argv[1:]
cmd = [k, "--kbx-buffer-size", "0", "list", "--with-validation", "--lookup", "index", "--trustlist", trust, kbx]
runs = []
for _ in range(20):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    runs.append(time.perf_counter() - t)
print(f"kbxscope --lookup index: median of 20 runs {statistics.median(runs) * 1000:.1f} ms "
      f"(min {min(runs) * 1000:.1f}, max {max(runs) * 1000:.1f})")
PY
