//! The terminal answerer: asks the human at the controlling terminal.
//!
//! It opens `/dev/tty` (as fzf does), so the tool result can go to a pipe or
//! a file while the human is asked on the terminal. With no terminal at all
//! (a service, CI) it passes the request on: nothing waits on a human who is
//! not there. One batch is on screen at a time; further asks wait their turn.
//!
//! Keys: ↑↓ or j/k move, a digit picks an option, Enter confirms, Space ticks
//! in a multi-select question, "Type your own answer" takes free text
//! (single-select: instead of the choice; multi-select: in addition), "Skip"
//! skips, ← goes back; Esc or Ctrl-C dismisses the whole batch
//! (`ASK_CANCELLED`). A review of all answers comes before they are sent.
//! When the ask is withdrawn (the turn aborted or timed out) the prompt is
//! cleared and the terminal restored before the ask returns. Unix only.

mod prompt;
mod render;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::cursor::{Hide, MoveToColumn, MoveToPreviousLine, Show};
use crossterm::event::{self, DisableBracketedPaste, EnableBracketedPaste};
use crossterm::terminal::{self, BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate};
use crossterm::{QueueableCommand, execute, queue};
use serde::Deserialize;
use tokio::sync::{Mutex, OwnedMutexGuard, oneshot};

use super::{AnswererKind, ConfigProblem, KindTable, Setup, ready};
use ask_user_seam::ErrorCode;
use ask_user_seam::error::{AnswerError, AskError};
use ask_user_seam::question::{Answer, Question};
use ask_user_seam::waterfall::{AnswerFuture, Answerer, Ask, Elsewhere, Next};
use prompt::{Prompt, Step};
use render::{Layout, Painter};

/// How often the prompt checks whether it was withdrawn.
const WITHDRAW_POLL: Duration = Duration::from_millis(50);

/// How long crossterm may take to read input that is there.
const READ_POLL: Duration = Duration::from_millis(10);

/// The controlling terminal of the process.
const CONTROLLING_TERMINAL: &str = "/dev/tty";

/// Asks the human at the controlling terminal.
pub struct TerminalAnswerer {
    color: bool,
    device: PathBuf,
    /// One batch on screen at a time. Held by the prompt's thread until it
    /// has restored the terminal, so the next prompt never draws over one
    /// that is still being cleared.
    turn: Arc<Mutex<()>>,
}

impl Default for TerminalAnswerer {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalAnswerer {
    /// Asks at the controlling terminal; colour unless `NO_COLOR` is set
    /// (to anything but the empty string).
    pub fn new() -> Self {
        Self::with_device(CONTROLLING_TERMINAL)
    }

    /// Asks at the terminal device `path` instead (a tmux pane's
    /// `/dev/pts/N`, say). Where it cannot be opened, requests pass on.
    pub fn with_device(path: impl Into<PathBuf>) -> Self {
        TerminalAnswerer {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            device: path.into(),
            turn: Arc::new(Mutex::new(())),
        }
    }
}

enum Ending {
    Answered(Vec<Answer>),
    Dismissed,
    Withdrawn,
}

/// Tells the prompt's thread to withdraw when the ask is dropped before the
/// human finished. Never waits: the thread clears the prompt within
/// [`WITHDRAW_POLL`] and then gives up its turn; [`Answerer::close`] waits
/// for that.
struct Withdrawal {
    flag: Arc<AtomicBool>,
    armed: bool,
}

impl Drop for Withdrawal {
    fn drop(&mut self) {
        if self.armed {
            self.flag.store(true, Ordering::SeqCst);
        }
    }
}

/// Runs `prompt` on a thread of its own that holds `turn` until it ends
/// (the terminal restored, or a panic unwound). The receiver gets the
/// ending, or why the prompt failed.
fn spawn_prompt(
    turn: OwnedMutexGuard<()>,
    prompt: impl FnOnce(&AtomicBool) -> std::io::Result<Ending> + Send + 'static,
) -> std::io::Result<(oneshot::Receiver<Result<Ending, String>>, Withdrawal)> {
    let flag = Arc::new(AtomicBool::new(false));
    let withdraw = flag.clone();
    let (send, receive) = oneshot::channel();
    std::thread::Builder::new()
        .name("ask-user-terminal".into())
        .spawn(move || {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prompt(&withdraw)));
            let ending = match ran {
                Ok(Ok(ending)) => Ok(ending),
                Ok(Err(error)) => Err(error.to_string()),
                Err(panic) => Err(format!("it panicked: {}", panic_message(&*panic))),
            };
            drop(turn);
            let _ = send.send(ending);
        })?;
    Ok((receive, Withdrawal { flag, armed: true }))
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(text), _) => text,
        (_, Some(text)) => text,
        _ => "no message",
    }
}

impl Answerer for TerminalAnswerer {
    fn name(&self) -> &str {
        "terminal"
    }

    fn place(&self) -> &str {
        "at the terminal"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let turn = self.turn.clone().lock_owned().await;
            let tty = match File::options().read(true).write(true).open(&self.device) {
                Ok(tty) => tty,
                Err(error) => {
                    // No terminal: give up the turn before passing on, so
                    // other asks do not queue behind whatever answers
                    // downstream.
                    drop(turn);
                    return next
                        .pass(format!(
                            "no terminal ({} cannot be opened: {error})",
                            self.device.display()
                        ))
                        .await;
                }
            };
            let questions = ask.request.questions.clone();
            let (color, asked_by, elsewhere) = (self.color, ask.asked_by_label(), next.elsewhere());
            let also_at = next.also_at().to_vec();
            let (receive, mut withdrawal) = spawn_prompt(turn, move |withdraw| {
                let shown = Shown { asked_by, also_at };
                run(tty, &questions, shown, color, withdraw, &elsewhere).map_err(gone_if_hung_up)
            })
            .map_err(AnswerError::other)?;
            let ending = receive.await;
            withdrawal.armed = false;
            match ending {
                Ok(Ok(Ending::Answered(answers))) => Ok(answers),
                Ok(Ok(Ending::Dismissed)) => Err(AskError::new(
                    ErrorCode::AskCancelled,
                    "the user dismissed the questions without answering. Do not ask the same again; \
                     continue with what you know or end your turn",
                )
                .into()),
                Ok(Ok(Ending::Withdrawn)) => Err(failed("it was withdrawn while still awaited")),
                Ok(Err(why)) => Err(failed(&why)),
                Err(_) => Err(failed("its thread ended without a word")),
            }
        })
    }

    /// Waits until no prompt is on screen: a withdrawn prompt has cleared
    /// itself and restored the terminal.
    fn close(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
        })
    }
}

fn failed(why: &str) -> AnswerError {
    AnswerError::Other {
        name: "TerminalError".into(),
        error: format!("the terminal prompt failed: {why}").into(),
    }
}

/// `kind = "terminal"`: optional `device` (default: the controlling
/// terminal).
pub struct TerminalKind;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TerminalTable {
    device: Option<PathBuf>,
}

impl AnswererKind for TerminalKind {
    fn name(&self) -> &'static str {
        "terminal"
    }

    fn configure(
        &self,
        table: KindTable<'_>,
        base: &Path,
    ) -> Result<Box<dyn Setup>, ConfigProblem> {
        let table: TerminalTable = table.read(self.name())?;
        Ok(ready(match table.device {
            Some(device) => TerminalAnswerer::with_device(base.join(device)),
            None => TerminalAnswerer::new(),
        }))
    }
}

/// Raw mode with bracketed paste (a paste arrives as one event, so its
/// newlines and digits never act as keys); puts the terminal back as it
/// was, however the prompt ends.
struct RawMode {
    tty: File,
}

impl RawMode {
    fn enter(tty: &File) -> std::io::Result<Self> {
        let mut tty = tty.try_clone()?;
        terminal::enable_raw_mode()?;
        let mode = RawMode {
            tty: tty.try_clone()?,
        };
        execute!(tty, EnableBracketedPaste)?;
        Ok(mode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = execute!(self.tty, DisableBracketedPaste);
        let _ = terminal::disable_raw_mode();
    }
}

/// What a prompt says besides the questions.
struct Shown {
    /// A relayed sub-agent's chain.
    asked_by: Option<String>,
    /// Where the question is offered too (the web page's address).
    also_at: Vec<String>,
}

fn run(
    mut tty: File,
    questions: &[Question],
    shown: Shown,
    color: bool,
    withdraw: &AtomicBool,
    elsewhere: &Elsewhere,
) -> std::io::Result<Ending> {
    let _raw = RawMode::enter(&tty)?;
    let mut screen = Screen { at_row: 0 };
    let mut prompt = Prompt::new(questions);
    prompt.asked_by = shown.asked_by;
    prompt.also_at = shown.also_at;
    let result = (|| -> std::io::Result<(Ending, String)> {
        loop {
            let (width, height) = terminal::size()?;
            let painter = Painter {
                color,
                width: usize::from(width).saturating_sub(1).max(20),
            };
            // The last row stays free: a line written there would scroll.
            let layout = painter.fit(
                &painter.frame(&prompt),
                usize::from(height).saturating_sub(1),
                prompt.scroll,
            );
            (prompt.scroll, prompt.page) = (layout.scroll, layout.page);
            screen.draw(&mut tty, &layout)?;
            loop {
                if withdraw.load(Ordering::SeqCst) {
                    // Answered in the browser, say, or given up by the agent.
                    let why = elsewhere
                        .get()
                        .unwrap_or("withdrawn: the agent stopped waiting");
                    return Ok((Ending::Withdrawn, format!("… question {why}")));
                }
                if input_ready(&tty)? {
                    break;
                }
            }
            match prompt.on_event(&event::read()?) {
                Step::Continue => {}
                Step::Send(answers) => {
                    return Ok((Ending::Answered(answers), "✔ answers sent".to_owned()));
                }
                Step::Dismiss => {
                    return Ok((Ending::Dismissed, "✖ questions dismissed".to_owned()));
                }
            }
        }
    })();
    // Why the prompt ended comes first; a terminal that went away cannot
    // be cleared either.
    let cleared = screen.clear(&mut tty);
    let (ending, receipt) = result?;
    cleared?;
    queue!(tty, Show)?;
    write!(tty, "{receipt}\r\n")?;
    tty.flush()?;
    Ok(ending)
}

fn went_away() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the terminal went away")
}

/// A terminal that hung up fails reads, writes and size queries with EIO
/// (or ENXIO) before a poll may see the hang-up: the same ending.
fn gone_if_hung_up(error: std::io::Error) -> std::io::Error {
    match error.raw_os_error() {
        Some(libc::EIO | libc::ENXIO) => went_away(),
        _ => error,
    }
}

/// Waits up to [`WITHDRAW_POLL`] for a key (or an event crossterm already
/// holds). A terminal that hung up (its window closed, its pty master gone)
/// is an error, found by polling the descriptor ourselves: crossterm's
/// reader only gives up on a hung-up terminal when its own time runs out
/// (its default reader never did, which left the prompt, and its process,
/// spinning), so it is only asked to read, briefly, when there is input.
fn input_ready(tty: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let poll = |timeout: Duration| -> std::io::Result<bool> {
        let mut fd = libc::pollfd {
            fd: tty.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd that lives across the call.
        let n = unsafe { libc::poll(&mut fd, 1, timeout.as_millis() as libc::c_int) };
        if n < 0 {
            let error = std::io::Error::last_os_error();
            return match error.kind() {
                std::io::ErrorKind::Interrupted => Ok(false),
                _ => Err(error),
            };
        }
        if fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            return Err(went_away());
        }
        Ok(fd.revents & libc::POLLIN != 0)
    };
    poll(Duration::ZERO)?;
    // Events crossterm has read already (a paste, keys typed together); it
    // only hands them out when given some time, however little.
    if event::poll(Duration::from_millis(1))? {
        return Ok(true);
    }
    Ok(poll(WITHDRAW_POLL)? && event::poll(READ_POLL)?)
}

/// The prompt's region of the terminal, redrawn in place.
struct Screen {
    /// The row, counted from the top of the region, the cursor is on.
    at_row: usize,
}

impl Screen {
    fn clear(&mut self, tty: &mut impl Write) -> std::io::Result<()> {
        match self.at_row {
            0 => tty.queue(MoveToColumn(0))?,
            rows => tty.queue(MoveToPreviousLine(rows as u16))?,
        };
        tty.queue(Clear(ClearType::FromCursorDown))?;
        self.at_row = 0;
        Ok(())
    }

    /// Draws a frame in one write, marked as a synchronized update:
    /// terminals that know the mark show the frame whole, without flicker;
    /// the others ignore it.
    fn draw(&mut self, tty: &mut File, layout: &Layout) -> std::io::Result<()> {
        let mut frame = Vec::new();
        frame.queue(BeginSynchronizedUpdate)?;
        self.clear(&mut frame)?;
        frame.queue(Hide)?;
        let lines = &layout.lines;
        for line in lines {
            write!(frame, "{line}\r\n")?;
        }
        self.at_row = lines.len();
        if let Some((row, column)) = layout.caret.filter(|(row, _)| *row < lines.len()) {
            frame.queue(MoveToPreviousLine((lines.len() - row) as u16))?;
            frame.queue(MoveToColumn(column as u16))?;
            frame.queue(Show)?;
            self.at_row = row;
        }
        frame.queue(EndSynchronizedUpdate)?;
        tty.write_all(&frame)?;
        tty.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_prompt_that_panics_fails_the_ask_and_gives_up_its_turn() {
        let turn = Arc::new(Mutex::new(()));
        let (receive, _withdrawal) =
            spawn_prompt(turn.clone().lock_owned().await, |_| panic!("boom")).unwrap();
        let why = match receive.await.unwrap() {
            Err(why) => why,
            Ok(_) => panic!("a panicking prompt ended well"),
        };
        assert!(why.contains("panicked: boom"), "{why}");
        assert!(turn.try_lock().is_ok(), "the turn is still held");
    }

    #[tokio::test]
    async fn dropping_the_ask_tells_the_prompt_without_waiting_for_it() {
        let turn = Arc::new(Mutex::new(()));
        let (saw, seen) = std::sync::mpsc::channel();
        let (receive, withdrawal) = spawn_prompt(turn.clone().lock_owned().await, move |flag| {
            while !flag.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            let _ = saw.send(());
            Ok(Ending::Withdrawn)
        })
        .unwrap();
        drop(withdrawal);
        seen.recv_timeout(Duration::from_secs(30))
            .expect("the prompt never saw the withdrawal");
        assert!(matches!(receive.await.unwrap(), Ok(Ending::Withdrawn)));
        // The turn is free once the prompt's thread is done.
        let _free = turn.lock().await;
    }
}
