//! The embedded store through faults of its file: a write that fails for want of room (the
//! fault passes, and the same handle must write again) and a damaged key (an error naming
//! it, not a panic).

use std::path::Path;
use std::process::Command;

use store::{EMBEDDED_FILE_NAME, Save, StoreError, StoreSpec};

use crate::embedded::TempDir;
use crate::save;

/// The environment variable that hands the child its store's directory.
const DIR_VAR: &str = "STORE_FAULT_TEST_DIR";

/// Sets this process's file size limit (`RLIMIT_FSIZE`, soft:hard) with util-linux's
/// `prlimit`: writes past it fail with `EFBIG`, as on a full disk.
fn limit_file_size(limit: &str) {
    let status = Command::new("prlimit")
        .arg("--pid")
        .arg(std::process::id().to_string())
        .arg(format!("--fsize={limit}"))
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success(), "prlimit --fsize={limit}");
}

/// The child: saves, then a batch that must grow the file while the file may not grow
/// (a retryable failure), then the same batch on the same handle once it may.
#[test]
#[ignore = "run as a child process by the test of a write that failed for want of room"]
fn room_child() {
    let dir = std::env::var(DIR_VAR).expect("set by the parent test");
    let spec = StoreSpec::Embedded { dir: dir.into() };
    let mut store = store::open(&spec).unwrap();
    store.save_batch(&[save("ada", [1.0, 1.0], 1)]).unwrap();
    let StoreSpec::Embedded { dir } = &spec else {
        unreachable!()
    };
    let len = std::fs::metadata(Path::new(dir).join(EMBEDDED_FILE_NAME))
        .unwrap()
        .len();
    let crowd: Vec<Save> = (0..5000)
        .map(|i| Save {
            name: "n".repeat(250),
            ..save(&format!("p{i:05}"), [i as f32, 0.0], 2)
        })
        .collect();
    limit_file_size(&format!("{len}:"));
    let err = store.save_batch(&crowd).unwrap_err();
    assert!(err.is_retryable(), "a full file is retryable: {err}");
    limit_file_size("unlimited:");
    assert_eq!(
        store.save_batch(&crowd).unwrap(),
        0,
        "the same handle writes again"
    );
    assert_eq!(store.load("p04999").unwrap().unwrap().pos, [4999.0, 0.0]);
    assert_eq!(store.load("ada").unwrap().unwrap().pos, [1.0, 1.0]);
    println!("child passed");
}

/// redb fails every call on a database whose I/O failed once, until it is opened again:
/// the store opens it again, so a fault that passes (a disk that had filled up) does not
/// leave the process unable to save for as long as it runs.
#[test]
fn a_write_that_failed_for_want_of_room_succeeds_once_there_is_room() {
    let dir = TempDir::new();
    // The child ignores SIGXFSZ, so that a write past the limit fails instead of killing it.
    let out = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; exec \"$0\" --ignored --exact faults::room_child --nocapture")
        .arg(std::env::current_exe().unwrap())
        .env(DIR_VAR, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("child passed"),
        "the child failed:\n{stdout}\n{stderr}"
    );
}

/// A key whose bytes are not UTF-8 (a damaged page) is a damaged record to `all`, not a
/// panic.
#[test]
fn a_damaged_key_is_an_error_not_a_panic() {
    let dir = TempDir::new();
    let spec = StoreSpec::Embedded {
        dir: dir.path().into(),
    };
    let marker = "QQQQQQQQQQQQQQQQQQQQ";
    store::open(&spec)
        .unwrap()
        .save_batch(&[save(marker, [1.0, 1.0], 1)])
        .unwrap();
    let path = dir.path().join(EMBEDDED_FILE_NAME);
    let mut bytes = std::fs::read(&path).unwrap();
    let mut damaged = 0;
    for at in 0..bytes.len().saturating_sub(marker.len()) {
        if bytes[at..].starts_with(marker.as_bytes()) {
            bytes[at] = 0xff;
            damaged += 1;
        }
    }
    assert!(damaged > 0, "the key is in the file");
    std::fs::write(&path, bytes).unwrap();
    let mut store = store::open(&spec).unwrap();
    match store.all() {
        Err(StoreError::Corrupt { reason, .. }) => assert!(reason.contains("key"), "{reason}"),
        other => panic!("expected a damaged record, got {other:?}"),
    }
}
