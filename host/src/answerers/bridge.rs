//! The bridge answerer: a process in any language answers over JSON lines,
//! on a child's stdin/stdout or on a Unix socket, with the remote-event frames
//! of SPEC §5.
//!
//! One JSON frame per line (see [`super::remote`]): `ready` once, then a
//! `waterfall` per ask and a `cancel` when an ask is withdrawn; the peer
//! answers each event with an outcome.
//!
//! A peer that goes away fails its pending events with a clear error and
//! passes later requests on; a malformed frame fails the event it names (or
//! every pending event when it names none); an outcome for an event that is
//! no longer pending is ignored. Nothing waits on a peer that is gone.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio_util::codec::{FramedRead, LinesCodec};

use super::remote::{self, Outcome, UpFrame};
use crate::error::AnswerError;
use crate::sync::lock;
use crate::waterfall::{AnswerFuture, Answerer, Ask, Next};

/// The longest line a peer may send, in bytes.
pub const MAX_FRAME_BYTES: usize = 1 << 20;

/// An answerer on the other end of a JSON-lines stream.
pub struct BridgeAnswerer {
    shared: Arc<Shared>,
    /// Reads the peer's frames; aborted (and the child killed) on drop.
    reader: tokio::task::JoinHandle<()>,
}

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

struct Shared {
    /// What the peer is, for messages: the command line or the socket path.
    peer: String,
    writer: tokio::sync::Mutex<Writer>,
    state: Mutex<State>,
    events: AtomicU64,
}

#[derive(Default)]
struct State {
    pending: HashMap<String, oneshot::Sender<Result<Outcome, String>>>,
    /// Why the peer is gone, once it is.
    gone: Option<String>,
}

impl BridgeAnswerer {
    /// Starts `command` (program, arguments, and any directory or
    /// environment the caller set) and answers through its stdin and stdout.
    /// Its stderr is the host's. It is killed when the answerer is dropped.
    pub async fn spawn(command: std::process::Command) -> std::io::Result<Self> {
        let shown: Vec<_> = std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(|part| part.to_string_lossy())
            .collect();
        let shown = shown.join(" ");
        let mut child = tokio::process::Command::from(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot start the bridge `{shown}`: {e}"))
            })?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        Self::start(
            format!("bridge `{shown}`"),
            stdout,
            Box::new(stdin),
            Some(child),
        )
        .await
    }

    /// Answers through the Unix socket at `path`.
    pub async fn connect(path: &Path) -> std::io::Result<Self> {
        let stream = tokio::net::UnixStream::connect(path).await.map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot connect to the bridge socket {}: {e}",
                    path.display()
                ),
            )
        })?;
        let (read, write) = stream.into_split();
        Self::start(
            format!("bridge socket {}", path.display()),
            read,
            Box::new(write),
            None,
        )
        .await
    }

    async fn start(
        peer: String,
        read: impl AsyncRead + Send + Unpin + 'static,
        write: Writer,
        child: Option<tokio::process::Child>,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            peer,
            writer: tokio::sync::Mutex::new(write),
            state: Mutex::new(State::default()),
            events: AtomicU64::new(1),
        });
        let client_id = format!("ask-user-{}", std::process::id());
        shared.send(remote::ready(&client_id)).await?;
        let reader = tokio::spawn(read_frames(shared.clone(), read, child));
        Ok(BridgeAnswerer { shared, reader })
    }
}

impl Drop for BridgeAnswerer {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn read_frames(
    shared: Arc<Shared>,
    read: impl AsyncRead + Send + Unpin,
    mut child: Option<tokio::process::Child>,
) {
    let mut lines = FramedRead::new(read, LinesCodec::new_with_max_length(MAX_FRAME_BYTES));
    let why = loop {
        match lines.next().await {
            None => break "closed its output".to_owned(),
            Some(Err(error)) => break format!("broke the stream ({error})"),
            Some(Ok(line)) if line.trim().is_empty() => {}
            Some(Ok(line)) => shared.on_frame(&line),
        }
    };
    let why = match child.as_mut() {
        Some(child) => {
            match tokio::time::timeout(std::time::Duration::from_secs(1), child.wait()).await {
                Ok(Ok(status)) => format!("{why} and exited ({status})"),
                _ => why,
            }
        }
        None => why,
    };
    shared.gone(why);
}

impl Shared {
    async fn send(&self, frame: serde_json::Value) -> std::io::Result<()> {
        let mut line = frame.to_string();
        line.push('\n');
        let mut writer = self.writer.lock().await;
        writer.write_all(line.as_bytes()).await?;
        writer.flush().await
    }

    fn on_frame(&self, line: &str) {
        match serde_json::from_str::<UpFrame>(line) {
            Ok(frame) => {
                // An outcome for a withdrawn or finished event is ignored.
                if let Some(waiting) = lock(&self.state).pending.remove(&frame.event_id) {
                    let _ = waiting.send(Ok(frame.outcome));
                }
            }
            Err(error) => {
                let problem = format!("sent a malformed frame ({error}): {}", excerpt(line));
                let named = serde_json::from_str::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| v.get("eventId")?.as_str().map(str::to_owned));
                let mut state = lock(&self.state);
                let failed: Vec<_> = match named {
                    Some(id) => state.pending.remove(&id).into_iter().collect(),
                    None => state.pending.drain().map(|(_, waiting)| waiting).collect(),
                };
                for waiting in failed {
                    let _ = waiting.send(Err(problem.clone()));
                }
            }
        }
    }

    fn gone(&self, why: String) {
        let mut state = lock(&self.state);
        for (_, waiting) in state.pending.drain() {
            let _ = waiting.send(Err(why.clone()));
        }
        state.gone = Some(why);
    }
}

fn excerpt(line: &str) -> String {
    const MAX: usize = 200;
    match line.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

/// Sends `cancel` for an event whose ask was withdrawn before it finished.
struct Withdraw {
    shared: Arc<Shared>,
    event_id: Option<String>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some(event_id) = self.event_id.take() else {
            return;
        };
        if lock(&self.shared.state).pending.remove(&event_id).is_none() {
            return;
        }
        let shared = self.shared.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = shared.send(remote::cancel(&event_id)).await;
            });
        }
    }
}

impl Answerer for BridgeAnswerer {
    fn name(&self) -> &str {
        "bridge"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let shared = &self.shared;
            let event_id = format!("e{}", shared.events.fetch_add(1, Ordering::Relaxed));
            let (tx, rx) = oneshot::channel();
            let gone = {
                let mut state = lock(&shared.state);
                if state.gone.is_none() {
                    state.pending.insert(event_id.clone(), tx);
                }
                state.gone.is_some()
            };
            if gone {
                // Nobody is there any more: like any absent answerer, pass.
                return next.run().await;
            }
            let mut withdraw = Withdraw {
                shared: shared.clone(),
                event_id: Some(event_id.clone()),
            };
            let frame =
                remote::waterfall(&event_id, ask.caller.as_ref().map(|c| c.id()), &ask.request);
            if let Err(error) = shared.send(frame).await {
                withdraw.event_id = None;
                lock(&shared.state).pending.remove(&event_id);
                return Err(failed(shared, format!("could not be written to ({error})")));
            }
            let outcome = rx.await;
            withdraw.event_id = None;
            match outcome {
                Ok(Ok(outcome)) => match outcome.into_answers() {
                    Some(answered) => answered,
                    None => next.run().await,
                },
                Ok(Err(why)) => Err(failed(shared, why)),
                Err(_) => Err(failed(shared, "dropped the question".to_owned())),
            }
        })
    }
}

fn failed(shared: &Shared, why: String) -> AnswerError {
    AnswerError::Other {
        name: "BridgeError".to_owned(),
        error: format!(
            "the {} {why}; the question got no answer. Check the bridge, then ask again",
            shared.peer
        )
        .into(),
    }
}
