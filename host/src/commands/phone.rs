//! `ask-user inbox phone`: a phone that answers, in a minute. A fresh ntfy
//! topic nobody can guess is written into the config file as
//! `[inbox.channels.ntfy]` (or the one there is kept), the phone is told
//! how to subscribe (the topic's name, and a QR code of its address), and
//! a test notification's button, pressed on the phone, proves the way
//! back.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use ask_user::Config;
use ask_user_channels::ntfy_phone::{self, Phone};

use super::{CliError, Context, Exit, say, stop_requested};

#[derive(clap::Args)]
pub struct Args {
    /// The ntfy server (default: https://ntfy.sh), or your own (its
    /// topics seen by nobody else).
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// The config file the channel goes into (default: the user's; made
    /// when there is none).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// How long to wait for the test notification's button to be pressed
    /// (0: send no test).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration, value_name = "DURATION")]
    wait: Duration,
}

/// The phone's topic, as the config file has it.
struct Topic {
    server: String,
    name: String,
    replies: String,
}

pub async fn run(args: Args) -> Exit {
    let path = match args.config {
        Some(path) => path,
        None => Config::default_path().ok_or_else(|| {
            CliError::new("no config file: neither XDG_CONFIG_HOME nor HOME is set")
                .hint("name one with --config FILE")
        })?,
    };
    let topic = match kept(&path)? {
        Some(topic) => {
            show(&format!(
                "{} already has a phone's topic: {} on {}.",
                path.display(),
                topic.name,
                topic.server
            ));
            if let Some(server) = args
                .server
                .filter(|s| s.trim_end_matches('/') != topic.server)
            {
                say(&format!(
                    "--server {server} is not used: take [inbox.channels.ntfy] out of {} for a \
                     topic there",
                    path.display()
                ));
            }
            topic
        }
        None => {
            let server = args.server.as_deref().unwrap_or(NTFY_SH);
            let topic = added(&path, server)?;
            show(&format!(
                "A topic for your phone, {} on {}, is in {} ([inbox.channels.ntfy]).",
                topic.name,
                topic.server,
                path.display()
            ));
            topic
        }
    };
    let address = format!("{}/{}", topic.server, topic.name);
    show(&format!(
        "\n1. Install the ntfy app on your phone (Android: Google Play or F-Droid; iPhone: App Store).\n\
         2. In the app, subscribe (+) to the topic {}{}.\n   \
         Or scan this with the phone's camera: it opens the topic's page.\n\n{}",
        topic.name,
        match topic.server.as_str() {
            NTFY_SH => String::new(),
            server => format!(", on the server {server} (\"Use another server\")"),
        },
        qr(&address)?,
    ));
    show(
        "Anyone who knows the topic reads the questions: keep it to yourself.\n\
         The inbox takes the channel when it starts: restart `ask-user inbox serve` \
         (`systemctl --user restart ask-user-inbox`, with the service installed).",
    );
    if args.wait.is_zero() {
        return Ok(ExitCode::SUCCESS);
    }
    show(&format!(
        "\n3. Press \"{}\" on the notification that comes now (waiting {}; Ctrl-C stops).",
        ntfy_phone::TEST_BUTTON,
        humantime::format_duration(args.wait)
    ));
    let phone = Phone {
        server: &topic.server,
        topic: &topic.name,
        replies: &topic.replies,
        token: None,
    };
    let pressed = tokio::select! {
        pressed = phone.test(args.wait) => pressed
            .map_err(|e| CliError::new("the test could not be sent").because(e))?,
        () = stop_requested() => {
            return Err(CliError::new("stopped before the test was pressed")
                .hint("the topic is set up; run this again to test it"));
        }
    };
    if !pressed {
        return Err(CliError::new(format!(
            "nobody pressed \"{}\" within {}",
            ntfy_phone::TEST_BUTTON,
            humantime::format_duration(args.wait)
        ))
        .hint(format!(
            "is the app subscribed to {}? Run this again to send another test",
            topic.name
        )));
    }
    show("It works: your phone's press came back. Its answers will too.");
    Ok(ExitCode::SUCCESS)
}

/// ntfy's own server.
const NTFY_SH: &str = "https://ntfy.sh";

/// `text` and a line end on standard output, at once; dropped when nobody
/// reads it.
fn show(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}

/// The topic of the file's `[inbox.channels.ntfy]`, when it has one.
fn kept(path: &Path) -> Result<Option<Topic>, CliError> {
    if !path.exists() {
        return Ok(None);
    }
    // Checked whole first: the file must be one the inbox reads.
    Config::load(path)?;
    let text =
        std::fs::read_to_string(path).context(|| format!("cannot read {}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
    let ntfy = table
        .get("inbox")
        .and_then(|inbox| inbox.get("channels"))
        .and_then(|channels| channels.get("ntfy"))
        .and_then(toml::Value::as_table);
    let Some(ntfy) = ntfy else {
        return Ok(None);
    };
    let url = ntfy.get("topic").and_then(toml::Value::as_str);
    let Some((server, name)) = url.and_then(|url| url.rsplit_once('/')) else {
        return Ok(None);
    };
    let replies = ntfy.get("replies").and_then(toml::Value::as_str);
    Ok(Some(Topic {
        server: server.to_owned(),
        name: name.to_owned(),
        replies: replies.map_or_else(|| format!("{name}-replies"), str::to_owned),
    }))
}

/// A fresh topic on `server`, added to the file (made, private, when there
/// is none) as `[inbox.channels.ntfy]`; the file is left as it was when
/// the inbox would not read it then.
fn added(path: &Path, server: &str) -> Result<Topic, CliError> {
    let server = server.trim_end_matches('/');
    if !(server.starts_with("https://") || server.starts_with("http://"))
        || server
            .split("://")
            .nth(1)
            .is_none_or(|rest| rest.is_empty() || rest.contains('/'))
    {
        return Err(CliError::new(format!(
            "--server {server:?} is not a server's address (https://ntfy.example.com)"
        )));
    }
    let name =
        ntfy_phone::new_topic().map_err(|e| CliError::new("no topic can be made").because(e))?;
    let before = match path.exists() {
        true => Some(std::fs::read(path).context(|| format!("cannot read {}", path.display()))?),
        false => None,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).context(|| format!("cannot make {}", dir.display()))?;
    }
    let separator = match &before {
        Some(text) if !text.is_empty() && !text.ends_with(b"\n") => "\n\n",
        Some(text) if !text.is_empty() => "\n",
        _ => "",
    };
    let table = format!(
        "{separator}# Your phone (`ask-user inbox phone` wrote this): the ntfy app subscribed to\n\
         # the topic answers. Anyone who knows the topic reads the questions.\n\
         [inbox.channels.ntfy]\n\
         topic = \"{server}/{name}\"\n"
    );
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .context(|| format!("cannot write {}", path.display()))?;
    file.write_all(table.as_bytes())
        .context(|| format!("cannot write {}", path.display()))?;
    drop(file);
    if let Err(error) = Config::load(path) {
        let restored = match &before {
            Some(text) => std::fs::write(path, text),
            None => std::fs::remove_file(path),
        };
        let error = CliError::new(format!(
            "{} cannot take [inbox.channels.ntfy] as it is; it is left as it was",
            path.display()
        ))
        .because(error);
        return Err(match restored {
            Ok(()) => error,
            Err(e) => error.hint(format!("and it could not be put back: {e}")),
        });
    }
    let shared = std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o077 != 0);
    if shared {
        say(&format!(
            "{} can be read by other users, and it now holds the topic: chmod 600 it",
            path.display()
        ));
    }
    Ok(Topic {
        server: server.to_owned(),
        replies: format!("{name}-replies"),
        name,
    })
}

/// `text` as a QR code of Unicode half blocks, light on dark: what a
/// terminal shows and a phone's camera reads.
fn qr(text: &str) -> Result<String, CliError> {
    use qrcode::render::unicode::Dense1x2;
    let code = qrcode::QrCode::new(text.as_bytes())
        .map_err(|e| CliError::new(format!("no QR code for {text}: {e}")))?;
    Ok(code
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .build())
}
