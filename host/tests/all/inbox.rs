//! The inbox with real processes: `ask-user inbox serve` and agents running
//! `ask-user ask` with an answerer of kind `inbox`, a real SQLite file,
//! `kill -9`, notifications to a local HTTP server, and the page in
//! headless Chromium.

mod matrix;
mod ntfy;
mod slack;
mod suite;
mod telegram;

use ask_user_test_support::browser;
use ask_user_test_support::hooks;
use ask_user_test_support::mcp_peer;
use ask_user_test_support::tui;

use hooks::{Hook, hook_server};
use mcp_peer::{McpPeer, child};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest any state is waited for.
const BOUND: Duration = Duration::from_secs(60);

fn ask_user() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    command
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"));
    command
}

/// A state directory, an inbox serving from it (restartable, killable),
/// and the config files of its agents.
pub(crate) struct Inbox {
    root: tempfile::TempDir,
    server: Option<Child>,
    hooks: Option<mpsc::Receiver<Hook>>,
    /// Told each time the log grows.
    said: std::sync::Arc<Said>,
}

/// The log's lock and its news: a line is written, and waiters told,
/// under the lock.
#[derive(Default)]
struct Said {
    lock: std::sync::Mutex<()>,
    grew: std::sync::Condvar,
}

impl Inbox {
    /// An inbox with no notifications.
    pub(crate) fn new() -> Inbox {
        Inbox::with_config("")
    }

    /// An inbox whose ntfy and webhook notifications go to a local server.
    fn notifying() -> Inbox {
        let (url, hooks) = hook_server();
        let mut inbox = Inbox::with_config(&format!(
            "[inbox.notify]\nntfy = \"{url}/topic\"\nwebhook = \"{url}/hook\"\n"
        ));
        inbox.hooks = Some(hooks);
        inbox
    }

    pub(crate) fn with_config(toml: &str) -> Inbox {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("inbox.toml"), toml).unwrap();
        std::fs::write(
            root.path().join("agent.toml"),
            "[[answerer]]\nkind = \"inbox\"\n",
        )
        .unwrap();
        let mut inbox = Inbox {
            root,
            server: None,
            hooks: None,
            said: Default::default(),
        };
        inbox.serve();
        inbox
    }

    pub(crate) fn state(&self) -> PathBuf {
        self.root.path().join("state")
    }

    /// The config of an agent that asks this inbox (`kind = "inbox"`).
    pub(crate) fn agent_config(&self) -> PathBuf {
        self.root.path().join("agent.toml")
    }

    pub(crate) fn command(&self) -> Command {
        let mut command = ask_user();
        command.env("ASK_USER_STATE_DIR", self.state());
        command
    }

    /// Starts `inbox serve` and waits until it says it serves; what it
    /// says goes on to [`log`](Self::log).
    fn serve(&mut self) {
        let mut child = self
            .command()
            .args(["inbox", "serve", "--config"])
            .arg(self.root.path().join("inbox.toml"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.path().join("inbox.log"))
            .unwrap();
        let (serves, served) = mpsc::channel();
        let said = self.said.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let held = said.lock.lock().unwrap_or_else(|e| e.into_inner());
                let _ = writeln!(log, "{line}");
                said.grew.notify_all();
                drop(held);
                if line.contains("the inbox serves") {
                    let _ = serves.send(());
                }
            }
        });
        self.server = Some(child);
        served
            .recv_timeout(BOUND)
            .unwrap_or_else(|_| panic!("the inbox did not start: {}", self.log()));
    }

    /// What every `inbox serve` of this inbox said on its standard error.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("inbox.log")).unwrap_or_default()
    }

    /// The log, once it says `text`; the test fails after a bound.
    pub(crate) fn said(&self, text: &str) -> String {
        let deadline = Instant::now() + BOUND;
        let mut held = self.said.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let log = self.log();
            if log.contains(text) {
                return log;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                panic!("the inbox never said {text:?} within {BOUND:?}: {log}");
            };
            held = self
                .said
                .grew
                .wait_timeout(held, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// `kill -9` of the inbox.
    fn kill9(&mut self) {
        let mut server = self.server.take().expect("the inbox runs");
        server.kill().unwrap();
        server.wait().unwrap();
    }

    /// `inbox page`: a one-time link to the page.
    fn page_link(&self) -> String {
        let output = self.command().args(["inbox", "page"]).output().unwrap();
        assert!(output.status.success(), "inbox page: {}", stderr(&output));
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    /// The page's address (`127.0.0.1:PORT`) and the token a one-time link
    /// gives a browser (in its cookie).
    fn page_token(&self) -> (String, String) {
        let link = self.page_link();
        let (address, ticket) = link
            .strip_prefix("http://")
            .and_then(|rest| rest.split_once("/?ticket="))
            .unwrap_or_else(|| panic!("not a one-time link: {link}"));
        let reply = http(address, &format!("GET /?ticket={ticket} HTTP/1.1"), &[]);
        assert!(reply.starts_with("HTTP/1.1 303"), "{reply}");
        let cookie = reply
            .lines()
            .find_map(|l| l.strip_prefix("set-cookie: "))
            .unwrap_or_else(|| panic!("no cookie: {reply}"));
        assert!(
            cookie.contains("httponly") && cookie.contains("samesite=strict"),
            "{cookie}"
        );
        let token = cookie
            .split(';')
            .next()
            .and_then(|pair| pair.split_once('='))
            .unwrap()
            .1;
        // Used once, the link opens nothing more.
        let again = http(address, &format!("GET /?ticket={ticket} HTTP/1.1"), &[]);
        assert!(again.starts_with("HTTP/1.1 401"), "{again}");
        (address.to_owned(), token.to_owned())
    }

    /// An agent asking `arguments` in `session`.
    fn agent(&self, session: &str, arguments: &Value, extra: &[&str]) -> Agent {
        let file = self
            .root
            .path()
            .join(format!("{session}-{}.json", rand_suffix()));
        std::fs::write(&file, arguments.to_string()).unwrap();
        let child = self
            .command()
            .arg("ask")
            .arg(&file)
            .arg("--config")
            .arg(self.agent_config())
            .args(["--session", session])
            .args(extra)
            .current_dir(self.root.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Agent(Some(child))
    }

    /// Claude Code's hook relaying an MCP server's form of `schema` to this
    /// inbox (the user's config names it), as Claude Code runs it.
    fn elicit(&self, schema: &Value) -> Agent {
        let config_home = self.root.path().join("config");
        std::fs::create_dir_all(config_home.join("ask-user")).unwrap();
        std::fs::copy(
            self.agent_config(),
            config_home.join("ask-user/config.toml"),
        )
        .unwrap();
        let input = json!({"hook_event_name": "Elicitation", "session_id": "s1", "cwd": "/tmp",
            "mcp_server_name": "deployer", "message": "Release 42", "mode": "form",
            "requested_schema": schema});
        let mut child = self
            .command()
            .args(["hook", "claude-code"])
            .env("XDG_CONFIG_HOME", config_home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.to_string().as_bytes()).unwrap();
        Agent(Some(child))
    }

    /// An agent's question `text` (Yes or No), answered Yes from the
    /// command line as soon as it waits, as a person at the terminal
    /// would; the agent gets the answer.
    pub(crate) fn answered_at_once(&self, text: &str) {
        let agent = self.agent("at-once", &choice(text, &["Yes", "No"]), &[]);
        let asked = self.wait_for(text, false, |q| q["questions"][0]["question"] == text);
        let answered = self.answer(
            asked["id"].as_str().unwrap(),
            &json!({"answers": [{"id": "q", "selected": ["Yes"]}]}),
        );
        assert!(answered.status.success(), "{}", stderr(&answered));
        assert_eq!(
            answers_of(&agent.finish()),
            json!([{"id": "q", "selected": ["Yes"]}])
        );
    }

    /// `inbox list --json` (`--all` too when `all`).
    fn list(&self, all: bool) -> Vec<Value> {
        let mut command = self.command();
        command.args(["inbox", "list", "--json"]);
        if all {
            command.arg("--all");
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "inbox list: {}", stderr(&output));
        let list: Value = serde_json::from_slice(&output.stdout).unwrap();
        list["questions"].as_array().unwrap().clone()
    }

    /// Waits until the list (with `all`) has a question for which `holds`,
    /// and returns it.
    pub(crate) fn wait_for(&self, what: &str, all: bool, holds: impl Fn(&Value) -> bool) -> Value {
        self.wait_until(what, all, |list| list.into_iter().find(|q| holds(q)))
    }

    /// Waits until `found` finds something in the list (with `all`), and
    /// returns it. The list is another process's state, with no event to
    /// wait on from here: it is read again every 50 ms, for at most [`BOUND`].
    pub(crate) fn wait_until<T>(
        &self,
        what: &str,
        all: bool,
        found: impl Fn(Vec<Value>) -> Option<T>,
    ) -> T {
        let start = Instant::now();
        loop {
            if let Some(found) = found(self.list(all)) {
                return found;
            }
            assert!(
                start.elapsed() < BOUND,
                "waited {BOUND:?} for {what}: {:?}",
                self.list(true)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `inbox answer ID --answers FILE`.
    pub(crate) fn answer(&self, id: &str, answers: &Value) -> Output {
        let file = self
            .root
            .path()
            .join(format!("answers-{}.json", rand_suffix()));
        std::fs::write(&file, answers.to_string()).unwrap();
        self.command()
            .args(["inbox", "answer", id, "--answers"])
            .arg(&file)
            .output()
            .unwrap()
    }

    /// `inbox dismiss ID`: the person will not answer.
    pub(crate) fn dismiss(&self, id: &str) -> Output {
        self.command()
            .args(["inbox", "dismiss", id])
            .output()
            .unwrap()
    }

    /// The next request a notifier made.
    fn hook(&self) -> Hook {
        self.hooks
            .as_ref()
            .expect("a notifying inbox")
            .recv_timeout(BOUND)
            .unwrap_or_else(|_| {
                panic!(
                    "no notification in {BOUND:?}; the inbox said: {}",
                    self.log()
                )
            })
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// One HTTP/1.1 request without a body to `address` (`host:port`), `head`
/// its first line, with `headers`; the whole reply, headers lower-cased.
fn http(address: &str, head: &str, headers: &[&str]) -> String {
    request(address, head, headers, "")
}

/// One HTTP/1.1 request with `body`; the whole reply, headers lower-cased.
fn request(address: &str, head: &str, headers: &[&str], body: &str) -> String {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    let mut request = format!("{head}\r\nHost: {address}\r\nConnection: close\r\n");
    for header in headers {
        request.push_str(&format!("{header}\r\n"));
    }
    if !body.is_empty() {
        request.push_str(&format!(
            "content-type: application/json\r\ncontent-length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    format!(
        "{}\r\n\r\n{body}",
        head.to_ascii_lowercase()
            .replacen("http/1.1", "HTTP/1.1", 1)
    )
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// An `ask-user ask` process; killed when dropped.
struct Agent(Option<Child>);

impl Agent {
    fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    /// Waits (bounded) for it to end; its output.
    fn finish(mut self) -> Output {
        let mut child = self.0.take().unwrap();
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > BOUND {
                let _ = child.kill();
                panic!("the agent did not end within {BOUND:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    }

    /// `kill -9`.
    fn kill9(mut self) {
        let mut child = self.0.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The answers in the tool result an agent printed.
fn answers_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "the agent failed: {}",
        stderr(output)
    );
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    result["structuredContent"]["answers"].clone()
}

fn choice(question: &str, labels: &[&str]) -> Value {
    let options: Vec<Value> = labels.iter().map(|l| json!({"label": l})).collect();
    json!({"questions": [{"id": "q", "question": question, "options": options}]})
}

#[test]
fn an_answer_from_the_command_reaches_the_waiting_agent_and_is_recorded() {
    let inbox = Inbox::notifying();
    let agent = inbox.agent(
        "s1",
        &choice("Which package manager?", &["pnpm", "npm"]),
        &[],
    );
    let asked = inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    assert_eq!(asked["session"], "s1");
    assert_eq!(asked["questions"][0]["question"], "Which package manager?");
    assert_eq!(asked["cwd"], inbox.root.path().display().to_string());
    assert!(
        asked["agent"]
            .as_str()
            .unwrap()
            .contains(&format!("pid {}", agent.pid()))
    );
    let id = asked["id"].as_str().unwrap();

    // Answers that do not fit are refused with the reason; nothing is recorded.
    let refused = inbox.answer(id, &json!({"answers": [{"id": "q", "selected": ["yarn"]}]}));
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("refused (422)") && stderr(&refused).contains("yarn"),
        "{}",
        stderr(&refused)
    );
    // The person who answered is told, not a host's answerer blamed.
    assert!(
        stderr(&refused).contains("the question is still open")
            && !stderr(&refused).contains("host's answerer"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(inbox.list(false)[0]["state"], "waiting");

    let answered = inbox.answer(id, &json!({"answers": [{"id": "q", "selected": ["pnpm"]}]}));
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["pnpm"]}])
    );
    let recorded = inbox.wait_for("the history", true, |q| q["id"] == id);
    assert_eq!(recorded["state"], "answered");
    assert_eq!(recorded["settledBy"], "command");
    // A second answer is refused: the first one won.
    assert_eq!(
        inbox.answer(id, &json!({"answers": []})).status.code(),
        Some(2)
    );

    // Both notifiers carried the question; neither carried the token.
    let (_, token) = inbox.page_token();
    let hooks = [inbox.hook(), inbox.hook()];
    for hook in &hooks {
        assert!(hook.body.contains("Which package manager?"), "{hook:?}");
        assert!(
            !hook.body.contains(&token) && !hook.head.contains(&token),
            "{hook:?}"
        );
    }
    let webhook = hooks
        .iter()
        .find(|h| h.head.starts_with("POST /hook"))
        .expect("the webhook");
    let body: Value = serde_json::from_str(&webhook.body).unwrap();
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .contains("Which package manager?")
    );
    assert_eq!(body["session"], "s1");
    let ntfy = hooks
        .iter()
        .find(|h| h.head.starts_with("POST /topic"))
        .expect("the ntfy post");
    assert!(
        ntfy.head.to_ascii_lowercase().contains("title: ask-user"),
        "{ntfy:?}"
    );
    // The page is on 127.0.0.1, where a phone reaches only itself: the
    // notice links nothing and says where to answer.
    assert!(
        !ntfy.head.to_ascii_lowercase().contains("click:")
            && ntfy.body.contains("Answer at your computer"),
        "{ntfy:?}"
    );
}

#[test]
fn killing_the_inbox_mid_question_loses_nothing() {
    let mut inbox = Inbox::new();
    let agent = inbox.agent("s1", &choice("Deploy now?", &["Yes", "No"]), &[]);
    let asked = inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    let id = asked["id"].as_str().unwrap().to_owned();

    inbox.kill9();
    // Down for longer than the retention period, as far as the database
    // knows: a server that was not running cannot tell a gone agent from one
    // that could not reach it, and expires nothing at start.
    rusqlite::Connection::open(inbox.state().join("inbox.sqlite"))
        .unwrap()
        .execute("UPDATE questions SET agent_seen_at = 0", [])
        .unwrap();
    inbox.serve();
    // The same question, under the same id; the agent comes back to it.
    let again = inbox.wait_for("the agent back", false, |q| q["agentWaiting"] == true);
    assert_eq!(again["id"], id);
    assert_eq!(again["questions"], asked["questions"]);

    let answered = inbox.answer(&id, &json!({"answers": [{"id": "q", "selected": ["No"]}]}));
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["No"]}])
    );
}

#[test]
fn a_killed_agents_question_stays_and_its_answer_comes_when_it_asks_again() {
    let inbox = Inbox::notifying();
    let arguments = choice("Which region?", &["eu", "us"]);
    let agent = inbox.agent("s7", &arguments, &[]);
    let asked = inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    let id = asked["id"].as_str().unwrap().to_owned();
    agent.kill9();

    // Listed as waiting for its agent, and still answerable.
    inbox.wait_for("the agent gone", false, |q| {
        q["id"] == id && q["agentWaiting"] == false
    });
    let answered = inbox.answer(&id, &json!({"answers": [{"id": "q", "selected": ["eu"]}]}));
    assert!(answered.status.success(), "{}", stderr(&answered));

    // The same session asks the same again: the stored answer, at once.
    let again = inbox.agent("s7", &arguments, &[]).finish();
    assert_eq!(answers_of(&again), json!([{"id": "q", "selected": ["eu"]}]));
    let all = inbox.list(true);
    assert_eq!(all.len(), 1, "no second question: {all:?}");
    // Delivered now: asking again is a new question.
    let third = inbox
        .agent("s7", &arguments, &["--timeout", "0.2"])
        .finish();
    assert_eq!(third.status.code(), Some(1));
    assert_eq!(inbox.list(true).len(), 2);
    // One notification per notifier for the first question and for the
    // third, and ntfy's notice of each updated when it left (answered,
    // withdrawn); the re-attached ask notified nobody.
    let hooks: Vec<Hook> = (0..6).map(|_| inbox.hook()).collect();
    let updates = hooks
        .iter()
        .filter(|hook| hook.head.to_lowercase().contains("no longer waiting"))
        .count();
    assert_eq!(updates, 2, "{hooks:#?}");
    assert!(
        inbox.hooks.as_ref().unwrap().try_recv().is_err(),
        "a re-attached ask notifies nobody"
    );
}

#[test]
fn an_ask_that_ends_withdraws_its_question() {
    let inbox = Inbox::new();
    let output = inbox
        .agent("s1", &choice("Proceed?", &["Yes"]), &["--timeout", "1"])
        .finish();
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["error"]["code"], "ASK_TIMED_OUT", "{result}");
    let left = inbox.wait_for("the withdrawal", true, |q| q["state"] == "withdrawn");
    assert_eq!(left["settledBy"], "the agent stopped waiting");
    assert!(inbox.list(false).is_empty());
}

#[test]
fn a_wrong_token_and_a_second_server_are_refused() {
    let inbox = Inbox::new();
    let (address, token) = inbox.page_token();
    let events = |token: &str| {
        http(
            &address,
            "GET /events HTTP/1.1",
            &[&format!(
                "Cookie: ask-user-{}={token}",
                address.rsplit(':').next().unwrap()
            )],
        )
    };
    assert!(events("0123456789abcdef0123456789abcdef").starts_with("HTTP/1.1 401"));
    assert!(
        http(&address, &format!("GET /?token={token} HTTP/1.1"), &[]).starts_with("HTTP/1.1 200")
    );
    // The API is not on the page's port, token or not: only on the socket.
    let api = http(
        &address,
        "GET /api/questions HTTP/1.1",
        &[&format!("Authorization: Bearer {token}")],
    );
    assert!(!api.starts_with("HTTP/1.1 200"), "{api}");
    // Its files are this user's alone; none but the page's key holds the
    // token.
    for file in ["inbox.sock", "inbox.sqlite", "inbox.lock", "page.key"] {
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(inbox.state().join(file))
                .unwrap()
                .permissions(),
        );
        assert_eq!(mode & 0o077, 0, "{file} is private");
    }
    for entry in std::fs::read_dir(inbox.state()).unwrap() {
        let path = entry.unwrap().path();
        if path.ends_with("page.key") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&token),
            "{} holds the token",
            path.display()
        );
    }
    let second = inbox.command().args(["inbox", "serve"]).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    let pid = inbox.server.as_ref().unwrap().id();
    assert!(
        stderr(&second).contains("already serving")
            && stderr(&second).contains(&format!("pid {pid}")),
        "{}",
        stderr(&second)
    );
}

/// A session whose id is long, as a client's run is.
const BETA: &str = "codex-0b9d3c6e-2f41-4a7e-9d55-1f0c8a7b6e21";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_are_answered_from_one_page() {
    let _one = browser::BROWSER.lock().await;
    let inbox = Inbox::new();
    let alpha = inbox.agent(
        "alpha",
        &choice("Which package manager?", &["pnpm", "npm"]),
        &[],
    );
    let beta = inbox.agent(BETA, &choice("Ship it?", &["Yes", "No"]), &[]);
    let ids: Vec<String> = ["alpha", BETA]
        .into_iter()
        .map(|session| {
            let listed = inbox.wait_for(session, false, |q| q["session"] == session);
            listed["id"].as_str().unwrap().to_owned()
        })
        .collect();
    let browser = browser::Browser::start().await;
    // The one-time link a person gets from `inbox page`: it lets this
    // browser in (a cookie) and leaves the address without a secret.
    browser.client.goto(&inbox.page_link()).await.unwrap();
    let shown = browser.client.current_url().await.unwrap();
    assert!(!shown.as_str().contains("ticket"), "{shown}");
    // Each session's section is labelled by what asked (the agent, its
    // folder), then the session.
    let heading = browser
        .wait_for(&format!("section[data-session=\"{BETA}\"] h2"))
        .await;
    // A long id (a client's run) by its end, whole on hover.
    assert_eq!(heading.attr("title").await.unwrap().as_deref(), Some(BETA));
    let title = heading.text().await.unwrap();
    let folder = inbox.root.path().display().to_string();
    assert!(
        title.contains("(pid ") && title.ends_with(&format!(" · {folder} · session …8a7b6e21")),
        "{title}"
    );
    for (session, label) in [(BETA, "No"), ("alpha", "pnpm")] {
        let card = format!("section[data-session=\"{session}\"] form.batch");
        let text = browser.wait_for(&card).await.text().await.unwrap();
        // What the heading says is not said again on its card.
        assert!(!text.contains(&folder) && !text.contains("(pid "), "{text}");
        // The id `inbox answer ID` takes is on the card.
        let id = &ids[usize::from(session == BETA)];
        assert!(text.contains(id.as_str()), "{id} not in {text}");
        browser
            .click(&format!("{card} input[value=\"{label}\"]"))
            .await;
        browser.click(&format!("{card} button.send")).await;
    }
    assert_eq!(
        answers_of(&alpha.finish()),
        json!([{"id": "q", "selected": ["pnpm"]}])
    );
    assert_eq!(
        answers_of(&beta.finish()),
        json!([{"id": "q", "selected": ["No"]}])
    );
    assert_eq!(browser.count(".ended").await, 2);
    // A few seconds later both are in the "Done" list at the page's end,
    // and their sections, empty, are gone: a new card comes first.
    browser.wait_for("details#done .ended + .ended").await;
    assert_eq!(browser.count("#batches .ended").await, 0);
    assert_eq!(browser.count("#batches section").await, 0);
    let summary = browser.wait_for("details#done summary").await;
    assert_eq!(summary.text().await.unwrap(), "Done (2)");
    browser.close().await;
    let history = inbox.list(true);
    assert!(
        history.iter().all(|q| q["settledBy"] == "page"),
        "{history:?}"
    );
}

#[test]
fn a_question_expires_only_once_its_agent_is_gone_past_the_retention_period() {
    let inbox = Inbox::with_config("[inbox]\nretention = \"1s\"\n");
    let waiting = inbox.agent("s1", &choice("Keep going?", &["Yes"]), &[]);
    let kept = inbox.wait_for("the first question", false, |q| q["agentWaiting"] == true);
    let database = rusqlite::Connection::open(inbox.state().join("inbox.sqlite")).unwrap();
    let seen = || -> i64 {
        database
            .query_row(
                "SELECT agent_seen_at FROM questions WHERE id = ?1",
                [kept["id"].as_str().unwrap()],
                |row| row.get(0),
            )
            .unwrap()
    };
    let seen_before = seen();
    // A witness asked later, whose agent dies: once it has expired, sweeps
    // ran past the period for the first question too (asked earlier).
    let witness = inbox.agent("s2", &choice("Witness?", &["Yes"]), &[]);
    let gone = inbox.wait_for("the witness", false, |q| {
        q["session"] == "s2" && q["agentWaiting"] == true
    });
    witness.kill9();
    let expired = inbox.wait_for("the witness to expire", true, |q| {
        q["id"] == gone["id"] && q["state"] == "expired"
    });
    assert_eq!(expired["settledBy"], "retention");
    // Those sweeps wrote nothing for the question whose agent waits (it is
    // written as a wait ends, not on every sweep).
    assert_eq!(seen(), seen_before);
    // The question whose agent still waits is kept, however short the period.
    let still: Vec<Value> = inbox.list(false);
    assert_eq!(still.len(), 1, "{still:?}");
    assert_eq!(still[0]["id"], kept["id"]);
    // An expired question cannot be answered any more.
    let late = inbox.answer(
        gone["id"].as_str().unwrap(),
        &json!({"answers": [{"id": "q", "selected": ["Yes"]}]}),
    );
    assert_eq!(late.status.code(), Some(2));
    assert!(stderr(&late).contains("refused (409)"), "{}", stderr(&late));
    drop(waiting);
}

/// Whether this runs as root (the tests that need a second user do).
fn root() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// Whoever takes a stopped inbox's port hears from no agent and no
/// command: they reach the inbox by its socket alone. (A browser's cookie
/// is another matter: docs/src/inbox.md, "A browser stays signed in".)
#[test]
fn a_stopped_inbox_leaves_nothing_for_whoever_takes_its_port() {
    let mut inbox = Inbox::new();
    let (address, _) = inbox.page_token();
    inbox.kill9();
    // Someone takes the freed port and waits for what comes.
    let squatter = TcpListener::bind(&address).unwrap();
    squatter.set_nonblocking(true).unwrap();
    let timed_out = inbox
        .agent("s1", &choice("Deploy?", &["Yes"]), &["--timeout", "1"])
        .finish();
    let result: Value = serde_json::from_slice(&timed_out.stdout).unwrap();
    assert_eq!(result["error"]["code"], "ASK_TIMED_OUT", "{result}");
    let list = inbox.command().args(["inbox", "list"]).output().unwrap();
    assert_eq!(list.status.code(), Some(2));
    assert!(
        stderr(&list).contains("no inbox is running"),
        "{}",
        stderr(&list)
    );
    assert!(
        squatter.accept().is_err(),
        "an agent or a command connected to whoever holds the old port"
    );
}

/// A state folder reached through a link another user owns (a pre-made
/// `/tmp/ask-user-victim` leading to this user's own folder, which they
/// could point elsewhere between a check and its use) is refused by the
/// inbox and by its agents alike, naming the link; nothing is made or sent.
#[test]
fn a_state_folder_through_another_users_link_is_never_used() {
    if !root() {
        eprintln!("skipped: needs root, to give a link to a second user (nobody)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("own");
    std::fs::create_dir(&own).unwrap();
    let link = dir.path().join("ask-user-victim");
    std::os::unix::fs::symlink(&own, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let refused = format!("{} on the way is a link of user 65534", link.display());
    for args in [&["inbox", "serve"][..], &["inbox", "list"]] {
        let mut command = ask_user()
            .env("ASK_USER_STATE_DIR", &link)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Err(why) = child::line_on_stderr(&mut command, &refused, BOUND) {
            let _ = command.kill();
            let _ = command.wait();
            panic!("{args:?} did not refuse the link: {why}");
        }
        // Said as it stops.
        assert_eq!(command.wait().unwrap().code(), Some(2), "{args:?}");
    }
    assert_eq!(
        std::fs::read_dir(&own).unwrap().count(),
        0,
        "nothing was made in it"
    );
}

#[test]
fn a_state_folder_of_another_user_is_never_used() {
    if !root() {
        eprintln!("skipped: needs root, to run an inbox as a second user (nobody)");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let state = shared.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Another user's inbox serves from the folder every agent here is told.
    let as_nobody = |args: &[&str]| {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_ask-user"))
            .args(args)
            .env("ASK_USER_STATE_DIR", &state)
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .env("HOME", "/nonexistent");
        command
    };
    let mut theirs = as_nobody(&["inbox", "serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = child::said_on_stderr(&mut theirs, "the inbox serves", BOUND);
    let _theirs = Agent(Some(theirs));
    started.unwrap_or_else(|why| panic!("the other user's inbox did not start: {why}"));

    let config = shared.path().join("agent.toml");
    std::fs::write(&config, "[[answerer]]\nkind = \"inbox\"\n").unwrap();
    let arguments = shared.path().join("ask.json");
    std::fs::write(&arguments, choice("Deploy?", &["Yes"]).to_string()).unwrap();
    let mine = ask_user()
        .env("ASK_USER_STATE_DIR", &state)
        .arg("ask")
        .arg(&arguments)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(mine.status.code(), Some(2), "{}", stderr(&mine));
    let said = stderr(&mine);
    assert!(
        said.contains(&state.display().to_string()) && said.contains("belongs to user 65534"),
        "{said}"
    );
    let list = ask_user()
        .env("ASK_USER_STATE_DIR", &state)
        .args(["inbox", "list"])
        .output()
        .unwrap();
    assert_eq!(list.status.code(), Some(2));
    assert!(
        stderr(&list).contains("belongs to user 65534"),
        "{}",
        stderr(&list)
    );
    // Nothing reached the other user's inbox.
    let theirs = as_nobody(&["inbox", "list", "--json", "--all"])
        .output()
        .unwrap();
    assert!(theirs.status.success(), "{}", stderr(&theirs));
    let listed: Value = serde_json::from_slice(&theirs.stdout).unwrap();
    assert_eq!(listed["questions"], json!([]), "{listed}");
}

#[test]
fn text_from_a_model_stays_text_in_the_list_and_the_notifications() {
    let inbox = Inbox::notifying();
    let hostile =
        "Deploy?\u{1b}]52;c;cHduZWQ=\u{7}\r<!channel> <https://evil|Open the inbox>\u{202e}";
    let agent = inbox.agent("s\u{1b}[2J1", &choice(hostile, &["Yes"]), &[]);
    let asked = inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    let shown = inbox.command().args(["inbox", "list"]).output().unwrap();
    let shown = String::from_utf8(shown.stdout).unwrap();
    assert!(shown.contains("Deploy?"), "{shown}");
    // When, as a person says it, not as a UTC timestamp.
    assert!(
        shown.contains("asked just now") || shown.contains(" s ago"),
        "{shown}"
    );
    for c in ['\u{1b}', '\u{7}', '\r', '\u{202e}'] {
        assert!(!shown.contains(c), "{c:?} reached the terminal: {shown:?}");
    }
    let hooks = [inbox.hook(), inbox.hook()];
    let webhook = hooks
        .iter()
        .find(|h| h.head.starts_with("POST /hook"))
        .expect("the webhook");
    let text = serde_json::from_str::<Value>(&webhook.body).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("&lt;!channel&gt;") && text.contains("&lt;https://evil|Open the inbox&gt;"),
        "{text}"
    );
    assert!(!text.contains('<') && !text.contains('\u{1b}'), "{text}");
    let ntfy = hooks
        .iter()
        .find(|h| h.head.starts_with("POST /topic"))
        .expect("the ntfy post");
    assert!(
        !ntfy.body.contains('\u{1b}') && !ntfy.body.contains('\r'),
        "{ntfy:?}"
    );

    // The agent printed no secret: no token, no link, no page address.
    let (address, token) = inbox.page_token();
    let answered = inbox.answer(
        asked["id"].as_str().unwrap(),
        &json!({"answers": [{"id": "q", "selected": ["Yes"]}]}),
    );
    assert!(answered.status.success(), "{}", stderr(&answered));
    let output = agent.finish();
    let said = stderr(&output);
    assert!(
        !said.contains(&token) && !said.contains("ticket=") && !said.contains(&address),
        "{said}"
    );
    assert!(said.contains("ask-user inbox page"), "{said}");
}

#[test]
fn mcp_calls_of_two_processes_never_share_a_question() {
    let inbox = Inbox::new();
    let arguments = choice("Merge it?", &["Yes", "No"]);
    let peer = || {
        let mut command = inbox.command();
        command
            .arg("mcp")
            .arg("--config")
            .arg(inbox.root.path().join("agent.toml"));
        // No form support: the calls go to the config's chain (the inbox).
        McpPeer::start(command, json!({}))
    };
    let (mut one, mut two) = (peer(), peer());
    one.call(1, &arguments);
    two.call(1, &arguments);
    let asked = inbox.wait_until("two questions", false, |list| {
        (list.len() == 2).then_some(list)
    });
    assert_ne!(asked[0]["session"], asked[1]["session"], "{asked:?}");
    for question in &asked {
        let session = question["session"].as_str().unwrap();
        assert!(
            session.starts_with("mcp-run-") && session.len() == 40,
            "a random session of the run: {session}"
        );
    }
    // Each answer reaches exactly one of them, and a different one.
    let mut answered = Vec::new();
    for (question, label) in asked.iter().zip(["Yes", "No"]) {
        let output = inbox.answer(
            question["id"].as_str().unwrap(),
            &json!({"answers": [{"id": "q", "selected": [label]}]}),
        );
        assert!(output.status.success(), "{}", stderr(&output));
        let start = Instant::now();
        let got = loop {
            let replies = [&one, &two].map(|peer| peer.reply(1, Duration::from_millis(50)));
            if let Some(which) = replies.iter().position(Option::is_some) {
                break (which, replies[which].clone().unwrap());
            }
            assert!(start.elapsed() < BOUND, "no client got the answer {label}");
        };
        let text = got.1["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(text.contains(label), "{text}");
        answered.push(got.0);
    }
    assert_ne!(answered[0], answered[1], "one client got both answers");
}

#[test]
fn a_reset_database_never_hands_one_agents_answer_to_another() {
    let mut inbox = Inbox::new();
    let arguments = choice("Deploy?", &["Yes", "No"]);
    let first = inbox.agent("s1", &arguments, &[]);
    let old = inbox.wait_for("the first question", false, |q| q["agentWaiting"] == true);
    inbox.kill9();
    for file in ["inbox.sqlite", "inbox.sqlite-wal", "inbox.sqlite-shm"] {
        let _ = std::fs::remove_file(inbox.state().join(file));
    }
    inbox.serve();
    let second = inbox.agent("s2", &arguments, &[]);
    // Both ask in the new database, each its own question under a new id.
    let waiting = inbox.wait_until("two questions", false, |list| {
        (list.len() == 2).then_some(list)
    });
    assert!(waiting.iter().all(|q| q["id"] != old["id"]), "{waiting:?}");
    let of = |session: &str| {
        waiting
            .iter()
            .find(|q| q["session"] == session)
            .unwrap_or_else(|| panic!("no question of {session}: {waiting:?}"))["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let answered = inbox.answer(
        &of("s2"),
        &json!({"answers": [{"id": "q", "selected": ["No"]}]}),
    );
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(
        answers_of(&second.finish()),
        json!([{"id": "q", "selected": ["No"]}])
    );
    // The first agent still waits for its own.
    assert_eq!(inbox.list(false).len(), 1);
    let answered = inbox.answer(
        &of("s1"),
        &json!({"answers": [{"id": "q", "selected": ["Yes"]}]}),
    );
    assert!(answered.status.success(), "{}", stderr(&answered));
    let output = first.finish();
    assert_eq!(
        answers_of(&output),
        json!([{"id": "q", "selected": ["Yes"]}])
    );
    assert!(
        !stderr(&output).contains("refused (401)"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_locked_database_is_a_retry_not_the_humans_fault() {
    let inbox = Inbox::new();
    let agent = inbox.agent("s1", &choice("Deploy?", &["Yes"]), &[]);
    let asked = inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    let id = asked["id"].as_str().unwrap();
    let answers = json!({"answers": [{"id": "q", "selected": ["Yes"]}]});
    // Another process holds the database's write lock.
    let lock = rusqlite::Connection::open(inbox.state().join("inbox.sqlite")).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let refused = inbox.answer(id, &answers);
    assert_eq!(refused.status.code(), Some(2));
    let said = stderr(&refused);
    assert!(
        said.contains("could not be recorded") && said.contains("try again"),
        "{said}"
    );
    assert!(
        !said.contains("refused (422)") && !said.contains("INVALID_ANSWER"),
        "{said}"
    );
    lock.execute_batch("ROLLBACK").unwrap();
    assert_eq!(inbox.list(false)[0]["state"], "waiting");
    let answered = inbox.answer(id, &answers);
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Yes"]}])
    );
}

#[test]
fn a_question_this_version_cannot_read_hides_nothing_and_a_newer_database_is_refused() {
    let mut inbox = Inbox::new();
    let _one = inbox.agent("s1", &choice("Readable?", &["Yes"]), &[]);
    let _two = inbox.agent("s2", &choice("Damaged?", &["Yes"]), &[]);
    let damaged = inbox.wait_for("the second question", false, |q| q["session"] == "s2");
    inbox.wait_for("the first question", false, |q| q["session"] == "s1");
    let database = rusqlite::Connection::open(inbox.state().join("inbox.sqlite")).unwrap();
    database
        .execute(
            "UPDATE questions SET request = ?1 WHERE id = ?2",
            rusqlite::params![
                r#"{"questions":[{"id":"q","question":"?","intent":{"kind":"from-the-future"}}]}"#,
                damaged["id"].as_str().unwrap()
            ],
        )
        .unwrap();
    let listed = inbox.list(false);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["session"], "s1");
    let output = inbox
        .command()
        .args(["inbox", "list", "--json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(list["unreadable"][0]["id"], damaged["id"], "{list}");
    let human = inbox.command().args(["inbox", "list"]).output().unwrap();
    assert!(human.status.success());
    assert!(
        stderr(&human).contains(&format!(
            "question {} cannot be read",
            damaged["id"].as_str().unwrap()
        )),
        "{}",
        stderr(&human)
    );
    // A database a newer version wrote is refused, saying so.
    inbox.kill9();
    database.pragma_update(None, "user_version", 99).unwrap();
    drop(database);
    let refused = inbox.command().args(["inbox", "serve"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("newer ask-user") && stderr(&refused).contains("inbox.sqlite"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn pages_are_told_why_a_question_left() {
    let inbox = Inbox::with_config("[inbox]\nretention = \"1s\"\n");
    let (address, token) = inbox.page_token();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    write!(
        stream,
        "GET /events?token={token} HTTP/1.1\r\nHost: {address}\r\n\r\n"
    )
    .unwrap();
    let (tx, frames) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if let Some(frame) = line.strip_prefix("data: ")
                && tx.send(serde_json::from_str(frame).unwrap()).is_err()
            {
                break;
            }
        }
    });
    let cancel_of = |id: &Value| loop {
        let frame = frames.recv_timeout(BOUND).expect("a frame in time");
        if frame["type"] == "cancel" && frame["eventId"] == *id {
            return frame["reason"].clone();
        }
    };
    // Dismissed on a page: the other pages hear "dismissed".
    let dismissed = inbox.agent("s1", &choice("Deploy?", &["Yes"]), &[]);
    let asked = inbox.wait_for("the question", false, |q| q["session"] == "s1");
    let body = json!({"eventId": asked["id"], "outcome": {"kind": "rejected",
        "error": {"name": "UserQuestionError", "message": "dismissed", "code": "ASK_CANCELLED"}}})
    .to_string();
    let reply = request(
        &address,
        "POST /answer HTTP/1.1",
        &[&format!("x-ask-user-token: {token}")],
        &body,
    );
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert_eq!(cancel_of(&asked["id"]), "dismissed");
    drop(dismissed);
    // Its agent gone past the retention period: "expired".
    let gone = inbox.agent("s2", &choice("Still there?", &["Yes"]), &[]);
    let asked = inbox.wait_for("the question", false, |q| {
        q["session"] == "s2" && q["agentWaiting"] == true
    });
    gone.kill9();
    assert_eq!(cancel_of(&asked["id"]), "expired");
}

#[test]
fn a_state_folder_that_cannot_be_made_is_named() {
    let output = ask_user()
        .env("ASK_USER_STATE_DIR", "/proc/ask-user-inbox")
        .args(["inbox", "serve"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("/proc/ask-user-inbox"),
        "{}",
        stderr(&output)
    );
}

/// `inbox answer ID` without `--answers` asks the question at the terminal
/// (a person never hand-writes answer JSON), and the answer reaches its
/// agent.
#[test]
fn inbox_answer_without_a_file_asks_at_the_terminal() {
    let inbox = Inbox::new();
    let agent = inbox.agent(
        "alpha",
        &choice("Which package manager?", &["pnpm", "npm"]),
        &[],
    );
    let id = inbox.wait_for("alpha", false, |q| q["session"] == "alpha")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let state = inbox.state();
    let mut terminal = tui::Tui::start(
        Path::new(env!("CARGO_BIN_EXE_ask-user")),
        &["inbox", "answer", &id],
        inbox.root.path(),
        &[
            ("ASK_USER_STATE_DIR", state.to_str().unwrap()),
            ("XDG_CONFIG_HOME", "/nonexistent"),
            ("NO_COLOR", "1"),
        ],
    );
    terminal.wait_for(&["Which package manager?", "2. npm"], BOUND);
    terminal.press("2", &["Review your answers"], BOUND);
    terminal.keys("\r");
    assert_eq!(terminal.ended(BOUND), Some(true), "inbox answer ended well");
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["npm"]}])
    );
}

/// After `kill -9` of its agent, a card says the agent is gone, where it
/// stands out (and still takes an answer, for when it asks again), as
/// `inbox list` does: its wait's connection closing says so at once. It
/// says when the inbox will remind of it (`[inbox.escalate]`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_says_when_its_agent_is_gone() {
    let _one = browser::BROWSER.lock().await;
    let (url, _hooks) = hook_server();
    let inbox = Inbox::with_config(&format!(
        "[inbox.escalate]\nafter = \"1h\"\nwebhook = \"{url}/again\"\n"
    ));
    let agent = inbox.agent("alpha", &choice("Ship it?", &["Yes", "No"]), &[]);
    inbox.wait_for("alpha", false, |q| q["session"] == "alpha");
    let browser = browser::Browser::start().await;
    browser.client.goto(&inbox.page_link()).await.unwrap();
    browser.as_phone().await;
    let card = browser.wait_for("form.batch").await.text().await.unwrap();
    assert!(!card.contains("agent is gone"), "{card}");
    assert!(card.contains("reminder at"), "{card}");
    agent.kill9();
    let gone = browser
        .client
        .wait()
        .at_most(BOUND)
        .for_element(fantoccini::Locator::XPath(
            "//form[contains(@class, 'batch')]//span[contains(@class, 'presence')][contains(@class, 'gone')][contains(., 'its agent is gone')]",
        ))
        .await;
    assert!(gone.is_ok(), "the card never said its agent is gone");
    assert!(browser.fits_the_width().await, "it reads on a phone");
    // What a finger presses is big enough: rows and buttons 44 px tall,
    // radio glyphs 20 px.
    let smallest = browser
        .client
        .execute(
            "const h = (css) => Math.min(...[...document.querySelectorAll(css)]\
               .map((e) => e.getBoundingClientRect().height));\
             return [h('label.choice'), h('form.batch button'), h('input[type=radio]')];",
            vec![],
        )
        .await
        .unwrap();
    let smallest: Vec<f64> = serde_json::from_value(smallest).unwrap();
    assert!(
        smallest[0] >= 44.0 && smallest[1] >= 44.0 && smallest[2] >= 20.0,
        "{smallest:?}"
    );
    let listed = inbox.wait_for("gone", false, |q| q["agentWaiting"] == false);
    assert_eq!(listed["session"], "alpha");
    browser.close().await;
}

/// The book's inbox recipe ("The inbox"), run as written (from the repository's root,
/// with its own state folder): each `ask-user` line of the block, in
/// order; the agent's line in the background, and the answering line that
/// takes a file (the one asking at the terminal has a pty test of its own),
/// the question's id put for `q3f…`.
#[test]
fn the_books_inbox_recipe_runs_as_written() {
    let pages = ask_user_test_support::book_pages();
    let block = pages
        .iter()
        .flat_map(|(_, text)| text.split("```sh\n"))
        .find(|block| block.starts_with("ask-user inbox serve                  # leave it running"))
        .and_then(|block| block.split("```").next())
        .expect("the book's inbox recipe");
    let lines: Vec<Vec<&str>> = block
        .lines()
        .map(|line| line.split(" #").next().unwrap().trim())
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| line.split_whitespace().collect())
        .collect();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let state = tempfile::tempdir().unwrap();
    // The user's config file (not the recipe's commands) gives the inbox a
    // webhook: the event that the agent's question is stored.
    let (hooks_at, hooks) = hook_server();
    let config_home = tempfile::tempdir().unwrap();
    std::fs::create_dir(config_home.path().join("ask-user")).unwrap();
    std::fs::write(
        config_home.path().join("ask-user/config.toml"),
        format!("[inbox.notify]\nwebhook = \"{hooks_at}/hook\"\n"),
    )
    .unwrap();
    let run = |words: &[&str]| {
        assert_eq!(words[0], "ask-user", "{words:?}");
        let mut command = ask_user();
        command
            .args(&words[1..])
            .current_dir(repo)
            .env("ASK_USER_STATE_DIR", state.path())
            .env("XDG_CONFIG_HOME", config_home.path())
            .stdin(Stdio::null());
        command
    };
    // Both killed when dropped, however the test ends.
    let (mut server, mut agent, mut id) = (None::<Agent>, None::<Agent>, None::<String>);
    for words in &lines {
        match words[1..] {
            ["inbox", "serve"] => {
                let mut child = run(words)
                    .stderr(Stdio::piped())
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap();
                child::said_on_stderr(&mut child, "the inbox serves", BOUND)
                    .unwrap_or_else(|why| panic!("{words:?}: {why}"));
                server = Some(Agent(Some(child)));
            }
            ["ask", ..] => {
                let child = run(words)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                agent = Some(Agent(Some(child)));
            }
            ["inbox", "answer", _] => {} // at the terminal: its own pty test
            ["inbox", "answer", _, ..] => {
                let mut words = words.clone();
                words[3] = id.as_deref().expect("listed first");
                let output = run(&words).output().unwrap();
                assert!(output.status.success(), "{words:?}: {}", stderr(&output));
            }
            _ => {
                // `inbox page`, `inbox list`: they say what the book says;
                // the list once the agent's question is stored.
                if words[1..] == ["inbox", "list"] {
                    let hook = hooks.recv_timeout(BOUND).expect("the question's webhook");
                    assert!(hook.body.contains("deploy-7"), "{hook:?}");
                }
                let output = run(words).output().unwrap();
                assert!(output.status.success(), "{words:?}: {}", stderr(&output));
                let text = String::from_utf8(output.stdout).unwrap();
                if words[1..] == ["inbox", "list"] {
                    assert!(text.contains("session deploy-7"), "{text}");
                    id = text.split_whitespace().next().map(str::to_owned);
                } else {
                    assert!(text.starts_with("http://127.0.0.1:"), "{text}");
                }
            }
        }
    }
    let answers = answers_of(&agent.expect("the recipe runs an agent").finish());
    assert_eq!(answers[0]["selected"], json!(["Staging (Recommended)"]));
    assert!(server.is_some(), "the recipe serves an inbox");
}

/// A store named by its URL: `database = "sqlite:PATH"` keeps one user's
/// inbox in that file, not in the state folder, and it serves as ever.
#[test]
fn one_users_inbox_keeps_its_questions_where_its_database_url_says() {
    let kept = tempfile::tempdir().unwrap();
    let file = kept.path().join("questions.sqlite");
    let inbox = Inbox::with_config(&format!(
        "[inbox]\ndatabase = \"sqlite:{}\"\n",
        file.display()
    ));
    let agent = inbox.agent("s1", &choice("Which?", &["a", "b"]), &[]);
    let asked = inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    let id = asked["id"].as_str().unwrap();
    let answered = inbox.answer(id, &json!({"answers": [{"id": "q", "selected": ["a"]}]}));
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["a"]}])
    );
    assert!(file.exists(), "the questions are in {}", file.display());
    assert!(
        !inbox.state().join(ask_user::inbox::DATABASE_FILE).exists(),
        "nothing is kept in the state folder's database"
    );
}

/// The page's address of one user's inbox outlives a restart (`kill -9`
/// here): the port is kept in the state folder and taken again, so that a
/// page open meanwhile finds it; when something else took it, any free one.
#[test]
fn a_restarted_inbox_serves_its_page_where_it_was() {
    let address = |inbox: &Inbox| {
        let link = inbox.page_link();
        link.strip_prefix("http://")
            .and_then(|rest| rest.split_once('/'))
            .map(|(address, _)| address.to_owned())
            .unwrap_or_else(|| panic!("not a link: {link}"))
    };
    let mut inbox = Inbox::new();
    let before = address(&inbox);
    inbox.kill9();
    inbox.serve();
    assert_eq!(address(&inbox), before, "the same port after a restart");

    inbox.kill9();
    let taken = std::net::TcpListener::bind(&before).unwrap();
    inbox.serve();
    let elsewhere = address(&inbox);
    assert_ne!(elsewhere, before, "a port taken meanwhile is left alone");
    drop(taken);
}

/// A browser a link let in stays in across a restart of one user's inbox:
/// what signs it in is kept in the state folder, for this user alone.
/// Removing it signs every browser out at the next start.
#[test]
fn a_browser_stays_signed_in_until_the_page_key_is_removed() {
    use std::os::unix::fs::PermissionsExt;
    let mut inbox = Inbox::new();
    let (address, token) = inbox.page_token();
    let cookie = format!(
        "Cookie: ask-user-{}={token}",
        address.rsplit(':').next().unwrap()
    );
    let page = || http(&address, "GET / HTTP/1.1", &[&cookie]);
    inbox.kill9();
    inbox.serve();
    let reply = page();
    assert!(reply.starts_with("HTTP/1.1 200"), "still let in: {reply}");

    let key = inbox.state().join("page.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the key is this user's alone");
    inbox.kill9();
    std::fs::remove_file(&key).unwrap();
    inbox.serve();
    let reply = page();
    assert!(
        reply.starts_with("HTTP/1.1 401") && reply.contains("ask-user inbox page"),
        "signed out, and told how to get in: {reply}"
    );
}

/// An open page whose inbox stopped (`kill -9`) says so within seconds,
/// and what to do, instead of "Reconnecting…" for ever; its card stays.
#[tokio::test]
async fn a_page_whose_inbox_stopped_says_what_to_do() {
    let _one = browser::BROWSER.lock().await;
    let mut inbox = Inbox::new();
    let _agent = inbox.agent("s1", &choice("Deploy now?", &["Yes", "No"]), &[]);
    inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    let browser = browser::Browser::start().await;
    // On a phone, where a person away from the machine looks.
    browser.as_phone().await;
    browser.client.goto(&inbox.page_link()).await.unwrap();
    browser.wait_for("form.batch").await;
    inbox.kill9();
    browser
        .status_says("Cannot reach the inbox: if it stopped, start it again (ask-user inbox serve)")
        .await;
    assert_eq!(browser.count("form.batch").await, 1, "the card stays");
    assert!(browser.fits_the_width().await, "nothing to scroll sideways");
    // Started again, it is found by the same page, which is still let in.
    inbox.serve();
    browser
        .status_says("1 question waits for your answer")
        .await;
    assert_eq!(browser.count("form.batch").await, 1, "one card, not two");
    browser.close().await;
}

/// A notification's link, opened in a fresh browser: one user's inbox
/// sends no way in where a notification goes, so its page says, as a page a
/// person reads, how to get in (`ask-user inbox page`); a one-time link
/// opened a second time says it was used, the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notifications_link_opens_a_page_that_says_how_to_get_in() {
    let _one = browser::BROWSER.lock().await;
    let inbox = Inbox::notifying();
    let _agent = inbox.agent("s1", &choice("Deploy now?", &["Yes", "No"]), &[]);
    let webhook = (0..2)
        .map(|_| inbox.hook())
        .find(|hook| hook.head.starts_with("POST /hook"))
        .expect("the webhook");
    let body: Value = serde_json::from_str(&webhook.body).unwrap();
    let url = body["url"].as_str().expect("the page's address").to_owned();
    let browser = browser::Browser::start().await;
    browser.as_phone().await;
    browser.client.goto(&url).await.unwrap();
    let said = browser.wait_for("body").await.text().await.unwrap();
    assert!(
        said.contains("Open the page anew") && said.contains("ask-user inbox page"),
        "{said}"
    );
    assert!(browser.fits_the_width().await, "it reads on a phone");
    let link = inbox.page_link();
    browser.client.goto(&link).await.unwrap();
    browser.wait_for("#status").await;
    let fresh = browser::Browser::start().await;
    fresh.client.goto(&link).await.unwrap();
    let said = fresh.wait_for("body").await.text().await.unwrap();
    assert!(
        said.contains("This link was used already") && said.contains("ask-user inbox page"),
        "{said}"
    );
    fresh.close().await;
    browser.close().await;
}

/// Another MCP server's form, relayed by Claude Code's hook, answered on
/// the page: a choice or a yes/no takes no own words, a required field
/// shows no Skip, and what the server would refuse (a word where it takes a
/// whole number, own words for a choice) is refused before it is sent,
/// saying why, on the page and by the inbox; what is sent reaches the hook
/// whole, nothing typed dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_servers_form_takes_only_what_the_server_accepts() {
    let _one = browser::BROWSER.lock().await;
    let inbox = Inbox::new();
    let hook = inbox.elicit(
        &json!({"type": "object", "required": ["target", "replicas"],
        "properties": {
            "target": {"type": "string", "title": "Target", "enum": ["stg", "prod"],
                "enumNames": ["Staging", "Production"]},
            "confirm": {"type": "boolean", "title": "Confirm?"},
            "replicas": {"type": "integer", "title": "Replicas", "minimum": 1},
            "note": {"type": "string", "title": "Note"}}}),
    );
    let asked = inbox.wait_for("the form", false, |q| q["agentWaiting"] == true);
    let id = asked["id"].as_str().unwrap();

    // The inbox refuses own words for a choice, and a required field
    // skipped, saying which; the question still waits.
    let skip = |id: &str| json!({"id": id, "selected": []});
    for (answers, says) in [
        (
            json!([{"id": "target", "selected": [], "custom": "somewhere"}, skip("confirm"),
                {"id": "replicas", "selected": [], "custom": "2"}, skip("note")]),
            "takes only its options",
        ),
        (
            json!([{"id": "target", "selected": ["Staging"]}, skip("confirm"),
                skip("replicas"), skip("note")]),
            "question \"replicas\": it must be answered",
        ),
    ] {
        let refused = inbox.answer(id, &json!({ "answers": answers }));
        assert_eq!(refused.status.code(), Some(2));
        assert!(stderr(&refused).contains(says), "{}", stderr(&refused));
    }

    let browser = browser::Browser::start().await;
    browser.as_phone().await;
    browser.client.goto(&inbox.page_link()).await.unwrap();
    browser.wait_for("form.batch").await;
    let count = |css: String| {
        let browser = &browser;
        async move { browser.count(&css).await }
    };
    let field = |id: &str| format!("fieldset[data-question=\"{id}\"]");
    for id in ["target", "confirm"] {
        assert_eq!(count(format!("{} textarea", field(id))).await, 0, "{id}");
    }
    for (id, skips) in [("target", 0), ("replicas", 0), ("confirm", 1), ("note", 1)] {
        assert_eq!(
            count(format!("{} [data-skip]", field(id))).await,
            skips,
            "{id}"
        );
    }
    browser
        .click(&format!("{} input[value=\"Production\"]", field("target")))
        .await;
    let replicas = browser
        .wait_for(&format!("{} textarea", field("replicas")))
        .await;
    replicas.send_keys("three").await.unwrap();
    browser.click("button.send").await;
    let notice = browser
        .client
        .wait()
        .at_most(BOUND)
        .for_element(fantoccini::Locator::XPath(
            "//div[contains(@class, 'notice')][contains(., 'Not sent: “Replicas”: it takes a whole number')]",
        ))
        .await;
    assert!(notice.is_ok(), "the page never said why it did not send");
    assert_eq!(browser.count("form.batch").await, 1, "nothing was sent");
    replicas.clear().await.unwrap();
    replicas.send_keys("3").await.unwrap();
    browser
        .wait_for(&format!("{} textarea", field("note")))
        .await
        .send_keys("hello")
        .await
        .unwrap();
    // "Confirm?" is left unanswered: sent as skipped, after asking.
    browser.click("button.send").await;
    browser.wait_for("form.batch[data-confirm=\"send\"]").await;
    browser.click("button.send").await;
    browser.wait_for("div.ended").await;
    let output = hook.finish();
    assert!(output.status.success(), "{}", stderr(&output));
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        printed["hookSpecificOutput"]["content"],
        json!({"target": "prod", "replicas": 3, "note": "hello"}),
        "{printed}"
    );
    browser.close().await;
}

/// A browser stays signed in across a restart of the inbox, and what was
/// ticked and typed on the page is kept in the browser until it is sent:
/// after `kill -9` of the inbox and a restart, the same tab reloaded (no new
/// link) shows the card as it was left, and sends it; once sent, the
/// browser keeps nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_stays_signed_in_and_its_draft_outlives_a_restart_of_the_inbox() {
    let _one = browser::BROWSER.lock().await;
    let mut inbox = Inbox::new();
    let batch = json!({"questions": [
        {"id": "parts", "question": "What goes in?", "multiSelect": true,
            "options": [{"label": "Tests"}, {"label": "Docs"}]},
        {"id": "notes", "question": "Anything else?"},
    ]});
    let agent = inbox.agent("s1", &batch, &[]);
    inbox.wait_for("the batch", false, |q| q["agentWaiting"] == true);
    let browser = browser::Browser::start().await;
    browser.as_phone().await;
    browser.client.goto(&inbox.page_link()).await.unwrap();
    let notes = "fieldset[data-question=\"notes\"] textarea";
    browser.click("input[value=\"Docs\"]").await;
    browser
        .wait_for(notes)
        .await
        .send_keys("ship it")
        .await
        .unwrap();
    inbox.kill9();
    inbox.serve();
    browser.client.refresh().await.unwrap();
    let typed = browser.wait_for(notes).await.prop("value").await.unwrap();
    assert_eq!(typed.as_deref(), Some("ship it"));
    let ticked = browser
        .wait_for("input[value=\"Docs\"]")
        .await
        .prop("checked")
        .await
        .unwrap();
    assert_eq!(ticked.as_deref(), Some("true"));
    browser.click("button.send").await;
    browser.wait_for("div.ended").await;
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "parts", "selected": ["Docs"]},
            {"id": "notes", "selected": [], "custom": "ship it"}])
    );
    let kept = browser
        .client
        .execute("return localStorage.getItem('ask-user-drafts')", vec![])
        .await
        .unwrap();
    assert_eq!(kept, Value::Null, "the sent draft is gone from the browser");
    browser.close().await;
}

/// A question that takes a note beside its choice (Codex's, by the seam's
/// `accepts.note`): on the page its box says "Add a note", and a choice
/// and a note are sent together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_goes_beside_a_choice_where_a_question_takes_one() {
    let _one = browser::BROWSER.lock().await;
    let inbox = Inbox::new();
    let request = json!({"questions": [{"id": "q", "question": "Deploy where?",
        "options": [{"label": "Staging"}, {"label": "Production"}],
        "accepts": {"note": true}}]});
    let agent = inbox.agent("s1", &request, &["--request"]);
    inbox.wait_for("the question", false, |q| q["agentWaiting"] == true);
    let browser = browser::Browser::start().await;
    browser.as_phone().await;
    browser.client.goto(&inbox.page_link()).await.unwrap();
    let note = browser
        .wait_for("fieldset[data-question=\"q\"] textarea")
        .await;
    assert_eq!(
        note.attr("placeholder").await.unwrap().as_deref(),
        Some("Add a note")
    );
    browser.click("input[value=\"Production\"]").await;
    note.send_keys("after 5pm").await.unwrap();
    browser.click("button.send").await;
    browser.wait_for("div.ended").await;
    assert_eq!(
        answers_of(&agent.finish()),
        json!([{"id": "q", "selected": ["Production"], "custom": "after 5pm"}])
    );
    browser.close().await;
}

/// `[inbox.escalate]` in one user's inbox: a question still waiting
/// `after` it was asked is sent on the escalation's channels too, saying
/// so, at its time even when the inbox restarted in between (`kill -9`);
/// one answered by then is reminded of nowhere.
#[test]
fn a_question_still_waiting_is_reminded_of_on_the_escalations_channels() {
    let (url, hooks) = hook_server();
    let mut inbox = Inbox::with_config(&format!(
        "[inbox.notify]\nwebhook = \"{url}/first\"\n\n\
         [inbox.escalate]\nafter = \"3s\"\nwebhook = \"{url}/again\"\n"
    ));
    inbox.answered_at_once("Quick one?");
    let slow_asked = Instant::now();
    let _slow = inbox.agent("s2", &choice("Slow one?", &["Yes", "No"]), &[]);
    inbox.wait_for("the slow question", false, |q| {
        q["questions"][0]["question"] == "Slow one?"
    });
    inbox.kill9();
    inbox.serve();
    let reminder = loop {
        let hook = hooks.recv_timeout(BOUND).expect("the reminder");
        if hook.head.starts_with("POST /again") {
            break hook;
        }
        assert!(hook.head.starts_with("POST /first"), "{hook:?}");
    };
    assert!(
        reminder.body.contains("Slow one?") && reminder.body.contains("Still waiting after 3s"),
        "{reminder:?}"
    );
    assert!(
        slow_asked.elapsed() >= Duration::from_secs(3),
        "reminded only once it had waited"
    );
}

/// `[inbox] notify_after`: a question answered within it (here from the
/// command line, as at the terminal) is told on no channel; one still
/// waiting then is, and not before.
#[test]
fn a_question_answered_within_notify_after_is_told_nowhere() {
    let (url, hooks) = hook_server();
    let inbox = Inbox::with_config(&format!(
        "[inbox]\nnotify_after = \"2s\"\n\n[inbox.notify]\nwebhook = \"{url}/hook\"\n"
    ));
    inbox.answered_at_once("Quick one?");
    let slow_asked = Instant::now();
    let _slow = inbox.agent("s2", &choice("Slow one?", &["Yes", "No"]), &[]);
    // The quick one's notice would have been due first: the first that
    // comes is the slow one's, once it has waited.
    let hook = hooks
        .recv_timeout(BOUND)
        .expect("the waiting question's notice");
    assert!(
        hook.body.contains("Slow one?") && !hook.body.contains("Quick one?"),
        "{hook:?}"
    );
    assert!(
        slow_asked.elapsed() >= Duration::from_secs(2),
        "told only once it had waited notify_after"
    );
}
