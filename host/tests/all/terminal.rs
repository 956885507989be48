//! The terminal answerer in a real pseudo-terminal: `ask-user ask` runs with
//! the pty as its controlling terminal and its stdout in a file, keys go in,
//! the tool result comes out.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

struct Session {
    writer: Box<dyn Write + Send>,
    screen: Arc<Mutex<Vec<u8>>>,
    dir: PathBuf,
    /// The pty's size: (rows, columns).
    size: (u16, u16),
    _temp: tempfile::TempDir,
    _child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What the session's shell prints last, after `stty -a`.
const SESSION_END: &str = "END-OF-SESSION";

/// What the prompt writes at the end of every redraw (the end of a
/// synchronized update): a frame counted is a frame on screen whole.
const DRAW: &str = "\x1b[?2026l";

/// Whether a frame is being written: its start is out, its end not yet.
fn mid_frame(screen: &str) -> bool {
    screen.matches("\x1b[?2026h").count() > screen.matches(DRAW).count()
}

/// How often the prompt has ended (sent, dismissed or withdrawn) so far.
fn endings(screen: &str) -> usize {
    screen.matches('✔').count() + screen.matches('✖').count() + screen.matches("withdrawn").count()
}

/// The key events in `keys`: an escape sequence (an arrow key) is one, a
/// lone Esc is one, and so is every other character.
fn key_events(keys: &str) -> usize {
    let mut chars = keys.chars().peekable();
    let mut events = 0;
    while let Some(c) = chars.next() {
        events += 1;
        // Alt+key: ESC and the key are one event.
        if c == '\x1b' && chars.peek() == Some(&'\r') {
            chars.next();
        } else if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    events
}

/// Runs `ask-user ask args.json [extra]` in an 80×24 pty with stdout in a
/// file, then `stty -a` on the same terminal, then [`SESSION_END`].
fn start(arguments: Value, extra: &str, color: bool) -> Session {
    start_sized(arguments, extra, color, (24, 80))
}

/// A session in a pty of `size` (rows, columns).
fn start_sized(arguments: Value, extra: &str, color: bool, size: (u16, u16)) -> Session {
    let ask = format!(
        "'{}' ask args.json {extra} > out.json",
        env!("CARGO_BIN_EXE_ask-user")
    );
    start_line(&ask, arguments, color, size)
}

/// A session in a pty of `size` whose shell runs `line` (which leaves the
/// tool result in `out.json`) in a folder holding `args.json`.
fn start_line(line: &str, arguments: Value, color: bool, size: (u16, u16)) -> Session {
    let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let temp = tempfile::Builder::new()
        .prefix(&format!("ask-user-pty-{n}-"))
        .tempdir()
        .unwrap();
    let dir = temp.path().to_owned();
    std::fs::write(dir.join("args.json"), arguments.to_string()).unwrap();
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: size.0,
            cols: size.1,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut command = CommandBuilder::new("sh");
    command.arg("-c");
    command.arg(format!("{line}; echo EXIT=$?; stty -a; echo {SESSION_END}"));
    command.cwd(&dir);
    command.env("XDG_CONFIG_HOME", dir.join("no-config"));
    command.env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"));
    if color {
        command.env_remove("NO_COLOR");
    } else {
        command.env("NO_COLOR", "1");
    }
    let child = pty.slave.spawn_command(command).unwrap();
    let mut reader = pty.master.try_clone_reader().unwrap();
    let screen = Arc::new(Mutex::new(Vec::new()));
    let sink = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    Session {
        writer: pty.master.take_writer().unwrap(),
        screen,
        dir,
        size,
        _temp: temp,
        _child: child,
        _master: pty.master,
    }
}

impl Session {
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.screen.lock().unwrap()).into_owned()
    }

    /// What a terminal of the pty's size shows now: all output so far run
    /// through a terminal emulator.
    fn shown(&self) -> String {
        let size = |n: u16| std::num::NonZeroU16::new(n).expect("a pty has a size");
        let mut terminal = vt100::Parser::new(size(self.size.0), size(self.size.1), 0);
        terminal.process(&self.screen.lock().unwrap());
        terminal.screen().contents()
    }

    /// Waits until `text` has appeared `times` times in all output so far,
    /// and the frame it is in has been written whole.
    fn wait_for(&self, text: &str, times: usize) {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= times && !mid_frame(&screen) {
                return;
            }
            assert!(
                start.elapsed() < WAIT,
                "never saw {text:?} ×{times}; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `keys` and waits until the prompt has taken them: it draws
    /// once for each key it handles, or ends. So each batch is read on its
    /// own (a lone Esc is only Esc when nothing follows it at once).
    fn keys(&mut self, keys: &str) {
        let before = self.screen();
        let (draws, ended) = (before.matches(DRAW).count(), endings(&before));
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
        let wanted = draws + key_events(keys);
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(DRAW).count() >= wanted || endings(&screen) > ended {
                return;
            }
            assert!(
                start.elapsed() < WAIT,
                "the prompt never took {keys:?}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits for the command to end; returns its exit status and result.
    fn finish(&self) -> (i32, Value) {
        self.wait_for("EXIT=", 1);
        // The whole of `stty -a`, not only its first line.
        self.wait_for(SESSION_END, 1);
        let screen = self.screen();
        let status: i32 = screen.split("EXIT=").nth(1).unwrap()[..1].parse().unwrap();
        let out = std::fs::read_to_string(self.dir.join("out.json")).unwrap();
        (status, serde_json::from_str(&out).unwrap())
    }

    /// The command ended answered (exit 0), the model getting `text`.
    fn assert_sent(&self, text: &str) {
        let (status, result) = self.finish();
        assert_eq!(status, 0, "{result}");
        assert_eq!(result["content"][0]["text"], text);
    }

    /// The command ended with `code` while the prompt was open: the prompt
    /// was withdrawn and the terminal restored.
    fn assert_withdrawn(&self, code: &str) {
        let (status, result) = self.finish();
        assert_eq!(status, 1);
        assert_eq!(result["error"]["code"], code);
        assert!(
            self.screen().contains("question withdrawn"),
            "{}",
            self.screen()
        );
        self.assert_restored();
    }

    /// The pid of this session's `ask-user` process (not its shell).
    fn ask_user_pid(&self) -> u32 {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(cwd) = std::fs::read_link(entry.path().join("cwd")) else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let program = cmdline.split(|&b| b == 0).next().unwrap_or_default();
            if cwd == self.dir && program.ends_with(b"ask-user") {
                return pid;
            }
        }
        panic!("no ask-user process runs in {}", self.dir.display());
    }

    /// The terminal settings after the command ended: raw mode must be off.
    fn assert_restored(&self) {
        let screen = self.screen();
        let stty = screen.split("EXIT=").nth(1).unwrap();
        for mode in ["icanon", "echo"] {
            assert!(
                stty.split_whitespace().any(|w| w == mode),
                "{mode} is off after the prompt:\n{stty}"
            );
        }
        let last_hide = screen.rfind("\x1b[?25l").unwrap_or(0);
        let last_show = screen
            .rfind("\x1b[?25h")
            .expect("the cursor is shown again");
        assert!(last_show > last_hide, "the cursor is left hidden");
    }
}

const DOWN: &str = "\x1b[B";
const UP: &str = "\x1b[A";
const ESC: &str = "\x1b";

fn deploy() -> Value {
    json!({"questions":[{"id":"target","header":"Deploy","question":"Where should this release go?",
        "options":[{"label":"Staging (Recommended)","description":"Safe to try."},{"label":"Production"}]}]})
}

#[test]
fn a_single_choice_by_digit_after_review() {
    let mut s = start(deploy(), "", false);
    s.wait_for("Where should this release go?", 1);
    let screen = s.screen();
    assert!(screen.contains("[Deploy]"), "{screen}");
    assert!(
        screen.contains("Staging (Recommended) ★"),
        "the recommended option is marked:\n{screen}"
    );
    assert!(screen.contains("Safe to try."), "{screen}");
    s.keys("2");
    s.wait_for("Review your answers", 1);
    assert!(s.screen().contains("→ Production"));
    s.keys("\r");
    s.assert_sent(r#"{"answers":[{"id":"target","selected":["Production"]}]}"#);
    s.assert_restored();
}

#[test]
fn arrows_and_enter_pick_the_highlighted_option() {
    let mut s = start(deploy(), "", false);
    s.wait_for("Where should this release go?", 1);
    s.keys(DOWN);
    s.keys(UP);
    s.keys("\r");
    s.wait_for("Review your answers", 1);
    s.keys("\r");
    let (_, result) = s.finish();
    assert_eq!(
        result["content"][0]["text"],
        r#"{"answers":[{"id":"target","selected":["Staging (Recommended)"]}]}"#
    );
}

#[test]
fn multi_select_with_custom_text_and_progress() {
    let arguments = json!({"questions":[
        {"id":"checks","header":"Checks","question":"Which checks?","multi_select":true,
         "options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},
        {"id":"name","question":"Release name?"}]});
    let mut s = start(arguments, "", false);
    s.wait_for("1 of 2", 1);
    s.keys(" ");
    s.keys("j");
    s.keys("j");
    s.keys(" ");
    s.keys("j");
    s.keys("\r"); // "Type your own answer"
    s.wait_for("Type your answer", 1);
    s.keys("and smoke");
    s.keys("\r");
    s.wait_for("2 of 2", 1);
    s.keys("Aurora");
    s.keys("\r");
    s.wait_for("Review your answers", 1);
    let screen = s.screen();
    assert!(screen.contains("Unit, Load, “and smoke”"), "{screen}");
    s.keys("\r");
    s.assert_sent(r#"{"answers":[{"id":"checks","selected":["Unit","Load"],"custom":"and smoke"},{"id":"name","selected":[],"custom":"Aurora"}]}"#);
}

#[test]
fn custom_text_replaces_a_single_choice() {
    let mut s = start(deploy(), "", false);
    s.wait_for("Where should this release go?", 1);
    s.keys("3"); // the numbered "Type your own answer" row
    s.wait_for("Type your answer", 1);
    s.keys("Canary first");
    s.keys("\r");
    s.wait_for("Review your answers", 1);
    s.keys("\r");
    let (_, result) = s.finish();
    assert_eq!(
        result["content"][0]["text"],
        r#"{"answers":[{"id":"target","selected":[],"custom":"Canary first"}]}"#
    );
}

#[test]
fn a_question_can_be_skipped_by_arrow_or_by_number() {
    // ↑ from the first row wraps to the last one, "Skip"; 4 is its number.
    for keys in [UP, "4"] {
        let mut s = start(deploy(), "", false);
        s.wait_for("4. Skip this question", 1);
        s.keys(keys);
        if keys == UP {
            s.keys("\r");
        }
        s.wait_for("(skipped)", 1);
        s.keys("\r");
        s.assert_sent(r#"{"answers":[{"id":"target","selected":[]}]}"#);
    }
}

#[test]
fn escape_twice_dismisses_the_batch() {
    let mut s = start(deploy(), "", false);
    s.wait_for("Where should this release go?", 1);
    s.keys(ESC);
    s.wait_for("Esc again dismisses all the questions", 1);
    s.keys(ESC);
    let (status, result) = s.finish();
    assert_eq!(status, 1);
    assert_eq!(result["error"]["code"], "ASK_CANCELLED");
    assert!(s.screen().contains("questions dismissed"));
    s.assert_restored();
}

/// The human's work is kept: Esc while typing leaves the field with the
/// words kept (it dismisses nothing), and a first Esc elsewhere only asks.
/// In a multi-select, Enter with nothing ticked skips the question, as the
/// page does (it never ticks the highlighted row behind the human's back).
#[test]
fn escape_leaves_the_text_field_and_enter_on_no_ticks_skips() {
    let arguments = json!({"questions":[
        {"id":"checks","question":"Which checks?","multi_select":true,
         "options":[{"label":"Unit"},{"label":"Load"}]},
        {"id":"target","question":"Where to?","options":[{"label":"Staging"},{"label":"Production"}]}]});
    let mut s = start(arguments, "", false);
    s.wait_for("1 of 2", 1);
    s.keys("\r"); // nothing ticked
    s.wait_for("2 of 2", 1);
    s.keys("3"); // "Type your own answer"
    s.wait_for("Type your answer", 1);
    s.keys("after lunch");
    s.keys(ESC);
    s.wait_for("Type your own answer: after lunch", 1);
    s.keys(ESC);
    s.wait_for("Esc again dismisses all the questions", 1);
    s.keys(DOWN); // goes on
    s.keys("\t");
    s.wait_for("Review your answers", 1);
    s.keys("\r");
    s.assert_sent(
        r#"{"answers":[{"id":"checks","selected":[]},{"id":"target","selected":[],"custom":"after lunch"}]}"#,
    );
}

#[test]
fn ctrl_c_dismisses_the_batch_from_the_review_too() {
    let mut s = start(deploy(), "", false);
    s.wait_for("Where should this release go?", 1);
    s.keys("1");
    s.wait_for("Review your answers", 1);
    s.keys("\x03");
    let (status, result) = s.finish();
    assert_eq!(status, 1);
    assert_eq!(result["error"]["code"], "ASK_CANCELLED");
    s.assert_restored();
}

#[test]
fn a_timed_out_prompt_is_withdrawn_and_the_terminal_restored() {
    let mut s = start(deploy(), "--timeout 1", false);
    s.wait_for("Where should this release go?", 1);
    s.keys("j"); // the human is mid-way
    s.assert_withdrawn("ASK_TIMED_OUT");
}

#[test]
fn an_aborted_turn_withdraws_the_open_prompt() {
    let mut s = start(deploy(), "", false);
    s.wait_for("Where should this release go?", 1);
    s.keys("j");
    // The turn is aborted from outside (SIGINT: in raw mode Ctrl-C is a key).
    let pid = s.ask_user_pid();
    let killed = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    s.assert_withdrawn("ASK_ABORTED");
}

#[test]
fn long_text_wraps_within_80_columns() {
    let long =
        "Should the migration run now, while the database is under its nightly load, or wait? "
            .repeat(4);
    let arguments = json!({"questions":[{"id":"q","question":long,
        "options":[{"label":"Now","description":"x ".repeat(100)},{"label":"Later"}]}]});
    let mut s = start(arguments, "", false);
    s.wait_for("Later", 1);
    let screen = strip_escapes(&s.screen());
    for line in screen.split("\r\n") {
        assert!(
            line.chars().count() < 80,
            "a line is {} wide: {line:?}",
            line.chars().count()
        );
    }
    s.keys("2");
    s.keys("\r");
    assert_eq!(s.finish().0, 0);
}

#[test]
fn colour_only_without_no_color() {
    let mut plain = start(deploy(), "", false);
    plain.wait_for("Where should this release go?", 1);
    plain.keys(ESC);
    plain.keys(ESC);
    plain.finish();
    assert!(
        !has_sgr(&plain.screen()),
        "NO_COLOR output has colour codes"
    );

    let mut coloured = start(deploy(), "", true);
    coloured.wait_for("Where should this release go?", 1);
    coloured.keys(ESC);
    coloured.keys(ESC);
    coloured.finish();
    assert!(
        has_sgr(&coloured.screen()),
        "no colour codes without NO_COLOR"
    );
}

/// Whether `text` holds an SGR (colour or attribute) escape sequence.
fn has_sgr(text: &str) -> bool {
    text.split("\x1b[").skip(1).any(|rest| {
        let end = rest
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        rest[end..].starts_with('m')
    })
}

fn strip_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn the_models_text_cannot_drive_the_terminal() {
    // Clear the screen, move up and rewrite a line, set the clipboard (OSC
    // 52), ring the bell: from the question, its header, a label and a
    // description. None of it may reach the terminal as a control sequence.
    let evil = "\u{1b}[2J\u{1b}[1A\u{1b}[2KApproved\u{1b}]52;c;ZXZpbA==\u{7}\u{9b}31m";
    let arguments = json!({"questions": [{
        "id": "q",
        "header": format!("Hdr{evil}"),
        "question": format!("Deploy now?{evil}"),
        "options": [
            {"label": format!("Yes{evil}"), "description": format!("Ships{evil}")},
            {"label": "No"}
        ]
    }]});
    let mut s = start(arguments, "", false);
    s.wait_for("Deploy now?", 1);
    s.wait_for("Yes[2J", 1);
    let screen = s.screen();
    for sequence in [
        "\u{1b}[2J",
        "\u{1b}[1A\u{1b}[2K",
        "\u{1b}]52",
        "\u{7}",
        "\u{9b}",
    ] {
        assert!(
            !screen.contains(sequence),
            "{sequence:?} reached the terminal:\n{screen:?}"
        );
    }
    assert!(
        screen.contains("Deploy now?[2J[1A[2KApproved]52;c;ZXZpbA==31m"),
        "{screen:?}"
    );
    s.keys("2");
    s.keys("\r");
    let (status, result) = s.finish();
    assert_eq!(status, 0);
    assert_eq!(
        result["structuredContent"]["answers"][0]["selected"],
        json!(["No"])
    );
}

/// A paste is text: with bracketed paste on, a long paste of several lines,
/// digits and spaces lands whole in the answer, and nothing in it acts as a
/// key (a newline does not confirm, a digit does not pick).
#[test]
fn a_long_multi_line_paste_is_text() {
    let mut s = start(deploy(), "", false);
    s.wait_for("Where should this release go?", 1);
    s.wait_for("\x1b[?2004h", 1);
    let pasted: String = (0..60)
        .map(|n| format!("line {n}: 1 2 3 staging then production\n"))
        .collect();
    assert!(pasted.len() > 2048);
    let wrapped = format!("\x1b[200~{}\x1b[201~", pasted.replace('\n', "\r"));
    s.writer.write_all(wrapped.as_bytes()).unwrap();
    s.writer.flush().unwrap();
    s.wait_for("Type your answer", 1);
    s.keys("\r");
    s.wait_for("Review your answers", 1);
    s.keys("\r");
    let (status, result) = s.finish();
    assert_eq!(status, 0);
    let answer = &result["structuredContent"]["answers"][0];
    assert_eq!(answer["selected"], json!([]));
    assert_eq!(answer["custom"], pasted.trim());
    assert!(
        s.screen().contains("\x1b[?2004l"),
        "bracketed paste is turned off again"
    );
}

/// The page of `ask --web`, from what the command said on the terminal: an
/// event stream open on it, read until the question arrived; its event id.
fn web_page(s: &Session) -> (std::net::TcpStream, String, String) {
    s.wait_for("answer in your browser: http://", 1);
    let screen = strip_escapes(&s.screen());
    let url = screen
        .split("answer in your browser: http://")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let (address, query) = url.split_once("/?").unwrap();
    let token = query.strip_prefix("token=").unwrap().to_owned();
    let mut events = std::net::TcpStream::connect(address).unwrap();
    events.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        events,
        "GET /events?token={token} HTTP/1.1\r\nHost: {address}\r\n\r\n"
    )
    .unwrap();
    // The question's frame, which names where it asks from (not the
    // session's random key).
    let asker = format!("\"asker\":\"ask-user in {}\"", s.dir.display());
    let seen = read_until(&mut events, &asker);
    assert!(seen.contains("\"type\":\"waterfall\""), "{seen}");
    let event = seen
        .split("\"eventId\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    (events, format!("{address}|{token}"), event)
}

fn read_until(stream: &mut std::net::TcpStream, text: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0; 4096];
    while !String::from_utf8_lossy(&seen).contains(text) {
        let n = stream.read(&mut buf).expect("the page's stream goes on");
        assert!(
            n > 0,
            "the stream ended before {text:?}: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// `--web` offers the question at the terminal and on the page at once: an
/// answer at the terminal wins, and the page drops the question, saying it
/// was answered at the terminal.
#[test]
fn with_web_the_terminal_is_offered_too_and_its_answer_wins() {
    let mut s = start(deploy(), "--web", false);
    let (mut events, _, event) = web_page(&s);
    s.wait_for("Where should this release go?", 1);
    s.keys("2");
    s.wait_for("Review your answers", 1);
    s.keys("\r");
    s.assert_sent(r#"{"answers":[{"id":"target","selected":["Production"]}]}"#);
    // The page is told where it went, not that the agent withdrew it.
    let seen = read_until(
        &mut events,
        &format!(
            "\"type\":\"cancel\",\"eventId\":\"{event}\",\"reason\":\"withdrawn\",\
             \"detail\":\"answered at the terminal\""
        ),
    );
    // Then that its server is done for good: the page stops trying to
    // reach it, instead of saying it is "not connected" for ever.
    let closed = "\"type\":\"closed\",\"again\":false";
    if !seen.contains(closed) {
        read_until(&mut events, closed);
    }
    s.assert_restored();
}

/// A config that names only an inbox (the README's minute, for the
/// hooks): `ask` at a terminal asks here too, beside the inbox; an answer
/// here wins, and the inbox's card says it was answered at the terminal.
#[test]
fn with_only_an_inbox_configured_the_terminal_is_asked_too() {
    let inbox = crate::inbox::Inbox::new();
    let line = format!(
        "ASK_USER_STATE_DIR='{}' '{}' ask args.json --config '{}' > out.json",
        inbox.state().display(),
        env!("CARGO_BIN_EXE_ask-user"),
        inbox.agent_config().display()
    );
    let mut s = start_line(&line, deploy(), false, (24, 80));
    s.wait_for("Where should this release go?", 1);
    inbox.wait_for("the question in the inbox", false, |q| {
        q["agentWaiting"] == true
    });
    s.keys("2");
    s.wait_for("Review your answers", 1);
    s.keys("\r");
    s.assert_sent(r#"{"answers":[{"id":"target","selected":["Production"]}]}"#);
    let left = inbox.wait_for("the card settled", true, |q| q["state"] != "waiting");
    assert_eq!(left["settledBy"], "answered at the terminal", "{left}");
    s.assert_restored();
}

/// With `--web`, the page's address stays in view under the keys however
/// long the question (it scrolled off the top with the notice before).
#[test]
fn with_web_the_pages_address_stays_in_view_under_a_long_question() {
    let mut s = start(long_question(), "--web", false);
    let (_events, page, _) = web_page(&s);
    s.wait_for("PgUp/PgDn scroll", 1);
    let (address, token) = page.split_once('|').unwrap();
    let shown = s.shown();
    let last = shown
        .trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        last.trim_end(),
        format!("Browser: http://{address}/?token={token}"),
        "{shown}"
    );
    s.keys(ESC);
    s.keys(ESC);
    assert_eq!(s.finish().0, 1);
}

/// An answer on the page wins as well: the prompt is withdrawn and the
/// terminal restored.
#[test]
fn with_web_an_answer_on_the_page_withdraws_the_prompt() {
    let s = start(deploy(), "--web", false);
    let (_events, page, event) = web_page(&s);
    s.wait_for("Where should this release go?", 1);
    let (address, token) = page.split_once('|').unwrap();
    let body = format!(
        r#"{{"eventId":"{event}","outcome":{{"kind":"result","value":{{"answers":[{{"id":"target","selected":["Staging (Recommended)"]}}]}}}}}}"#
    );
    let mut post = std::net::TcpStream::connect(address).unwrap();
    write!(
        post,
        "POST /answer HTTP/1.1\r\nHost: {address}\r\nx-ask-user-token: {token}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    post.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    s.assert_sent(r#"{"answers":[{"id":"target","selected":["Staging (Recommended)"]}]}"#);
    // The terminal says where the question went, not that the agent left.
    let screen = s.screen();
    assert!(
        screen.contains("… question answered in the browser")
            && !screen.contains("the agent stopped waiting"),
        "{screen}"
    );
    s.assert_restored();
}

fn long_question() -> Value {
    let words: Vec<String> = (0..500).map(|n| format!("word{n}")).collect();
    json!({"questions":[{"id":"q","header":"Long","question":words.join(" "),
        "options":[{"label":"Yes","description":"Go ahead."},{"label":"No"}]}]})
}

/// A question longer than the screen keeps its options and keys in view
/// and scrolls with PgUp/PgDn (issue 12 item 1).
#[test]
fn a_long_question_scrolls_and_the_options_stay_in_view() {
    let mut s = start(long_question(), "", false);
    s.wait_for("PgUp/PgDn scroll", 1);
    let shown = s.shown();
    for visible in [
        "1. Yes",
        "2. No",
        "Type your own answer",
        "Skip this question",
        "Esc dismiss all",
        "word0 ",
    ] {
        assert!(
            shown.contains(visible),
            "{visible:?} not on screen:\n{shown}"
        );
    }
    assert!(!shown.contains("word499"), "{shown}");
    for _ in 0..30 {
        s.keys("\x1b[6~");
    }
    let shown = s.shown();
    assert!(
        shown.contains("word499") && !shown.contains("word0 "),
        "{shown}"
    );
    assert!(shown.contains("2. No"), "{shown}");
    s.keys("\x1b[5~");
    assert!(
        !s.shown().contains("word499"),
        "PgUp scrolls back:\n{}",
        s.shown()
    );
    s.keys("2");
    s.wait_for("Review your answers", 1);
    s.keys("\r");
    s.assert_sent(r#"{"answers":[{"id":"q","selected":["No"]}]}"#);
    s.assert_restored();
}

/// At 50 columns every line is laid out by the prompt: moving about leaves
/// no stale copy of the question behind (issue 12 item 4).
#[test]
fn a_narrow_terminal_leaves_nothing_stale_behind() {
    let mut s = start_sized(deploy(), "", false, (24, 50));
    s.wait_for("Where should this release go?", 1);
    for key in ["j", "j", "k", "j", "k", "k"] {
        s.keys(key);
    }
    let shown = s.shown();
    assert_eq!(
        shown.matches("[Deploy]").count(),
        1,
        "stale copies:\n{shown}"
    );
    assert_eq!(
        shown.matches("dismiss all").count(),
        1,
        "stale copies:\n{shown}"
    );
    for line in shown.lines() {
        assert!(line.chars().count() <= 50, "{line:?}");
    }
    s.keys(ESC);
    s.keys(ESC);
    let (status, _) = s.finish();
    assert_eq!(status, 1);
}

/// Own words may span lines: Alt+Enter starts a new one (issue 12 item 2).
#[test]
fn alt_enter_writes_own_words_on_several_lines() {
    let mut s = start(
        json!({"questions":[{"id":"why","question":"Why?"}]}),
        "",
        false,
    );
    s.wait_for("Alt+Enter new line", 1);
    s.keys("one");
    s.keys("\x1b\r");
    s.keys("two");
    let shown = s.shown();
    assert!(
        shown.contains("› one\n") && shown.contains("  two"),
        "{shown}"
    );
    let filled = |shown: &str| shown.lines().filter(|l| !l.trim().is_empty()).count();
    let before = filled(&shown);
    // Words longer than the line wrap onto more lines as they are typed.
    s.keys(
        &" and a reason that goes on well past the width of this eighty-column screen".repeat(2),
    );
    let shown = s.shown();
    assert!(
        shown.lines().all(|line| line.chars().count() <= 80),
        "{shown}"
    );
    assert!(filled(&shown) >= before + 2, "the field grew:\n{shown}");
    s.keys("\r");
    s.wait_for("Review your answers", 1);
    s.keys("\r");
    s.assert_sent(&format!(
        r#"{{"answers":[{{"id":"why","selected":[],"custom":"one\ntwo{}"}}]}}"#,
        " and a reason that goes on well past the width of this eighty-column screen".repeat(2)
    ));
}

/// A bar of every question shows where each stands, → and ← move freely,
/// and own words are typed in place, the ticks still in view (issue 12
/// item 5).
#[test]
fn the_bar_of_questions_and_own_words_in_place() {
    let mut s = start(
        json!({"questions":[
            {"id":"checks","header":"Checks","question":"Which checks?","multi_select":true,
             "options":[{"label":"Unit"},{"label":"Integration"}]},
            {"id":"note","header":"Note","question":"Anything else?"}]}),
        "",
        false,
    );
    s.wait_for("Which checks?", 1);
    assert!(
        s.shown().contains("[Checks ·]│ Note · │ Review"),
        "{}",
        s.shown()
    );
    s.keys(" ");
    s.keys("3");
    s.keys("smoke");
    let shown = s.shown();
    assert!(
        shown.contains("1. [x] Unit"),
        "the ticks stay in view:\n{shown}"
    );
    assert!(shown.contains("3. › smoke"), "typed in place:\n{shown}");
    s.keys("\r");
    s.wait_for("Anything else?", 1);
    assert!(s.shown().contains(" Checks ✓ │[Note ·]"), "{}", s.shown());
    // ⇧Tab back to the checks (ticks kept), Tab on twice without answering.
    s.keys("\x1b[Z");
    s.wait_for("[Checks ✓]", 1);
    s.keys("\t");
    s.keys("\t");
    s.wait_for("Review your answers", 1);
    assert!(s.shown().contains(" Note · │[Review]"), "{}", s.shown());
    s.keys("\r");
    s.assert_sent(r#"{"answers":[{"id":"checks","selected":["Unit"],"custom":"smoke"},{"id":"note","selected":[]}]}"#);
}

/// The terminal going away under an open prompt (its window closed: the
/// pty's master closes) ends the command: it neither spins nor waits for
/// ever. It used to spin in crossterm's read of the hung-up terminal and
/// outlive its window. (A pty of our own: portable-pty keeps a copy of the
/// master open in its reader.)
#[test]
fn a_terminal_that_goes_away_ends_the_prompt_and_the_command() {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("args.json"), deploy().to_string()).unwrap();
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors we then own.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(opened, 0, "openpty");
    // SAFETY: both were just opened and are ours alone. The master must
    // not leak into the child, or closing ours would hang nothing up.
    let (master, slave) = unsafe {
        libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(slave, libc::F_SETFD, libc::FD_CLOEXEC);
        (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave))
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    command
        .args(["ask", "args.json"])
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("no-config"))
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .env("NO_COLOR", "1")
        .stdin(slave.try_clone().unwrap())
        .stdout(std::fs::File::create(dir.path().join("out.json")).unwrap())
        .stderr(slave.try_clone().unwrap());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    drop(slave);
    let mut terminal = std::fs::File::from(master);
    let (mut seen, mut buf) = (Vec::new(), [0; 4096]);
    while !String::from_utf8_lossy(&seen).contains("Where should this release go?") {
        let n = terminal.read(&mut buf).expect("the prompt draws");
        assert!(n > 0, "the pty closed before the prompt drew");
        seen.extend_from_slice(&buf[..n]);
    }
    drop(terminal); // the window closes
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > WAIT {
            let _ = child.kill();
            panic!("ask-user still runs {WAIT:?} after its terminal went away");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1), "an error result, not a crash");
    let out = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    // The hang-up signal aborts the turn, or the prompt finds the terminal
    // gone first: either way the call ends, saying so.
    assert!(
        out.contains("ASK_ABORTED") || out.contains("the terminal went away"),
        "{out}"
    );
}

/// Set in the environment of this test binary run again in a pty, as the
/// host of [`a_relayed_sub_agents_question_says_who_asks_at_the_terminal`].
const RELAY_CHILD: &str = "ASK_USER_TEST_RELAY_CHILD";

/// A host that relays its sub-agents' asks, its terminal the pty's: the
/// sub-agent "reviewer" of "session-1" asks, and the prompt says so first.
#[test]
fn a_relayed_sub_agents_question_says_who_asks_at_the_terminal() {
    if std::env::var_os(RELAY_CHILD).is_some() {
        return relay_host();
    }
    let line = format!(
        "{RELAY_CHILD}=1 '{}' terminal::a_relayed_sub_agents_question_says_who_asks_at_the_terminal \
         --exact --nocapture --test-threads=1 > test.log",
        std::env::current_exe().unwrap().display()
    );
    let mut s = start_line(&line, deploy(), false, (24, 80));
    s.wait_for("Where should this release go?", 1);
    let shown = s.shown();
    let said = shown.find("Asked by sub-agent session-1 › reviewer");
    let asked = shown.find("Where should this release go?");
    assert!(
        said.is_some() && said < asked,
        "the asker is said above the question:\n{shown}"
    );
    s.keys("2");
    s.wait_for("Review your answers", 1);
    assert!(
        s.shown()
            .contains("Asked by sub-agent session-1 › reviewer"),
        "{}",
        s.shown()
    );
    s.keys("\r");
    s.assert_sent(r#"{"answers":[{"id":"target","selected":["Production"]}]}"#);
    s.assert_restored();
}

/// The child's part: the host, the call as the sub-agent, its result in
/// `out.json`.
fn relay_host() {
    use ask_user::answerers::terminal::TerminalAnswerer;
    use ask_user::{AnswererEntry, Delegated, HostBuilder};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let host = HostBuilder::new()
            .delegated(Delegated::Relay { max_asks: 3 })
            .answerer(AnswererEntry::new(
                "terminal",
                ask_user::answerers::ready(TerminalAnswerer::new()),
            ))
            .build()
            .await
            .unwrap();
        let root = host.agents().register_root("session-1", None);
        let reviewer = host.agents().register_delegate("reviewer", &root);
        let arguments = std::fs::read_to_string("args.json").unwrap();
        let result = host
            .runtime()
            .call(&reviewer, &Default::default(), &arguments)
            .await;
        host.close().await;
        std::fs::write("out.json", serde_json::to_string(&result).unwrap()).unwrap();
    });
}
