//! One HTTP connection served until it ends or the server stops, whichever comes first; on a
//! stop the connection goes through hyper's graceful shutdown (it stops taking requests and
//! closes once the response it is writing, if any, has ended).
//!
//! The stop is a [`CancellationToken`], whose wait takes two locks at each poll. Polled beside
//! the connection in a `select!`, it would be polled at every wake of the connection's task,
//! several times a request, for a stop that comes once in the server's life. Here the stop's
//! wait is polled only at the first poll and when the stop itself woke the task: its waker sets
//! a flag (and wakes the task), and every other poll reads the flag and goes on to the
//! connection.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Wake, Waker};

use futures_util::task::AtomicWaker;
use tokio_util::sync::CancellationToken;

/// A connection that can be asked to finish its request in flight and close.
pub(super) trait GracefulConnection: Future {
    /// Starts the graceful shutdown; the connection's future then ends soon.
    fn shutdown(self: Pin<&mut Self>);
}

impl<I, B, S> GracefulConnection for hyper::server::conn::http1::Connection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn shutdown(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// The stop's waker: records that the stop woke the task, then wakes the task.
struct StopWaker {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for StopWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

/// Runs `conn` to its end; once `stop` is cancelled, shuts it down gracefully and runs it to
/// its end. Returns the connection's output.
pub(super) async fn until_stopped<C: GracefulConnection>(
    conn: C,
    stop: &CancellationToken,
) -> C::Output {
    let mut conn = pin!(conn);
    let mut stopped = pin!(stop.cancelled());
    // `woken` starts set: the first poll registers the stop's waker.
    let flag = Arc::new(StopWaker {
        woken: AtomicBool::new(true),
        task: AtomicWaker::new(),
    });
    let stop_waker = Waker::from(Arc::clone(&flag));
    let mut stopping = false;
    std::future::poll_fn(|cx: &mut Context<'_>| {
        if !stopping {
            flag.task.register(cx.waker());
            if flag.woken.swap(false, Ordering::AcqRel)
                && stopped
                    .as_mut()
                    .poll(&mut Context::from_waker(&stop_waker))
                    .is_ready()
            {
                stopping = true;
                conn.as_mut().shutdown();
            }
        }
        conn.as_mut().poll(cx)
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::task::Poll;
    use std::time::Duration;

    use super::*;

    /// A stand-in connection: each message on its channel wakes it, the channel's end ends
    /// it, and after a shutdown it ends at its next poll; it counts its polls.
    struct Fake {
        wakes: tokio::sync::mpsc::Receiver<()>,
        shut: bool,
        polls: usize,
    }

    impl Future for Fake {
        type Output = (&'static str, usize);

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            self.polls += 1;
            if self.shut {
                return Poll::Ready(("shut down", self.polls));
            }
            loop {
                match self.wakes.poll_recv(cx) {
                    Poll::Ready(Some(())) => {}
                    Poll::Ready(None) => return Poll::Ready(("ended", self.polls)),
                    Poll::Pending => return Poll::Pending,
                }
            }
        }
    }

    impl GracefulConnection for Fake {
        fn shutdown(mut self: Pin<&mut Self>) {
            self.shut = true;
        }
    }

    /// A fake connection served until `stop` in a task of its own, and its channel.
    fn spawn(
        stop: &CancellationToken,
    ) -> (
        tokio::sync::mpsc::Sender<()>,
        tokio::task::JoinHandle<(&'static str, usize)>,
    ) {
        let (tx, wakes) = tokio::sync::mpsc::channel(1);
        let conn = Fake {
            wakes,
            shut: false,
            polls: 0,
        };
        let stop = stop.clone();
        (
            tx,
            tokio::spawn(async move { until_stopped(conn, &stop).await }),
        )
    }

    #[tokio::test]
    async fn a_connection_ends_on_its_own_and_the_stop_is_left_alone() {
        let stop = CancellationToken::new();
        let (tx, run) = spawn(&stop);
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(tx);
        let (how, _) = run.await.expect("the task ends");
        assert_eq!(how, "ended");
        assert!(!stop.is_cancelled());
    }

    #[tokio::test]
    async fn a_stop_shuts_down_a_waiting_connection_at_once() {
        let stop = CancellationToken::new();
        let (_tx, run) = spawn(&stop);
        tokio::time::sleep(Duration::from_millis(20)).await;
        stop.cancel();
        let (how, polls) = tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .expect("the stop wakes the task")
            .expect("the task ends");
        assert_eq!(how, "shut down");
        assert_eq!(polls, 2, "polled once waiting, once after the shutdown");
    }

    #[tokio::test]
    async fn a_stop_before_the_first_poll_shuts_down_at_once() {
        let stop = CancellationToken::new();
        stop.cancel();
        let (_tx, run) = spawn(&stop);
        let (how, polls) = run.await.expect("the task ends");
        assert_eq!((how, polls), ("shut down", 1));
    }

    /// The connection's own wakes do not poll the stop: many wakes, then a stop, still shuts
    /// down (the stop's registration from the first poll holds).
    #[tokio::test]
    async fn the_stop_is_seen_after_many_wakes_of_the_connection() {
        let stop = CancellationToken::new();
        let (tx, run) = spawn(&stop);
        for _ in 0..50 {
            tx.send(()).await.expect("the connection listens");
            tokio::task::yield_now().await;
        }
        stop.cancel();
        let (_, polls) = tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .expect("the stop wakes the task")
            .expect("the task ends");
        assert!(polls >= 2, "{polls}");
    }
}
