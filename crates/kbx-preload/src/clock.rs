//! The hooks' clock: `CLOCK_MONOTONIC` in nanoseconds, read from the CPU's
//! time-stamp counter once it has been calibrated against the kernel's clock.
//!
//! Two clock reads frame every watched call, so their cost is most of what
//! recording costs the host: the vDSO's `clock_gettime` measured 32 ns a
//! read on the project's machine (a KVM guest), `rdtsc` 13 ns. The TSC is
//! used only where it is what the kernel itself uses:
//!
//! * x86-64 with an invariant TSC (CPUID 0x8000_0007, EDX bit 8);
//! * the kernel's current clocksource is `tsc` (read once from sysfs, so a
//!   TSC the kernel found unstable is never trusted);
//! * `prctl(PR_GET_TSC)` says `rdtsc` does not fault (a host that makes it
//!   fault *later*, as a sandbox might, is not noticed: documented in
//!   `crates/kbx-record/PROTOCOL.md`);
//! * `KBXSCOPE_RECORD_CLOCK` is not `monotonic` (which keeps the vDSO clock,
//!   for comparisons).
//!
//! Until then, and always where the TSC is not usable, every read is
//! `clock_gettime(CLOCK_MONOTONIC)`. Calibration needs no extra call: each
//! slow read also takes the TSC, and once 10 ms of CLOCK_MONOTONIC separate
//! the first pair from the current one the ratio is fixed (error ≈ two clock
//! reads over 10 ms, a few ppm). The offset from TSC to CLOCK_MONOTONIC is
//! taken again every second of counter time, so NTP slewing of
//! CLOCK_MONOTONIC cannot make recorded start times drift further than one
//! second's slew (≤ 0.5 ms) from kbxscope's own clock.
//!
//! Everything is atomics (no lock, no allocation): safe on any thread, in a
//! signal handler and in a forked child (which keeps the parent's
//! calibration; the TSC is the same counter).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// ns = ticks × MULT >> 32; 0 until calibrated (and forever if the TSC is
/// not usable).
static MULT: AtomicU64 = AtomicU64::new(0);
/// CLOCK_MONOTONIC = (ticks × MULT >> 32) + OFFSET (wrapping).
static OFFSET: AtomicU64 = AtomicU64::new(0);
/// The TSC value at which OFFSET is next taken again.
static REANCHOR_AT: AtomicU64 = AtomicU64::new(u64::MAX);
/// The first (TSC, CLOCK_MONOTONIC) pair of the calibration.
static FIRST_TSC: AtomicU64 = AtomicU64::new(0);
static FIRST_NS: AtomicU64 = AtomicU64::new(0);

const UNKNOWN: u8 = 0;
const CHECKING: u8 = 1;
const SAMPLING: u8 = 2;
const CALIBRATING: u8 = 3;
const CALIBRATED: u8 = 4;
const UNUSABLE: u8 = 5;
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// How long the calibration samples CLOCK_MONOTONIC against the TSC.
const CALIBRATION_NS: u64 = 10_000_000;
/// How often (in ns of counter time) the offset is taken again.
const REANCHOR_NS: u64 = 1_000_000_000;

/// CLOCK_MONOTONIC in ns.
#[inline(always)]
pub fn now() -> u64 {
    let mult = MULT.load(Ordering::Acquire);
    if mult != 0 {
        let t = tsc();
        if t < REANCHOR_AT.load(Ordering::Relaxed) {
            return ticks_to_ns(t, mult).wrapping_add(OFFSET.load(Ordering::Relaxed));
        }
    }
    slow_now()
}

/// CLOCK_MONOTONIC from the kernel; also drives the calibration.
#[cold]
fn slow_now() -> u64 {
    let state = STATE.load(Ordering::Acquire);
    if state == UNUSABLE || state == CHECKING || state == CALIBRATING {
        return crate::sys::monotonic();
    }
    let t = tsc();
    let ns = crate::sys::monotonic();
    match state {
        UNKNOWN if STATE.compare_exchange(UNKNOWN, CHECKING, Ordering::Acquire, Ordering::Relaxed).is_ok() => {
            // The check makes system calls (sysfs, prctl): errno stays the
            // host's, and the time returned is taken after it, so the call
            // being timed does not pay for it.
            let _g = crate::sys::ErrnoGuard::new();
            if usable() {
                FIRST_TSC.store(t, Ordering::Relaxed);
                FIRST_NS.store(ns, Ordering::Relaxed);
                STATE.store(SAMPLING, Ordering::Release);
            } else {
                STATE.store(UNUSABLE, Ordering::Release);
            }
            return crate::sys::monotonic();
        }
        SAMPLING => {
            let (t0, ns0) = (FIRST_TSC.load(Ordering::Relaxed), FIRST_NS.load(Ordering::Relaxed));
            if ns.saturating_sub(ns0) >= CALIBRATION_NS
                && t > t0
                && STATE.compare_exchange(SAMPLING, CALIBRATING, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                let mult = (((ns - ns0) as u128) << 32) / (t - t0) as u128;
                match u64::try_from(mult) {
                    Ok(m) if m > 0 => {
                        anchor(t, ns, m);
                        MULT.store(m, Ordering::Release);
                        STATE.store(CALIBRATED, Ordering::Release);
                    }
                    _ => STATE.store(UNUSABLE, Ordering::Release),
                }
            }
        }
        CALIBRATED => {
            // Past REANCHOR_AT: one thread takes the offset again (a single
            // store, so no reader sees a half-updated pair).
            let at = REANCHOR_AT.load(Ordering::Relaxed);
            if t >= at && REANCHOR_AT.compare_exchange(at, u64::MAX, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                anchor(t, ns, MULT.load(Ordering::Relaxed));
            }
        }
        _ => {}
    }
    ns
}

/// Make (t, ns) the reference point and schedule the next one.
fn anchor(t: u64, ns: u64, mult: u64) {
    OFFSET.store(ns.wrapping_sub(ticks_to_ns(t, mult)), Ordering::Relaxed);
    let per_second = ((REANCHOR_NS as u128) << 32) / mult as u128;
    REANCHOR_AT.store(t.saturating_add(u64::try_from(per_second).unwrap_or(u64::MAX)), Ordering::Relaxed);
}

#[inline(always)]
fn ticks_to_ns(t: u64, mult: u64) -> u64 {
    ((t as u128 * mult as u128) >> 32) as u64
}

/// Whether the TSC may be read: see the module doc.
fn usable() -> bool {
    if cfg!(not(target_arch = "x86_64")) || crate::config::clock_forced_monotonic() {
        return false;
    }
    invariant_tsc() && tsc_does_not_fault() && kernel_uses_tsc()
}

#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    use std::arch::x86_64::__cpuid;
    // CPUID is always available on x86-64 and has no side effects.
    let max_ext = __cpuid(0x8000_0000).eax;
    max_ext >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

fn tsc_does_not_fault() -> bool {
    let mut mode: libc::c_int = 0;
    // SAFETY: PR_GET_TSC writes one int through the pointer given, which
    // points to a live local.
    let r = unsafe { libc::syscall(libc::SYS_prctl, libc::PR_GET_TSC, &mut mode as *mut libc::c_int) };
    r == 0 && mode == libc::PR_TSC_ENABLE
}

fn kernel_uses_tsc() -> bool {
    let fd = crate::sys::raw_openat(
        libc::AT_FDCWD,
        b"/sys/devices/system/clocksource/clocksource0/current_clocksource\0",
        libc::O_RDONLY | libc::O_CLOEXEC,
        0,
    );
    if fd < 0 {
        return false;
    }
    let mut buf = [0u8; 16];
    let n = crate::sys::raw_read(fd as libc::c_int, &mut buf);
    crate::sys::raw_close(fd);
    n > 0 && &buf[..n as usize] == b"tsc\n"
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tsc() -> u64 {
    // SAFETY: rdtsc has no memory effects; it is only reached on x86-64,
    // and only read for timing once `usable()` found it does not fault.
    // Before that its value is stored but never trusted.
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn tsc() -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_is_exact_enough() {
        // 2.445 GHz: 1 s of ticks is 1e9 ns within a nanosecond or two.
        let mult = ((1_000_000_000u128 << 32) / 2_445_404_000u128) as u64;
        let ns = ticks_to_ns(2_445_404_000, mult);
        assert!((999_999_990..=1_000_000_000).contains(&ns), "{ns}");
        // Hours of uptime do not overflow.
        assert!(ticks_to_ns(3600 * 24 * 2_445_404_000, mult) > 86_399_000_000_000);
    }

    #[test]
    fn now_is_monotonic_and_close_to_the_kernel() {
        let mut last = now();
        let start = crate::sys::monotonic();
        // Long enough to calibrate where the TSC is usable.
        while crate::sys::monotonic() - start < 2 * CALIBRATION_NS {
            let t = now();
            // At the switch from the kernel's reads to the TSC's the two may
            // differ by the calibration's error (nanoseconds), either way.
            assert!(t + 1_000 >= last, "{t} < {last}");
            last = t;
        }
        let (a, b) = (crate::sys::monotonic(), now());
        assert!(b.abs_diff(a) < 1_000_000, "tsc {b} vs monotonic {a}");
    }
}
