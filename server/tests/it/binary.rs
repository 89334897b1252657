//! The `server run` binary: starts with defaults on loopback ports, serves its health
//! endpoint, and exits 0 on SIGTERM; a bad config is one clear error line.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The server binary, with a data directory of its own: the tests run at the same time,
/// and two servers cannot open one embedded character store (the default `data`).
fn server() -> Command {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "mmo-binary-it-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut command = Command::new(env!("CARGO_BIN_EXE_server"));
    command.env("MMO_DATA_DIR", dir);
    command
}

#[test]
fn run_serves_health_and_exits_zero_on_sigterm() {
    let mut child = server()
        .args(["run", "--listen", "127.0.0.1:0", "--log-format", "json"])
        // Settings from the environment, as a container would pass them.
        .env("MMO_METRICS_LISTEN", "127.0.0.1:0")
        .env("MMO_NPCS", "37")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The start line names the metrics address and the certificate fingerprint.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let started = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|line| line.contains("server started"))
        .expect("a start line");
    let line: serde_json::Value = serde_json::from_str(&started).unwrap();
    let fields = &line["fields"];
    let fingerprint = fields["fingerprint"].as_str().unwrap();
    assert_eq!(fingerprint.len(), 64, "{started}");
    let metrics = fields["metrics"].as_str().unwrap().to_owned();
    assert_eq!(fields["npcs"], 37, "{started}");
    assert_ne!(metrics, "127.0.0.1:9100", "{started}");

    let mut stream = TcpStream::connect(&metrics).unwrap();
    std::io::Write::write_all(&mut stream, b"GET /healthz HTTP/1.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "exit status {status:?}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        rest.iter().any(|line| line.contains("server stopped")),
        "{rest:?}"
    );
}

#[test]
fn a_bad_config_is_one_error_line() {
    let out = server()
        .args(["run", "--config", "/nonexistent/server.toml"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: cannot read config file"),
        "{stderr}"
    );

    let dir = std::env::temp_dir().join(format!("server-it-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(&file, "view_radius_m = -3.0\n").unwrap();
    let out = server()
        .args(["run", "--config", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("view_radius_m"), "{stderr}");
}

#[test]
fn a_bad_map_is_reported_once() {
    let dir = std::env::temp_dir().join(format!("server-it-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("empty.map");
    std::fs::write(&file, "").unwrap();
    let map = file.to_str().unwrap();
    for args in [
        vec![
            "run",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        vec!["simulate", "--npcs", "1", "--seconds", "0.1"],
    ] {
        let out = server().args(&args).args(["--map", map]).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        // The grid parser's message, once, after the file and the stage.
        assert_eq!(
            stderr.matches("input ended").count(),
            1,
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("empty.map: parse: line 1:"), "{stderr}");
    }
}

#[test]
fn human_logs_into_a_pipe_carry_no_colour_codes() {
    let mut child = server()
        .args(["run", "--listen", "127.0.0.1:0", "--npcs", "5"])
        .env("MMO_METRICS_LISTEN", "127.0.0.1:0")
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("server started") {
        let mut line = Vec::new();
        let n = stdout.read_until(b'\n', &mut line).unwrap();
        assert!(n > 0, "no start line: {}", String::from_utf8_lossy(&seen));
        seen.extend(line);
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    stdout.read_to_end(&mut seen).unwrap();
    assert!(child.wait().unwrap().success());
    let text = String::from_utf8_lossy(&seen);
    assert!(text.contains("server stopped"), "{text}");
    assert!(
        !seen.contains(&0x1b),
        "escape codes in piped logs:\n{text:?}"
    );
}
