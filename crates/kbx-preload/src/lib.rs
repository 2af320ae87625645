//! kbx-preload: an LD_PRELOAD interposer that counts, from inside a process,
//! the libc calls it makes on watched files (GnuPG's `pubring.kbx`,
//! `pubring.db*`), into a per-process shared-memory record file in the
//! format of the crate `kbx-record` (`crates/kbx-record`, see its
//! `PROTOCOL.md`), which a collector decodes with [`kbx_record::decode`].
//!
//! Without `KBXSCOPE_RECORD` in the environment every hook is a plain
//! pass-through. The library never allocates, never locks (beyond the FILE
//! lock stdio itself takes), never panics on its paths, makes its own I/O
//! with raw system calls (so hooks never re-enter), preserves errno, and
//! needs no work at exit.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod clock;
pub mod config;
pub mod fdtable;
pub mod glob;
pub mod paths;
pub mod stack_sampler;
pub mod stdio_model;
pub mod sys;
pub mod writer;

// The interposers themselves: never in a unit-test binary (they would
// interpose the test harness).
#[cfg(not(test))]
mod hook;
#[cfg(not(test))]
mod hooks_fd;
#[cfg(not(test))]
mod hooks_io;
#[cfg(not(test))]
mod hooks_names;
#[cfg(not(test))]
mod hooks_open;
#[cfg(not(test))]
mod hooks_stat;
#[cfg(not(test))]
mod real;
#[cfg(not(test))]
mod stdio;

#[cfg(not(test))]
mod init {
    use std::sync::atomic::{AtomicBool, Ordering};

    static ATFORK: AtomicBool = AtomicBool::new(false);

    extern "C" fn child() {
        // Only atomic stores: safe in a child forked from a multithreaded parent.
        crate::writer::after_fork_child();
        crate::hook::forget_waits();
    }

    /// Runs at load (before the program's constructors and main).
    extern "C" fn on_load() {
        crate::config::init();
        if crate::config::enabled() && !ATFORK.swap(true, Ordering::Relaxed) {
            // SAFETY: registers a plain extern "C" fn with no captured state;
            // called once, at load, when no other thread of ours exists.
            unsafe { libc::pthread_atfork(None, None, Some(child)) };
            if crate::config::stack_every() > 0 {
                crate::stack_sampler::warm_up();
            }
        }
    }

    #[used]
    #[link_section = ".init_array"]
    static INIT: extern "C" fn() = on_load;
}
