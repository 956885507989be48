//! The team's inbox with real processes on a real PostgreSQL (the
//! throwaway cluster `scripts/test` starts, named in
//! `ASK_USER_TEST_POSTGRES`): two `inbox serve --database` on one database,
//! agents (`ask-user ask` with a team's inbox answerer) and people
//! (`inbox list/answer --url`, and the page in headless Chromium) with
//! tokens from `inbox token create`.

use ask_user_test_support::browser;
use ask_user_test_support::child;
use ask_user_test_support::fake_ntfy::FakeNtfy;
use ask_user_test_support::fake_telegram::{self, FakeTelegram};
use ask_user_test_support::http_thread;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long anything here may take on a loaded machine.
pub(crate) const BOUND: Duration = Duration::from_secs(60);

/// A wake-up through the database comes well within this: a waiter is
/// never woken by a timer of its own, so one that takes longer was woken by
/// something slower (a server's probe finding its listening connection
/// dead takes three times this).
const REREAD: Duration = Duration::from_secs(5);

pub(crate) fn ask_user() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
    command
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_CACHE_HOME", env!("CARGO_TARGET_TMPDIR"))
        .env_remove("ASK_USER_INBOX_TOKEN")
        .env_remove("ASK_USER_INBOX_DATABASE")
        .stdin(Stdio::null());
    command
}

/// Runs `command` to its end, at most [`BOUND`].
pub(crate) fn run(mut command: Command) -> Output {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child)
}

pub(crate) fn finish(child: Child) -> Output {
    finish_timed(child).0
}

/// As [`finish`], and when its end was seen (never before it ended, so a
/// time measured to it is never short).
fn finish_timed(child: Child) -> (Output, Instant) {
    let pid = child.id();
    let (tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let output = child.wait_with_output();
        let _ = tx.send((output, Instant::now()));
    });
    match done.recv_timeout(BOUND) {
        Ok((output, ended)) => (output.unwrap(), ended),
        Err(_) => {
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("a command did not finish within {BOUND:?}");
        }
    }
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `GET path` of `server`'s API as `token`: the whole reply.
fn api_get(server: &Server, token: &str, path: &str) -> String {
    api(server, token, &format!("GET {path}"), "")
}

/// `GET path` of the API at `url` (`http://HOST:PORT`) as `token` (none
/// when empty): the whole reply.
pub(crate) fn api_get_at(url: &str, token: &str, path: &str) -> String {
    request(
        url.trim_start_matches("http://"),
        token,
        &format!("GET {path}"),
        "",
    )
}

/// One request (`method_path`: `POST /api/…`) of `server`'s API as
/// `token`, with a JSON `body` unless empty: the whole reply.
fn api(server: &Server, token: &str, method_path: &str, body: &str) -> String {
    request(server.address(), token, method_path, body)
}

/// One request to `authority` as `token` (none when empty).
fn request(authority: &str, token: &str, method_path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let authorization = match token {
        "" => String::new(),
        token => format!("Authorization: Bearer {token}\r\n"),
    };
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream.set_read_timeout(Some(BOUND)).unwrap();
    write!(
        stream,
        "{method_path} HTTP/1.1\r\nHost: {authority}\r\n{authorization}\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
}

/// A team: its own database on the test cluster, and a folder for files.
pub(crate) struct Team {
    database: String,
    dir: tempfile::TempDir,
}

impl Team {
    pub(crate) fn new() -> Team {
        let admin = std::env::var("ASK_USER_TEST_POSTGRES").expect(
            "ASK_USER_TEST_POSTGRES names no PostgreSQL: run the tests with scripts/test, \
             which starts a throwaway cluster",
        );
        let name = format!("team_{}", std::process::id() as u128 * 1_000_000 + nanos());
        psql(&admin, &format!("CREATE DATABASE {name}"));
        let (base, _) = admin.rsplit_once('/').unwrap();
        Team {
            database: format!("{base}/{name}"),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// `inbox token create`: the token printed.
    pub(crate) fn token(&self, name: &str, role: &str, groups: &[&str]) -> String {
        let mut command = ask_user();
        command
            .args(["inbox", "token", "create", name, "--role", role])
            .args(["--database", &self.database]);
        if !groups.is_empty() {
            command.args(["--groups", &groups.join(",")]);
        }
        let output = run(command);
        assert!(output.status.success(), "{}", stderr(&output));
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    /// A server on any free port.
    pub(crate) fn serve(&self) -> Server {
        self.serve_at("127.0.0.1:0")
    }

    /// A server at `address`.
    fn serve_at(&self, address: &str) -> Server {
        self.serve_with(address, "")
    }

    /// A server at `address` with `config` as its config file.
    fn serve_with(&self, address: &str, config: &str) -> Server {
        let file = self.dir.path().join(format!("server-{}.toml", nanos()));
        std::fs::write(&file, config).unwrap();
        let mut child = ask_user()
            .args([
                "inbox",
                "serve",
                "--database",
                &self.database,
                "--listen",
                address,
            ])
            .arg("--config")
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let said = child::line_on_stderr(&mut child, "serves at", BOUND);
        let mut server = Server {
            child,
            url: String::new(),
        };
        let line = said.unwrap_or_else(|why| panic!("the server did not start: {why}"));
        server.url = line
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .expect("an address")
            .to_owned();
        server
    }

    /// `ask-user ask` with a team's inbox answerer on `server`, as
    /// `token`, for `audience`; asking `question` (Yes or No).
    fn agent(&self, server: &Server, token: &str, audience: &[&str], question: &str) -> Agent {
        let n = nanos();
        let config = self.dir.path().join(format!("agent-{n}.toml"));
        std::fs::write(
            &config,
            format!(
                "[[answerer]]\nkind = \"inbox\"\nurl = {:?}\ntoken_env = \"AGENT_TOKEN\"\n\
                 audience = {audience:?}\n",
                server.url
            ),
        )
        .unwrap();
        let arguments = self.dir.path().join(format!("ask-{n}.json"));
        let ask = json!({"questions": [{"id": "q", "question": question,
            "options": [{"label": "Yes"}, {"label": "No"}]}]});
        std::fs::write(&arguments, ask.to_string()).unwrap();
        let child = ask_user()
            .arg("ask")
            .arg(&arguments)
            .arg("--config")
            .arg(&config)
            .env("AGENT_TOKEN", token)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Agent(Some(child))
    }

    /// `inbox answer ID --url` as `token`, choosing `label`.
    pub(crate) fn answer(&self, server: &Server, token: &str, id: &str, label: &str) -> Output {
        run(self.answer_command(server, token, id, label))
    }

    fn answer_command(&self, server: &Server, token: &str, id: &str, label: &str) -> Command {
        let file = self.dir.path().join(format!("answers-{}.json", nanos()));
        let answers = json!({"answers": [{"id": "q", "selected": [label]}]});
        std::fs::write(&file, answers.to_string()).unwrap();
        let mut command = ask_user();
        command
            .args(["inbox", "answer", id, "--answers"])
            .arg(&file)
            .args(["--url", &server.url])
            .env("ASK_USER_INBOX_TOKEN", token);
        command
    }

    /// `inbox token revoke NAME`.
    pub(crate) fn revoke(&self, name: &str) {
        let mut revoke = ask_user();
        revoke.args([
            "inbox",
            "token",
            "revoke",
            name,
            "--database",
            &self.database,
        ]);
        let revoked = run(revoke);
        assert!(revoked.status.success(), "{}", stderr(&revoked));
    }

    /// `inbox list --json --url` as `token` (`--all` too when `all`).
    pub(crate) fn list(&self, server: &Server, token: &str, all: bool) -> Output {
        let mut command = ask_user();
        command
            .args(["inbox", "list", "--json", "--url", &server.url])
            .env("ASK_USER_INBOX_TOKEN", token);
        if all {
            command.arg("--all");
        }
        run(command)
    }

    /// Waits until `token` sees a question waiting; its id. The list is
    /// the servers' state, with no event to wait on from here: it is read
    /// again every 50 ms, for at most [`BOUND`].
    pub(crate) fn waiting(&self, server: &Server, token: &str) -> String {
        poll(|| {
            let output = self.list(server, token, false);
            assert!(output.status.success(), "{}", stderr(&output));
            let list: Value = serde_json::from_slice(&output.stdout).unwrap();
            match list["questions"][0]["id"].as_str() {
                Some(id) => Ok(id.to_owned()),
                None => Err(format!("no question came: {list}")),
            }
        })
    }
}

/// Reads a state of the servers', with no event to wait on from here,
/// again every 50 ms until `state` gives it, for at most [`BOUND`]; past
/// it, fails saying what `state` said last.
fn poll<T>(mut state: impl FnMut() -> Result<T, String>) -> T {
    let start = Instant::now();
    loop {
        match state() {
            Ok(value) => return value,
            Err(said) => assert!(start.elapsed() < BOUND, "{said}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn psql(url: &str, sql: &str) -> String {
    let mut command = Command::new("psql");
    command.args([
        url,
        "-X",
        "-q",
        "-t",
        "-A",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        sql,
    ]);
    let output = run(command);
    assert!(output.status.success(), "psql {sql}: {}", stderr(&output));
    String::from_utf8(output.stdout).unwrap()
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        % 1_000_000_000_000
}

/// An `inbox serve --database`; killed when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) url: String,
}

impl Server {
    /// `host:port`.
    fn address(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    pub(crate) fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An `ask-user ask`; killed when dropped.
impl Team {
    /// A team with two servers; the agent `ci-runner` asks "Deploy?"
    /// through the first and waits there, and the person `alice` (her token
    /// given) sees it through the second (its id given).
    fn agent_waiting() -> (Team, Server, Server, Agent, String, String) {
        let team = Team::new();
        let agent_token = team.token("ci-runner", "agent", &[]);
        let alice = team.token("alice", "person", &[]);
        let (a, b) = (team.serve(), team.serve());
        let agent = team.agent(&a, &agent_token, &[], "Deploy?");
        let id = team.waiting(&b, &alice);
        (team, a, b, agent, alice, id)
    }
}

struct Agent(Option<Child>);

impl Agent {
    /// Its output once it ended (at most [`BOUND`]), and when that was seen.
    fn finish_timed(mut self) -> (Output, Instant) {
        finish_timed(self.0.take().unwrap())
    }

    /// What it chose, from the tool result it printed.
    fn chose(self) -> Value {
        self.chose_timed().0
    }

    /// What it chose, and when its end was seen.
    fn chose_timed(self) -> (Value, Instant) {
        let (output, ended) = self.finish_timed();
        assert!(
            output.status.success(),
            "the agent failed: {}",
            stderr(&output)
        );
        let result: Value = serde_json::from_slice(&output.stdout).unwrap();
        (
            result["structuredContent"]["answers"][0]["selected"].clone(),
            ended,
        )
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

#[test]
fn an_agent_on_one_server_is_answered_through_another_at_once() {
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let alice = team.token("alice", "person", &["ops"]);
    let (a, b) = (team.serve(), team.serve());
    let agent = team.agent(&a, &agent_token, &[], "Deploy?");
    let id = team.waiting(&b, &alice);
    assert!(id.starts_with('q') && id.len() == 33, "a random id: {id}");
    let answered = team.answer(&b, &alice, &id, "Yes");
    assert!(answered.status.success(), "{}", stderr(&answered));
    let answered_at = Instant::now();
    let (chose, ended) = agent.chose_timed();
    // Woken through the database, not by its slow re-read.
    let took = ended.saturating_duration_since(answered_at);
    assert!(
        took < REREAD / 2,
        "the agent woke {took:?} after the answer"
    );
    assert_eq!(chose, json!(["Yes"]));
    let listed = team.list(&a, &alice, true);
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let question = &list["questions"][0];
    assert_eq!(question["answeredBy"], "alice", "{list}");
    assert_eq!(question["state"], "answered");
}

#[test]
fn only_the_audience_answers_and_an_agent_token_answers_nothing() {
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let alice = team.token("alice", "person", &["ops"]);
    let bob = team.token("bob", "person", &["dev"]);
    let (a, b) = (team.serve(), team.serve());
    let agent = team.agent(&a, &agent_token, &["ops"], "Restart the database?");
    let id = team.waiting(&a, &alice);
    // Bob is outside the audience: he does not see it, and may not answer.
    let bobs: Value = serde_json::from_slice(&team.list(&b, &bob, false).stdout).unwrap();
    assert_eq!(bobs["questions"], json!([]), "{bobs}");
    // He is told what he is told of a question that does not exist, with
    // a fitting answer or not: nothing of its options, nor that it waits.
    let unknown = "q0123456789abcdef0123456789abcdef";
    let nothing = stderr(&team.answer(&b, &bob, unknown, "Yes")).replace(unknown, "ID");
    assert!(nothing.contains("404"), "{nothing}");
    for label in ["Yes", "Maybe"] {
        let refused = stderr(&team.answer(&b, &bob, &id, label)).replace(&id, "ID");
        assert_eq!(refused, nothing, "answering {label:?}");
    }
    // An agent's token neither answers nor lists.
    let refused = team.answer(&a, &agent_token, &id, "Yes");
    assert!(stderr(&refused).contains("403"), "{}", stderr(&refused));
    let refused = team.list(&a, &agent_token, false);
    assert!(stderr(&refused).contains("403"), "{}", stderr(&refused));
    // A listing past its bound is a bad request (it was "the store failed").
    let reply = api_get(
        &a,
        &alice,
        "/api/questions?all=true&limit=18446744073709551615",
    );
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    // Every refusal of the API is one JSON body: a code for programs, a
    // message for people.
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    let refusal: Value = serde_json::from_str(body).unwrap();
    assert_eq!(refusal["error"]["code"], "bad_request", "{refusal}");
    let message = refusal["error"]["message"].as_str().unwrap();
    assert!(message.contains("at most 10000"), "{message}");
    // It still waits, and Alice answers it.
    assert_eq!(team.waiting(&b, &alice), id);
    let answered = team.answer(&b, &alice, &id, "No");
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(agent.chose(), json!(["No"]));
}

/// An agent's token revoked while it long-polls one server: the answer a
/// person gives afterwards through another never reaches it (the wait
/// ends, refused, as every request of that token is).
#[test]
fn a_revoked_agents_open_wait_gets_no_answer_given_after_it() {
    let (team, _a, b, agent, alice, id) = Team::agent_waiting();
    team.revoke("ci-runner");
    // Answered after the revocation (or refused, if the question went).
    let _ = team.answer(&b, &alice, &id, "Yes");
    let (output, _) = agent.finish_timed();
    let printed = String::from_utf8_lossy(&output.stdout);
    let result: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not a result ({e}): {printed} {}", stderr(&output)));
    assert_eq!(result["isError"], true, "{result}");
    assert!(printed.contains("revoked"), "{result}");
    assert!(!printed.contains("Yes"), "the answer reached it: {result}");
}

/// A server with a short retention spares a question whose agent waits
/// on another server: presence is shared in the database.
#[test]
fn a_question_whose_agent_waits_on_another_server_never_expires() {
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let alice = team.token("alice", "person", &[]);
    let sweeping = team.serve_with("127.0.0.1:0", "[inbox]\nretention = \"1s\"\n");
    let b = team.serve();
    let agent = team.agent(&b, &agent_token, &[], "Deploy?");
    let id = team.waiting(&b, &alice);
    // Its agent last seen past the period, by the database's clock (read
    // every 50 ms: no event says so)...
    let age = format!(
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - agent_seen_at > 1500 \
         FROM questions WHERE id = '{id}'"
    );
    poll(|| match psql(&team.database, &age).trim() {
        "t" => Ok(()),
        _ => Err("the question never aged past the period".to_owned()),
    });
    // ...then a witness whose agent is long gone: once the first server
    // expired it, a sweep ran that would have expired the question too.
    let ask = json!({"session": "witness", "agent": "gone", "request": {"questions": [
        {"id": "q", "question": "Witness?", "options": [{"label": "Yes"}]}]}});
    let asked = api(&b, &agent_token, "POST /api/questions", &ask.to_string());
    assert!(asked.starts_with("HTTP/1.1 200"), "{asked}");
    psql(
        &team.database,
        "UPDATE questions SET agent_seen_at = agent_seen_at - 600000 WHERE session = 'witness'",
    );
    poll(|| {
        let listed: Value =
            serde_json::from_slice(&team.list(&sweeping, &alice, true).stdout).unwrap();
        let expired = listed["questions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|q| q["session"] == "witness" && q["state"] == "expired");
        match expired {
            true => Ok(()),
            false => Err(format!("the witness never expired: {listed}")),
        }
    });
    let listed: Value =
        serde_json::from_slice(&team.list(&sweeping, &alice, false).stdout).unwrap();
    assert_eq!(listed["questions"][0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed["questions"][0]["agentWaiting"], true, "{listed}");
    let answered = team.answer(&sweeping, &alice, &id, "Yes");
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(agent.chose(), json!(["Yes"]));
}

/// A person long-polling a question is not its agent: their wait neither
/// counts as its agent being seen (which would keep a question whose agent
/// is gone from expiring) nor shows it as waited for.
#[test]
fn a_persons_wait_does_not_count_as_its_agent_being_there() {
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let alice = team.token("alice", "person", &[]);
    let server = team.serve();
    // Asked by an agent that never waits for it.
    let ask = json!({"session": "s1", "agent": "gone", "request": {"questions": [
        {"id": "q", "question": "Deploy?", "options": [{"label": "Yes"}]}]}});
    let asked = api(
        &server,
        &agent_token,
        "POST /api/questions",
        &ask.to_string(),
    );
    assert!(asked.starts_with("HTTP/1.1 200"), "{asked}");
    let id = team.waiting(&server, &alice);
    let seen = || {
        psql(
            &team.database,
            &format!("SELECT agent_seen_at FROM questions WHERE id = '{id}'"),
        )
    };
    let before = seen();
    let polled = api_get(&server, &alice, &format!("/api/questions/{id}?wait=0.3"));
    assert!(polled.starts_with("HTTP/1.1 200"), "{polled}");
    let view: Value = serde_json::from_str(polled.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(view["state"], "waiting", "{view}");
    // An agent's wait is written as it leaves, just after its reply: a
    // second wait gives that time (it never fails a correct server).
    let _ = api_get(&server, &alice, &format!("/api/questions/{id}?wait=0.3"));
    assert_eq!(seen(), before, "a person's wait was written as the agent's");
}

#[test]
fn a_revoked_token_is_refused_on_every_server_at_once() {
    let team = Team::new();
    let bob = team.token("bob", "person", &[]);
    let (a, b) = (team.serve(), team.serve());
    for server in [&a, &b] {
        assert!(team.list(server, &bob, false).status.success());
    }
    team.revoke("bob");
    for server in [&a, &b] {
        let refused = team.list(server, &bob, false);
        assert!(stderr(&refused).contains("401"), "{}", stderr(&refused));
    }
    let mut list = ask_user();
    list.args(["inbox", "token", "list", "--database", &team.database]);
    let listed = run(list);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        text.contains("bob  person") && text.contains("(revoked)"),
        "{text}"
    );
    assert!(
        !text.contains("askusr_"),
        "no token is ever shown again: {text}"
    );
}

#[test]
fn a_server_killed_while_its_agent_waits_loses_nothing() {
    let (team, mut a, b, agent, alice, id) = Team::agent_waiting();
    let address = a.address().to_owned();
    a.kill9();
    let answered = team.answer(&b, &alice, &id, "Yes");
    assert!(answered.status.success(), "{}", stderr(&answered));
    // The agent tries again until its server is back.
    let _a = team.serve_at(&address);
    assert_eq!(agent.chose(), json!(["Yes"]));
}

#[test]
fn a_lost_listening_connection_still_wakes_its_waiters() {
    let (team, _a, b, agent, alice, id) = Team::agent_waiting();
    // Every server's listening connection, ended from SQL.
    let ended = psql(
        &team.database,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
    );
    assert_eq!(ended.trim(), "2", "two servers, one listener each");
    let answered = team.answer(&b, &alice, &id, "No");
    assert!(answered.status.success(), "{}", stderr(&answered));
    let answered_at = Instant::now();
    let (chose, ended) = agent.chose_timed();
    let took = ended.saturating_duration_since(answered_at);
    assert!(took < REREAD, "the agent woke {took:?} after the answer");
    assert_eq!(chose, json!(["No"]));
}

#[test]
fn a_listening_connection_that_hears_nothing_is_found_and_made_again() {
    let (team, _a, b, agent, alice, id) = Team::agent_waiting();
    // Every server's listening connection stays open and hears nothing (its
    // backend stopped, as one behind a dead network would be): no error,
    // no end of the connection, only silence.
    let listening = "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity \
                     WHERE datname = current_database() AND query ILIKE 'LISTEN%'";
    let stopped: Vec<libc::pid_t> = psql(&team.database, listening)
        .split_whitespace()
        .map(|pid| pid.parse().unwrap())
        .collect();
    assert_eq!(stopped.len(), 2, "two servers, one listener each");
    struct Resume(Vec<libc::pid_t>);
    impl Drop for Resume {
        fn drop(&mut self) {
            for &pid in &self.0 {
                // SAFETY: a signal to a process of this test's cluster.
                unsafe { libc::kill(pid, libc::SIGCONT) };
            }
        }
    }
    let _resume = Resume(stopped.clone());
    for &pid in &stopped {
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0, "stop {pid}");
    }
    let answered = team.answer(&b, &alice, &id, "No");
    assert!(answered.status.success(), "{}", stderr(&answered));
    // Each server finds its probes unheard and listens anew (within BOUND;
    // it takes about 15 s), and server a's agent hears the answer.
    poll(|| {
        let now = psql(&team.database, listening);
        let anew = now
            .split_whitespace()
            .filter(|pid| !stopped.contains(&pid.parse().unwrap()))
            .count();
        match anew {
            2 => Ok(()),
            _ => Err(format!("listening anew: {anew} of 2 servers")),
        }
    });
    assert_eq!(agent.chose(), json!(["No"]));
}

#[test]
fn of_fifty_answers_from_two_servers_exactly_one_wins() {
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let people: Vec<String> = (0..5)
        .map(|n| team.token(&format!("p{n}"), "person", &[]))
        .collect();
    let (a, b) = (team.serve(), team.serve());
    let agent = team.agent(&a, &agent_token, &[], "Deploy?");
    let id = team.waiting(&a, &people[0]);
    let answers: Vec<Child> = (0..50)
        .map(|n| {
            let server = if n % 2 == 0 { &a } else { &b };
            let label = if n % 3 == 0 { "Yes" } else { "No" };
            let mut command = team.answer_command(server, &people[n % 5], &id, label);
            command
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outcomes: Vec<Output> = answers.into_iter().map(finish).collect();
    let won = outcomes.iter().filter(|o| o.status.success()).count();
    assert_eq!(won, 1, "exactly one answer counts");
    for lost in outcomes.iter().filter(|o| !o.status.success()) {
        assert!(stderr(lost).contains("409"), "{}", stderr(lost));
    }
    let chose = agent.chose();
    assert!(chose == json!(["Yes"]) || chose == json!(["No"]), "{chose}");
}

/// Nothing is kept on this machine: the database is the inbox.
#[test]
fn a_team_server_keeps_nothing_in_a_state_folder() {
    let team = Team::new();
    let state = team.dir.path().join("state");
    let mut child = ask_user()
        .args(["inbox", "serve", "--database", &team.database])
        .env("ASK_USER_STATE_DIR", &state)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let said = child::line_on_stderr(&mut child, "serves at", BOUND);
    let _server = Server {
        child,
        url: String::new(),
    };
    said.unwrap_or_else(|why| panic!("the server did not start: {why}"));
    assert!(!Path::new(&state).exists(), "no state folder was made");
}

/// A webhook of the test's own: every request's path and JSON body.
fn webhook() -> (String, std::sync::mpsc::Receiver<(String, Value)>) {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    let (tx, hooks) = std::sync::mpsc::channel();
    let tx = std::sync::Arc::new(std::sync::Mutex::new(tx));
    let address = http_thread::serve(move |request: hyper::Request<hyper::body::Incoming>, _| {
        let tx = tx.clone();
        async move {
            let path = request.uri().path().to_owned();
            let body = request.into_body().collect().await?.to_bytes();
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let _ = tx.lock().unwrap().send((path, body));
            Ok::<_, hyper::Error>(hyper::Response::new(Full::new(Bytes::new())))
        }
    });
    (format!("http://{address}"), hooks)
}

/// Two servers notify of a question once, whichever takes the work; a
/// question still waiting past `[inbox.escalate] after` goes to the
/// escalation's channel, once; and the link is the public address.
#[test]
fn two_servers_notify_of_a_question_once_and_escalate_it_once() {
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let alice = team.token("alice", "person", &[]);
    let (url, hooks) = webhook();
    let config = format!(
        "[inbox]\npublic_url = \"https://inbox.example.com\"\n\n\
         [inbox.notify]\nwebhook = \"{url}/first\"\n\n\
         [inbox.escalate]\nafter = \"2s\"\nwebhook = \"{url}/second\"\n"
    );
    let a = team.serve_with("127.0.0.1:0", &config);
    let _b = team.serve_with("127.0.0.1:0", &config);
    let first = team.agent(&a, &agent_token, &[], "Deploy?");
    let first_id = team.waiting(&a, &alice);
    // The escalation of the first is the last notice due: once it is here,
    // every notice before it was sent, by one server or the other.
    let mut seen: Vec<(String, String)> = Vec::new();
    let start = Instant::now();
    while !seen.iter().any(|(path, _)| path == "/second") {
        let left = BOUND
            .checked_sub(start.elapsed())
            .expect("no escalation came");
        let (path, body) = hooks.recv_timeout(left).expect("no escalation came");
        assert_eq!(body["url"], "https://inbox.example.com", "{body}");
        seen.push((path, body["id"].as_str().unwrap_or_default().to_owned()));
    }
    let answered = team.answer(&a, &alice, &first_id, "Yes");
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(first.chose(), json!(["Yes"]));
    // A second question's first notice is due after all of the above: a
    // notice sent twice would have come before it.
    let _second = team.agent(&a, &agent_token, &[], "Roll back?");
    loop {
        let (path, body) = hooks.recv_timeout(BOUND).expect("no notice of the second");
        let id = body["id"].as_str().unwrap_or_default().to_owned();
        let done = path == "/first" && id != first_id;
        seen.push((path, id));
        if done {
            break;
        }
    }
    let of_first: Vec<&str> = seen
        .iter()
        .filter(|(_, id)| *id == first_id)
        .map(|(path, _)| path.as_str())
        .collect();
    assert_eq!(of_first, ["/first", "/second"], "{seen:?}");
}

/// `[inbox] notify_after` on a team's servers: a question answered within
/// it gets no notice from any server; one still waiting then gets one.
#[test]
fn a_teams_question_answered_within_notify_after_gets_no_notice() {
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let alice = team.token("alice", "person", &[]);
    let (url, hooks) = webhook();
    let config =
        format!("[inbox]\nnotify_after = \"2s\"\n\n[inbox.notify]\nwebhook = \"{url}/first\"\n");
    let a = team.serve_with("127.0.0.1:0", &config);
    let _b = team.serve_with("127.0.0.1:0", &config);
    let quick = team.agent(&a, &agent_token, &[], "Quick one?");
    let quick_id = team.waiting(&a, &alice);
    let answered = team.answer(&a, &alice, &quick_id, "Yes");
    assert!(answered.status.success(), "{}", stderr(&answered));
    assert_eq!(quick.chose(), json!(["Yes"]));
    let slow_asked = Instant::now();
    let _slow = team.agent(&a, &agent_token, &[], "Slow one?");
    // The quick one's notice was due first: the first that comes is the
    // slow one's, once it has waited.
    let (path, body) = hooks
        .recv_timeout(BOUND)
        .expect("no notice of the slow one");
    assert_eq!(path, "/first");
    assert_ne!(body["id"], quick_id, "{body}");
    assert!(
        slow_asked.elapsed() >= Duration::from_secs(2),
        "told only once it had waited notify_after"
    );
}

/// A notification channel that is slow to answer holds up no other
/// notice: three questions' notices are all under way at once (they went
/// one at a time, each waiting out the slow channel, while their claims ran
/// out and another server could send them again).
#[test]
fn a_slow_channel_holds_up_no_other_notice() {
    use std::io::{BufRead, BufReader, Read, Write};
    const QUESTIONS: usize = 3;
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    // A channel that answers nothing until all three notices are in; then
    // it tells how many of their senders still wait for the answer (one
    // that waits for each before the next has given the first up by then).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let (tx, still_waiting) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = n.trim().parse().unwrap_or(0);
                }
            }
            let _ = reader.read_exact(&mut vec![0; length]);
            held.push(reader.into_inner());
            if held.len() == QUESTIONS {
                let open = held
                    .iter()
                    .filter(|&stream| {
                        stream.set_nonblocking(true).unwrap();
                        match (&*stream).read(&mut [0]) {
                            Ok(0) => false,
                            Ok(_) => true,
                            Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
                        }
                    })
                    .count();
                for stream in &mut held {
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                }
                let _ = tx.send(open);
                break;
            }
        }
    });
    let config = format!("[inbox.notify]\nwebhook = \"http://{address}/slow\"\n");
    let server = team.serve_with("127.0.0.1:0", &config);
    let _agents: Vec<Agent> = (0..QUESTIONS)
        .map(|n| team.agent(&server, &agent_token, &[], &format!("Question {n}?")))
        .collect();
    let open = still_waiting
        .recv_timeout(BOUND)
        .expect("the three notices never came");
    assert_eq!(open, QUESTIONS, "notices went one at a time");
}

/// Waits (at most [`browser::WAIT`]) until the page's element `css` holds
/// `text`; its whole text.
async fn page_says(browser: &browser::Browser, css: &str, text: &str) -> String {
    let found = browser
        .client
        .wait()
        .at_most(browser::WAIT)
        .for_element(fantoccini::Locator::XPath(&format!(
            "//*[@id='{}' or contains(concat(' ', @class, ' '), ' {}')][contains(., {text:?})]",
            css.trim_start_matches(['#', '.']),
            css.trim_start_matches(['#', '.']),
        )))
        .await;
    match found {
        Ok(element) => element.text().await.unwrap(),
        Err(error) => {
            let shown = browser.client.source().await.unwrap_or_default();
            panic!("the page never said {text:?} in {css}: {error}\n{shown}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_on_one_servers_page_and_answers_an_agent_on_another() {
    let _one = browser::BROWSER.lock().await;
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let alice = team.token("alice", "person", &["ops"]);
    let bob = team.token("bob", "person", &["dev"]);
    let (a, b) = (team.serve(), team.serve());
    let browser = browser::Browser::start().await;
    // The page asks for a person's token, and refuses an agent's.
    browser.client.goto(&b.url).await.unwrap();
    let field = browser.wait_for("#token").await;
    field.send_keys(&agent_token).await.unwrap();
    browser.click("#signin button").await;
    page_says(&browser, "#notice", "an agent's").await;
    let field = browser.wait_for("#token").await;
    field.clear().await.unwrap();
    field.send_keys(&alice).await.unwrap();
    browser.click("#signin button").await;
    page_says(&browser, "#person", "Signed in as alice").await;
    let cookies = browser.client.get_all_cookies().await.unwrap();
    let session = cookies
        .iter()
        .find(|c| c.name() == "ask-user-session")
        .expect("a session cookie");
    assert_eq!(session.http_only(), Some(true));
    assert_ne!(
        session.value(),
        alice,
        "the browser keeps a session, not the token"
    );
    // Asked through server A while the page is open on B: Bob's question
    // first (the page hears the announcements in order, so once Alice's
    // shows, Bob's was passed over), then hers.
    let bobs = team.agent(&a, &agent_token, &["dev"], "Merge the feature branch?");
    let bobs_id = team.waiting(&a, &bob);
    let hers = team.agent(&a, &agent_token, &["ops"], "Restart the database?");
    let card = browser.wait_for("form.batch").await;
    let text = card.text().await.unwrap();
    assert!(
        text.contains("Restart the database?") && text.contains("for ops"),
        "{text}"
    );
    assert_eq!(
        browser.count("form.batch").await,
        1,
        "Bob's is not Alice's to see"
    );
    browser.click("form.batch input[value='Yes']").await;
    browser.click("form.batch button.send").await;
    page_says(&browser, ".ended", "Answers sent").await;
    assert_eq!(hers.chose(), json!(["Yes"]));
    let listed = team.list(&b, &alice, true);
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(list["questions"][0]["answeredBy"], "alice", "{list}");
    // Bob answers his own through server A; Alice's page never hears of it.
    assert!(team.answer(&a, &bob, &bobs_id, "No").status.success());
    assert_eq!(bobs.chose(), json!(["No"]));
    // A question for everyone, answered by Bob elsewhere: her page says by whom.
    let everyone = team.agent(&a, &agent_token, &[], "Ship it?");
    browser.wait_for("form.batch").await;
    let id = team.waiting(&a, &bob);
    assert!(team.answer(&a, &bob, &id, "Yes").status.success());
    assert_eq!(everyone.chose(), json!(["Yes"]));
    page_says(&browser, ".ended", "Answered by bob").await;
    // Another token revoked: every page is admitted again (it reconnects),
    // and what Alice had chosen and typed in a waiting card stays.
    let waiting = team.agent(&a, &agent_token, &["ops"], "Rotate the keys?");
    browser.wait_for("form.batch").await;
    browser.click("form.batch input[value='No']").await;
    let own = browser.wait_for("form.batch textarea").await;
    own.send_keys("not before Friday").await.unwrap();
    team.revoke("bob");
    browser
        .client
        .wait()
        .at_most(browser::WAIT)
        .for_element(fantoccini::Locator::Css(
            "html[data-connections='2'] form.batch",
        ))
        .await
        .expect("the page reconnected");
    let own = browser.wait_for("form.batch textarea").await;
    assert_eq!(
        own.prop("value").await.unwrap().as_deref(),
        Some("not before Friday")
    );
    let no = browser.wait_for("form.batch input[value='No']").await;
    assert_eq!(no.prop("checked").await.unwrap().as_deref(), Some("true"));
    drop(waiting);
    // Revoking her token closes her page at once, on every server.
    team.revoke("alice");
    page_says(&browser, "#status", "Signed out").await;
    browser.close().await;
}

/// Bob, in Telegram: the person `bob` of the team, in `hr`.
const BOB: fake_telegram::Person = fake_telegram::Person {
    id: 4242,
    username: "bob",
};

/// The channel `[inbox.channels.telegram]` of a team's server, on `telegram`,
/// its token in a file of `team`'s: Ana is the person `alice`, Bob `bob`,
/// Mallory may press but is nobody of the team, and the chat shows the
/// questions for anyone and for `ops`.
fn telegram_config(team: &Team, telegram: &FakeTelegram) -> String {
    use std::os::unix::fs::PermissionsExt;
    let token = team.dir.path().join("telegram-token");
    std::fs::write(&token, fake_telegram::TOKEN).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    format!(
        "[inbox.channels.telegram]\ntoken_file = {:?}\nchat = {}\nallow = [{}, {}, {}]\n\
         api_url = {:?}\ngroups = [\"ops\"]\n\
         people = {{ \"{}\" = \"alice\", \"{}\" = \"bob\" }}\n",
        token.display().to_string(),
        fake_telegram::CHAT,
        fake_telegram::ANA.id,
        fake_telegram::MALLORY.id,
        BOB.id,
        telegram.url,
        fake_telegram::ANA.id,
        BOB.id,
    )
}

#[test]
fn a_telegram_channel_runs_on_one_server_at_a_time_and_answers_as_a_person_of_the_team() {
    use fake_telegram::{ANA, MALLORY};
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let alice = team.token("alice", "person", &["ops"]);
    let bob = team.token("bob", "person", &["hr"]);
    let telegram = FakeTelegram::start();
    let config = telegram_config(&team, &telegram);
    let mut a = team.serve_with("127.0.0.1:0", &config);
    // The first server takes the bot's updates before the second starts.
    telegram.wait_for("the first server polling", |_| {
        (!telegram.calls("getUpdates").is_empty()).then_some(())
    });
    let b = team.serve_with("127.0.0.1:0", &config);

    // A question for hr never reaches the chat, which shows anyone's and
    // ops's.
    let _hr = team.agent(&b, &agent_token, &["hr"], "Raise?");
    team.waiting(&b, &bob);
    let agent = team.agent(&b, &agent_token, &["ops"], "Deploy?");
    let message = telegram.message("Deploy?", |m| !m.buttons.is_empty());
    // Allowed in the chat, but no person of the team: refused.
    let refused = telegram.press(MALLORY, message.message_id, &message.button("Yes"));
    let told = telegram.told(&refused);
    assert!(
        told["text"]
            .as_str()
            .unwrap()
            .contains("not one of this team's people"),
        "{told}"
    );
    // Bob is a person of the team, but not in the question's audience.
    let outside = telegram.press(BOB, message.message_id, &message.button("No"));
    assert_eq!(
        telegram.told(&outside)["text"],
        "Not answered: this question is for another group of the team."
    );
    let pressed = telegram.press(ANA, message.message_id, &message.button("Yes"));
    assert_eq!(telegram.told(&pressed)["text"], "Answered.");
    assert_eq!(agent.chose(), json!(["Yes"]));
    telegram.message("Answered in Telegram by alice", |m| {
        m.message_id == message.message_id && m.buttons.is_empty()
    });
    assert_eq!(telegram.conflicts(), 0, "one consumer of the bot's updates");
    let posted: Vec<String> = telegram
        .calls("sendMessage")
        .iter()
        .filter_map(|call| call.body["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        posted
            .iter()
            .filter(|text| text.contains("Deploy?"))
            .count(),
        1,
        "posted once by the two servers: {posted:#?}"
    );
    assert!(
        !posted.iter().any(|text| text.contains("Raise?")),
        "{posted:#?}"
    );

    // The server running the channel dies: the other takes it over.
    a.kill9();
    let agent = team.agent(&b, &agent_token, &[], "Roll back?");
    let message = telegram.message("Roll back?", |m| !m.buttons.is_empty());
    let pressed = telegram.press(ANA, message.message_id, &message.button("No"));
    assert_eq!(telegram.told(&pressed)["text"], "Answered.");
    assert_eq!(agent.chose(), json!(["No"]));
    let listed = team.list(&b, &alice, true);
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let answered: Vec<&Value> = list["questions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["settledBy"] == "telegram")
        .collect();
    assert_eq!(answered.len(), 2, "{list}");
    assert!(
        answered.iter().all(|q| q["answeredBy"] == "alice"),
        "{list}"
    );
}

/// A team's ntfy topic is its person's: whoever reads the topic sees what
/// reaches it, so a question for a group Alice is not in never does, while
/// hers does, and her tap answers it as hers.
#[test]
fn a_teams_ntfy_topic_gets_only_what_its_person_may_answer() {
    const TOPIC: &str = "ask-team-3k9x";
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    team.token("alice", "person", &["dev"]);
    let sam = team.token("sam", "person", &["secops"]);
    let ntfy = FakeNtfy::start();
    let server = team.serve_with(
        "127.0.0.1:0",
        &format!(
            "[inbox.channels.ntfy]\ntopic = \"{}/{TOPIC}\"\nperson = \"alice\"\n",
            ntfy.url
        ),
    );
    let _secops = team.agent(&server, &agent_token, &["secops"], "Rotate the keys?");
    team.waiting(&server, &sam);
    let dev = team.agent(&server, &agent_token, &["dev"], "Deploy?");
    // Posted in the order asked: the first was passed over by then.
    let message = ntfy.message(TOPIC, "Deploy?");
    let leaked: Vec<String> = ntfy
        .messages(TOPIC)
        .into_iter()
        .map(|m| m.message)
        .filter(|text| text.contains("Rotate the keys?"))
        .collect();
    assert!(leaked.is_empty(), "{leaked:?}");
    ntfy.tap(&message, "Yes");
    assert_eq!(dev.chose(), json!(["Yes"]));
}

/// What stays on one machine is one user's: a team's server with a desktop
/// notification, or one user's agents' endpoint, is refused at start,
/// saying why.
#[test]
fn a_teams_server_refuses_what_is_one_users() {
    let team = Team::new();
    for (config, why) in [
        (
            "[inbox.notify]\ndesktop = true\n",
            "desktop notifications stay on one machine",
        ),
        (
            "[inbox]\nagents = \"127.0.0.1:0\"\n",
            "agents is one user's inbox's",
        ),
    ] {
        let file = team.dir.path().join(format!("refused-{}.toml", nanos()));
        std::fs::write(&file, config).unwrap();
        let mut command = ask_user();
        command
            .args([
                "inbox",
                "serve",
                "--database",
                &team.database,
                "--listen",
                "127.0.0.1:0",
            ])
            .arg("--config")
            .arg(&file);
        let output = run(command);
        assert!(!output.status.success(), "{config}");
        let said = stderr(&output);
        assert!(said.contains(why), "{config}: {said}");
    }
}

/// A team's Matrix room, on a real homeserver: Ana answers as the person
/// `alice`, Mallory may write in the room but is nobody of the team, and
/// the room shows the questions for anyone and for `ops` only.
#[test]
fn a_teams_matrix_room_answers_as_a_person_of_the_team() {
    use ask_user_test_support::synapse::Synapse;
    use std::os::unix::fs::PermissionsExt;
    let synapse = Synapse::start();
    let team = Team::new();
    let agent_token = team.token("ci-runner", "agent", &[]);
    let alice = team.token("alice", "person", &["ops"]);
    let token = team.dir.path().join("matrix-token");
    std::fs::write(&token, &synapse.bot.token).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = format!(
        "[inbox.channels.matrix]\nhomeserver = {:?}\nroom = {:?}\naccess_token_file = {:?}\n\
         allow = [{:?}, {:?}]\ngroups = [\"ops\"]\npeople = {{ {:?} = \"alice\" }}\n",
        synapse.url,
        synapse.room,
        token.display().to_string(),
        synapse.ana.user,
        synapse.mallory.user,
        synapse.ana.user,
    );
    let server = team.serve_with("127.0.0.1:0", &config);
    let _hr = team.agent(&server, &agent_token, &["hr"], "Raise?");
    let agent = team.agent(&server, &agent_token, &["ops"], "Deploy?");
    let message = synapse.posted("Deploy?");
    let event = message["event_id"].as_str().unwrap();
    let refused = synapse.react(&synapse.mallory, event, "2\u{fe0f}\u{20e3}");
    assert!(
        synapse
            .told(&refused)
            .contains("not one of this team's people"),
        "{}",
        synapse.told(&refused)
    );
    let chosen = synapse.react(&synapse.ana, event, "1\u{fe0f}\u{20e3}");
    assert_eq!(synapse.told(&chosen), "Answered.");
    assert_eq!(agent.chose(), json!(["Yes"]));
    synapse.edited(event, "Answered in Matrix by alice");
    let bot = synapse.bot.user.as_str();
    assert!(
        !synapse.events().iter().any(|e| e["sender"] == bot
            && e["content"]["body"]
                .as_str()
                .is_some_and(|body| body.contains("Raise?"))),
        "a question for hr never reaches a room for ops"
    );
    let listed = team.list(&server, &alice, true);
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let deploy = list["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["questions"][0]["question"] == "Deploy?")
        .cloned()
        .unwrap_or_default();
    assert_eq!(deploy["settledBy"], "matrix", "{list}");
    assert_eq!(deploy["answeredBy"], "alice", "{list}");
}
