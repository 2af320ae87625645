#!/usr/bin/env bash
# doctor's predicted savings against the real gpg's (issue #53): homes
# with a problem doctor measures are built as tests/doctor.rs builds them
# (gpg itself imports the floods), `kbxscope doctor --json` predicts what
# its fix saves on the commands it replays, then the real gpg runs those
# commands on two copies of the home, as it is and with the fix applied,
# side by side, RUNS rounds, interleaved; medians. Goal: the prediction
# within 25% of gpg's saving.
#
# Usage: benches/doctor-savings.sh [RUNS]            (default 5)
# Environment: FLOOD=N certifications on the flooded key (default 5000);
# STAMP_PRESET=seed|small|tiny, the generated keybox of the stamp home.
#
# As root gpg's maintenance pass cannot be stopped with chmod (root writes
# anyway; doctor prints no command then), so the "fixed" copy of the stamp
# home has its stamp renewed instead, which is the change doctor replays.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
K=$PWD/target/release/kbxscope
runs=${1:-5}
flood=${FLOOD:-5000}
work=$(mktemp -d)
trap 'for h in "$work"/*/; do gpgconf --homedir "$h" --kill all 2>/dev/null || true; done; rm -rf "$work"' EXIT
mixed=tests/fixtures/gnupg-mixed.kbx

# KEY OUT COUNT SEED: KEY with COUNT certifications by signers that exist
# nowhere after its first user id (as tests/doctor.rs makes them).
flood_key() {
  python3 - "$@" <<'EOF'
import struct, sys
key = open(sys.argv[1], 'rb').read()
count, seed = int(sys.argv[3]), int(sys.argv[4])
def packets(b):
    i = 0
    while i < len(b):
        c = b[i]
        if c & 0x40:
            tag, l = c & 0x3f, b[i + 1]
            if l < 192: h, n = 2, l
            elif l < 224: h, n = 3, ((l - 192) << 8) + b[i + 2] + 192
            else: h, n = 6, struct.unpack('>I', b[i + 2:i + 6])[0]
        else:
            tag, lt = (c >> 2) & 15, c & 3
            h = {0: 2, 1: 3, 2: 5}[lt]
            n = b[i + 1] if lt == 0 else struct.unpack('>H' if lt == 1 else '>I', b[i + 1:i + h])[0]
        yield tag, b[i:i + h + n], b[i + h:i + h + n]
        i += h + n
out, done, created = b'', False, None
for tag, whole, body in packets(key):
    if created is None:
        created = struct.unpack('>I', body[1:5])[0]
    out += whole
    if tag == 13 and not done:
        done = True
        for n in range(count):
            issuer = struct.pack('>Q', ((seed << 32) | n) ^ 0x5eed000000000000)
            b = bytes([4, 0x10, 1, 8, 0, 6, 5, 2]) + struct.pack('>I', created + 1 + n)
            b += bytes([0, 10, 9, 16]) + issuer + bytes([0xab, 0xcd, 8, 0, 0xc0]) + issuer
            b += bytes((i * 31) & 0xff for i in range(9, 256))
            out += bytes([0x89]) + struct.pack('>H', len(b)) + b
open(sys.argv[2], 'wb').write(out)
EOF
}

new_home() { mkdir -m 700 "$work/$1"; cp "$mixed" "$work/$1/pubring.kbx"; echo "$work/$1"; }
g() { local h=$1; shift; gpg --homedir "$h" --batch "$@"; }
fprs() { g "$1" --with-colons -k 2>/dev/null | awk -F: '$1=="pub"{p=1} $1=="fpr"&&p{print $10; p=0}'; }

# The homes.
flooded=$(new_home flooded)
fpr=$(fprs "$flooded" | head -1)
g "$flooded" --export "$fpr" > "$work/key.gpg"
flood_key "$work/key.gpg" "$work/flood.gpg" "$flood" 1
g "$flooded" --import "$work/flood.gpg" 2>/dev/null
unknown=$(new_home unknown)
i=0
for f in $(fprs "$unknown" | head -4); do
  g "$unknown" --export "$f" > "$work/k$i.gpg"
  flood_key "$work/k$i.gpg" "$work/f$i.gpg" 300 $((10 + i))
  g "$unknown" --import "$work/f$i.gpg" 2>/dev/null
  i=$((i + 1))
done
# The stamp home holds the built-in keybox (42 MiB, generated), its stamp old.
stamp=$(new_home stamp)
"$K" gen --preset "${STAMP_PRESET:-seed}" "$stamp/pubring.kbx.new" >/dev/null 2>&1
mv "$stamp/pubring.kbx.new" "$stamp/pubring.kbx"; rm -f "$stamp"/pubring.kbx.new.trustlist.txt
python3 - "$stamp/pubring.kbx" <<'EOF'
import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
b[20:24] = (1600000000).to_bytes(4, 'big'); open(p, 'wb').write(b)
EOF
for h in "$flooded" "$unknown" "$stamp"; do gpgconf --homedir "$h" --kill all 2>/dev/null || true; done

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

printf '%-9s %-17s %-34s %10s %10s %7s\n' home finding commands predicted gpg ratio
for name in flooded unknown stamp; do
  home=$work/$name
  report=$("$K" --gnupg-version 2.2 doctor --json "$home" || true)
  case $name in flooded) kind=flooded-key ;; unknown) kind=unknown-signers ;; stamp) kind=maintenance-pass ;; esac
  predicted=$(jq -r --arg k "$kind" '.findings[] | select(.kind == $k) | .saving_seconds' <<<"$report")
  mapfile -t cmds < <(jq -r --arg k "$kind" '.measured.measured[] | select(.kind == $k) | .command' <<<"$report")
  # Two copies: as it is, and fixed.
  cp -a "$home" "$work/$name-as-is"; cp -a "$home" "$work/$name-fixed"
  fixed=$work/$name-fixed
  if [ "$kind" = maintenance-pass ]; then
    python3 - "$fixed/pubring.kbx" <<'EOF'
import sys, time; p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
b[20:24] = int(time.time()).to_bytes(4, 'big'); open(p, 'wb').write(b)
EOF
  else
    fix=$({ "$K" --gnupg-version 2.2 doctor --quick --json "$fixed" || true; } | jq -r --arg k "$kind" '.findings[] | select(.kind == $k) | .fix')
    sh -c "$fix" >/dev/null 2>&1
  fi
  gpgconf --homedir "$fixed" --kill all 2>/dev/null || true
  declare -A t=()
  for ((r = 0; r < runs; r++)); do
    for v in as-is fixed; do
      for c in "${cmds[@]}"; do
        read -ra args <<<"${c#gpg }"
        s=$(now); g "$work/$name-$v" "${args[@]}" >/dev/null 2>&1 || true; e=$(now)
        t[$v/$c]+="$(echo "$e - $s" | bc) "
      done
    done
  done
  real=0
  for c in "${cmds[@]}"; do
    a=$(tr ' ' '\n' <<<"${t[as-is/$c]}" | grep . | median)
    b=$(tr ' ' '\n' <<<"${t[fixed/$c]}" | grep . | median)
    real=$(echo "$real + $a - $b" | bc -l)
  done
  ratio=$(echo "$predicted / $real" | bc -l 2>/dev/null || echo nan)
  printf '%-9s %-17s %-34s %9.3fs %9.3fs %7.2f\n' "$name" "$kind" "$(IFS=,; echo "${cmds[*]}")" "$predicted" "$real" "$ratio"
  unset t
done
