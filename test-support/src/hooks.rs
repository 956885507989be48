//! A local HTTP server standing in for a notifier's endpoint (ntfy, a
//! webhook): each request it gets is an event a test can wait on.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

/// A request a notifier made.
#[derive(Debug)]
pub struct Hook {
    pub head: String,
    pub body: String,
}

/// A local HTTP server that records every request and replies 200. Each
/// connection is read on its own thread, within [`READ_BOUND`]: a client
/// that connects and says nothing (another test's, to a port it once had)
/// holds up no notifier's request.
pub fn hook_server() -> (String, mpsc::Receiver<Hook>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            // A connection that failed before it was taken is the client's
            // loss, not the server's end.
            let Ok(stream) = stream else { continue };
            let tx = tx.clone();
            std::thread::spawn(move || {
                if let Some(hook) = read(stream) {
                    let _ = tx.send(hook);
                }
            });
        }
    });
    (url, rx)
}

/// The longest a connection may take to send its request.
const READ_BOUND: Duration = Duration::from_secs(30);

/// Reads one request from `stream` and replies 200; `None` when it did not
/// come whole in time.
fn read(mut stream: TcpStream) -> Option<Hook> {
    stream.set_read_timeout(Some(READ_BOUND)).ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|n| n.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let body = String::from_utf8_lossy(&body).into_owned();
    Some(Hook { head, body })
}
