//! `ask-user inbox phone`: a phone that answers, in a minute, through ntfy
//! or Telegram. What the inbox needs is written into the config file (a
//! secret beside it, mode 0600), and a test the person presses on the
//! phone proves the way back.
//!
//! - ntfy: a fresh topic nobody can guess, as `[inbox.channels.ntfy]` (or
//!   the one there is kept); the phone is told how to subscribe (the
//!   topic's name, and a QR code of its address).
//! - Telegram: the bot's token from @BotFather, checked and kept in a file
//!   of its own; the chat and the person found by the `/start` they send
//!   the bot, as `[inbox.channels.telegram]`.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use ask_user::Config;
use ask_user_channels::{ntfy_phone, telegram_phone};

use super::{CliError, Context, Exit, say, stop_requested};

#[derive(clap::Args)]
pub struct Args {
    /// The service the phone answers through.
    #[arg(value_enum, default_value_t = Service::Ntfy)]
    service: Service,
    /// ntfy's server (default: https://ntfy.sh), or your own (its topics
    /// seen by nobody else).
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// The config file the channel goes into (default: the user's; made
    /// when there is none).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// How long each step waits for the phone: the test pressed, and for
    /// Telegram the `/start` sent (0 with ntfy: send no test).
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration, value_name = "DURATION")]
    wait: Duration,
    /// The Bot API's address (a test's own Bot API), also written into the
    /// channel's table.
    #[arg(long, value_name = "URL", hide = true)]
    api_url: Option<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Service {
    /// A topic of ntfy's (its app on Android and iPhone): buttons for a
    /// question of one choice among at most three options.
    Ntfy,
    /// A Telegram bot of your own: every question, answered in the chat.
    Telegram,
}

pub async fn run(args: Args) -> Exit {
    let path = match &args.config {
        Some(path) => path.clone(),
        None => Config::default_path().ok_or_else(|| {
            CliError::new("no config file: neither XDG_CONFIG_HOME nor HOME is set")
                .hint("name one with --config FILE")
        })?,
    };
    if path.exists() {
        // The file must be one the inbox reads, before anything is added.
        Config::load(&path)?;
    }
    match args.service {
        Service::Ntfy => ntfy(&args, &path).await,
        Service::Telegram => telegram(&args, &path).await,
    }
}

/// ntfy's topic, as the config file has it.
struct Topic {
    server: String,
    name: String,
    replies: String,
    /// The access token its table names (`token_env`), for a server that
    /// wants one.
    token: Option<String>,
}

async fn ntfy(args: &Args, path: &Path) -> Exit {
    let topic = match ntfy_table(path)? {
        Some(topic) => {
            show(&format!(
                "{} already has a phone's topic: {} on {}.",
                path.display(),
                topic.name,
                topic.server
            ));
            let other = args.server.as_deref().map(|s| s.trim_end_matches('/'));
            if let Some(server) = other.filter(|server| *server != topic.server) {
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
            let server = server.trim_end_matches('/');
            let host = server
                .strip_prefix("https://")
                .or_else(|| server.strip_prefix("http://"));
            if host.is_none_or(|host| host.is_empty() || host.contains('/')) {
                return Err(CliError::new(format!(
                    "--server {server:?} is not a server's address (https://ntfy.example.com)"
                )));
            }
            let name = ntfy_phone::new_topic()
                .map_err(|e| CliError::new("no topic can be made").because(e))?;
            append(
                path,
                &format!(
                    "# Your phone (`ask-user inbox phone` wrote this): the ntfy app subscribed to\n\
                     # the topic answers. Anyone who knows the topic reads the questions.\n\
                     [inbox.channels.ntfy]\n\
                     topic = {}\n",
                    quoted(&format!("{server}/{name}"))
                ),
            )?;
            show(&format!(
                "A topic for your phone, {name} on {server}, is in {} ([inbox.channels.ntfy]).",
                path.display()
            ));
            Topic {
                server: server.to_owned(),
                replies: format!("{name}-replies"),
                name,
                token: None,
            }
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
    show("Anyone who knows the topic reads the questions: keep it to yourself.");
    if args.wait.is_zero() {
        show(TAKEN_AT_START);
        return Ok(ExitCode::SUCCESS);
    }
    show(&format!(
        "\n3. Press \"{}\" on the notification that comes now (waiting {}; Ctrl-C stops).",
        ntfy_phone::TEST_BUTTON,
        humantime::format_duration(args.wait)
    ));
    let phone = ntfy_phone::Phone {
        server: &topic.server,
        topic: &topic.name,
        replies: &topic.replies,
        token: topic.token.as_deref(),
    };
    let pressed = stoppable(phone.test(args.wait)).await?;
    pressed_or_why(
        pressed,
        ntfy_phone::TEST_BUTTON,
        args.wait,
        &format!("is the app subscribed to {}?", topic.name),
    )
}

/// The topic of the file's `[inbox.channels.ntfy]`, when it has one.
fn ntfy_table(path: &Path) -> Result<Option<Topic>, CliError> {
    let Some(ntfy) = channel_table(path, "ntfy")? else {
        return Ok(None);
    };
    let url = ntfy.get("topic").and_then(toml::Value::as_str);
    let Some((server, name)) = url.and_then(|url| url.rsplit_once('/')) else {
        return Ok(None);
    };
    let replies = ntfy.get("replies").and_then(toml::Value::as_str);
    let token = ntfy.get("token_env").and_then(toml::Value::as_str);
    Ok(Some(Topic {
        server: server.to_owned(),
        name: name.to_owned(),
        replies: replies.map_or_else(|| format!("{name}-replies"), str::to_owned),
        token: token.and_then(|variable| std::env::var(variable).ok()),
    }))
}

async fn telegram(args: &Args, path: &Path) -> Exit {
    if channel_table(path, "telegram")?.is_some() {
        show(&format!(
            "{} already has [inbox.channels.telegram]: take it out to set up another bot.",
            path.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let token_file = path.with_file_name("telegram-token");
    show(
        "1. In Telegram, talk to @BotFather: send /newbot, name your bot, and copy the token it \
         gives.",
    );
    show(&format!(
        "2. Paste the token here (it goes into {}, mode 0600, never into the config):",
        token_file.display()
    ));
    let token = tokio::task::spawn_blocking(read_secret_line)
        .await
        .map_err(|e| CliError::new("cannot read the token").because(e))?
        .context(|| "cannot read the token from standard input".to_owned())?;
    let mut bot = telegram_phone::Bot::new(&token, args.api_url.as_deref())
        .await
        .map_err(|e| CliError::new("the bot cannot be reached").because(e))?;
    // Anyone can message a bot: only a /start with this code, shown here
    // alone, says who you are.
    let code = telegram_phone::Bot::new_code()
        .map_err(|e| CliError::new("no code can be made").because(e))?;
    let link = bot.link(&code);
    show(&format!(
        "3. Open this link on your phone (or scan it) and press Start; or send @{} the \
         message /start {code}\n   {link}\n\n{}\n(waiting {}; Ctrl-C stops)",
        bot.username,
        qr(&link)?,
        humantime::format_duration(args.wait)
    ));
    let started = stoppable(bot.started(&code, args.wait))
        .await?
        .ok_or_else(|| {
            CliError::new(format!(
                "nobody sent /start {code} to @{} within {}",
                bot.username,
                humantime::format_duration(args.wait)
            ))
            .hint("run this again, and open the link it shows on your phone")
        })?;
    write_secret(&token_file, token.trim())?;
    let api_url = match &args.api_url {
        Some(url) => format!("api_url = {}\n", quoted(url)),
        None => String::new(),
    };
    append(
        path,
        &format!(
            "# Your phone (`ask-user inbox phone telegram` wrote this): the bot's chat, and\n\
             # who may answer there (their Telegram user id).\n\
             [inbox.channels.telegram]\n\
             token_file = {}\n\
             chat = {}\n\
             allow = [{}]\n\
             {api_url}",
            quoted(&token_file.to_string_lossy()),
            started.chat,
            started.user
        ),
    )?;
    show(&format!(
        "The chat and you are in {} ([inbox.channels.telegram]).\n\
         4. Press \"{}\" on the message the bot sent (waiting {}).",
        path.display(),
        telegram_phone::TEST_BUTTON,
        humantime::format_duration(args.wait)
    ));
    let pressed = stoppable(bot.test(started, args.wait)).await?;
    pressed_or_why(
        pressed,
        telegram_phone::TEST_BUTTON,
        args.wait,
        "is it the chat where you sent /start?",
    )
}

/// What the inbox takes of a new channel.
const TAKEN_AT_START: &str = "The inbox takes the channel when it starts: restart `ask-user inbox \
    serve` (`systemctl --user restart ask-user-inbox`, with the service installed).";

/// `waiting`, unless the process is asked to stop first.
async fn stoppable<T>(
    waiting: impl Future<Output = Result<T, ask_user::inbox::notify::ChannelError>>,
) -> Result<T, CliError> {
    tokio::select! {
        done = waiting => done.map_err(|e| CliError::new("the phone cannot be reached").because(e)),
        () = stop_requested() => Err(CliError::new("stopped before the phone answered")
            .hint("what is written stays; run this again to test it")),
    }
}

/// The end of a test: it works, or `button` was not pressed within
/// `wait` (`check`: what to look at).
fn pressed_or_why(pressed: bool, button: &str, wait: Duration, check: &str) -> Exit {
    if !pressed {
        return Err(CliError::new(format!(
            "nobody pressed \"{button}\" within {}",
            humantime::format_duration(wait)
        ))
        .hint(format!("{check} Run this again to send another test")));
    }
    show("It works: your phone's press came back. Its answers will too.");
    show(TAKEN_AT_START);
    Ok(ExitCode::SUCCESS)
}

/// The file's `[inbox.channels.NAME]`, when it has one.
fn channel_table(path: &Path, name: &str) -> Result<Option<toml::Table>, CliError> {
    if !path.exists() {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(path).context(|| format!("cannot read {}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
    let found = table
        .get("inbox")
        .and_then(|inbox| inbox.get("channels"))
        .and_then(|channels| channels.get(name))
        .and_then(toml::Value::as_table);
    Ok(found.cloned())
}

/// Adds `table` to the end of the config file (made, private, when there
/// is none); the file is left as it was when the inbox would not read it
/// then.
fn append(path: &Path, table: &str) -> Result<(), CliError> {
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
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .context(|| format!("cannot write {}", path.display()))?;
    file.write_all(format!("{separator}{table}").as_bytes())
        .context(|| format!("cannot write {}", path.display()))?;
    drop(file);
    if let Err(error) = Config::load(path) {
        let restored = match &before {
            Some(text) => std::fs::write(path, text),
            None => std::fs::remove_file(path),
        };
        let error = CliError::new(format!(
            "{} cannot take what was added; it is left as it was",
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
            "{} can be read by other users, and it now says where your questions go: chmod 600 it",
            path.display()
        ));
    }
    Ok(())
}

/// Writes `secret` to `path`, readable by this user alone.
fn write_secret(path: &Path, secret: &str) -> Result<(), CliError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).context(|| format!("cannot make {}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .context(|| format!("cannot write {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .context(|| format!("cannot make {} private", path.display()))?;
    writeln!(file, "{secret}").context(|| format!("cannot write {}", path.display()))
}

/// One line of standard input, not echoed when it is a terminal.
fn read_secret_line() -> std::io::Result<String> {
    use std::io::{BufRead, IsTerminal};
    let stdin = std::io::stdin();
    let echo_off = stdin.is_terminal().then(EchoOff::new).flatten();
    let mut line = String::new();
    stdin.lock().read_line(&mut line)?;
    if echo_off.is_some() {
        show("");
    }
    Ok(line)
}

/// The terminal's echo, off while this lives.
struct EchoOff(libc::termios);

impl EchoOff {
    fn new() -> Option<Self> {
        // SAFETY: a termios filled by tcgetattr on standard input, set back
        // as it was with ECHO cleared.
        unsafe {
            let mut term: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut term) != 0 {
                return None;
            }
            let saved = term;
            term.c_lflag &= !libc::ECHO;
            (libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &term) == 0)
                .then_some(EchoOff(saved))
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        // SAFETY: the termios tcgetattr gave, set back.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.0);
        }
    }
}

/// `text` as a TOML string, quoted and escaped: nothing in it (a path, an
/// address) can end the string and add a key.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// ntfy's own server.
const NTFY_SH: &str = "https://ntfy.sh";

/// `text` and a line end on standard output, at once; dropped when nobody
/// reads it.
fn show(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
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

#[cfg(test)]
mod tests {
    #[test]
    fn what_is_written_into_the_config_stays_one_string() {
        let sneaky = "/home/a\"\nallow = [666]\n#";
        let table: toml::Table = format!("token_file = {}\n", super::quoted(sneaky))
            .parse()
            .unwrap();
        assert_eq!(table.len(), 1, "{table:?}");
        assert_eq!(table["token_file"].as_str(), Some(sneaky));
    }
}
