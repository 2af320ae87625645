//! CPU time of this process or of its children (user and system), for the
//! sweep's columns.

use std::time::Duration;

/// User and system CPU time used so far by this process
/// (`libc::RUSAGE_SELF`) or its waited-for children (`RUSAGE_CHILDREN`).
pub(super) fn times(who: libc::c_int) -> (Duration, Duration) {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a complete `rusage` into the pointer we pass,
    // which points at properly sized and aligned (zeroed) memory we own;
    // both values of `who` are valid. On failure we keep the zeroes.
    #[allow(unsafe_code)]
    let usage = unsafe {
        libc::getrusage(who, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000);
    (tv(usage.ru_utime), tv(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows() {
        let (u0, _) = times(libc::RUSAGE_SELF);
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (u1, _) = times(libc::RUSAGE_SELF);
        assert!(u1 > u0);
    }
}
