//! Starting an inbox: one user's (the page, and the API on a private
//! socket, under the state directory's lock) or one of a team's servers
//! (the API and the page on its address, over a shared store), and
//! stopping it.

use std::path::Path as FilePath;
use std::sync::Arc;

use axum::extract::Extension;

use crate::access::{self, Principal};
use crate::sessions::Sessions;
use crate::store::team::{Heard, Tokens};
use crate::store::token_cache::TokenCache;
use crate::store::{LocalStore, Opened, SqliteStore, TeamStore};
use crate::{DATABASE_FILE, PAGE_KEY_FILE, PORT_FILE, SOCKET_FILE};
use ask_user_web::answer_page;
use ask_user_web::serve::{PrivateSocket, Serving, listen};

use super::api::api;
use super::channels;
use super::mode::{Local, Team};
use super::pages::{presence, tell_pages};
use super::sweep::sweep;
use super::{Inbox, InboxConfig, MAX_API_CONNECTIONS};

/// A running inbox.
pub struct InboxServer {
    inbox: Arc<Inbox>,
    /// One user's: the page, and the API on the private socket (removed
    /// when it stops). A team's: the API on its address.
    serving: Vec<Serving>,
    /// The sweeper, and a team's listener of settlements.
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// One user's: where agents with a token reach it, if they do.
    agents: Option<std::net::SocketAddr>,
    /// One user's, held while serving: one inbox per state directory.
    _lock: Option<std::fs::File>,
}

impl InboxServer {
    /// Opens the store and serves: one user's inbox binds the page's port
    /// and the API's socket; a team's ([`InboxConfig::database`]) serves
    /// the API on its address, to tokens.
    pub async fn start(config: InboxConfig) -> std::io::Result<Self> {
        // What a channel reads at start (its tokens) is there, or nothing
        // serves.
        for channel in config.notify.two_way() {
            channel.check().map_err(|why| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("[inbox.channels] {}: {why}", channel.name()),
                )
            })?;
        }
        let Some(url) = &config.database else {
            return Self::start_local(config, None).await;
        };
        match crate::store::open(url)
            .await
            .map_err(std::io::Error::other)?
        {
            Opened::Team(store) => Self::start_team(config, store).await,
            Opened::Local(store) => Self::start_local(config, Some(store)).await,
        }
    }

    /// One user's inbox, its questions in `store` (default: the state
    /// directory's database).
    async fn start_local(
        config: InboxConfig,
        store: Option<Arc<dyn LocalStore>>,
    ) -> std::io::Result<Self> {
        if let Some(address) = config.agents.filter(|a| !a.ip().is_loopback()) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "[inbox] agents = \"{address}\": one user's inbox takes agents on loopback \
                     only (127.0.0.1 or [::1]); for agents on other machines, run a team's \
                     inbox (inbox serve --database) behind TLS"
                ),
            ));
        }
        // Used as resolved from here on: no link swapped later leads
        // anywhere else.
        let dir = ask_user_seam::files::private_dir(&config.state_dir)?;
        let lock = lock(&dir)?;
        let config = InboxConfig {
            state_dir: dir.clone(),
            ..config
        };
        let store: Arc<dyn LocalStore> = match store {
            Some(store) => store,
            None => {
                let path = dir.join(DATABASE_FILE);
                Arc::new(
                    tokio::task::spawn_blocking(move || SqliteStore::open(&path))
                        .await
                        .map_err(std::io::Error::other)?
                        .map_err(std::io::Error::other)?,
                )
            }
        };
        let listener = listen_where_it_was(&dir, &config).await?;
        let inbox = Inbox::new(
            &config,
            store.clone(),
            Box::new(Local),
            listener.local_addr()?,
            page_key(&dir)?,
        )?;
        let socket = PrivateSocket::bind(&dir.join(SOCKET_FILE))?;
        // Only this user reaches the socket: every caller is the owner.
        let api_for_owner = api(inbox.clone()).layer(Extension(Principal::Owner));
        let pages = answer_page::routes(inbox.clone());
        let mut serving = vec![
            Serving::start(listener, pages),
            Serving::start_with(socket, api_for_owner, MAX_API_CONNECTIONS),
        ];
        // Anyone on this machine reaches a loopback port: every request
        // there carries an agent's token, and an agent sees only its own
        // questions, as in a team's inbox.
        let mut agents = None;
        if let Some(address) = config.agents {
            let listener = listen("the inbox's agents' endpoint", address).await?;
            agents = Some(listener.local_addr()?);
            let tokens: Arc<dyn Tokens> = store;
            let app = api(inbox.clone()).layer(axum::middleware::from_fn_with_state(
                tokens,
                access::authenticate,
            ));
            serving.push(Serving::start_with(listener, app, MAX_API_CONNECTIONS));
        }
        let mut tasks = every_inbox_runs(&inbox, &config, None);
        tasks.push(tokio::spawn(remind_waiting(inbox.clone())));
        Ok(InboxServer {
            serving,
            tasks,
            inbox,
            agents,
            _lock: Some(lock),
        })
    }

    /// One of a team's inbox servers, sharing `store` with the others.
    async fn start_team(config: InboxConfig, store: Arc<dyn TeamStore>) -> std::io::Result<Self> {
        if config.agents.is_some() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "[inbox] agents is one user's inbox's: a team's inbox serves agents with a token \
                 at its own address already",
            ));
        }
        if let Some(local) = config.notify.local() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!(
                    "{local} notifications stay on one machine, which is one user's: a team's \
                     inbox notifies by ntfy or webhook"
                ),
            ));
        }

        let listener = listen(
            "the inbox",
            std::net::SocketAddr::new(config.bind, config.port.unwrap_or(0)),
        )
        .await?;
        let sessions = Arc::new(Sessions::new(store.clone(), config.public_url.as_deref()));
        let inbox = Inbox::new(
            &config,
            store.clone(),
            Box::new(Team {
                sessions: sessions.clone(),
                people: store.clone(),
            }),
            listener.local_addr()?,
            // People sign in to a team's page with their own tokens; this
            // one is new at every start and kept nowhere.
            ask_user_seam::secret::token()?,
        )?;
        // Tokens are checked from memory while announcements are heard.
        let tokens = Arc::new(TokenCache::new(store.clone()));
        let app = api(inbox.clone())
            .layer(axum::middleware::from_fn_with_state(
                tokens.clone() as Arc<dyn Tokens>,
                access::authenticate,
            ))
            .merge(answer_page::routes(inbox.clone()))
            .merge(sessions.routes());
        let (feed, announced) = tokio::sync::mpsc::unbounded_channel();
        let listening = {
            let (store, closing, inbox) = (store.clone(), inbox.closing.clone(), inbox.clone());
            async move {
                let announced = Arc::new(move |heard: Heard| {
                    tokens.heard(heard);
                    inbox.announced(heard, &feed);
                });
                store.listen(closing, announced).await;
            }
        };
        let pages = tell_pages(inbox.clone(), store.clone(), announced);
        let mut tasks = every_inbox_runs(&inbox, &config, Some(store.clone()));
        let outbox = crate::outbox::dispatch(store, inbox.notifier.clone(), inbox.closing.clone());
        tasks.extend([
            tokio::spawn(listening),
            tokio::spawn(pages),
            tokio::spawn(outbox),
        ]);
        Ok(InboxServer {
            serving: vec![Serving::start_with(listener, app, MAX_API_CONNECTIONS)],
            tasks,
            inbox,
            agents: None,
            _lock: None,
        })
    }

    /// Whether this is one of a team's servers (its store shared).
    pub fn is_team(&self) -> bool {
        self.inbox.mode.is_team()
    }

    /// The page's address, without the token.
    pub fn address(&self) -> &str {
        &self.inbox.address
    }

    /// One user's inbox: where agents with a token reach its API
    /// ([`InboxConfig::agents`]), if they do.
    pub fn agents_address(&self) -> Option<std::net::SocketAddr> {
        self.agents
    }

    /// A new one-time link to the page.
    pub fn page_link(&self) -> std::io::Result<String> {
        self.inbox.gate.ticket(&self.inbox.address)
    }

    /// Stops serving: the pages' streams end, waiting agents get a reply
    /// and come back when an inbox serves again, the socket goes. Nothing
    /// stored is lost.
    pub async fn stop(self) {
        self.inbox.closing.cancel();
        for task in &self.tasks {
            task.abort();
        }
        for mut serving in self.serving {
            serving.stop().await;
        }
    }
}

/// One user's page listens on `config.port`; without one, on the port its
/// last run had (kept in the state directory), so that a page open during
/// a restart finds it again, else any free one. The port it has is kept.
async fn listen_where_it_was(
    dir: &FilePath,
    config: &InboxConfig,
) -> std::io::Result<tokio::net::TcpListener> {
    let kept = dir.join(PORT_FILE);
    let address = |port| std::net::SocketAddr::new(config.bind, port);
    let listener = match config.port {
        Some(port) => listen("the inbox", address(port)).await?,
        None => {
            let last = ask_user_seam::files::read_bounded(&kept, 16)
                .ok()
                .and_then(|text| text.trim().parse::<u16>().ok())
                .filter(|port| *port != 0);
            match last {
                Some(port) => match listen("the inbox", address(port)).await {
                    Ok(listener) => listener,
                    // Taken meanwhile: any free one.
                    Err(_) => listen("the inbox", address(0)).await?,
                },
                None => listen("the inbox", address(0)).await?,
            }
        }
    };
    let port = listener.local_addr()?.port();
    if let Err(error) = write_private(&kept, &port.to_string()) {
        tracing::warn!(%error, "the inbox could not keep its port for its next start");
    }
    Ok(listener)
}

/// The key one user's page signs browsers in with: the one kept in `dir`
/// ([`PAGE_KEY_FILE`]), or a new one kept there. A kept file that is not a
/// key (written by hand, cut short) is replaced, and the browsers it signed
/// in sign in again.
fn page_key(dir: &FilePath) -> std::io::Result<String> {
    let path = dir.join(PAGE_KEY_FILE);
    let kept = ask_user_seam::files::read_bounded(&path, 64).ok();
    if let Some(key) = kept
        .as_deref()
        .map(str::trim)
        .filter(|key| ask_user_seam::secret::is_token(key))
    {
        return Ok(key.to_owned());
    }
    if kept.is_some() {
        tracing::warn!(path = %path.display(), "not a page key: a new one replaces it");
    }
    let key = ask_user_seam::secret::token()?;
    write_private(&path, &key).map_err(|error| {
        std::io::Error::new(
            error.kind(),
            format!(
                "the inbox could not keep its page's key in {}: {error}",
                path.display()
            ),
        )
    })?;
    Ok(key)
}

/// Writes `text` to `path`, readable by this user alone.
fn write_private(path: &FilePath, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(text.as_bytes())
}

/// What every inbox runs beside its serving: the sweeper, the pages'
/// presence, and each two-way channel (a team's under its lease in
/// `leases`, one server at a time).
fn every_inbox_runs(
    inbox: &Arc<Inbox>,
    config: &InboxConfig,
    leases: Option<Arc<dyn TeamStore>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = vec![
        tokio::spawn(sweep(inbox.clone())),
        tokio::spawn(presence(inbox.clone())),
    ];
    for channel in config.notify.two_way() {
        let run = channels::run(inbox.clone(), channel.clone(), leases.clone());
        tasks.push(tokio::spawn(run));
    }
    tasks
}

/// The most waiting questions reminded of after a restart.
const MOST_REMINDED: usize = 100_000;

/// Reminds of the questions that waited across a restart, each at its
/// time (one user's inbox: a team's reminders go through its outbox).
async fn remind_waiting(inbox: Arc<Inbox>) {
    if inbox.notifier.escalates_after().is_none() {
        return;
    }
    match inbox.store.list(false, MOST_REMINDED).await {
        Ok(waiting) => waiting
            .records
            .iter()
            .for_each(|record| inbox.remind(record)),
        Err(error) => tracing::warn!(%error, "the waiting questions' reminders are not set"),
    }
}

/// Takes the state directory's lock and writes this process's id in it,
/// or says which inbox holds it.
fn lock(dir: &FilePath) -> std::io::Result<std::fs::File> {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join("inbox.lock");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
        })?;
    // SAFETY: flock on a descriptor we own; no memory is touched.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let mut pid = String::new();
        let _ = file.read_to_string(&mut pid);
        let pid = pid.trim();
        let serving = if pid.is_empty() {
            String::new()
        } else {
            format!(" (pid {pid})")
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!(
                "an inbox is already serving from {}{serving}; stop it first, or give \
                 another ASK_USER_STATE_DIR",
                dir.display()
            ),
        ));
    }
    file.set_len(0)?;
    file.rewind()?;
    write!(file, "{}", std::process::id())?;
    Ok(file)
}
