//! Standard input for the MCP server, with a bound on each message that
//! this server (not the protocol library) enforces, so that it knows when
//! a message was dropped.
//!
//! The protocol library drops a line longer than its limit (16 MiB) with a
//! log line, and a form whose answer was that line would wait for ever.
//! [`BoundedLines`] drops such a line first, below the library's limit,
//! and says so on a [`Dropped`] signal: every form open at that moment ends
//! with a clear error instead of waiting (the dropped message carried no id
//! that could be read cheaply, and was most likely an answer to one of them).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

/// The longest message taken, in bytes, its newline included: under the
/// protocol library's own limit
/// ([`rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH`]), so that no
/// line reaches it that it would drop unseen.
pub const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH - 1;

/// Moves on each time a message was dropped for its size.
#[derive(Clone)]
pub struct Dropped(watch::Receiver<u64>);

impl Dropped {
    /// A signal that never fires (a transport without this bound).
    pub fn never() -> Self {
        Dropped(watch::channel(0).1)
    }

    /// Resolves at the next message dropped after this call (not after
    /// the first poll); never, when none can be any more.
    pub fn after_now(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut receiver = self.0.clone();
        receiver.borrow_and_update();
        async move {
            if receiver.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Passes on whole lines of at most [`MAX_MESSAGE_BYTES`]; drops a longer
/// one (every byte up to its newline) and signals it. A last line without a
/// newline is dropped at the end, as the protocol library would.
pub struct BoundedLines<R> {
    inner: R,
    /// The line being read, not yet passed on.
    line: Vec<u8>,
    /// Whole lines ready to pass on, and how much of them was.
    ready: Vec<u8>,
    passed: usize,
    /// Inside a line that was too long: skipping to its newline.
    skipping: bool,
    max: usize,
    dropped: watch::Sender<u64>,
    ended: bool,
}

impl<R> BoundedLines<R> {
    /// `inner`, bounded at [`MAX_MESSAGE_BYTES`].
    pub fn new(inner: R) -> (Self, Dropped) {
        Self::with_max(inner, MAX_MESSAGE_BYTES)
    }

    fn with_max(inner: R, max: usize) -> (Self, Dropped) {
        let (dropped, signal) = watch::channel(0);
        let lines = BoundedLines {
            inner,
            line: Vec::new(),
            ready: Vec::new(),
            passed: 0,
            skipping: false,
            max,
            dropped,
            ended: false,
        };
        (lines, Dropped(signal))
    }

    /// Takes `bytes` in: whole lines go to `ready`.
    fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (part, rest) = match newline {
                Some(at) => (&bytes[..=at], &bytes[at + 1..]),
                None => (bytes, &[][..]),
            };
            bytes = rest;
            if self.skipping {
                self.skipping = newline.is_none();
                continue;
            }
            if self.line.len() + part.len() > self.max {
                tracing::warn!(
                    max = self.max,
                    "the MCP client sent a message larger than the largest taken; it was dropped"
                );
                self.line.clear();
                self.skipping = newline.is_none();
                self.dropped.send_modify(|n| *n += 1);
                continue;
            }
            self.line.extend_from_slice(part);
            if newline.is_some() {
                self.ready.append(&mut self.line);
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.passed < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.passed);
                buf.put_slice(&this.ready[this.passed..this.passed + n]);
                this.passed += n;
                if this.passed == this.ready.len() {
                    this.ready.clear();
                    this.passed = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.ended {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16 * 1024];
            let filled = {
                let mut read = ReadBuf::new(&mut chunk);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
                read.filled().len()
            };
            match filled {
                0 => this.ended = true,
                n => this.take(&chunk[..n]),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_line_over_the_bound_is_dropped_and_said_and_the_rest_passes() {
        let input = b"short\n0123456789abcdef\nnext\nno newline".to_vec();
        let (mut lines, dropped) = BoundedLines::with_max(&input[..], 10);
        let fired = tokio::spawn(dropped.after_now());
        let mut out = String::new();
        lines.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "short\nnext\n");
        tokio::time::timeout(std::time::Duration::from_secs(5), fired)
            .await
            .expect("the drop is signalled")
            .unwrap();
    }

    #[tokio::test]
    async fn lines_split_across_reads_pass_whole() {
        // A reader that hands out three bytes at a time.
        let (client, mut server) = tokio::io::duplex(3);
        let (mut lines, _) = BoundedLines::with_max(client, 10);
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            server
                .write_all(b"abcdefghi\nabcdefghijklmno\nxy\n")
                .await
                .unwrap();
        });
        let mut out = String::new();
        lines.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "abcdefghi\nxy\n");
    }
}
