//! The CPU clock of one call: the CPU time its thread spends polling the
//! call, and nothing else.
//!
//! Wall time would count what is not the guest's: waiting on the human,
//! waiting in the executor's queue behind other calls on a loaded machine,
//! and time the operating system gave to other threads. A call is polled on
//! one thread at a time (and may move between threads between polls), so
//! the clock adds up the thread's CPU time across each poll.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// CPU time used by one call so far.
#[derive(Debug, Default)]
pub(crate) struct CpuClock {
    /// Nanoseconds of the polls that have ended.
    spent: AtomicU64,
    /// The thread's CPU time when the poll under way began; `NOT_POLLING`
    /// between polls.
    poll_began: AtomicU64,
}

const NOT_POLLING: u64 = u64::MAX;

impl CpuClock {
    pub fn new() -> Arc<Self> {
        Arc::new(CpuClock {
            spent: AtomicU64::new(0),
            poll_began: AtomicU64::new(NOT_POLLING),
        })
    }

    /// CPU time so far, the poll under way included. Read it from inside the
    /// call (as the epoch callback does): the poll under way is this
    /// thread's.
    pub fn elapsed(&self) -> Duration {
        let mut spent = self.spent.load(Ordering::Relaxed);
        let began = self.poll_began.load(Ordering::Relaxed);
        if began != NOT_POLLING {
            spent += thread_cpu_nanos().saturating_sub(began);
        }
        Duration::from_nanos(spent)
    }

    /// `future`, with the CPU time of each of its polls added to this clock.
    pub fn measure<F: Future + Unpin>(self: &Arc<Self>, future: F) -> Measured<F> {
        Measured {
            future,
            clock: self.clone(),
        }
    }
}

/// A future whose polls are timed by a [`CpuClock`].
pub(crate) struct Measured<F> {
    future: F,
    clock: Arc<CpuClock>,
}

impl<F: Future + Unpin> Future for Measured<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let began = thread_cpu_nanos();
        self.clock.poll_began.store(began, Ordering::Relaxed);
        let polled = Pin::new(&mut self.future).poll(cx);
        let used = thread_cpu_nanos().saturating_sub(began);
        self.clock.poll_began.store(NOT_POLLING, Ordering::Relaxed);
        self.clock.spent.fetch_add(used, Ordering::Relaxed);
        polled
    }
}

/// The calling thread's CPU time, in nanoseconds.
#[cfg(unix)]
fn thread_cpu_nanos() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to write to; the clock id is a
    // constant every supported Unix has.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return 0;
    }
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Elsewhere: wall time during polls (still not queueing or waiting).
#[cfg(not(unix))]
fn thread_cpu_nanos() -> u64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Burns this thread's CPU until it has used `amount` more.
    fn burn(amount: Duration) {
        let until = thread_cpu_nanos() + amount.as_nanos() as u64;
        while thread_cpu_nanos() < until {
            std::hint::black_box(());
        }
    }

    #[tokio::test]
    async fn time_spent_waiting_between_polls_is_not_counted() {
        let clock = CpuClock::new();
        let (wake, woken) = tokio::sync::oneshot::channel::<()>();
        let (waiting, started) = tokio::sync::oneshot::channel::<()>();
        let waiter = tokio::spawn(clock.measure(Box::pin(async move {
            burn(Duration::from_millis(20));
            let _ = waiting.send(());
            let _ = woken.await;
            burn(Duration::from_millis(20));
        })));
        started.await.unwrap();
        // While the call waits, this thread burns CPU that is not the call's.
        burn(Duration::from_millis(200));
        wake.send(()).unwrap();
        waiter.await.unwrap();
        let used = clock.elapsed();
        assert!(used >= Duration::from_millis(40), "{used:?}");
        assert!(used < Duration::from_millis(150), "{used:?}");
    }

    #[test]
    fn the_poll_under_way_counts() {
        let clock = CpuClock::new();
        let inner = clock.clone();
        let mut seen = Duration::ZERO;
        let measured = clock.measure(Box::pin(async {
            burn(Duration::from_millis(15));
            seen = inner.elapsed();
        }));
        futures_util::FutureExt::now_or_never(measured).unwrap();
        assert!(seen >= Duration::from_millis(15), "{seen:?}");
    }
}
