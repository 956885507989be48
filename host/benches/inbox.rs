//! The inbox with a thousand agents long-polling at once: one user's (SQLite,
//! one server) and a team's (PostgreSQL, two servers on one database, the
//! agents split between them and every answer given through the other).
//! Printed for each: every server process's resident memory, idle and with
//! every agent waiting; the time from a person sending an answer (`inbox
//! answer`'s request) to its agent's wait returning (median and p99; goal:
//! p99 under 100 ms); and the asks one server takes per second. Figures, not
//! a timed test.
//!
//! `scripts/postgres cargo bench -p ask-user --bench inbox` (a throwaway
//! PostgreSQL for the run, named in `ASK_USER_TEST_POSTGRES`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ask_user::inbox::{AskBody, InboxClient};
use ask_user::{Answer, AskRequest, Question, QuestionOption};

/// Agents waiting at once.
const AGENTS: usize = 1000;
/// Answers whose wake-up is timed.
const ANSWERED: usize = 200;
/// Asks for the rate, and how many are in flight at once.
const ASKS: usize = 2000;
const IN_FLIGHT: usize = 16;
/// The wake-up goal.
const GOAL_P99: Duration = Duration::from_millis(100);

/// A server process, and where it serves.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts `ask-user` with `args` and `env`; ready once its standard
    /// error has a line holding `ready` (the one with its address).
    fn start(args: &[&str], env: &[(&str, &str)], ready: &str) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ask-user"));
        command
            .args(args)
            .envs(env.iter().copied())
            .env("XDG_CONFIG_HOME", "/nonexistent")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("ask-user starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let line = loop {
            let line = lines
                .next()
                .expect("the server said nothing")
                .expect("its standard error");
            if line.contains(ready) {
                break line;
            }
        };
        // The rest drained, so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let url = line
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap_or_default()
            .to_owned();
        Server { child, url }
    }

    /// Its resident memory, in MiB.
    fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: f64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        kib / 1024.0
    }
}

fn ask_body(n: usize) -> AskBody {
    let mut question = Question::new("q", format!("Deploy build {n}?"));
    question.options = Some(vec![QuestionOption::new("Yes"), QuestionOption::new("No")]);
    AskBody {
        session: format!("bench-{n}-{}", std::process::id()),
        agent: "bench".into(),
        cwd: None,
        request: AskRequest {
            questions: vec![question],
        },
        audience: Vec::new(),
    }
}

fn yes() -> Vec<Answer> {
    vec![Answer {
        id: "q".into(),
        selected: vec!["Yes".into()],
        custom: None,
    }]
}

/// The median and the 99th percentile.
fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    (at(0.5), at(0.99))
}

/// A thousand agents ask through `agents` (one client per server, taken in
/// turn) and wait; `ANSWERED` of them are answered through `person`, one
/// at a time; the wake-ups, and the servers' memory with everyone waiting.
async fn waiting(agents: &[InboxClient], person: &InboxClient, servers: &[&Server]) {
    let idle: Vec<f64> = servers.iter().map(|s| s.rss_mib()).collect();
    let (woke, mut woken) = tokio::sync::mpsc::unbounded_channel();
    let mut ids = Vec::with_capacity(AGENTS);
    let mut tasks = Vec::with_capacity(AGENTS);
    for n in 0..AGENTS {
        let client = agents[n % agents.len()].clone();
        let id = client.ask(&ask_body(n)).await.expect("an ask").id;
        ids.push(id.clone());
        let woke = woke.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                match client.question(&id, Duration::from_secs(60)).await {
                    Ok(Some(view)) if view.state.as_str() != "waiting" => break,
                    Ok(_) => {}
                    Err(error) => panic!("an agent's wait failed: {error}"),
                }
            }
            let _ = woke.send((id, Instant::now()));
        }));
    }
    // Every agent is in its wait once the servers hold its request; a
    // moment for the last to arrive.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let busy: Vec<f64> = servers.iter().map(|s| s.rss_mib()).collect();
    for (n, (idle, busy)) in idle.iter().zip(&busy).enumerate() {
        println!(
            "  server {}: {idle:.1} MiB idle, {busy:.1} MiB with {AGENTS} agents waiting \
             ({:.1} KiB each)",
            n + 1,
            (busy - idle) * 1024.0 / AGENTS as f64 * servers.len() as f64
        );
    }
    let mut samples = Vec::with_capacity(ANSWERED);
    for id in ids.iter().step_by(AGENTS / ANSWERED).take(ANSWERED) {
        let sent = Instant::now();
        person.answer(id, &yes()).await.expect("an answer");
        let (woken_id, at) = woken.recv().await.expect("a wake-up");
        assert_eq!(&woken_id, id, "only the answered agent wakes");
        samples.push(at.saturating_duration_since(sent));
    }
    let (median, p99) = percentiles(samples);
    let verdict = if p99 < GOAL_P99 { "met" } else { "NOT met" };
    println!(
        "  answer sent to its agent's wake-up ({ANSWERED} answers): median {median:.2?}, p99 {p99:.2?} \
         (goal p99 < {GOAL_P99:?}: {verdict})"
    );
    for task in tasks {
        task.abort();
    }
}

/// Asks per second one server takes, `IN_FLIGHT` at a time.
async fn ask_rate(client: &InboxClient) {
    let start = Instant::now();
    let per = ASKS / IN_FLIGHT;
    let askers: Vec<_> = (0..IN_FLIGHT)
        .map(|k| {
            let client = client.clone();
            tokio::spawn(async move {
                for n in 0..per {
                    client
                        .ask(&ask_body(AGENTS + k * per + n))
                        .await
                        .expect("an ask");
                }
            })
        })
        .collect();
    for asker in askers {
        asker.await.unwrap();
    }
    let rate = (per * IN_FLIGHT) as f64 / start.elapsed().as_secs_f64();
    println!("  asks one server takes: {rate:.0} per second ({IN_FLIGHT} in flight)");
}

/// Lets this process (and the servers it starts) hold a connection per
/// agent.
fn raise_open_files() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on a local struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
        limit.rlim_cur = limit.rlim_max.min(65536);
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
}

fn psql(url: &str, sql: &str) {
    let status = Command::new("psql")
        .args([url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .status()
        .expect("psql runs");
    assert!(status.success(), "psql {sql}");
}

fn token(database: &str, name: &str, role: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_ask-user"))
        .args(["inbox", "token", "create", name, "--role", role])
        .args(["--database", database])
        .output()
        .unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

#[tokio::main]
async fn main() {
    raise_open_files();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state_text = state.display().to_string();

    println!("One user's inbox (SQLite), one server, {AGENTS} agents");
    {
        let server = Server::start(
            &["inbox", "serve"],
            &[("ASK_USER_STATE_DIR", &state_text)],
            "the inbox serves",
        );
        let client = InboxClient::new(&state).unwrap();
        waiting(std::slice::from_ref(&client), &client, &[&server]).await;
        ask_rate(&client).await;
    }

    let Ok(admin) = std::env::var("ASK_USER_TEST_POSTGRES") else {
        println!(
            "\nA team's inbox: no PostgreSQL named in ASK_USER_TEST_POSTGRES; run this as \
             `scripts/postgres cargo bench -p ask-user --bench inbox`"
        );
        return;
    };
    println!("\nA team's inbox (PostgreSQL), two servers on one database, {AGENTS} agents");
    let name = format!("bench_{}", std::process::id());
    psql(&admin, &format!("CREATE DATABASE {name}"));
    let (base, _) = admin.rsplit_once('/').unwrap();
    let database = format!("{base}/{name}");
    let agent = token(&database, "bench-agent", "agent");
    let person = token(&database, "bench-person", "person");
    let serve = ["inbox", "serve", "--database", &database];
    let servers = [
        Server::start(&serve, &[], "serves at"),
        Server::start(&serve, &[], "serves at"),
    ];
    let agents: Vec<InboxClient> = servers
        .iter()
        .map(|s| InboxClient::remote(&s.url, agent.clone()).unwrap())
        .collect();
    // Answers go through the server the agent is not waiting on, for half
    // of them; through its own for the other half.
    let person = InboxClient::remote(&servers[1].url, person).unwrap();
    waiting(&agents, &person, &[&servers[0], &servers[1]]).await;
    ask_rate(&agents[0]).await;
}
