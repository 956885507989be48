//! A real client's TUI in a pseudo-terminal, read through a terminal
//! emulator (vt100): keys go in, the screen is waited for.

// Each test that includes this file uses part of it.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

/// The terminal's size: rows, columns.
const SIZE: (u16, u16) = (50, 120);

/// How long a key may take to show before it is typed again.
const RETRY: Duration = Duration::from_secs(3);

pub struct Tui {
    screen: Arc<(Mutex<vt100::Parser>, Condvar)>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Tui {
    /// Starts `program` with `args` in `dir`, with only `env` (and `PATH`).
    pub fn start(program: &Path, args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Tui {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: SIZE.0,
                cols: SIZE.1,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut command = CommandBuilder::new(program);
        command.args(args);
        command.cwd(dir);
        command.env_clear();
        command.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        command.env("TERM", "xterm-256color");
        for (name, value) in env {
            command.env(name, value);
        }
        let child = pty.slave.spawn_command(command).unwrap();
        let screen = Arc::new((
            Mutex::new(vt100::Parser::new(
                std::num::NonZero::new(SIZE.0).unwrap(),
                std::num::NonZero::new(SIZE.1).unwrap(),
                0,
            )),
            Condvar::new(),
        ));
        let writer = Arc::new(Mutex::new(pty.master.take_writer().unwrap()));
        let mut reader = pty.master.try_clone_reader().unwrap();
        let (sink, answer) = (screen.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = [0; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let (parser, changed) = &*sink;
                let mut parser = parser.lock().unwrap();
                parser.process(&buf[..n]);
                // A TUI asks where the cursor is before it draws; a
                // terminal answers.
                if buf[..n].windows(4).any(|w| w == b"\x1b[6n") {
                    let (row, column) = parser.screen().cursor_position();
                    let reply = format!("\x1b[{};{}R", row + 1, column + 1);
                    let _ = answer.lock().unwrap().write_all(reply.as_bytes());
                }
                changed.notify_all();
            }
        });
        Tui {
            screen,
            writer,
            child,
            _master: pty.master,
        }
    }

    /// Types `keys`.
    pub fn keys(&self, keys: &str) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(keys.as_bytes()).unwrap();
        writer.flush().unwrap();
    }

    /// Types `keys` until the screen shows every one of `texts`: a TUI may
    /// drop keys that come the moment a dialog appears (Codex takes them
    /// for a paste), so they go again after [`RETRY`] without a change,
    /// within `wait`. Only for keys that do nothing once they took effect.
    pub fn press(&self, keys: &str, texts: &[&str], wait: Duration) -> String {
        let start = Instant::now();
        loop {
            self.keys(keys);
            if let Some(screen) = self.shows(texts, RETRY) {
                return screen;
            }
            if start.elapsed() > wait {
                return self.wait_for(texts, Duration::ZERO);
            }
        }
    }

    /// The screen once it shows every one of `texts`, within `wait`.
    pub fn wait_for(&self, texts: &[&str], wait: Duration) -> String {
        self.shows(texts, wait).unwrap_or_else(|| {
            let screen = self.screen.0.lock().unwrap().screen().contents();
            panic!("the screen never showed {texts:?}; it shows:\n{screen}")
        })
    }

    /// Sends `signal` to the program alone (not its process group), as
    /// `kill` or a service manager would.
    pub fn signal(&self, signal: libc::c_int) {
        if let Some(pid) = self.child.process_id() {
            // SAFETY: a plain system call on our own child.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
        }
    }

    /// Whether the program ended within `wait`, and with success: the pty
    /// gives no event for it, so it is looked at every 20 ms.
    pub fn ended(&mut self, wait: Duration) -> Option<bool> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status.success());
            }
            if start.elapsed() > wait {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn shows(&self, texts: &[&str], wait: Duration) -> Option<String> {
        let start = Instant::now();
        let (parser, changed) = &*self.screen;
        let mut parser = parser.lock().unwrap();
        loop {
            let screen = parser.screen().contents();
            if texts.iter().all(|text| screen.contains(text)) {
                return Some(screen);
            }
            let left = wait.checked_sub(start.elapsed())?;
            parser = changed.wait_timeout(parser, left).unwrap().0;
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        // A test that fails elsewhere (an inbox that never got the
        // question) shows what the client showed.
        if std::thread::panicking() {
            let screen = self.screen.0.lock().unwrap().screen().contents();
            eprintln!("--- the screen at the panic ---\n{screen}");
        }
        // The client leads a session of its own in the pty: its process
        // group goes with it (the hooks it ran, the servers it started).
        if let Some(pid) = self.child.process_id() {
            unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
