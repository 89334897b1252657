//! Just enough WebDriver (W3C) to drive Debian's headless Chromium through its
//! `chromedriver`: start both, open a page, run a script, click, take a screenshot. Plain
//! HTTP/1.1 over a TCP stream, one request per connection; no npm, no browser crate.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The flags headless Chromium needs on this machine kind.
const CHROMIUM_ARGS: [&str; 7] = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// A `chromedriver` process with one browser session; both end when this is dropped.
pub(crate) struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    _profile: TempDir,
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where the programs are: `CHROMEDRIVER` and `CHROMIUM` override Debian's paths.
fn program(var: &str, default: &str) -> PathBuf {
    let path = std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from);
    assert!(
        path.exists(),
        "{} not found: install Debian's chromium and chromium-driver packages (.ci/run does), \
         or set {var}",
        path.display()
    );
    path
}

impl Browser {
    /// Starts `chromedriver` on a free port and a headless Chromium session with a fresh
    /// profile, the window `width` × `height`.
    pub(crate) fn start(width: u32, height: u32) -> Browser {
        let driver_path = program("CHROMEDRIVER", "/usr/bin/chromedriver");
        let chromium = program("CHROMIUM", "/usr/bin/chromium");
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(driver_path)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let profile = TempDir(
            std::env::temp_dir().join(format!("mmo-chromium-{}-{port}", std::process::id())),
        );
        let mut browser = Browser {
            driver,
            addr,
            session: String::new(),
            _profile: profile,
        };
        let started = Instant::now();
        while request(addr, "GET", "/status", None).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not answer within 20 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| (*a).to_owned()).collect();
        args.push(format!("--user-data-dir={}", browser._profile.0.display()));
        args.push(format!("--window-size={width},{height}"));
        let capabilities = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "binary": chromium, "args": args }
            }}
        });
        let created =
            request(addr, "POST", "/session", Some(&capabilities)).expect("a browser session");
        browser.session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {created}"))
            .to_owned();
        browser
    }

    fn command(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let answer = request(self.addr, method, &path, body)
            .unwrap_or_else(|err| panic!("{method} {path}: {err}"));
        answer["value"].clone()
    }

    /// Opens `url`.
    pub(crate) fn goto(&self, url: &str) {
        self.command("POST", "/url", Some(&json!({ "url": url })));
    }

    /// Runs `script` (a function body; `return` gives the value) in the page.
    pub(crate) fn eval(&self, script: &str) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            Some(&json!({ "script": script, "args": [] })),
        )
    }

    /// Waits until `script` returns a value `done` accepts; returns it, or panics naming
    /// the last value after `limit`.
    pub(crate) fn wait_for(
        &self,
        script: &str,
        limit: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let started = Instant::now();
        loop {
            let value = self.eval(script);
            if done(&value) {
                return value;
            }
            assert!(
                started.elapsed() < limit,
                "waited {limit:?} for the page; it last said {value}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A real mouse click (pointer move, down, up) at viewport pixel `(x, y)`.
    pub(crate) fn click_at(&self, x: i64, y: i64) {
        let actions = json!({ "actions": [{
            "type": "pointer", "id": "mouse", "parameters": { "pointerType": "mouse" },
            "actions": [
                { "type": "pointerMove", "origin": "viewport", "x": x, "y": y, "duration": 0 },
                { "type": "pointerDown", "button": 0 },
                { "type": "pointerUp", "button": 0 }
            ]
        }]});
        self.command("POST", "/actions", Some(&actions));
    }

    /// A real mouse drag from viewport pixel `(x, y)` by `(dx, dy)`, in steps.
    pub(crate) fn drag(&self, x: i64, y: i64, dx: i64, dy: i64) {
        let mut steps = vec![
            json!({ "type": "pointerMove", "origin": "viewport", "x": x, "y": y, "duration": 0 }),
            json!({ "type": "pointerDown", "button": 0 }),
        ];
        for i in 1..=10 {
            steps.push(json!({ "type": "pointerMove", "origin": "viewport",
                "x": x + dx * i / 10, "y": y + dy * i / 10, "duration": 20 }));
        }
        steps.push(json!({ "type": "pointerUp", "button": 0 }));
        let actions = json!({ "actions": [{
            "type": "pointer", "id": "mouse", "parameters": { "pointerType": "mouse" },
            "actions": steps
        }]});
        self.command("POST", "/actions", Some(&actions));
    }

    /// A PNG of the window.
    pub(crate) fn screenshot(&self) -> Vec<u8> {
        let encoded = self.command("GET", "/screenshot", None);
        base64_decode(encoded.as_str().expect("a base64 screenshot"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            let _ = request(self.addr, "DELETE", &path, None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// One HTTP/1.1 request with a JSON body; the JSON answer. A WebDriver error answer is an
/// `Err` with its message.
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<Value, String> {
    let mut stream = TcpStream::connect(addr).map_err(|err| err.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|err| err.to_string())?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()))
        .map_err(|err| err.to_string())?;
    // chromedriver may keep the connection open: read the head, then the announced body.
    let mut response = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let (head, body) = loop {
        let n = stream.read(&mut chunk).map_err(|err| err.to_string())?;
        if n == 0 {
            return Err("the connection closed before a whole answer".to_owned());
        }
        response.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&response).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let length = head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        });
        match length {
            Some(length) if body.len() >= length => {
                break (head.to_owned(), body[..length].to_owned());
            }
            Some(_) => {}
            None if head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked") =>
            {
                if body.ends_with("0\r\n\r\n") {
                    break (head.to_owned(), dechunk(body));
                }
            }
            None => return Err(format!("no Content-Length in {head}")),
        }
    };
    let value: Value = serde_json::from_str(&body).map_err(|err| format!("{err}: {body}"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("{head}: {value}"));
    }
    Ok(value)
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for v in text.bytes().filter_map(value) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}
