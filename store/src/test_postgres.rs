//! A throwaway PostgreSQL server for tests (feature `test-postgres`).
//!
//! [`TestPostgres::start`] runs the Debian `postgresql` binaries (`initdb`, `pg_ctl`) from
//! `/usr/lib/postgresql/<version>/bin`, or from the directory in `PG_BIN` when set: it
//! initialises a cluster in a fresh directory under the system's temporary directory, starts
//! it on a free loopback port (and a unix socket in the same directory), and creates a
//! database. Dropping the value stops the server and removes the directory.
//!
//! PostgreSQL refuses to run as root, so when the tests run as root every command runs as the
//! `postgres` user (which the Debian package creates) through `runuser`.
//!
//! This is test code: missing binaries are an error with a message that says how to install
//! them, never a silent skip.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// Why the test server could not be started or driven.
#[derive(Debug, thiserror::Error)]
pub enum TestPostgresError {
    /// No `initdb` was found.
    #[error(
        "PostgreSQL binaries not found (looked for {looked_in}); install them with \
         `apt-get install -y postgresql` or set PG_BIN to the directory holding initdb"
    )]
    Missing {
        /// Where the binaries were looked for.
        looked_in: String,
    },
    /// A command could not be run or exited with an error.
    #[error("`{command}` failed: {detail}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status and output, or why it could not be spawned.
        detail: String,
    },
}

/// A running PostgreSQL server in its own temporary directory.
#[derive(Debug)]
pub struct TestPostgres {
    bin: PathBuf,
    root: PathBuf,
    port: u16,
    as_postgres_user: bool,
    running: bool,
    /// Whether PostgreSQL flushes its writes to disk (`fsync`).
    fsync: bool,
}

/// The database every test server creates.
pub const TEST_DATABASE: &str = "store_test";

impl TestPostgres {
    /// Initialises a cluster, starts it and creates [`TEST_DATABASE`]. The server runs
    /// with `fsync=off` (see [`TestPostgres::start_durable`]).
    pub fn start() -> Result<Self, TestPostgresError> {
        Self::start_with(false)
    }

    /// The same with PostgreSQL's own flushes to disk on (`fsync=on`, its default), for
    /// measuring what a real deployment pays per commit.
    pub fn start_durable() -> Result<Self, TestPostgresError> {
        Self::start_with(true)
    }

    fn start_with(fsync: bool) -> Result<Self, TestPostgresError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let bin = find_bin()?;
        let as_postgres_user = run(Command::new("id").arg("-u"))?.trim() == "0";
        let root = std::env::temp_dir().join(format!(
            "store-pg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut server = Self {
            bin,
            root,
            port: 0,
            as_postgres_user,
            running: false,
            fsync,
        };
        // The directory is created by the user that runs the server, so that it owns it.
        server.run_as_server(Command::new("mkdir").arg("-p").arg(server.data_dir()))?;
        let mut initdb = Command::new(server.bin.join("initdb"));
        initdb.arg("-D").arg(server.data_dir()).args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        ]);
        server.run_as_server(&mut initdb)?;
        // A port taken between the probe and the start makes pg_ctl fail: try a few.
        let mut last_error = None;
        for _ in 0..5 {
            server.port = free_port()?;
            match server.start_again() {
                Ok(()) => {
                    last_error = None;
                    break;
                }
                Err(e) => last_error = Some(e),
            }
        }
        if let Some(e) = last_error {
            return Err(e);
        }
        let mut createdb = Command::new(server.bin.join("createdb"));
        createdb
            .args(["-h", "127.0.0.1", "-U", "postgres", "-p"])
            .arg(server.port.to_string())
            .arg(TEST_DATABASE);
        server.run_as_server(&mut createdb)?;
        Ok(server)
    }

    /// The URL of [`TEST_DATABASE`] over TCP on the loopback address.
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{TEST_DATABASE}",
            self.port
        )
    }

    /// The server's TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server (fast shutdown: sessions are disconnected); the data stays.
    pub fn stop(&mut self) -> Result<(), TestPostgresError> {
        let mut stop = Command::new(self.bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(self.data_dir())
            .args(["-m", "fast", "-w", "stop"]);
        self.run_as_server(&mut stop)?;
        self.running = false;
        Ok(())
    }

    /// Starts the stopped server again on the same directory and port.
    pub fn start_again(&mut self) -> Result<(), TestPostgresError> {
        // fsync is off unless asked for: tests kill clients and stop the server cleanly, never the machine, so
        // PostgreSQL's own flushes to disk prove nothing here and only slow the tests down.
        let options = format!(
            "-p {} -h 127.0.0.1 -k {} -c fsync={} -c shared_buffers=16MB -c max_connections=40",
            self.port,
            self.root.display(),
            if self.fsync { "on" } else { "off" }
        );
        let mut start = Command::new(self.bin.join("pg_ctl"));
        start
            .arg("-D")
            .arg(self.data_dir())
            .arg("-l")
            .arg(self.root.join("server.log"))
            .args(["-w", "-t", "30", "-o", &options, "start"]);
        self.run_as_server(&mut start)?;
        self.running = true;
        Ok(())
    }

    fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    fn run_as_server(&self, command: &mut Command) -> Result<String, TestPostgresError> {
        if self.as_postgres_user {
            let mut wrapped = Command::new("runuser");
            wrapped
                .args(["-u", "postgres", "--"])
                .arg(command.get_program())
                .args(command.get_args());
            run(&mut wrapped)
        } else {
            run(command)
        }
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        if self.running {
            let mut stop = Command::new(self.bin.join("pg_ctl"));
            stop.arg("-D")
                .arg(self.data_dir())
                .args(["-m", "immediate", "-w", "stop"]);
            let _ = self.run_as_server(&mut stop);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin`, or `PG_BIN`.
fn find_bin() -> Result<PathBuf, TestPostgresError> {
    if let Some(dir) = std::env::var_os("PG_BIN") {
        let dir = PathBuf::from(dir);
        return if dir.join("initdb").is_file() {
            Ok(dir)
        } else {
            Err(TestPostgresError::Missing {
                looked_in: format!("PG_BIN={}", dir.display()),
            })
        };
    }
    let base = Path::new("/usr/lib/postgresql");
    let newest = std::fs::read_dir(base)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version);
    newest
        .map(|(_, bin)| bin)
        .ok_or(TestPostgresError::Missing {
            looked_in: format!("{}/*/bin/initdb", base.display()),
        })
}

fn free_port() -> Result<u16, TestPostgresError> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| TestPostgresError::Command {
            command: "bind 127.0.0.1:0".into(),
            detail: e.to_string(),
        })
}

fn run(command: &mut Command) -> Result<String, TestPostgresError> {
    let line = format!("{command:?}");
    let output: Output = command.output().map_err(|e| TestPostgresError::Command {
        command: line.clone(),
        detail: e.to_string(),
    })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(TestPostgresError::Command {
            command: line,
            detail: format!(
                "{}\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        })
    }
}
