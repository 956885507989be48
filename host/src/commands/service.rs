//! `ask-user inbox install-service` and `uninstall-service`: one user's
//! inbox kept running by the user's service manager (a systemd user unit on
//! Linux, a launchd agent on macOS), started at login and again after a
//! crash. The file is written, never the service manager driven: the
//! command says the one line that starts it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{CliError, Context, Exit, say};

/// The first line of every file this writes: what uninstall takes back,
/// and install may write over.
const MARK: &str = "made by `ask-user inbox install-service`";

/// The service manager's file for the inbox, and how to start it.
struct Service {
    path: PathBuf,
    text: String,
    start: String,
    stop: String,
}

/// This user's service of the inbox, running `program`.
fn service(program: &Path) -> Result<Service, CliError> {
    let home = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| CliError::new("no home folder (HOME) for the service's file"))?;
    let state = std::env::var_os("ASK_USER_STATE_DIR").map(PathBuf::from);
    match cfg!(target_os = "macos") {
        true => Ok(launchd(&home, program, state.as_deref())),
        false => Ok(systemd(&home, program, state.as_deref())),
    }
}

/// A systemd user unit, in `$XDG_CONFIG_HOME/systemd/user`.
fn systemd(home: &Path, program: &Path, state: Option<&Path>) -> Service {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| home.join(".config"), PathBuf::from);
    let quote = |path: &Path| {
        let text = path.display().to_string();
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    };
    let environment = state
        .map(|dir| format!("Environment=ASK_USER_STATE_DIR={}\n", quote(dir)))
        .unwrap_or_default();
    Service {
        path: config.join("systemd/user/ask-user-inbox.service"),
        text: format!(
            "# {MARK}\n[Unit]\nDescription=ask-user inbox: every agent's questions in one place\n\n\
             [Service]\nExecStart={} inbox serve\n{environment}Restart=on-failure\n\n\
             [Install]\nWantedBy=default.target\n",
            quote(program)
        ),
        start: "systemctl --user daemon-reload && systemctl --user enable --now ask-user-inbox"
            .to_owned(),
        stop: "systemctl --user disable --now ask-user-inbox".to_owned(),
    }
}

/// A launchd agent, in `~/Library/LaunchAgents`.
fn launchd(home: &Path, program: &Path, state: Option<&Path>) -> Service {
    let xml = |path: &Path| {
        path.display()
            .to_string()
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let environment = state
        .map(|dir| {
            format!(
                "  <key>EnvironmentVariables</key>\n  <dict><key>ASK_USER_STATE_DIR</key>\
                 <string>{}</string></dict>\n",
                xml(dir)
            )
        })
        .unwrap_or_default();
    let path = home.join("Library/LaunchAgents/dev.ask-user.inbox.plist");
    Service {
        text: format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- {MARK} -->\n\
             <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \
             \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n\
             \x20 <key>Label</key><string>dev.ask-user.inbox</string>\n\
             \x20 <key>ProgramArguments</key>\n  <array><string>{}</string><string>inbox</string>\
             <string>serve</string></array>\n{environment}\
             \x20 <key>RunAtLoad</key><true/>\n  <key>KeepAlive</key><true/>\n</dict>\n</plist>\n",
            xml(program)
        ),
        start: format!("launchctl load -w {}", path.display()),
        stop: format!("launchctl unload -w {}", path.display()),
        path,
    }
}

/// Whether this user's systemd instance runs, which `systemctl --user`
/// talks to: its socket `$XDG_RUNTIME_DIR/systemd/private` is there. A
/// container, WSL without systemd and an SSH login without lingering have
/// none.
fn user_manager_runs() -> bool {
    std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|dir| !dir.is_empty())
        .is_some_and(|dir| Path::new(&dir).join("systemd/private").exists())
}

/// Writes this user's service of the inbox.
pub fn install() -> Exit {
    let program = super::program::lasting()?;
    if !cfg!(target_os = "macos") && !user_manager_runs() {
        return Err(CliError::new(
            "this login has no systemd user session (as in a container, WSL without systemd, or \
             an SSH login without lingering), so `systemctl --user` could not start the service; \
             nothing was written. Instead: keep `ask-user inbox serve` running in tmux or screen \
             (or `nohup ask-user inbox serve >/dev/null 2>&1 &`); on WSL, turn systemd on \
             ([boot] systemd=true in /etc/wsl.conf), restart WSL and run this again; over SSH, \
             run `loginctl enable-linger $USER`, log in again and run this again",
        ));
    }
    let service = service(&program)?;
    match std::fs::read_to_string(&service.path) {
        Ok(there) if there == service.text => {
            say(&format!(
                "the inbox's service is in {} already; start it with: {}",
                service.path.display(),
                service.start
            ));
            return Ok(ExitCode::SUCCESS);
        }
        Ok(there) if !there.contains(MARK) => {
            return Err(CliError::new(format!(
                "{} is there and not ask-user's: nothing was written; move it aside to \
                 install the inbox's service",
                service.path.display()
            )));
        }
        _ => {}
    }
    if let Some(dir) = service.path.parent() {
        std::fs::create_dir_all(dir).context(|| format!("cannot make {}", dir.display()))?;
    }
    std::fs::write(&service.path, &service.text)
        .context(|| format!("cannot write {}", service.path.display()))?;
    say(&format!(
        "wrote {}, which runs {} inbox serve at login and after a crash; start it now with: {}",
        service.path.display(),
        program.display(),
        service.start
    ));
    Ok(ExitCode::SUCCESS)
}

/// Takes out the service `install` wrote, and nothing else.
pub fn uninstall() -> Exit {
    // Only the file's place matters here, not the program it runs.
    let service = service(Path::new("ask-user"))?;
    match std::fs::read_to_string(&service.path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            say(&format!(
                "no service of the inbox in {}",
                service.path.display()
            ));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(CliError::new(format!(
            "cannot read {}: {e}",
            service.path.display()
        ))),
        Ok(there) if !there.contains(MARK) => Err(CliError::new(format!(
            "{} is not ask-user's: it was left as it is",
            service.path.display()
        ))),
        Ok(_) => {
            std::fs::remove_file(&service.path).map_err(|e| {
                CliError::new(format!("cannot remove {}: {e}", service.path.display()))
            })?;
            say(&format!(
                "took out {}; stop a running one with: {}",
                service.path.display(),
                service.stop
            ));
            Ok(ExitCode::SUCCESS)
        }
    }
}
