//! kbx-preload: an LD_PRELOAD interposer that counts, from inside a process,
//! the libc calls it makes on watched files (GnuPG's `pubring.kbx`,
//! `pubring.db*`), into a per-process shared-memory record file that a
//! collector decodes with [`protocol::decode`]. See `PROTOCOL.md`.
//!
//! Without `KBXSCOPE_RECORD` in the environment every hook is a plain
//! pass-through. The library never allocates, never locks (beyond the FILE
//! lock stdio itself takes), never panics on its paths, makes its own I/O
//! with raw system calls (so hooks never re-enter), preserves errno, and
//! needs no work at exit.
//!
//! With `default-features = false` the crate is only [`protocol`] (layout,
//! constants and decoder), which is what the main crate links.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod protocol;

#[cfg(feature = "hooks")]
pub mod clock;
#[cfg(feature = "hooks")]
pub mod config;
#[cfg(feature = "hooks")]
pub mod fdtable;
#[cfg(feature = "hooks")]
pub mod glob;
#[cfg(feature = "hooks")]
pub mod paths;
#[cfg(feature = "hooks")]
pub mod record;
#[cfg(feature = "hooks")]
pub mod stacks;
#[cfg(feature = "hooks")]
pub mod stdio_model;
#[cfg(feature = "hooks")]
pub mod sys;

// The interposers themselves: never in a unit-test binary (they would
// interpose the test harness).
#[cfg(all(feature = "hooks", not(test)))]
mod hook;
#[cfg(all(feature = "hooks", not(test)))]
mod hooks_fd;
#[cfg(all(feature = "hooks", not(test)))]
mod hooks_io;
#[cfg(all(feature = "hooks", not(test)))]
mod hooks_open;
#[cfg(all(feature = "hooks", not(test)))]
mod hooks_stat;
#[cfg(all(feature = "hooks", not(test)))]
mod real;
#[cfg(all(feature = "hooks", not(test)))]
mod stdio;

#[cfg(all(feature = "hooks", not(test)))]
mod init {
    use std::sync::atomic::{AtomicBool, Ordering};

    static ATFORK: AtomicBool = AtomicBool::new(false);

    extern "C" fn child() {
        // Only atomic stores: safe in a child forked from a multithreaded parent.
        crate::record::after_fork_child();
    }

    /// Runs at load (before the program's constructors and main).
    extern "C" fn on_load() {
        crate::config::init();
        if crate::config::enabled() && !ATFORK.swap(true, Ordering::Relaxed) {
            // SAFETY: registers a plain extern "C" fn with no captured state;
            // called once, at load, when no other thread of ours exists.
            unsafe { libc::pthread_atfork(None, None, Some(child)) };
            if crate::config::stack_every() > 0 {
                crate::stacks::warm_up();
            }
        }
    }

    #[used]
    #[link_section = ".init_array"]
    static INIT: extern "C" fn() = on_load;
}
