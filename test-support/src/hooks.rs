//! A local HTTP server standing in for a notifier's endpoint (ntfy, a
//! webhook): each request it gets is an event a test can wait on.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

/// A request a notifier made.
#[derive(Debug)]
pub struct Hook {
    pub head: String,
    pub body: String,
}

/// A local HTTP server that records every request and replies 200.
pub fn hook_server() -> (String, mpsc::Receiver<Hook>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
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
            let _ = reader.read_exact(&mut body);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let body = String::from_utf8_lossy(&body).into_owned();
            if tx.send(Hook { head, body }).is_err() {
                break;
            }
        }
    });
    (url, rx)
}
