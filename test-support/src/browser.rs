//! Headless Chromium driven through chromedriver, for tests of a page in
//! a real browser (Debian's `chromium` and `chromium-driver`). Included by
//! the test binaries that need it.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

pub const WAIT: Duration = Duration::from_secs(30);

/// One browser at a time: two cores do not run several Chromiums well.
pub static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub struct Browser {
    pub client: Client,
    _driver: Driver,
    _profile: TempDir,
}

/// chromedriver in a process group of its own, with the Chromium it starts:
/// the whole group is killed when the browser is dropped, also when a test
/// fails half-way.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.wait();
    }
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    pub async fn start() -> Self {
        let port = free_port();
        let driver = Driver(
            Command::new("chromedriver")
                .arg(format!("--port={port}"))
                .process_group(0)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("chromedriver (Debian's chromium-driver) is installed"),
        );
        let profile = TempDir(
            std::env::temp_dir().join(format!("ask-user-chromium-{}-{port}", std::process::id())),
        );
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--disable-quic", "--no-first-run", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync", "--window-size=420,1000",
                         format!("--user-data-dir={}", profile.0.display())]
            }
        });
        let capabilities: serde_json::Map<String, Value> =
            capabilities.as_object().unwrap().clone();
        let mut last = None;
        for _ in 0..100 {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(client) => {
                    return Browser {
                        client,
                        _driver: driver,
                        _profile: profile,
                    };
                }
                Err(error) => last = Some(error),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no browser session: {last:?}");
    }

    /// Ends the session; dropping the browser then stops the processes.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }

    pub async fn wait_for(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap()
    }

    pub async fn click(&self, css: &str) {
        self.wait_for(css).await.click().await.unwrap();
    }

    pub async fn count(&self, css: &str) -> usize {
        self.client.find_all(Locator::Css(css)).await.unwrap().len()
    }

    /// Waits until the page's status line says `text` (at most [`WAIT`]).
    pub async fn status_says(&self, text: &str) {
        let xpath = format!("//div[@id='status'][contains(., {text:?})]");
        if let Err(error) = self
            .client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::XPath(&xpath))
            .await
        {
            let shown = self
                .wait_for("#status")
                .await
                .text()
                .await
                .unwrap_or_default();
            panic!("the status never said {text:?} ({error}); it says {shown:?}");
        }
    }

    /// A phone's screen, 390×844 (as an iPhone 12 to 15 shows a page).
    pub async fn as_phone(&self) {
        self.client.set_window_size(390, 844).await.unwrap();
        let width = self
            .client
            .execute("return window.innerWidth", vec![])
            .await
            .unwrap();
        assert!(
            width.as_u64().is_some_and(|width| width <= 390),
            "the window is {width} wide"
        );
    }

    /// Whether the page fits its window's width: nothing to scroll sideways.
    pub async fn fits_the_width(&self) -> bool {
        self.client
            .execute(
                "return document.documentElement.scrollWidth <= window.innerWidth",
                vec![],
            )
            .await
            .unwrap()
            .as_bool()
            .unwrap_or(false)
    }
}
