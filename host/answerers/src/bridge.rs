//! The bridge answerer: a process in any language answers over JSON lines,
//! on a child's stdin/stdout or on a Unix socket, with the remote-event frames
//! of SPEC §5.
//!
//! One JSON frame per line (see [`ask_user_seam::remote`]): `ready` once,
//! then a `waterfall` per ask and a `cancel` when an ask is withdrawn; the
//! peer answers each event with an outcome.
//!
//! A peer that goes away (exits, closes its output, stops reading) passes
//! its pending events on, and every later request (SPEC §5: a client that
//! goes away passes its events), whether it left before a question reached
//! it or after: the outcome never depends on that race; why it left is
//! logged as a warning. A peer that breaks the stream (a line over
//! [`MAX_FRAME_BYTES`], not UTF-8) fails what it holds (`BridgeError`); a
//! malformed frame fails the event it names (or every pending event when it
//! names none); an outcome for an event that is no longer pending is
//! ignored. Nothing waits on a peer that is gone. Closing writes the queued
//! frames (a `cancel` is never lost), then stops the peer.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use ask_user_seam::remote::{self, PendingQuestions, UpFrame};
use ask_user_seam::{AnswerError, AnswerFuture, Answerer, Ask, Next};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec};
use tokio_util::sync::CancellationToken;

use super::{AnswererKind, ConfigProblem, KindTable, Setup, Started};

/// The longest line a peer may send, in bytes.
pub const MAX_FRAME_BYTES: usize = 1 << 20;

/// An answerer on the other end of a JSON-lines stream.
pub struct BridgeAnswerer {
    shared: Arc<Shared>,
    /// Tells the writer to write what is queued and stop.
    closing: CancellationToken,
    /// The task that reads the peer's frames (and owns the child, killed
    /// when it ends) and the one that writes frames to it; taken by close,
    /// aborted on drop.
    tasks: std::sync::Mutex<Option<Tasks>>,
}

struct Tasks {
    reader: tokio::task::JoinHandle<()>,
    writer: tokio::task::JoinHandle<()>,
}

/// How long closing waits for the queued frames (a `cancel`, say) to be
/// written, then for the peer to end by itself; and how long a peer that
/// closed its output has to exit before it is reported without its status.
const FLUSH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

struct Shared {
    /// What the peer is, for messages: the command line or the socket path.
    peer: String,
    pending: PendingQuestions,
    /// Frames for the writer task, in order.
    frames: mpsc::UnboundedSender<Value>,
}

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

impl BridgeAnswerer {
    /// Starts `command` (program, arguments, and any directory or
    /// environment the caller set) and answers through its stdin and stdout.
    /// Its stderr is the host's. It is killed when the answerer is dropped or
    /// closed.
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
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other(
                "the bridge's stdin and stdout were not piped",
            ));
        };
        Ok(Self::start(
            format!("bridge `{shown}`"),
            stdout,
            Box::new(stdin),
            Some(child),
        ))
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
        Ok(Self::start(
            format!("bridge socket {}", path.display()),
            read,
            Box::new(write),
            None,
        ))
    }

    fn start(
        peer: String,
        read: impl AsyncRead + Send + Unpin + 'static,
        write: Writer,
        child: Option<tokio::process::Child>,
    ) -> Self {
        let (frames, queued) = mpsc::unbounded_channel();
        let withdrawn = frames.clone();
        let shared = Arc::new(Shared {
            peer,
            // A withdrawn question is cancelled at the peer: queued at once,
            // so it is never lost.
            pending: PendingQuestions::new("e", move |id, _| {
                let _ = withdrawn.send(remote::cancel(id));
            }),
            frames,
        });
        let _ = shared
            .frames
            .send(remote::ready(&format!("ask-user-{}", std::process::id())));
        let closing = CancellationToken::new();
        let writer = tokio::spawn(write_frames(shared.clone(), write, queued, closing.clone()));
        let reader = tokio::spawn(read_frames(shared.clone(), read, child, closing.clone()));
        BridgeAnswerer {
            shared,
            closing,
            tasks: std::sync::Mutex::new(Some(Tasks { reader, writer })),
        }
    }
}

impl BridgeAnswerer {
    /// Questions waiting for the peer now.
    pub fn pending(&self) -> usize {
        self.shared.pending.len()
    }

    fn take_tasks(&self) -> Option<Tasks> {
        let mut tasks = self
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        tasks.take()
    }
}

impl Drop for BridgeAnswerer {
    fn drop(&mut self) {
        if let Some(tasks) = self.take_tasks() {
            tasks.reader.abort();
            tasks.writer.abort();
        }
    }
}

/// Writes the queued frames in order; once `closing`, writes what is still
/// queued (a withdrawn question's `cancel` is never lost) and ends, which
/// closes the peer's input.
async fn write_frames(
    shared: Arc<Shared>,
    mut write: Writer,
    mut queued: mpsc::UnboundedReceiver<Value>,
    closing: CancellationToken,
) {
    loop {
        let frame = tokio::select! {
            biased;
            frame = queued.recv() => frame,
            () = closing.cancelled() => queued.try_recv().ok(),
        };
        let Some(frame) = frame else { return };
        let mut line = frame.to_string();
        line.push('\n');
        let written = match write.write_all(line.as_bytes()).await {
            Ok(()) => write.flush().await,
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            // A peer that stopped reading is gone, as one that exited is.
            shared.depart(format!("stopped reading its input ({error})"));
            return;
        }
    }
}

async fn read_frames(
    shared: Arc<Shared>,
    read: impl AsyncRead + Send + Unpin,
    mut child: Option<tokio::process::Child>,
    closing: CancellationToken,
) {
    let mut lines = FramedRead::new(read, LinesCodec::new_with_max_length(MAX_FRAME_BYTES));
    let broken = loop {
        match lines.next().await {
            None => break None,
            Some(Err(error)) => break Some(format!("broke the stream ({error})")),
            Some(Ok(line)) if line.trim().is_empty() => {}
            Some(Ok(line)) => shared.on_frame(&line),
        }
    };
    // A peer that breaks the stream fails what it holds (BridgeError); one
    // that leaves passes it on, whenever it left: before a question
    // reached it or after, the outcome is the same.
    if let Some(why) = broken {
        tracing::warn!(peer = %shared.peer, "the {} {why}", shared.peer);
        shared.pending.close(why);
        return;
    }
    let why = match child.as_mut() {
        Some(child) => match tokio::time::timeout(FLUSH_TIMEOUT, child.wait()).await {
            Ok(Ok(status)) => format!("closed its output and exited ({status})"),
            _ => "closed its output".to_owned(),
        },
        None => "closed its output".to_owned(),
    };
    if closing.is_cancelled() {
        // Asked to end by the host: no surprise to report.
        shared.pending.depart(why);
    } else {
        shared.depart(why);
    }
}

impl Shared {
    /// The peer is gone: what it holds, and every later request, passes on.
    fn depart(&self, why: String) {
        tracing::warn!(
            peer = %self.peer,
            "the {} {why}; its questions pass on to the next answerer",
            self.peer
        );
        self.pending.depart(why);
    }

    fn on_frame(&self, line: &str) {
        match serde_json::from_str::<UpFrame>(line) {
            // An outcome for a withdrawn or finished event is ignored.
            Ok(frame) => {
                let _ = self.pending.settle(&frame.event_id, Ok(frame.outcome));
            }
            Err(error) => {
                let problem = format!("sent a malformed frame ({error}): {}", excerpt(line));
                let named = serde_json::from_str::<Value>(line)
                    .ok()
                    .and_then(|v| v.get("eventId")?.as_str().map(str::to_owned));
                match named {
                    Some(id) => {
                        let _ = self.pending.settle(&id, Err(problem));
                    }
                    None => self.pending.fail_all(&problem),
                }
            }
        }
    }
}

fn excerpt(line: &str) -> String {
    const MAX: usize = 200;
    match line.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

impl Answerer for BridgeAnswerer {
    fn name(&self) -> &str {
        "bridge"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let shared = &self.shared;
            // Nobody is there any more: like any absent answerer, pass.
            let mut pending = match shared.pending.open(ask) {
                Ok(pending) => pending,
                Err(gone) => return next.pass(format!("the bridge is gone ({})", gone.0)).await,
            };
            if shared.frames.send(pending.frame().clone()).is_err() {
                return Err(failed(shared, "is no longer connected".to_owned()));
            }
            match pending.settled().await {
                Some(Ok(outcome)) => match outcome.into_answers() {
                    Some(answered) => answered,
                    None => next.pass("the bridge passed it on").await,
                },
                Some(Err(why)) => Err(failed(shared, why)),
                None => Err(failed(shared, "dropped the question".to_owned())),
            }
        })
    }

    /// Writes what is queued and closes the peer's input, so that it can act
    /// on a last `cancel` and end by itself; a peer still there after
    /// `FLUSH_TIMEOUT` is stopped (a child killed and reaped) before this
    /// returns.
    fn close(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        let tasks = self.take_tasks();
        Box::pin(async move {
            let Some(Tasks {
                mut reader,
                mut writer,
            }) = tasks
            else {
                return;
            };
            self.closing.cancel();
            if tokio::time::timeout(FLUSH_TIMEOUT, &mut writer)
                .await
                .is_err()
            {
                writer.abort();
            }
            if tokio::time::timeout(FLUSH_TIMEOUT, &mut reader)
                .await
                .is_err()
            {
                // Ending the reader drops the child, which kills it.
                reader.abort();
                let _ = reader.await;
            }
            self.shared.pending.close("was closed by the host");
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

/// `kind = "bridge"`: a `command` to run (in the config file's folder) or
/// a `socket` to connect to.
pub struct BridgeKind;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BridgeTable {
    command: Option<Vec<String>>,
    socket: Option<PathBuf>,
}

/// A configured bridge.
#[derive(Debug)]
enum BridgeSetup {
    /// A process started with this command line, in this folder.
    Command {
        program: String,
        args: Vec<String>,
        dir: PathBuf,
    },
    /// A peer listening on this Unix socket.
    Socket(PathBuf),
}

impl AnswererKind for BridgeKind {
    fn name(&self) -> &'static str {
        "bridge"
    }

    fn configure(
        &self,
        table: KindTable<'_>,
        base: &Path,
    ) -> Result<Box<dyn Setup>, ConfigProblem> {
        let table: BridgeTable = table.read(self.name())?;
        let setup = match (table.command, table.socket) {
            (Some(command), None) => match command.split_first() {
                Some((program, args)) if !program.is_empty() => BridgeSetup::Command {
                    program: program.clone(),
                    args: args.to_vec(),
                    dir: base.to_owned(),
                },
                _ => return Err("a bridge's `command` names a program to run, e.g. [\"python3\", \"bridge.py\"]".into()),
            },
            (None, Some(socket)) => BridgeSetup::Socket(base.join(socket)),
            _ => return Err("a bridge answerer takes either a `command` or a `socket`".into()),
        };
        Ok(Box::new(setup))
    }
}

impl Setup for BridgeSetup {
    fn start(
        self: Box<Self>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<Started>> + Send>> {
        Box::pin(async move {
            let bridge = match *self {
                BridgeSetup::Command { program, args, dir } => {
                    let mut command = std::process::Command::new(program);
                    command.args(args).current_dir(dir);
                    BridgeAnswerer::spawn(command).await?
                }
                BridgeSetup::Socket(path) => BridgeAnswerer::connect(&path).await?,
            };
            Ok(Started {
                answerer: Arc::new(bridge),
                notice: None,
                page: None,
            })
        })
    }
}
