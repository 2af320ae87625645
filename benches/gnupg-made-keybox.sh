#!/usr/bin/env bash
# A keybox written by real GnuPG, and the validation hot path on it.
#
# 1. Take the keys and certificates of `kbxscope gen --preset seed` (the
#    built-in keybox), export them (OpenPGP keyblocks without GnuPG's trust
#    packets; certificates as PEM) and import them with gpg and gpgsm into
#    an empty GNUPGHOME: the result is a ~42 MiB pubring.kbx laid out by
#    GnuPG itself (its blob order, its sizes, its free space), not by `gen`:
#    the certificates first, in import order, then the OpenPGP keys.
# 2. Time `gpgsm -k --with-validation --disable-dirmngr` (GnuPG 2.2: 8 KiB
#    reads) and `kbxscope --kbx-buffer-size 0 list --with-validation
#    --lookup gnupg` on it, round robin, RUNS rounds, each variant reading
#    a fresh copy made just before it, and print the user-CPU ratio.
#
# Usage: [GEN_ARGS="--pki mixed --seed 7"] benches/gnupg-made-keybox.sh [OUT] [RUNS]
#   OUT: where to keep the GnuPG-made keybox (reused if it exists; its
#        trustlist is OUT.trustlist.txt). Default: a temporary file.
#   GEN_ARGS: options for `kbxscope gen` (another PKI, another seed) when
#        the keybox is made; ORDER=openpgp-first imports the keys first.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
K=$PWD/target/release/kbxscope
work=$(mktemp -d)
trap 'gpgconf --homedir "$work/import" --kill all 2>/dev/null || true; gpgconf --homedir "$work/home" --kill all 2>/dev/null || true; rm -rf "$work"' EXIT
out=${1:-$work/gnupg-made.kbx}
runs=${2:-3}

if [ ! -f "$out" ]; then
  # shellcheck disable=SC2086 # GEN_ARGS is a list of options
  $K gen ${GEN_ARGS:-} "$work/seed.kbx" >/dev/null 2>&1
  python3 - "$work/seed.kbx" "$work/keys.pgp" "$work/certs.pem" <<'PY'
import base64, struct, sys
kbx, keys_out, certs_out = sys.argv[1:]
data = open(kbx, "rb").read()

def packets(b):
    """OpenPGP packets of a keyblock: (tag, whole packet bytes)."""
    at = 0
    while at < len(b):
        h = b[at]
        if h & 0x40:
            tag, l0 = h & 0x3F, b[at + 1]
            if l0 < 192:
                hl, n = 2, l0
            elif l0 < 224:
                hl, n = 3, ((l0 - 192) << 8) + b[at + 2] + 192
            else:
                hl, n = 6, struct.unpack(">I", b[at + 2:at + 6])[0]
        else:
            tag, lt = (h >> 2) & 0xF, h & 3
            hl = {0: 2, 1: 3, 2: 5}[lt]
            n = int.from_bytes(b[at + 1:at + hl], "big")
        yield tag, b[at:at + hl + n]
        at += hl + n

with open(keys_out, "wb") as keys, open(certs_out, "w") as certs:
    at = 0
    while at + 5 <= len(data):
        length, kind = struct.unpack(">IB", data[at:at + 5])
        blob = data[at:at + length]
        if kind in (2, 3):
            off, dlen = struct.unpack(">II", blob[8:16])
            image = blob[off:off + dlen]
            if kind == 2:
                keys.write(b"".join(p for tag, p in packets(image) if tag != 12))
            else:
                b64 = base64.b64encode(image).decode()
                lines = "\n".join(b64[i:i + 64] for i in range(0, len(b64), 64))
                certs.write(f"-----BEGIN CERTIFICATE-----\n{lines}\n-----END CERTIFICATE-----\n")
        at += length
PY
  mkdir -m 700 "$work/import"
  # GnuPG 2.2 copies the whole keybox for every blob it inserts. On an
  # idle machine either order takes 3-5 minutes; on a loaded one the
  # certificates' inserts into a 42 MiB file took over half an hour.
  echo "importing with gpgsm and $(gpg --version | head -1) (3-15 minutes)…" >&2
  # ORDER=openpgp-first puts the certificates after the keys, where every
  # issuer search has to read past all of them (4 times the reads).
  if [ "${ORDER:-}" = openpgp-first ]; then
    gpg --homedir "$work/import" --batch --quiet --import "$work/keys.pgp" 2>"$work/gpg-import.log" || true
    gpgsm --homedir "$work/import" --batch --quiet --disable-dirmngr --import "$work/certs.pem" 2>"$work/gpgsm-import.log" || true
  else
    gpgsm --homedir "$work/import" --batch --quiet --disable-dirmngr --import "$work/certs.pem" 2>"$work/gpgsm-import.log" || true
    gpg --homedir "$work/import" --batch --quiet --import "$work/keys.pgp" 2>"$work/gpg-import.log" || true
  fi
  gpgconf --homedir "$work/import" --kill all
  cp "$work/import/pubring.kbx" "$out"
  cp "$work/seed.kbx.trustlist.txt" "$out.trustlist.txt"
  $K stats "$out" >&2
fi

trust="$out.trustlist.txt"
mkdir -m 700 "$work/home"
cp "$trust" "$work/home/trustlist.txt"
cp "$out" "$work/home/pubring.kbx"
gpgsm --homedir "$work/home" --batch -k >/dev/null 2>&1 || true   # start gpg-agent once
t() { /usr/bin/time -f "%e %U %S" -o "$work/t" "$@" >/dev/null 2>&1 || true; cat "$work/t"; }
printf '%-28s %8s %8s %8s\n' variant wall user sys
: >"$work/users"
for r in $(seq "$runs"); do
  cp "$out" "$work/home/pubring.kbx"
  read -r w u s < <(t gpgsm --homedir "$work/home" --batch -k --with-validation --disable-dirmngr)
  printf '%-28s %8s %8s %8s\n' "gpgsm $(gpgsm --version | head -1 | awk '{print $3}')" "$w" "$u" "$s"
  cp "$out" "$work/copy.kbx"
  read -r w2 u2 s2 < <(t "$K" --kbx-buffer-size 0 list --with-validation --lookup gnupg --trustlist "$trust" "$work/copy.kbx")
  printf '%-28s %8s %8s %8s\n' "kbxscope --lookup gnupg" "$w2" "$u2" "$s2"
  echo "$u $u2" >>"$work/users"
done
awk '{g += $1; k += $2} END {printf "user CPU: kbxscope / gpgsm = %.2f (sums over %d rounds)\n", k / g, NR}' "$work/users"
