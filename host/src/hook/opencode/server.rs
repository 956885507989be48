//! OpenCode's server, as a client of it over HTTP on 127.0.0.1: its event
//! stream (server-sent events on `/global/event`, each `data:` line
//! `{"directory", "payload": {"type", "properties"}}`), its pending
//! questions (`GET /question`) and their replies (`POST
//! /question/{id}/reply` with `{"answers": [[labels…], …]}`, `POST
//! /question/{id}/reject`), and its sessions (`GET /session/{id}`: a
//! sub-agent's has a parent). Every request carries the run's password
//! (HTTP basic auth, as OpenCode's `OPENCODE_SERVER_PASSWORD` asks).

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// How long the server may take to answer a request.
const ANSWER_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// How many times a question's answer or dismissal is sent, at most.
const ATTEMPTS: u32 = 3;

/// The largest event read (a question's text and options, with room).
const MAX_EVENT_BYTES: usize = 1 << 20;

/// OpenCode's server at `base` (`http://127.0.0.1:<port>`).
#[derive(Clone)]
pub struct Server {
    http: reqwest::Client,
    base: String,
    user: String,
    password: String,
}

/// A question OpenCode asks (`QuestionRequest`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Asked {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session: String,
    pub questions: Vec<Value>,
}

/// A session of OpenCode's (`Session.Info`): a sub-agent's (its `task`
/// tool's) has a parent, and a title that names it.
#[derive(Debug, Clone, Deserialize)]
pub struct Session {
    #[serde(rename = "parentID", default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub title: String,
}

/// What the event stream says that matters here.
#[derive(Debug)]
pub enum Event {
    /// A question asked, in the project at `directory`.
    Asked {
        directory: Option<String>,
        asked: Asked,
    },
    /// Question `id` answered (in OpenCode's UI, or by us).
    Replied { id: String },
    /// Question `id` dismissed (in OpenCode's UI, or by us).
    Rejected { id: String },
    /// Anything else.
    Other,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    directory: Option<String>,
    payload: Payload,
}

#[derive(Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    properties: Value,
}

#[derive(Deserialize)]
struct Settled {
    #[serde(rename = "requestID")]
    id: String,
}

impl Event {
    /// One event's `data`; `None` for what is not an event of the stream.
    fn parse(data: &str) -> Option<Event> {
        let Envelope { directory, payload } = serde_json::from_str(data).ok()?;
        let settled = || serde_json::from_value::<Settled>(payload.properties.clone()).ok();
        Some(match payload.kind.as_str() {
            "question.asked" => Event::Asked {
                directory,
                asked: serde_json::from_value(payload.properties).ok()?,
            },
            "question.replied" => Event::Replied { id: settled()?.id },
            "question.rejected" => Event::Rejected { id: settled()?.id },
            _ => Event::Other,
        })
    }
}

/// Why a request to OpenCode's server failed.
pub type Error = String;

impl Server {
    pub fn new(port: u16, user: String, password: String) -> std::io::Result<Server> {
        Ok(Server {
            http: ask_user_inbox::http_client(None)?,
            base: format!("http://127.0.0.1:{port}"),
            user,
            password,
        })
    }

    /// A request to the path of `segments` (each encoded as one: an id is
    /// never more), for the project at `directory` when given.
    fn request(
        &self,
        method: reqwest::Method,
        segments: &[&str],
        directory: Option<&str>,
    ) -> Result<reqwest::RequestBuilder, Error> {
        let mut url = reqwest::Url::parse(&self.base).map_err(|e| e.to_string())?;
        url.path_segments_mut()
            .map_err(|()| "not a base address".to_owned())?
            .extend(segments);
        if let Some(directory) = directory {
            url.query_pairs_mut().append_pair("directory", directory);
        }
        Ok(self
            .http
            .request(method, url)
            .basic_auth(&self.user, Some(&self.password)))
    }

    /// The questions waiting now (asked before the stream was joined).
    pub async fn pending(&self) -> Result<Vec<Asked>, Error> {
        self.get(&["question"], None, "its list of questions").await
    }

    /// Session `id` (of the project at `directory`).
    pub async fn session(&self, id: &str, directory: Option<&str>) -> Result<Session, Error> {
        self.get(&["session", id], directory, "a session").await
    }

    /// What the path of `segments` holds, as JSON: `what` names it in
    /// errors.
    async fn get<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        directory: Option<&str>,
        what: &str,
    ) -> Result<T, Error> {
        let response = send(self.request(reqwest::Method::GET, segments, directory)?).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("{what}: HTTP {status}"));
        }
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        serde_json::from_slice(&body).map_err(|e| format!("{what}: {e}"))
    }

    /// Answers question `id` (in the project at `directory`): one list of
    /// labels and own words per question, in order.
    pub async fn reply(
        &self,
        id: &str,
        directory: Option<&str>,
        answers: Vec<Vec<String>>,
    ) -> Result<(), Error> {
        let body = json!({"answers": answers});
        self.settle(&["question", id, "reply"], directory, Some(body))
            .await
    }

    /// Dismisses question `id`, as Esc in OpenCode's UI does.
    pub async fn reject(&self, id: &str, directory: Option<&str>) -> Result<(), Error> {
        self.settle(&["question", id, "reject"], directory, None)
            .await
    }

    /// Settles a question: sent again (up to [`ATTEMPTS`] times, a second
    /// apart) when no answer came, so that a person's answer is not lost
    /// to a hiccup; once sent again, "not found" means an earlier sending
    /// landed (or OpenCode settled it meanwhile), which is done too.
    async fn settle(
        &self,
        path: &[&str],
        directory: Option<&str>,
        body: Option<Value>,
    ) -> Result<(), Error> {
        let mut attempt = 1;
        let response = loop {
            let mut request = self.request(reqwest::Method::POST, path, directory)?;
            if let Some(body) = &body {
                request = request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.to_string());
            }
            match send(request).await {
                Ok(response) => break response,
                Err(error) if attempt == ATTEMPTS => return Err(error),
                Err(_) => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        };
        let status = response.status();
        if status.is_success() || (attempt > 1 && status == reqwest::StatusCode::NOT_FOUND) {
            Ok(())
        } else {
            let said = response.text().await.unwrap_or_default();
            Err(format!(
                "HTTP {status}: {}",
                said.chars().take(300).collect::<String>()
            ))
        }
    }

    /// Joins the event stream: an error while the server does not answer
    /// yet (or refuses the password).
    pub async fn events(&self) -> Result<Events, Error> {
        let request = self
            .request(reqwest::Method::GET, &["global", "event"], None)?
            .header(reqwest::header::ACCEPT, "text/event-stream");
        let response = send(request).await?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("its event stream: HTTP {status}"));
        }
        Ok(Events {
            response,
            buffer: Vec::new(),
        })
    }
}

/// Sends `request`, its answer's head awaited at most [`ANSWER_BOUND`]: a
/// connection made while OpenCode starts can go unanswered for good (found
/// with OpenCode 1.18), so it is given up and the caller tries again.
async fn send(request: reqwest::RequestBuilder) -> Result<reqwest::Response, Error> {
    tokio::time::timeout(ANSWER_BOUND, request.send())
        .await
        .map_err(|_| format!("no answer within {ANSWER_BOUND:?}"))?
        .map_err(|e| e.to_string())
}

/// OpenCode's event stream.
pub struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Events {
    /// The next event; `None` once the stream ended (OpenCode ended), or
    /// broke (an event over [`MAX_EVENT_BYTES`], a failed read).
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
                if let Some(event) = event_of(&block) {
                    return Some(event);
                }
                continue;
            }
            if self.buffer.len() > MAX_EVENT_BYTES {
                return None;
            }
            let chunk = self.response.chunk().await.ok()??;
            // Lines may end CRLF: read as LF.
            for &byte in chunk.iter().filter(|&&b| b != b'\r') {
                self.buffer.push(byte);
            }
        }
    }
}

/// The event of one block of the stream: its `data:` lines, joined.
fn event_of(block: &[u8]) -> Option<Event> {
    let text = std::str::from_utf8(block).ok()?;
    let data: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    if data.is_empty() {
        return None;
    }
    Event::parse(&data.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server on 127.0.0.1 that drops its first `dropped` connections
    /// unanswered, then answers each with `status`; how many came.
    async fn flaky(
        dropped: usize,
        status: &'static str,
    ) -> (Server, tokio::task::JoinHandle<usize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = tokio::spawn(async move {
            let mut came = 0;
            loop {
                let accepted =
                    tokio::time::timeout(std::time::Duration::from_millis(1500), listener.accept());
                let Ok(Ok((mut stream, _))) = accepted.await else {
                    return came;
                };
                came += 1;
                let mut request = vec![0; 4096];
                let _ = stream.read(&mut request).await;
                if came > dropped {
                    let reply = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
                    let _ = stream.write_all(reply.as_bytes()).await;
                }
            }
        });
        (
            Server::new(port, "opencode".into(), "pw".into()).unwrap(),
            served,
        )
    }

    #[tokio::test]
    async fn an_answer_is_sent_again_when_no_answer_came_and_a_late_not_found_is_done() {
        let (server, served) = flaky(1, "200 OK").await;
        server
            .reply("que_1", None, vec![vec!["A".into()]])
            .await
            .unwrap();
        assert_eq!(served.await.unwrap(), 2);
        // Not found once sent again: the first sending may have landed.
        let (server, served) = flaky(1, "404 Not Found").await;
        server.reject("que_1", None).await.unwrap();
        assert_eq!(served.await.unwrap(), 2);
        // Not found at once: OpenCode has no such question.
        let (server, served) = flaky(0, "404 Not Found").await;
        let error = server.reject("que_1", None).await.unwrap_err();
        assert!(error.contains("404"), "{error}");
        assert_eq!(served.await.unwrap(), 1);
        // Never answered: given up after the last attempt.
        let (server, served) = flaky(usize::MAX, "200 OK").await;
        assert!(server.reply("que_1", None, vec![]).await.is_err());
        assert_eq!(served.await.unwrap(), ATTEMPTS as usize);
    }

    #[test]
    fn an_id_stays_one_segment_of_the_path() {
        let server = Server::new(4096, "opencode".into(), "secret".into()).unwrap();
        for (id, path) in [
            ("que_1", "/question/que_1/reply"),
            ("../../session", "/question/..%2F..%2Fsession/reply"),
            ("a?b#c", "/question/a%3Fb%23c/reply"),
        ] {
            let request = server
                .request(
                    reqwest::Method::POST,
                    &["question", id, "reply"],
                    Some("/p q"),
                )
                .unwrap()
                .build()
                .unwrap();
            assert_eq!(request.url().path(), path, "{id}");
            assert_eq!(request.url().query(), Some("directory=%2Fp+q"));
        }
    }

    #[test]
    fn questions_and_their_settling_are_read_from_the_stream_and_the_rest_passed_over() {
        let asked = r#"data: {"directory":"/p","payload":{"id":"evt_1","type":"question.asked","properties":{"id":"que_1","sessionID":"ses_1","questions":[{"question":"Q?","header":"H","options":[]}]}}}"#;
        let Some(Event::Asked { directory, asked }) = event_of(asked.as_bytes()) else {
            panic!("a question")
        };
        assert_eq!(directory.as_deref(), Some("/p"));
        assert_eq!(
            (asked.id.as_str(), asked.session.as_str()),
            ("que_1", "ses_1")
        );
        let replied = r#"data: {"payload":{"type":"question.replied","properties":{"sessionID":"ses_1","requestID":"que_1","answers":[["A"]]}}}"#;
        assert!(
            matches!(event_of(replied.as_bytes()), Some(Event::Replied { id }) if id == "que_1")
        );
        let rejected = r#"data: {"payload":{"type":"question.rejected","properties":{"sessionID":"ses_1","requestID":"que_2"}}}"#;
        assert!(
            matches!(event_of(rejected.as_bytes()), Some(Event::Rejected { id }) if id == "que_2")
        );
        let other = r#"data: {"payload":{"type":"server.connected","properties":{}}}"#;
        assert!(matches!(event_of(other.as_bytes()), Some(Event::Other)));
        // A comment, a broken question, what is not JSON: nothing.
        for nothing in [
            ": keep-alive",
            r#"data: {"payload":{"type":"question.asked","properties":{"id":1}}}"#,
            "data: {",
        ] {
            assert!(event_of(nothing.as_bytes()).is_none(), "{nothing}");
        }
    }
}
