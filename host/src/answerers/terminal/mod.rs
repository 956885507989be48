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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crossterm::cursor::{Hide, MoveToColumn, MoveToPreviousLine, Show};
use crossterm::event;
use crossterm::terminal::{self, Clear, ClearType};
use crossterm::{QueueableCommand, queue};
use tokio::sync::oneshot;

use crate::error::{AnswerError, AskError, ErrorCode};
use crate::question::{Answer, Question};
use crate::sync::lock;
use crate::waterfall::{AnswerFuture, Answerer, Ask, Next};
use prompt::{Prompt, Step};
use render::{Frame, Painter};

/// How often the prompt checks whether it was withdrawn.
const WITHDRAW_POLL: Duration = Duration::from_millis(50);

/// Asks the human at the controlling terminal.
pub struct TerminalAnswerer {
    color: bool,
    /// One batch on screen at a time.
    turn: tokio::sync::Mutex<()>,
}

impl Default for TerminalAnswerer {
    fn default() -> Self {
        Self::new()
    }
}

impl TerminalAnswerer {
    /// Colour unless `NO_COLOR` is set (to anything but the empty string).
    pub fn new() -> Self {
        TerminalAnswerer {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            turn: tokio::sync::Mutex::new(()),
        }
    }
}

enum Ending {
    Answered(Vec<Answer>),
    Dismissed,
    Withdrawn,
}

/// Tells the prompt thread to withdraw, and waits until it has restored the
/// terminal, when the ask is dropped before the human finished.
struct Withdrawal {
    flag: Arc<AtomicBool>,
    restored: Arc<(Mutex<bool>, Condvar)>,
    armed: bool,
}

impl Drop for Withdrawal {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.flag.store(true, Ordering::SeqCst);
        let (done, condvar) = &*self.restored;
        let restored = lock(done);
        // Bounded: the thread checks the flag every WITHDRAW_POLL.
        let _ = condvar.wait_timeout_while(restored, Duration::from_secs(2), |done| !*done);
    }
}

impl Answerer for TerminalAnswerer {
    fn name(&self) -> &str {
        "terminal"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            let Ok(tty) = File::options().read(true).write(true).open("/dev/tty") else {
                return next.run().await;
            };
            let flag = Arc::new(AtomicBool::new(false));
            let restored = Arc::new((Mutex::new(false), Condvar::new()));
            let (send, receive) = oneshot::channel();
            let questions = ask.request.questions.clone();
            let (color, withdraw, done) = (self.color, flag.clone(), restored.clone());
            std::thread::Builder::new()
                .name("ask-user-terminal".into())
                .spawn(move || {
                    let ending = run(tty, &questions, color, &withdraw);
                    let (restored, condvar) = &*done;
                    *lock(restored) = true;
                    condvar.notify_all();
                    let _ = send.send(ending);
                })
                .map_err(AnswerError::other)?;
            let mut withdrawal = Withdrawal {
                flag,
                restored,
                armed: true,
            };
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
                Ok(Ok(Ending::Withdrawn)) | Err(_) => std::future::pending().await,
                Ok(Err(error)) => Err(AnswerError::Other {
                    name: "TerminalError".into(),
                    error: format!("the terminal prompt failed: {error}").into(),
                }),
            }
        })
    }
}

/// Puts the terminal back as it was, however the prompt ends.
struct RawMode;

impl RawMode {
    fn enter() -> std::io::Result<Self> {
        terminal::enable_raw_mode()?;
        Ok(RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
    }
}

fn run(
    mut tty: File,
    questions: &[Question],
    color: bool,
    withdraw: &AtomicBool,
) -> std::io::Result<Ending> {
    let _raw = RawMode::enter()?;
    let mut screen = Screen { at_row: 0 };
    let mut prompt = Prompt::new(questions);
    let result = (|| -> std::io::Result<(Ending, &str)> {
        loop {
            let (width, height) = terminal::size()?;
            let painter = Painter {
                color,
                width: usize::from(width).saturating_sub(1).max(20),
            };
            screen.draw(&mut tty, &painter.frame(&prompt), usize::from(height))?;
            loop {
                if withdraw.load(Ordering::SeqCst) {
                    return Ok((
                        Ending::Withdrawn,
                        "… question withdrawn: the agent stopped waiting",
                    ));
                }
                if event::poll(WITHDRAW_POLL)? {
                    break;
                }
            }
            match prompt.on_event(&event::read()?) {
                Step::Continue => {}
                Step::Send(answers) => return Ok((Ending::Answered(answers), "✔ answers sent")),
                Step::Dismiss => return Ok((Ending::Dismissed, "✖ questions dismissed")),
            }
        }
    })();
    screen.clear(&mut tty)?;
    let (ending, receipt) = result?;
    queue!(tty, Show)?;
    write!(tty, "{receipt}\r\n")?;
    tty.flush()?;
    Ok(ending)
}

/// The prompt's region of the terminal, redrawn in place.
struct Screen {
    /// The row, counted from the top of the region, the cursor is on.
    at_row: usize,
}

impl Screen {
    fn clear(&mut self, tty: &mut File) -> std::io::Result<()> {
        match self.at_row {
            0 => tty.queue(MoveToColumn(0))?,
            rows => tty.queue(MoveToPreviousLine(rows as u16))?,
        };
        tty.queue(Clear(ClearType::FromCursorDown))?;
        self.at_row = 0;
        Ok(())
    }

    fn draw(&mut self, tty: &mut File, frame: &Frame, height: usize) -> std::io::Result<()> {
        self.clear(tty)?;
        tty.queue(Hide)?;
        let room = height.saturating_sub(1).max(3);
        let mut lines: Vec<&str> = frame.lines.iter().map(String::as_str).collect();
        if lines.len() > room {
            lines.truncate(room - 1);
            lines.push("…");
        }
        for line in &lines {
            write!(tty, "{line}\r\n")?;
        }
        self.at_row = lines.len();
        if let Some((row, column)) = frame.caret.filter(|(row, _)| *row < lines.len()) {
            tty.queue(MoveToPreviousLine((lines.len() - row) as u16))?;
            tty.queue(MoveToColumn(column as u16))?;
            tty.queue(Show)?;
            self.at_row = row;
        }
        tty.flush()
    }
}
