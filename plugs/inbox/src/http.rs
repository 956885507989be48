//! JSON over `wasi:http/outgoing-handler`, blocking: the runtime makes the
//! connection (and speaks TLS for `https://`), the plug writes the request
//! and reads the reply, bounded in time and size.

use std::time::Duration;

use serde_json::Value;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme};
use wasip2::io::streams::StreamError;

/// How long a request other than a wait may take.
pub const SHORT: Duration = Duration::from_secs(10);

/// The largest reply read: a question's view with its answers.
const MAX_REPLY: usize = 4 << 20;

/// The most one write of an output stream takes (`blocking-write-and-flush`).
const CHUNK: usize = 4096;

/// Why a request failed.
pub enum Failure {
    /// No reply: nothing listens there, the connection broke, or the time
    /// ran out.
    Unreachable(String),
    /// A reply other than 2xx, with its body.
    Status { status: u16, body: String },
    /// A 2xx reply that is not what the inbox sends.
    Reply(String),
}

/// An inbox's address, and the token presented to it.
pub struct Http {
    url: String,
    scheme: Scheme,
    authority: String,
    /// The path before the API's (no trailing `/`), for an inbox behind a
    /// prefix.
    base: String,
    token: String,
}

impl Http {
    /// `url`: `http://HOST[:PORT][/PREFIX]` or `https://…`.
    pub fn new(url: &str, token: &str) -> Result<Http, String> {
        let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else {
            return Err(format!("{url:?} is not an http:// or https:// address"));
        };
        let (authority, base) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if authority.is_empty() || authority.contains(['@', '?', '#', ' ']) {
            return Err(format!(
                "{url:?} has no host to reach (write http://HOST:PORT)"
            ));
        }
        Ok(Http {
            url: url.trim_end_matches('/').to_owned(),
            scheme,
            authority: authority.to_owned(),
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
        })
    }

    /// The address, as given, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends `method path` with the JSON `body`, waiting at most `timeout`
    /// for the reply to begin; the reply's JSON (`null` when empty).
    pub fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<Value, Failure> {
        let mut headers = vec![(
            "authorization".to_owned(),
            format!("Bearer {}", self.token).into_bytes(),
        )];
        if body.is_some() {
            headers.push(("content-type".to_owned(), b"application/json".to_vec()));
        }
        let headers = Fields::from_list(&headers)
            .map_err(|e| Failure::Unreachable(format!("a header the runtime refused: {e:?}")))?;
        let request = OutgoingRequest::new(headers);
        let method = match method {
            "GET" => Method::Get,
            _ => Method::Post,
        };
        let set = request
            .set_method(&method)
            .and_then(|()| request.set_scheme(Some(&self.scheme)))
            .and_then(|()| request.set_authority(Some(&self.authority)))
            .and_then(|()| request.set_path_with_query(Some(&format!("{}{path}", self.base))));
        set.map_err(|()| {
            Failure::Unreachable(format!("the runtime refused the address {}", self.url))
        })?;
        let options = RequestOptions::new();
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        // A runtime that sets no timeouts of its own may refuse these:
        // the reply is bounded all the same by the inbox's own wait.
        let _ = options.set_connect_timeout(Some(nanos(SHORT)));
        let _ = options.set_first_byte_timeout(Some(nanos(timeout)));
        let _ = options.set_between_bytes_timeout(Some(nanos(SHORT)));

        let outgoing = request
            .body()
            .map_err(|()| Failure::Unreachable("the request's body was taken".into()))?;
        let future = outgoing_handler::handle(request, Some(options))
            .map_err(|e| Failure::Unreachable(format!("{e:?}")))?;
        // A server may reply before it has read the body (a token refused
        // at once) and close: its reply, when there is one, says why.
        let written = write(outgoing, body);
        future.subscribe().block();
        let response = match (future.get(), written) {
            (Some(Ok(Ok(response))), _) => response,
            (_, Err(failure)) => return Err(failure),
            (Some(Ok(Err(e))), Ok(())) => return Err(Failure::Unreachable(describe(&e))),
            (_, Ok(())) => return Err(Failure::Unreachable("no reply".into())),
        };
        let status = response.status();
        let text = read(&response)?;
        if !(200..300).contains(&status) {
            return Err(Failure::Status { status, body: text });
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text)
            .map_err(|e| Failure::Reply(format!("a body that is not JSON ({e})")))
    }
}

/// Writes the body, if any, and ends the request.
fn write(outgoing: OutgoingBody, body: Option<&Value>) -> Result<(), Failure> {
    if let Some(body) = body {
        let bytes = body.to_string().into_bytes();
        let stream = outgoing
            .write()
            .map_err(|()| Failure::Unreachable("the request's body stream was taken".into()))?;
        for chunk in bytes.chunks(CHUNK) {
            stream.blocking_write_and_flush(chunk).map_err(|e| {
                Failure::Unreachable(format!("the request could not be sent: {e:?}"))
            })?;
        }
    }
    OutgoingBody::finish(outgoing, None)
        .map_err(|e| Failure::Unreachable(format!("the request could not be sent: {e:?}")))
}

/// The reply's body as text, at most [`MAX_REPLY`] bytes.
fn read(response: &wasip2::http::types::IncomingResponse) -> Result<String, Failure> {
    let body = response
        .consume()
        .map_err(|()| Failure::Unreachable("the reply's body was taken".into()))?;
    let stream = body
        .stream()
        .map_err(|()| Failure::Unreachable("the reply's body stream was taken".into()))?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(Failure::Unreachable(format!(
                    "the reply broke off: {}",
                    e.to_debug_string()
                )));
            }
        }
        if bytes.len() > MAX_REPLY {
            return Err(Failure::Reply(format!(
                "a reply of more than {} MiB",
                MAX_REPLY >> 20
            )));
        }
    }
    drop(stream);
    String::from_utf8(bytes).map_err(|_| Failure::Reply("a reply that is not UTF-8".into()))
}

/// What the runtime said of a failed request, in a few words.
fn describe(error: &wasip2::http::types::ErrorCode) -> String {
    use wasip2::http::types::ErrorCode as E;
    match error {
        E::ConnectionRefused => "connection refused".into(),
        E::ConnectionTimeout => "the connection timed out".into(),
        E::ConnectionReadTimeout => "no reply in time".into(),
        E::DnsError(_) => "its host name was not found".into(),
        E::HttpRequestDenied => "the runtime denied the request (grant it outgoing HTTP)".into(),
        E::TlsCertificateError => "its TLS certificate was refused".into(),
        other => format!("{other:?}"),
    }
}

/// The monotonic clock, as a duration since its start.
pub fn now() -> Duration {
    Duration::from_nanos(wasip2::clocks::monotonic_clock::now())
}

/// Waits `duration`.
pub fn sleep(duration: Duration) {
    let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    wasip2::clocks::monotonic_clock::subscribe_duration(nanos).block();
}
