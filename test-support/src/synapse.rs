//! A real Matrix homeserver for a test: Synapse (`matrix-synapse` from
//! PyPI, in the virtual environment `scripts/test` makes, named by
//! `ASK_USER_TEST_SYNAPSE`), started on a free port of 127.0.0.1 with a
//! fresh SQLite database, open registration and no rate limits, and
//! stopped when the test ends. It has three accounts (`bot`, `ana` and
//! `mallory`) and a room the bot made and both others joined. A test plays
//! the people through the client-server API, and reads the room as `ana`
//! does, through `/sync`'s long poll.

use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest a test waits for the homeserver to start, or for something
/// to reach the room.
const BOUND: Duration = Duration::from_secs(60);

/// An account of the homeserver's.
#[derive(Debug, Clone)]
pub struct Account {
    /// `@name:localhost`.
    pub user: String,
    pub token: String,
}

pub struct Synapse {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    address: String,
    child: Child,
    /// Its config and database, removed when it is dropped.
    _dir: tempfile::TempDir,
    pub room: String,
    pub bot: Account,
    pub ana: Account,
    pub mallory: Account,
    /// The room's events as `ana` has read them, and where her next
    /// `/sync` starts.
    seen: RefCell<(Vec<Value>, Option<String>)>,
}

impl Synapse {
    /// Starts a homeserver, its accounts and its room.
    pub fn start() -> Synapse {
        let python = std::env::var_os("ASK_USER_TEST_SYNAPSE").map(PathBuf::from).expect(
            "ASK_USER_TEST_SYNAPSE names a Python with matrix-synapse: run the tests with scripts/test",
        );
        let dir = tempfile::Builder::new()
            .prefix("synapse-")
            .tempdir_in(crate::target_tmp())
            .unwrap();
        let config = dir.path().join("homeserver.yaml");
        let generated = Command::new(&python)
            .args(["-m", "synapse.app.homeserver", "--server-name", "localhost"])
            .arg("--config-path")
            .arg(&config)
            .arg("--data-directory")
            .arg(dir.path())
            .args(["--generate-config", "--report-stats=no"])
            .output()
            .unwrap();
        assert!(
            generated.status.success(),
            "synapse could not make its config: {}",
            String::from_utf8_lossy(&generated.stderr)
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // Its log on standard error, where the test reads that it listens.
        let logging = dir.path().join("log.yaml");
        std::fs::write(
            &logging,
            "version: 1\nformatters:\n  plain: {format: '%(name)s %(levelname)s %(message)s'}\n\
             handlers:\n  console: {class: logging.StreamHandler, formatter: plain, \
             stream: 'ext://sys.stderr'}\nroot: {level: INFO, handlers: [console]}\n\
             disable_existing_loggers: false\n",
        )
        .unwrap();
        let limits = "{per_second: 1000, burst_count: 1000}";
        let test = dir.path().join("test.yaml");
        std::fs::write(
            &test,
            format!(
                "listeners:\n  - port: {port}\n    bind_addresses: ['127.0.0.1']\n    type: http\n    \
                 tls: false\n    x_forwarded: false\n    resources:\n      - names: [client]\n        \
                 compress: false\n\
                 enable_registration: true\nenable_registration_without_verification: true\n\
                 suppress_key_server_warning: true\ntrusted_key_servers: []\n\
                 rc_message: {limits}\nrc_registration: {limits}\n\
                 rc_login: {{address: {limits}, account: {limits}, failed_attempts: {limits}}}\n\
                 rc_joins: {{local: {limits}, remote: {limits}}}\n\
                 rc_invites: {{per_room: {limits}, per_user: {limits}, per_issuer: {limits}}}\n\
                 log_config: {logging:?}\n"
            ),
        )
        .unwrap();
        let mut child = Command::new(&python)
            .args(["-m", "synapse.app.homeserver"])
            .arg("-c")
            .arg(&config)
            .arg("-c")
            .arg(&test)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Err(said) =
            crate::child::said_on_stderr(&mut child, "Synapse now listening on TCP port", BOUND)
        {
            let _ = child.kill();
            let _ = child.wait();
            panic!("synapse did not listen within {BOUND:?}: {said}");
        }
        let address = format!("127.0.0.1:{port}");
        let nobody = Account {
            user: String::new(),
            token: String::new(),
        };
        let mut synapse = Synapse {
            url: format!("http://{address}"),
            address,
            child,
            _dir: dir,
            room: String::new(),
            bot: nobody.clone(),
            ana: nobody.clone(),
            mallory: nobody,
            seen: RefCell::new((Vec::new(), None)),
        };
        synapse.bot = synapse.register("bot");
        synapse.ana = synapse.register("ana");
        synapse.mallory = synapse.register("mallory");
        let made = synapse.call(
            &synapse.bot,
            "POST",
            "/createRoom",
            Some(json!({"preset": "private_chat", "invite": [synapse.ana.user, synapse.mallory.user]})),
        );
        synapse.room = made["room_id"].as_str().unwrap().to_owned();
        for person in [&synapse.ana, &synapse.mallory] {
            synapse.call(
                person,
                "POST",
                &format!("/join/{}", encoded(&synapse.room)),
                Some(json!({})),
            );
        }
        synapse
    }

    fn register(&self, name: &str) -> Account {
        let body = json!({"username": name, "password": "a-test-password", "auth": {"type": "m.login.dummy"}});
        let (status, reply) = self.request("POST", "/_matrix/client/v3/register", "", Some(&body));
        assert_eq!(status, 200, "register {name}: {reply}");
        Account {
            user: reply["user_id"].as_str().unwrap().to_owned(),
            token: reply["access_token"].as_str().unwrap().to_owned(),
        }
    }

    /// Calls `path` (under `/_matrix/client/v3`) as `who`; a reply that is
    /// not a success fails the test.
    pub fn call(&self, who: &Account, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, reply) = self.request(
            method,
            &format!("/_matrix/client/v3{path}"),
            &who.token,
            body.as_ref(),
        );
        assert_eq!(status, 200, "{method} {path} as {}: {reply}", who.user);
        reply
    }

    /// One request; its status and JSON body.
    fn request(&self, method: &str, path: &str, token: &str, body: Option<&Value>) -> (u16, Value) {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream.set_read_timeout(Some(BOUND)).unwrap();
        let body = body.map(Value::to_string).unwrap_or_default();
        let authorization = match token {
            "" => String::new(),
            token => format!("Authorization: Bearer {token}\r\n"),
        };
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{authorization}Content-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.address,
            body.len()
        )
        .unwrap();
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).unwrap();
        let reply = String::from_utf8_lossy(&reply).into_owned();
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = match head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            true => unchunked(body),
            false => body.to_owned(),
        };
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// Sends `content` to the room as `who`; the event's id.
    pub fn send(&self, who: &Account, kind: &str, content: Value) -> String {
        static SENT: AtomicU64 = AtomicU64::new(0);
        let txn = format!("t{}", SENT.fetch_add(1, Ordering::Relaxed));
        let path = format!("/rooms/{}/send/{kind}/{txn}", encoded(&self.room));
        let sent = self.call(who, "PUT", &path, Some(content));
        sent["event_id"].as_str().unwrap().to_owned()
    }

    /// `who` reacts to `event` with `key`.
    pub fn react(&self, who: &Account, event: &str, key: &str) -> String {
        let content =
            json!({"m.relates_to": {"rel_type": "m.annotation", "event_id": event, "key": key}});
        self.send(who, "m.reaction", content)
    }

    /// `who` replies `text` to `event`, as clients do (without a quote).
    pub fn reply(&self, who: &Account, event: &str, text: &str) -> String {
        let content = json!({"msgtype": "m.text", "body": text,
                             "m.relates_to": {"m.in_reply_to": {"event_id": event}}});
        self.send(who, "m.room.message", content)
    }

    /// The first event of the room that `found` takes, read as `ana` reads
    /// the room; the test fails after a bound, saying `what`.
    pub fn wait_for<T>(&self, what: &str, found: impl Fn(&[Value]) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(found) = found(&self.seen.borrow().0) {
                return found;
            }
            assert!(
                start.elapsed() < BOUND,
                "the room never had {what}: {:#?}",
                self.seen.borrow().0
            );
            self.sync();
        }
    }

    /// Reads what reached the room since the last read, waiting a few
    /// seconds for something.
    fn sync(&self) {
        let since = self.seen.borrow().1.clone();
        let mut path = format!(
            "/sync?timeout=5000&filter={}",
            encoded(&json!({"room": {"timeline": {"limit": 100}}}).to_string())
        );
        if let Some(since) = since {
            path.push_str(&format!("&since={}", encoded(&since)));
        }
        let synced = self.call(&self.ana.clone(), "GET", &path, None);
        let events = synced["rooms"]["join"][&self.room]["timeline"]["events"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut seen = self.seen.borrow_mut();
        seen.0.extend(events);
        seen.1 = synced["next_batch"].as_str().map(str::to_owned);
    }

    /// The bot's question message whose body has `text` (not an edit).
    pub fn posted(&self, text: &str) -> Value {
        let bot = self.bot.user.clone();
        self.wait_for(&format!("a message of the bot's with {text:?}"), |events| {
            events
                .iter()
                .find(|e| {
                    e["sender"] == bot.as_str()
                        && e["content"]["msgtype"] == "m.text"
                        && e["content"]["m.relates_to"].is_null()
                        && e["content"]["body"]
                            .as_str()
                            .is_some_and(|b| b.contains(text))
                })
                .cloned()
        })
    }

    /// The last edit of `event` that says `text`: its new content.
    pub fn edited(&self, event: &str, text: &str) -> Value {
        self.wait_for(&format!("{event} edited to say {text:?}"), |events| {
            events
                .iter()
                .rev()
                .find(|e| {
                    e["content"]["m.relates_to"]["rel_type"] == "m.replace"
                        && e["content"]["m.relates_to"]["event_id"] == event
                        && e["content"]["m.new_content"]["body"]
                            .as_str()
                            .is_some_and(|b| b.contains(text))
                })
                .map(|e| e["content"]["m.new_content"].clone())
        })
    }

    /// What the bot told in reply to `event`.
    pub fn told(&self, event: &str) -> String {
        self.wait_for(&format!("the bot's notice to {event}"), |events| {
            events
                .iter()
                .find(|e| {
                    e["content"]["msgtype"] == "m.notice"
                        && e["content"]["m.relates_to"]["m.in_reply_to"]["event_id"] == event
                })
                .and_then(|e| e["content"]["body"].as_str().map(str::to_owned))
        })
    }

    /// Every event of the room read so far.
    pub fn events(&self) -> Vec<Value> {
        self.seen.borrow().0.clone()
    }
}

impl Drop for Synapse {
    /// Stops the homeserver: its database is the test's, thrown away.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chunked body, joined.
fn unchunked(mut body: &str) -> String {
    let mut joined = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        joined.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    joined
}

/// Everything but letters, digits and `-._~`: what is percent-encoded in
/// a path's segment or a query's value (a room id's `!` and `:`, and
/// anything that would leave the segment).
const RESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` as one segment of a path or a query's value.
fn encoded(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, RESERVED).to_string()
}
