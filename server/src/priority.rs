//! The scheduling priority of the world thread and the snapshot workers. The world's tick
//! waits on nothing but the CPU, and on a machine whose cores it shares with QUIC, the
//! snapshot workers and whatever else runs there, a tick that waits for a core is a late
//! tick for every player; a snapshot worker that waits for one hands some clients their
//! snapshots late, and the time between their snapshots varies. Either can ask the kernel
//! to run it first (a lower niceness, `world_nice` and `snapshot_nice`; off by default:
//! what they take first is missing elsewhere).

use tracing::{info, warn};

/// Asks the kernel to run the calling thread at niceness `nice` (Linux: −20 runs first,
/// 19 last; the setting is the thread's own, not the process's).
#[cfg(target_os = "linux")]
pub fn set_current_thread_nice(nice: i32) -> std::io::Result<()> {
    let thread = rustix::thread::gettid();
    rustix::process::setpriority_process(Some(thread), nice).map_err(std::io::Error::from)
}

/// Thread priorities are only set on Linux.
#[cfg(not(target_os = "linux"))]
pub fn set_current_thread_nice(_nice: i32) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "thread priorities are only set on Linux",
    ))
}

/// Sets the calling thread (named `thread` in the log) to niceness `nice`, and says in the
/// log what came of it. 0 leaves the thread as it is. Going below 0 needs the
/// `CAP_SYS_NICE` capability (root has it; a Docker container needs `cap_add: [SYS_NICE]`);
/// without it the thread keeps the process's priority and the server goes on.
pub fn apply(thread: &str, nice: i32) {
    if nice == 0 {
        return;
    }
    match set_current_thread_nice(nice) {
        Ok(()) => info!(thread, nice, "thread priority set"),
        Err(err) => warn!(
            thread,
            nice,
            %err,
            "cannot set the thread's priority (below 0 needs CAP_SYS_NICE; in Docker, \
             cap_add: [SYS_NICE]): it runs at the process's, and its ticks may be late \
             on a busy machine"
        ),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A thread may always lower its own priority (a higher niceness), and the kernel then
    /// reports the new value for that thread only.
    #[test]
    fn a_thread_sets_its_own_niceness() {
        let main_before = rustix::process::getpriority_process(None).unwrap();
        std::thread::spawn(|| {
            set_current_thread_nice(19).unwrap();
            let thread = rustix::thread::gettid();
            assert_eq!(
                rustix::process::getpriority_process(Some(thread)).unwrap(),
                19
            );
        })
        .join()
        .unwrap();
        assert_eq!(
            rustix::process::getpriority_process(None).unwrap(),
            main_before,
            "the process's own niceness is unchanged"
        );
    }
}
