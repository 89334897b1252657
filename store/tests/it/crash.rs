//! `kill -9` of a writer: a child process (this test binary, running `writer_child`) saves
//! batches in a loop and reports each one `save_batch` acknowledged; the parent kills it at
//! some point and checks that the store holds every acknowledged batch, whole, and nothing
//! half-written.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use store::StoreSpec;

use crate::embedded::TempDir;
use crate::save;

/// The environment variable that hands the child its store: a directory, or a URL.
const SPEC_VAR: &str = "STORE_CRASH_TEST_SPEC";
/// Accounts written in every batch.
const ACCOUNTS: usize = 50;

fn spec_from_env(text: &str) -> StoreSpec {
    text.parse()
        .unwrap_or_else(|_| StoreSpec::Embedded { dir: text.into() })
}

/// The child: batch `i` moves every account to x = i, so its version must be i + 1.
#[test]
#[ignore = "run as a child process by the crash tests"]
fn writer_child() {
    let spec =
        spec_from_env(&std::env::var(SPEC_VAR).expect("set by the crash tests, which run this"));
    let mut store = store::open(&spec).unwrap();
    let first = store.load("p00").unwrap().map_or(0, |c| c.version);
    for i in first.. {
        let batch: Vec<_> = (0..ACCOUNTS)
            .map(|a| save(&format!("p{a:02}"), [i as f32, a as f32], i as i64))
            .collect();
        store.save_batch(&batch).unwrap();
        println!("ack {i}");
    }
}

/// Kills a writer after `acks` acknowledged batches, three times on the same store, and
/// checks the store after each kill. With `exclusive`, a second process must not be able to
/// open the store while the writer lives.
fn kill_writer_and_check(spec_text: &str, exclusive: bool) {
    for acks in [3u64, 11, 25] {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "crash::writer_child", "--nocapture"])
            .env(SPEC_VAR, spec_text)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut last_ack = None;
        let mut seen = 0;
        while seen < acks {
            let line = lines.next().expect("the writer stopped early").unwrap();
            if let Some(i) = line.strip_prefix("ack ") {
                last_ack = Some(i.parse::<u64>().unwrap());
                seen += 1;
            }
        }
        if exclusive {
            let Err(err) = store::open(&spec_from_env(spec_text)) else {
                panic!("a second process opened the store while the writer had it");
            };
            assert!(matches!(err, store::StoreError::Open { .. }), "{err}");
        }
        // SIGKILL: no destructor, no flush, no clean shutdown.
        child.kill().unwrap();
        child.wait().unwrap();
        // Acknowledgements printed before the kill may still sit in the pipe.
        for line in lines.map_while(Result::ok) {
            if let Some(i) = line.strip_prefix("ack ") {
                last_ack = Some(i.parse().unwrap());
            }
        }
        let last_ack = last_ack.unwrap();

        let mut store = store::open(&spec_from_env(spec_text)).unwrap();
        let all = store.all().unwrap();
        assert_eq!(all.len(), ACCOUNTS, "after {acks} acks");
        let version = all[0].version;
        // The acknowledged batch is there; the one in flight may or may not be.
        assert!(
            version == last_ack + 1 || version == last_ack + 2,
            "version {version} after the last acknowledged batch {last_ack}"
        );
        for (a, character) in all.iter().enumerate() {
            // Every account from the same batch: batches are all or nothing.
            assert_eq!(character.version, version, "{}", character.account);
            assert_eq!(
                character.pos,
                [(version - 1) as f32, a as f32],
                "{}",
                character.account
            );
            assert_eq!(character.updated_ms, (version - 1) as i64);
            assert_eq!(character.created_ms, 0);
        }
    }
}

#[test]
fn embedded_keeps_every_acknowledged_batch_through_kill_9() {
    let dir = TempDir::new();
    kill_writer_and_check(dir.path().to_str().unwrap(), true);
}

#[test]
fn postgres_keeps_every_acknowledged_batch_through_kill_9() {
    let server = store::test_postgres::TestPostgres::start()
        .expect("cannot start the test PostgreSQL server");
    kill_writer_and_check(&server.url(), false);
}
