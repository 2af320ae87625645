//! Work spread over every core, for the in-memory lookups: one thread per
//! core (this one among them), each taking the next item until none is
//! left, since items differ a hundredfold in their work. Results come back
//! in the items' order, so what is printed does not depend on the threads.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// Threads to run: one per core.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Start `threads() - 1` helpers in `s`, each running `work` and handing
/// back what it returns.
fn helpers<'s, 'e, T: Send + 's>(
    s: &'s std::thread::Scope<'s, 'e>,
    work: &'s (impl Fn() -> T + Sync),
) -> Vec<std::thread::ScopedJoinHandle<'s, T>> {
    (1..threads())
        .filter_map(|t| std::thread::Builder::new().name(format!("kbxscope-{t}")).spawn_scoped(s, work).ok())
        .collect()
}

/// A helper's results; a helper's panic is a bug, raised here as one.
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// `one(0)`, …, `one(n - 1)` on every core, each result handed to `emit`
/// on this thread, in order, as soon as it and every one before it are
/// done: printing goes on while later items are worked on. `emit`
/// returning `false` stops the work (items not yet started are dropped).
pub(super) fn in_order<R: Send>(n: usize, one: impl Fn(usize) -> R + Sync, mut emit: impl FnMut(usize, R) -> bool) {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
    let take = || {
        let i = next.fetch_add(1, Ordering::Relaxed);
        (i < n).then_some(i)
    };
    let work = || {
        while let Some(i) = take() {
            let r = one(i);
            done.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(r);
        }
    };
    let mut emitted = 0;
    // Hand on every finished result from `emitted` on; `false` once told to stop.
    let mut hand_on = |emitted: &mut usize| -> bool {
        while *emitted < n {
            let Some(r) = done.lock().unwrap_or_else(PoisonError::into_inner)[*emitted].take() else { return true };
            if !emit(*emitted, r) {
                next.store(n, Ordering::Relaxed);
                *emitted = n;
                return false;
            }
            *emitted += 1;
        }
        true
    };
    std::thread::scope(|s| {
        let helpers = helpers(s, &work);
        while let Some(i) = take() {
            let r = one(i);
            done.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(r);
            if !hand_on(&mut emitted) {
                break;
            }
        }
        helpers.into_iter().for_each(joined);
    });
    hand_on(&mut emitted);
}

/// Drop `t` on a thread of its own, not waited for: the caller goes on
/// at once, and a process that ends first hands the memory back to the
/// system without freeing it piece by piece. Dropped here if no thread
/// can be started.
pub(super) fn free_aside<T: Send + 'static>(t: T) {
    let _ = std::thread::Builder::new().name("kbxscope-free".into()).spawn(move || drop(t));
}

/// Runs its closure when dropped.
struct Finish<'a>(&'a dyn Fn());

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// Items made one at a time by `produce` on this thread (it is handed a
/// `send`), each worked on by `one` on another core as soon as it is made;
/// once `produce` returns, this thread works on what is left too. Returns
/// the results in the order the items were made, and what `produce`
/// returned.
pub(super) fn as_made<T: Send, R: Send, P>(
    produce: impl FnOnce(&mut dyn FnMut(T)) -> P,
    one: impl Fn(T) -> R + Sync,
) -> (Vec<R>, P) {
    struct Queue<T> {
        items: VecDeque<(usize, T)>,
        finished: bool,
    }
    let queue = Mutex::new(Queue { items: VecDeque::new(), finished: false });
    let ready = Condvar::new();
    let lock = || queue.lock().unwrap_or_else(PoisonError::into_inner);
    // The next item, waiting for one while `produce` runs; `None` at the end.
    let next = || {
        let mut q = lock();
        loop {
            if let Some(item) = q.items.pop_front() {
                return Some(item);
            }
            if q.finished {
                return None;
            }
            q = ready.wait(q).unwrap_or_else(PoisonError::into_inner);
        }
    };
    let work = || {
        let mut out = Vec::new();
        while let Some((i, t)) = next() {
            out.push((i, one(t)));
        }
        out
    };
    let (mut results, made) = std::thread::scope(|s| {
        let helpers = helpers(s, &work);
        // However `produce` ends (a panic too), the helpers are told the
        // queue is finished, or the scope would wait for them forever.
        let finished = || {
            lock().finished = true;
            ready.notify_all();
        };
        let finish = Finish(&finished);
        let mut made = 0;
        let produced = produce(&mut |t| {
            lock().items.push_back((made, t));
            made += 1;
            ready.notify_one();
        });
        drop(finish);
        let mut results = work();
        for h in helpers {
            results.extend(joined(h));
        }
        (results, produced)
    });
    results.sort_unstable_by_key(|(i, _)| *i);
    (results.into_iter().map(|(_, r)| r).collect(), made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_freed_aside_is_dropped_on_another_thread() {
        struct Tell(std::sync::mpsc::Sender<std::thread::ThreadId>);
        impl Drop for Tell {
            fn drop(&mut self) {
                let _ = self.0.send(std::thread::current().id());
            }
        }
        let (tx, rx) = std::sync::mpsc::channel();
        free_aside(Tell(tx));
        let dropped_on = rx.recv().expect("dropped");
        assert_ne!(dropped_on, std::thread::current().id());
    }

    #[test]
    fn emit_sees_every_item_in_order_and_can_stop() {
        let mut seen = Vec::new();
        in_order(
            500,
            |i| i + 1,
            |i, r| {
                assert_eq!(r, i + 1);
                seen.push(i);
                true
            },
        );
        assert_eq!(seen, (0..500).collect::<Vec<_>>());
        let mut seen = Vec::new();
        in_order(
            500,
            |i| i,
            |i, _| {
                seen.push(i);
                i < 41
            },
        );
        assert_eq!(seen, (0..=41).collect::<Vec<_>>(), "nothing after the item that stopped it");
    }

    #[test]
    fn items_are_worked_on_as_made_and_come_back_in_order() {
        let (out, said) = as_made(
            |send| {
                for i in 0..300u64 {
                    send(i);
                }
                "made"
            },
            |i| i * 3,
        );
        assert_eq!(out, (0..300).map(|i| i * 3).collect::<Vec<_>>());
        assert_eq!(said, "made");
        let (none, ()) = as_made(|_: &mut dyn FnMut(u8)| (), |i| i);
        assert!(none.is_empty());
    }

    #[test]
    fn a_producer_that_panics_does_not_leave_the_helpers_waiting() {
        let r = std::panic::catch_unwind(|| {
            as_made(
                |send| {
                    send(1u8);
                    panic!("the pass broke");
                },
                |i| i,
            )
        });
        assert!(r.is_err(), "the panic comes through, and nothing hangs");
    }
}
