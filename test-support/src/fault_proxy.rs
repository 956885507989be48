//! A proxy in front of a real service (a homeserver) that fails as the
//! service would when told to: down (502 to every request), busy (the
//! service's own 429 for the next request to a path), or refusing (the
//! service's own refusal of every request whose body has a text). It
//! keeps what it was asked: when, what, and the status given.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::http_thread;

/// A reply the proxy gives itself, as the service would.
#[derive(Clone, Debug)]
pub struct Fault {
    pub status: u16,
    /// Its body (JSON, as the service's errors are).
    pub body: String,
    /// Its `Retry-After`, in seconds.
    pub retry_after: Option<u64>,
}

/// A request the proxy was asked.
#[derive(Clone, Debug)]
pub struct Asked {
    pub at: Instant,
    pub method: String,
    pub path: String,
    /// The status it was answered (0 while it waits: a long poll).
    pub status: u16,
}

#[derive(Default)]
struct Faults {
    down: bool,
    /// The next request whose path has the text gets the fault.
    next: Vec<(String, Fault)>,
    /// Every request whose body has the text gets the fault.
    always: Vec<(String, Fault)>,
    asked: Vec<Asked>,
}

/// The proxy, serving for the life of the test process.
#[derive(Clone)]
pub struct FaultProxy {
    /// Where it listens (`http://127.0.0.1:PORT`): the service's address to
    /// give the program under test.
    pub url: String,
    faults: Arc<Mutex<Faults>>,
}

impl FaultProxy {
    /// A proxy to `upstream` (`http://HOST:PORT`).
    pub fn start(upstream: &str) -> FaultProxy {
        let faults = Arc::new(Mutex::new(Faults::default()));
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let upstream = upstream.trim_end_matches('/').to_owned();
        let serving = faults.clone();
        let address = http_thread::serve(move |request, _| {
            forward(client.clone(), serving.clone(), upstream.clone(), request)
        });
        FaultProxy {
            url: format!("http://{address}"),
            faults,
        }
    }

    fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.faults.lock().unwrap()
    }

    /// Every request is answered 502 while `down`.
    pub fn set_down(&self, down: bool) {
        self.faults().down = down;
    }

    /// The next request whose path has `path` gets `fault`.
    pub fn next(&self, path: &str, fault: Fault) {
        self.faults().next.push((path.to_owned(), fault));
    }

    /// Every request whose body has `text` gets `fault`.
    pub fn always(&self, text: &str, fault: Fault) {
        self.faults().always.push((text.to_owned(), fault));
    }

    /// The requests so far whose path has `path`.
    pub fn asked(&self, path: &str) -> Vec<Asked> {
        let faults = self.faults();
        let asked = faults.asked.iter().filter(|a| a.path.contains(path));
        asked.cloned().collect()
    }
}

type Reply = Response<Either<Incoming, Full<Bytes>>>;

async fn forward(
    client: Client<HttpConnector, Full<Bytes>>,
    faults: Arc<Mutex<Faults>>,
    upstream: String,
    request: Request<Incoming>,
) -> Result<Reply, Box<dyn std::error::Error + Send + Sync>> {
    let (mut parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let path = path.to_owned();
    let (index, fault) = {
        let mut faults = faults.lock().unwrap();
        let text = String::from_utf8_lossy(&body);
        let fault = if faults.down {
            Some(Fault {
                status: 502,
                body: String::new(),
                retry_after: None,
            })
        } else if let Some(at) = faults.next.iter().position(|(p, _)| path.contains(p)) {
            Some(faults.next.remove(at).1)
        } else {
            let always = faults
                .always
                .iter()
                .find(|(t, _)| text.contains(t.as_str()));
            always.map(|(_, fault)| fault.clone())
        };
        faults.asked.push(Asked {
            at: Instant::now(),
            method: parts.method.to_string(),
            path: path.clone(),
            status: fault.as_ref().map_or(0, |f| f.status),
        });
        (faults.asked.len() - 1, fault)
    };
    if let Some(fault) = fault {
        let mut reply = Response::builder().status(fault.status);
        if let Some(seconds) = fault.retry_after {
            reply = reply.header("retry-after", seconds.to_string());
        }
        return Ok(reply.body(Either::Right(Full::new(Bytes::from(fault.body))))?);
    }
    parts.uri = format!("{upstream}{path}").parse::<Uri>()?;
    parts.headers.remove(hyper::header::HOST);
    let reply = client
        .request(Request::from_parts(parts, Full::new(body)))
        .await;
    let status = reply
        .as_ref()
        .map_or(StatusCode::BAD_GATEWAY, |r| r.status());
    faults.lock().unwrap().asked[index].status = status.as_u16();
    Ok(reply?.map(Either::Left))
}
