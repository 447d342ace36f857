//! A real headless Chromium driven through WebDriver (Debian's `chromium` and
//! `chromium-driver`, which `scripts/test.sh` installs), for the dashboard's tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// Chromium and its WebDriver server.
pub const CHROMIUM: &str = "/usr/bin/chromium";
/// ChromeDriver.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A ChromeDriver process with one browser session; both end when it is dropped.
pub struct Browser {
    driver: Child,
    /// The WebDriver session.
    pub client: Client,
    _profile: tempfile::TempDir,
    screenshots: PathBuf,
}

/// A free loopback port (ChromeDriver cannot be given port 0).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium of 1366x900 (a laptop screen) that keeps
    /// its console log; screenshots go to `screenshots`.
    pub async fn start(screenshots: &Path, extra_args: &[&str]) -> Browser {
        for program in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(program).exists(),
                "{program} is missing: install Debian's chromium and chromium-driver \
                 (scripts/test.sh does)"
            );
        }
        std::fs::create_dir_all(screenshots).unwrap();
        let port = free_port();
        let mut driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(driver.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("started successfully") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "chromedriver exited before it was ready"
            );
        }
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let profile = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            "--window-size=1366,900".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        args.extend(extra_args.iter().map(|a| a.to_string()));
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({"binary": CHROMIUM, "args": args}),
        );
        caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a WebDriver session in headless Chromium");
        Browser {
            driver,
            client,
            _profile: profile,
            screenshots: screenshots.to_path_buf(),
        }
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    /// Runs `script` (a function body that returns a value) in the page.
    pub async fn js(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap()
    }

    /// Waits until `script` returns something other than `null`/`false`; returns it. Panics
    /// after `timeout` saying what was waited for, with a screenshot `failed-<what>.png`.
    pub async fn until(&self, what: &str, timeout: Duration, script: &str) -> Value {
        let started = Instant::now();
        loop {
            let v = self.js(script).await;
            if !(v.is_null() || v == Value::Bool(false)) {
                return v;
            }
            if started.elapsed() > timeout {
                let name = format!(
                    "failed-{}",
                    what.replace(|c: char| !c.is_alphanumeric(), "-")
                );
                self.screenshot(&name).await;
                panic!(
                    "the dashboard did not show {what} within {timeout:?} (screenshot {name}.png \
                     in {})",
                    self.screenshots.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clicks the element `css`.
    pub async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css} to click: {e}"))
            .click()
            .await
            .unwrap();
    }

    /// Types `text` into the element `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css} to type into: {e}"))
            .send_keys(text)
            .await
            .unwrap();
    }

    /// Saves a screenshot of the page as `<name>.png`.
    pub async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(self.screenshots.join(format!("{name}.png")), png).unwrap();
    }

    /// The browser's console entries since the last call, as `(level, message)`.
    pub async fn console(&self) -> Vec<(String, String)> {
        let v = self.client.issue_cmd(BrowserLog).await.unwrap();
        v.as_array()
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| {
                        (
                            e["level"].as_str().unwrap_or("").to_string(),
                            e["message"].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// ChromeDriver's browser-log command (`POST /session/{id}/se/log`), which fantoccini does
/// not wrap.
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/se/log",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(r#"{"type":"browser"}"#.to_string()),
        )
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        // Chromium outlives a killed ChromeDriver: end the processes of this profile.
        let _ = Command::new("pkill")
            .arg("-9")
            .arg("-f")
            .arg(self._profile.path())
            .status();
    }
}
