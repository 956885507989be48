//! The CPU clock of one call: the CPU time its thread spends polling the
//! call, and nothing else.
//!
//! Wall time would count what is not the guest's: waiting on the human,
//! waiting in the executor's queue behind other calls on a loaded machine,
//! and time the operating system gave to other threads. A call is polled on
//! one thread at a time (and may move between threads between polls), so
//! the clock adds up the thread's CPU time across each poll.
//!
//! Reading a thread's CPU time is a system call (the vDSO does not serve
//! it), and two per poll were about 3% of a whole call. So a poll is timed
//! by the wall clock (the vDSO's, nearly free) until its first epoch tick,
//! and by the thread's CPU clock from then on: a poll that never reaches a
//! tick (every poll of a well-behaved call) costs no system call, and a
//! guest that spins is measured by CPU time after its first tick. Before
//! that tick at most one [`EPOCH_TICK`] of wall time is counted, so a poll
//! the machine delays counts no more than a tick of it either.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::engine::EPOCH_TICK;

/// CPU time used by one call so far.
#[derive(Debug)]
pub(crate) struct CpuClock {
    /// Nanoseconds of the polls that have ended.
    spent: AtomicU64,
    /// The wall clock ([`wall_nanos`]) when the poll under way began;
    /// `NONE` between polls.
    poll_began: AtomicU64,
    /// The thread's CPU clock as it stood when the poll under way began,
    /// worked out at the poll's first tick; `NONE` before it.
    cpu_began: AtomicU64,
}

const NONE: u64 = u64::MAX;

/// Wall time counted for a poll, or for its part before its first tick.
fn before_first_tick(wall: u64) -> u64 {
    wall.min(EPOCH_TICK.as_nanos() as u64)
}

impl CpuClock {
    pub fn new() -> Arc<Self> {
        Arc::new(CpuClock {
            spent: AtomicU64::new(0),
            poll_began: AtomicU64::new(NONE),
            cpu_began: AtomicU64::new(NONE),
        })
    }

    /// CPU time so far, the poll under way included. Read it from inside the
    /// call, at an epoch tick (as the epoch callback does): the poll under
    /// way is this thread's, and from this first reading on it is timed by
    /// the thread's CPU clock.
    pub fn elapsed(&self) -> Duration {
        let spent = self.spent.load(Ordering::Relaxed);
        let began = self.poll_began.load(Ordering::Relaxed);
        if began == NONE {
            return Duration::from_nanos(spent);
        }
        let cpu = thread_cpu_nanos();
        let mut cpu_began = self.cpu_began.load(Ordering::Relaxed);
        if cpu_began == NONE {
            let before = before_first_tick(wall_nanos().saturating_sub(began));
            cpu_began = cpu.saturating_sub(before);
            self.cpu_began.store(cpu_began, Ordering::Relaxed);
        }
        Duration::from_nanos(spent + cpu.saturating_sub(cpu_began))
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
        let began = wall_nanos();
        self.clock.poll_began.store(began, Ordering::Relaxed);
        let polled = Pin::new(&mut self.future).poll(cx);
        let used = match self.clock.cpu_began.swap(NONE, Ordering::Relaxed) {
            NONE => before_first_tick(wall_nanos().saturating_sub(began)),
            cpu_began => thread_cpu_nanos().saturating_sub(cpu_began),
        };
        self.clock.poll_began.store(NONE, Ordering::Relaxed);
        self.clock.spent.fetch_add(used, Ordering::Relaxed);
        polled
    }
}

/// Nanoseconds of the monotonic clock since the process first asked.
fn wall_nanos() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
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
    wall_nanos()
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
        let inner = clock.clone();
        let (wake, woken) = tokio::sync::oneshot::channel::<()>();
        let (waiting, started) = tokio::sync::oneshot::channel::<()>();
        let waiter = tokio::spawn(clock.measure(Box::pin(async move {
            // Each poll reaches a tick, as a guest that computes does.
            inner.elapsed();
            burn(Duration::from_millis(20));
            let _ = waiting.send(());
            let _ = woken.await;
            inner.elapsed();
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
    fn a_poll_is_timed_by_the_cpu_clock_from_its_first_tick() {
        let clock = CpuClock::new();
        let inner = clock.clone();
        let (mut first, mut second) = (Duration::ZERO, Duration::ZERO);
        let measured = clock.measure(Box::pin(async {
            burn(Duration::from_millis(3));
            first = inner.elapsed();
            burn(Duration::from_millis(30));
            second = inner.elapsed();
        }));
        futures_util::FutureExt::now_or_never(measured).unwrap();
        // Before the first tick: its wall time, at most a tick of it.
        assert!(first >= Duration::from_millis(3), "{first:?}");
        assert!(first <= EPOCH_TICK, "{first:?}");
        // From it on: the thread's CPU time, the poll under way included.
        assert!(second - first >= Duration::from_millis(30), "{second:?}");
        assert!(clock.elapsed() >= second);
    }

    #[test]
    fn a_poll_without_a_tick_counts_its_wall_time_up_to_a_tick() {
        let clock = CpuClock::new();
        let short = clock.measure(Box::pin(async { burn(Duration::from_millis(2)) }));
        futures_util::FutureExt::now_or_never(short).unwrap();
        let after_short = clock.elapsed();
        assert!(after_short >= Duration::from_millis(2), "{after_short:?}");
        assert!(after_short <= EPOCH_TICK, "{after_short:?}");
        let long = clock.measure(Box::pin(async { burn(Duration::from_millis(30)) }));
        futures_util::FutureExt::now_or_never(long).unwrap();
        assert_eq!(clock.elapsed() - after_short, EPOCH_TICK);
    }
}
