//! `ask-user mcp --http` against the official MCP conformance suite
//! (`@modelcontextprotocol/conformance` on npm, on the Node 22 it needs,
//! both from `host/tests/npm`): every server scenario that applies to a
//! server of one tool and no resources or prompts.
//!
//! The suite sends no `Authorization` header, and the server wants one: a
//! small proxy in front adds the token and names the server's own port in
//! `Host` and `Origin` where the suite named the proxy's (any other value
//! passes unchanged, so the DNS-rebinding scenario still reaches the
//! server's own checks).

use ask_user_test_support::http_server;
use ask_user_test_support::http_thread;
use ask_user_test_support::npm;

use std::net::SocketAddr;
use std::process::Command;

use http::header::{AUTHORIZATION, HOST, ORIGIN};
use http_server::Server;
use hyper::body::Incoming;
use hyper::{Request, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// The scenarios that apply, and why the others do not: `tools-call-*`,
/// `elicitation-*` and `json-schema-2020-12` call tools of the suite's own
/// test server, `completion-complete`, `resources-*` and `prompts-*` need
/// what this server does not offer.
const SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
];

/// The one check a server of ours cannot pass: resuming a call of the
/// suite's `test_reconnection` tool, which only its test server has.
const NEEDS_THE_SUITES_TOOL: &str = "server-sse-disconnect-resume";

#[test]
fn the_official_conformance_scenarios_that_apply_pass_without_warnings() {
    let npm = npm::folder();
    let server = Server::start(&[]);
    let proxy = proxy(server.address, server.token.clone());
    let url = format!("http://127.0.0.1:{}/mcp", proxy.port());
    for scenario in SCENARIOS {
        let output = Command::new(npm.join("node_modules/.bin/node"))
            .arg(npm.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
            .args(["server", "--verbose", "--url", &url, "--scenario", scenario])
            .output()
            .expect("the conformance suite runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let checks: Vec<Value> = match stdout.find('[') {
            // The checks, as JSON, then a summary in words.
            Some(start) => serde_json::Deserializer::from_str(&stdout[start..])
                .into_iter()
                .next()
                .and_then(Result::ok)
                .unwrap_or_else(|| panic!("{scenario}: its checks are not JSON:\n{stdout}")),
            None => panic!(
                "{scenario}: no checks printed:\n{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            ),
        };
        assert!(!checks.is_empty(), "{scenario}: no checks");
        let passed = checks.iter().filter(|c| c["status"] == "SUCCESS").count();
        assert!(passed > 0, "{scenario}: nothing passed: {checks:#?}");
        for check in &checks {
            let status = check["status"].as_str().unwrap_or_default();
            let excused = check["id"] == NEEDS_THE_SUITES_TOOL && status == "WARNING";
            assert!(
                matches!(status, "SUCCESS" | "INFO") || excused,
                "{scenario}: {check:#}"
            );
        }
    }
}

/// A proxy to `server` on a port of its own ([`http_thread::serve`]).
fn proxy(server: SocketAddr, token: String) -> SocketAddr {
    let client = Client::builder(TokioExecutor::new()).build_http::<Incoming>();
    http_thread::serve(move |request, own| {
        forward(client.clone(), request, own, server, token.clone())
    })
}

async fn forward(
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Incoming>,
    mut request: Request<Incoming>,
    own: SocketAddr,
    server: SocketAddr,
    token: String,
) -> Result<hyper::Response<Incoming>, hyper_util::client::legacy::Error> {
    let own_port = format!(":{}", own.port());
    for name in [HOST, ORIGIN] {
        let value = request.headers().get(&name).and_then(|v| v.to_str().ok());
        if let Some(name_only) = value.and_then(|v| v.strip_suffix(&own_port)) {
            let renamed = format!("{name_only}:{}", server.port());
            request.headers_mut().insert(name, renamed.parse().unwrap());
        }
    }
    let bearer = format!("Bearer {token}");
    request
        .headers_mut()
        .insert(AUTHORIZATION, bearer.parse().unwrap());
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = format!("http://{server}{path}").parse::<Uri>().unwrap();
    client.request(request).await
}
