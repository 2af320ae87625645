#!/usr/bin/env bash
# kbxscope for Windows (x86_64-pc-windows-gnu), built and tested on Linux:
# a Debian 13 chroot holds mingw-w64 (gcc 14), Wine 10 and, from
# trixie-backports, the rust-src of exactly the host's rustc; the host's
# toolchain is copied in and builds the standard library for Windows with
# -Zbuild-std (rustup cannot fetch targets on these machines). As root:
#
#   .ci/windows.sh setup     make or refresh the chroot (idempotent; ~430 MB)
#   .ci/windows.sh build     kbxscope.exe and the test programs
#   .ci/windows.sh test      the unit tests and the integration tests under Wine
#                            (those needing GnuPG, strace, Prometheus or Unix
#                            show as ignored: those tools are not on Windows)
#   .ci/windows.sh compare   sweep's file events under Wine, with each file
#                            API, equal to the Linux build's (needs
#                            target/release/kbxscope)
#   .ci/windows.sh run CMD…  run CMD in the chroot, the checkout at /project
#   .ci/windows.sh all       setup, build, test, compare
#
# WINCROSS_ROOT: the chroot (default /srv/wincross). docs/windows.md says more.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=${WINCROSS_ROOT:-/srv/wincross}
TARGET=x86_64-pc-windows-gnu
# Where the Windows build goes, inside the chroot (kept between runs).
OUT=/root/target-win
EXE=$OUT/$TARGET/debug/kbxscope.exe
CARGO_WIN="cargo test -Zbuild-std --target $TARGET --lib --bins --test integration"

say() { printf '== windows %s: %s\n' "$(date +%T)" "$*" >&2; }

mounts() {
    mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
    mountpoint -q "$ROOT/dev" || mount --bind /dev "$ROOT/dev"
    mountpoint -q "$ROOT/dev/pts" || mount --bind /dev/pts "$ROOT/dev/pts"
    mountpoint -q "$ROOT/dev/shm" || mount -t tmpfs -o mode=1777 shm "$ROOT/dev/shm"
    mkdir -p "$ROOT/project"
    mountpoint -q "$ROOT/project" || mount --bind "$PWD" "$ROOT/project"
}

unmount() {
    if mountpoint -q "$ROOT/proc" 2>/dev/null; then inside 'wineserver -k' >/dev/null 2>&1 || true; fi
    for d in project dev/shm dev/pts dev proc; do
        if mountpoint -q "$ROOT/$d" 2>/dev/null; then umount "$ROOT/$d" || umount -l "$ROOT/$d"; fi
    done
}

# A command in the chroot, in /project, with a fixed environment.
inside() {
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb chroot "$ROOT" /bin/bash -c \
        ". /root/windows-env.sh && cd /project && $1"
}

setup() {
    local t0=$SECONDS sysroot rustv mirror srcv
    sysroot=$(rustc --print sysroot)
    rustv=$(rustc -V | awk '{print $2}')
    # The machine's own mirror, or one line and stop.
    . "$(dirname "${BASH_SOURCE[0]}")/apt-mirror.sh"
    mirror=$MIRROR
    command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
    if [ ! -e "$ROOT/etc/debian_version" ]; then
        say "debootstrap trixie into $ROOT"
        debootstrap --variant=minbase trixie "$ROOT" "$mirror" >/dev/null
    fi
    printf 'deb %s trixie main\ndeb %s trixie-updates main\ndeb %s trixie-backports main\n' \
        "$mirror" "$mirror" "$mirror" > "$ROOT/etc/apt/sources.list"
    cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
    # Extra certificate authorities of this machine (its registries may be
    # reached through them).
    mkdir -p "$ROOT/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/" 2>/dev/null || true
    cat > "$ROOT/root/windows-env.sh" <<EOF
export HOME=/root LANG=C.UTF-8 PATH=/opt/rust/bin:/usr/sbin:/usr/bin:/sbin:/bin
export CARGO_HOME=/root/.cargo CARGO_TARGET_DIR=$OUT RUSTC_BOOTSTRAP=1
export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt CARGO_HTTP_CAINFO=/etc/ssl/certs/ca-certificates.crt
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine
export WINEPREFIX=/root/.wine WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
export XDG_RUNTIME_DIR=/tmp/xdg
mkdir -p -m 700 /tmp/xdg
EOF
    mounts
    say "packages: mingw-w64, Wine, nasm (AWS-LC's assembly), rust-src $rustv"
    inside 'apt-get update -qq'
    srcv=$(inside 'apt-cache madison rust-src' | awk -v v="$rustv" '$3 ~ "^"v"\\+dfsg" {print $3; exit}')
    [ -n "$srcv" ] || { echo "no rust-src $rustv in trixie or trixie-backports" >&2; exit 1; }
    inside "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        ca-certificates gcc libc6-dev gcc-mingw-w64-x86-64 nasm wine wine64 rust-src=$srcv >/dev/null && apt-get clean"
    say "the host's toolchain in /opt/rust, with rust-src"
    rm -rf "$ROOT/opt/rust"
    mkdir -p "$ROOT/opt/rust/lib/rustlib/src"
    cp -a "$sysroot/bin" "$sysroot/lib" "$ROOT/opt/rust/"
    ln -sfn /usr/lib/rustlib/src/rust "$ROOT/opt/rust/lib/rustlib/src/rust"
    [ -f "$ROOT/root/.wine/system.reg" ] || inside 'wineboot --init >/dev/null 2>&1; wineserver -w' || true
    inside 'rustc -V; x86_64-w64-mingw32-gcc --version | head -1; wine --version' >&2
    say "setup done in $((SECONDS - t0)) s"
}

build() {
    mounts
    say "cross-building kbxscope.exe and its tests"
    # The integration tests' build makes kbxscope.exe too (a separate
    # `cargo build` would build the dependencies again: the tests'
    # dev-dependencies change their features).
    inside "$CARGO_WIN --no-run --quiet 2>&1 | grep -v '^warning: aws-lc-sys' || true; test \${PIPESTATUS[0]} -eq 0"
    inside "test -x $EXE"
}

wine_tests() {
    mounts
    say "the tests under Wine"
    # Without CI=true: a test needing a tool Windows lacks is ignored and
    # named, not failed (the Linux run holds those under CI=true).
    # bad_input's every-truncation sweep starts some 250 processes, two
    # minutes under Wine: the parser it covers is the same code on Linux,
    # where it runs, and corruption's truncations run here.
    inside "$CARGO_WIN --quiet -- --skip bad_input::every_truncation_of_a_small_keybox_fails_cleanly 2>&1 \
        | grep -v '^warning: aws-lc-sys'; test \${PIPESTATUS[0]} -eq 0"
}

# Sweep's file events per size with each file API under Wine, against the
# Linux build's on the same keybox and workload: the same numbers.
compare() {
    mounts
    local linux=${CARGO_TARGET_DIR:-target}/release/kbxscope kbx=tests/fixtures/gnupg-mixed.kbx
    local args=(--io-summary sweep "$kbx" --workload list --runs 1 --warmup 0 --sizes 0,16,32,64,128,256,512)
    # buffer, events, opens, reads, seeks, stats, closes: the rows' first
    # columns (the label's ", api" dropped).
    events() { sed -n '5,$p' | sed 's/, [a-z0-9]*  / /' | awk '{print $1, $2, $3, $4, $5, $6, $7, $8}'; }
    "$linux" "${args[@]}" | events > /tmp/kbxscope-linux.txt
    [ -s /tmp/kbxscope-linux.txt ] || { echo "no rows from $linux" >&2; exit 1; }
    for api in win32 crt; do
        inside "wine $EXE --file-api $api ${args[*]}" | events > "/tmp/kbxscope-$api.txt"
        say "$api under Wine against Linux:"
        paste -d'|' /tmp/kbxscope-linux.txt "/tmp/kbxscope-$api.txt" >&2
        diff /tmp/kbxscope-linux.txt "/tmp/kbxscope-$api.txt" || { echo "$api: file events differ from Linux's" >&2; exit 1; }
    done
    rm -f /tmp/kbxscope-linux.txt /tmp/kbxscope-win32.txt /tmp/kbxscope-crt.txt
}

[ "$(id -u)" = 0 ] || { echo "run as root (debootstrap, chroot, mounts)" >&2; exit 1; }
trap unmount EXIT
case "${1:-}" in
    setup) setup ;;
    build) build ;;
    test) wine_tests ;;
    compare) compare ;;
    run) shift; mounts; inside "$*" ;;
    all) setup; build; wine_tests; compare ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
