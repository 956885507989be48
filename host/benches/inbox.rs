//! The inbox with ten thousand agents long-polling at once: one user's
//! (SQLite, one server) and a team's (PostgreSQL, two servers on one
//! database, the agents split between them and half the answers given
//! through the other). For each, lines the performance record quotes, with
//! the goals of issue 39:
//!
//! - `… accept 1000 waiting: X s`: a thousand agents ask at once; the time
//!   until every ask is accepted (each then waits);
//! - `… 10000 waiting: X MiB per server`: each server's resident memory
//!   with ten thousand agents waiting (a team's: five thousand on each);
//! - `… wake p50 X ms p99 Y ms (10000 waiting)`: from a person sending an
//!   answer (`inbox answer`'s request) to its agent's wait returning;
//! - `… asks/s: N`: the asks one server takes, 16 in flight (measured
//!   first, on fresh servers).
//!
//! Figures, not a timed test: `scripts/postgres cargo bench -p ask-user
//! --bench inbox` (a throwaway PostgreSQL for the run, named in
//! `ASK_USER_TEST_POSTGRES`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ask_user::inbox::{AskBody, InboxClient};
use ask_user::{Answer, AskRequest, Question, QuestionOption};

/// Agents waiting at once, and how many of them ask at once first.
const WAITING: usize = 10_000;
const ACCEPTED: usize = 1000;
/// Answers whose wake-up is timed.
const ANSWERED: usize = 200;
/// Asks for the rate, and how many are in flight at once.
const ASKS: usize = 2000;
const IN_FLIGHT: usize = 16;
/// The goals (issue 39), on this project's 2-core machine.
const GOAL_ACCEPT: Duration = Duration::from_millis(300);
const GOAL_MIB_PER_SERVER: f64 = 100.0;
const GOAL_WAKE_P99: Duration = Duration::from_millis(20);
const GOAL_ASKS_PER_SECOND: f64 = 3000.0;

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

/// " (goal …: met)" or " (goal …: NOT met)" for a team's inbox, whose
/// figures the goals are for; nothing for one user's.
fn goal(label: &str, met: bool, goal: impl std::fmt::Display) -> String {
    match label {
        "team" => format!(" (goal {goal}: {})", if met { "met" } else { "NOT met" }),
        _ => String::new(),
    }
}

/// An agent: asks through `client`, then waits until its question is
/// settled; tells `asked` when its ask is accepted, and `woke` when its
/// wait returns.
fn agent(
    client: InboxClient,
    n: usize,
    asked: tokio::sync::mpsc::UnboundedSender<String>,
    woke: tokio::sync::mpsc::UnboundedSender<(String, Instant)>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let id = client.ask(&ask_body(n)).await.expect("an ask").id;
        let _ = asked.send(id.clone());
        loop {
            match client.question(&id, Duration::from_secs(120)).await {
                Ok(Some(view)) if view.state.as_str() != "waiting" => break,
                Ok(_) => {}
                Err(error) => panic!("an agent's wait failed: {error}"),
            }
        }
        let _ = woke.send((id, Instant::now()));
    })
}

/// `WAITING` agents through `agents` (one client per server, taken in
/// turn), the first `ACCEPTED` of them at once and timed; then `ANSWERED`
/// of them answered through `person`, one at a time, and their wake-ups.
async fn waiting(label: &str, agents: &[InboxClient], person: &InboxClient, servers: &[&Server]) {
    let idle: Vec<f64> = servers.iter().map(|s| s.rss_mib()).collect();
    let (asked, mut accepted) = tokio::sync::mpsc::unbounded_channel();
    let (woke, mut woken) = tokio::sync::mpsc::unbounded_channel();
    let mut ids = Vec::with_capacity(WAITING);
    let mut tasks = Vec::with_capacity(WAITING);
    let start = Instant::now();
    for n in 0..ACCEPTED {
        let client = agents[n % agents.len()].clone();
        tasks.push(agent(client, n, asked.clone(), woke.clone()));
    }
    while ids.len() < ACCEPTED {
        ids.push(accepted.recv().await.expect("an ask accepted"));
    }
    let took = start.elapsed();
    println!(
        "{label} accept {ACCEPTED} waiting: {:.3} s{}",
        took.as_secs_f64(),
        goal(
            label,
            took <= GOAL_ACCEPT,
            format!("≤ {:.1} s", GOAL_ACCEPT.as_secs_f64())
        )
    );
    for n in ACCEPTED..WAITING {
        let client = agents[n % agents.len()].clone();
        tasks.push(agent(client, n, asked.clone(), woke.clone()));
    }
    while ids.len() < WAITING {
        ids.push(accepted.recv().await.expect("an ask accepted"));
    }
    // Every agent is in its wait once the servers hold its request; a
    // moment for the last to arrive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let busy: Vec<f64> = servers.iter().map(|s| s.rss_mib()).collect();
    let most = busy.iter().copied().fold(0.0, f64::max);
    let grown: f64 = busy.iter().zip(&idle).map(|(busy, idle)| busy - idle).sum();
    println!(
        "{label} {WAITING} waiting: {most:.1} MiB per server (idle {}; {:.1} KiB a waiter){}",
        idle.iter()
            .map(|mib| format!("{mib:.1}"))
            .collect::<Vec<_>>()
            .join(", "),
        grown * 1024.0 / WAITING as f64,
        goal(
            label,
            most <= GOAL_MIB_PER_SERVER,
            format!("≤ {GOAL_MIB_PER_SERVER} MiB")
        )
    );
    let mut samples = Vec::with_capacity(ANSWERED);
    for id in ids.iter().step_by(WAITING / ANSWERED).take(ANSWERED) {
        let sent = Instant::now();
        person.answer(id, &yes()).await.expect("an answer");
        let (woken_id, at) = woken.recv().await.expect("a wake-up");
        assert_eq!(&woken_id, id, "only the answered agent wakes");
        samples.push(at.saturating_duration_since(sent));
    }
    let (median, p99) = percentiles(samples);
    println!(
        "{label} wake p50 {:.2} ms p99 {:.2} ms ({WAITING} waiting){}",
        median.as_secs_f64() * 1000.0,
        p99.as_secs_f64() * 1000.0,
        goal(
            label,
            p99 <= GOAL_WAKE_P99,
            format!("p99 ≤ {GOAL_WAKE_P99:?}")
        )
    );
    for task in tasks {
        task.abort();
    }
}

/// Asks per second one server takes, `IN_FLIGHT` at a time.
async fn ask_rate(label: &str, client: &InboxClient) {
    let start = Instant::now();
    let per = ASKS / IN_FLIGHT;
    let askers: Vec<_> = (0..IN_FLIGHT)
        .map(|k| {
            let client = client.clone();
            tokio::spawn(async move {
                for n in 0..per {
                    client
                        .ask(&ask_body(WAITING + k * per + n))
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
    println!(
        "{label} asks/s: {rate:.0} ({IN_FLIGHT} in flight){}",
        goal(
            label,
            rate >= GOAL_ASKS_PER_SECOND,
            format!("≥ {GOAL_ASKS_PER_SECOND}")
        )
    );
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

    println!("One user's inbox (SQLite), one server:");
    {
        let server = Server::start(
            &["inbox", "serve"],
            &[("ASK_USER_STATE_DIR", &state_text)],
            "the inbox serves",
        );
        let client = InboxClient::new(&state).unwrap();
        ask_rate("sqlite", &client).await;
        waiting("sqlite", std::slice::from_ref(&client), &client, &[&server]).await;
    }

    let Ok(admin) = std::env::var("ASK_USER_TEST_POSTGRES") else {
        println!(
            "\nA team's inbox: no PostgreSQL named in ASK_USER_TEST_POSTGRES; run this as \
             `scripts/postgres cargo bench -p ask-user --bench inbox`"
        );
        return;
    };
    println!("\nA team's inbox (PostgreSQL), two servers on one database:");
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
    ask_rate("team", &agents[0]).await;
    waiting("team", &agents, &person, &[&servers[0], &servers[1]]).await;
}
