//! The QUIC endpoint's UDP socket: bound here with receive and send buffers sized for
//! bursts, then watched for datagrams the kernel dropped, with a periodic log line of
//! connection problems.
//!
//! A UDP socket keeps the kernel's default receive buffer unless asked for more, and a
//! burst of packets (honest or not) that arrives faster than the endpoint reads overflows
//! it: the kernel drops the excess without telling anyone. So [`bind`] asks for buffers
//! of several MiB, reads back what the kernel granted (the kernel caps a request at
//! `net.core.rmem_max` / `net.core.wmem_max`) and warns when that is less. [`watch()`]
//! samples the socket's drop count (Linux: the `drops` column of `/proc/net/udp` and
//! `/proc/net/udp6` for the socket's inode) into a metric, and once per
//! [`SUMMARY_PERIOD`] logs how many handshakes failed, connections were refused, client
//! messages were invalid and datagrams were dropped, when any were.
//!
//! Packets that are not QUIC at all are discarded inside quinn without a count: they show
//! only as kernel drops, and only when they overflow the buffer.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use socket2::SockRef;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::metrics::{HandshakeFailure, Invalid, Metrics, Refusal};

/// How often [`watch()`] reads the socket's drop count.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(1);
/// How often [`watch()`] logs a summary of connection problems (when there were any).
pub const SUMMARY_PERIOD: Duration = Duration::from_secs(10);

/// Socket buffer sizes to ask the kernel for, bytes.
#[derive(Clone, Copy, Debug)]
pub struct BufferSizes {
    /// Receive buffer (`SO_RCVBUF`).
    pub recv_bytes: usize,
    /// Send buffer (`SO_SNDBUF`).
    pub send_bytes: usize,
}

/// One buffer: what was asked and what the kernel granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Granted {
    /// Bytes asked for.
    pub asked: usize,
    /// Bytes of data the kernel allows, comparable with `asked`.
    pub granted: usize,
    /// The figure the kernel reports (`getsockopt`, and `ss -uam`'s `rb`/`tb`): on Linux
    /// twice `granted`, the other half being the kernel's bookkeeping allowance.
    pub reported: usize,
}

impl Granted {
    /// From the size asked and the size `getsockopt` reads back.
    fn new(asked: usize, reported: usize) -> Granted {
        // Linux doubles the value set and reports the doubled value; comparing the
        // report with the request directly would hide a request capped at half.
        let granted = if cfg!(target_os = "linux") {
            reported / 2
        } else {
            reported
        };
        Granted {
            asked,
            granted,
            reported,
        }
    }

    /// Whether the kernel granted less than asked.
    pub fn is_short(&self) -> bool {
        self.granted < self.asked
    }
}

/// A bound socket, ready for `quinn::Endpoint::new`.
#[derive(Debug)]
pub struct QuicSocket {
    /// The socket.
    pub socket: UdpSocket,
    /// Its receive buffer.
    pub recv: Granted,
    /// Its send buffer.
    pub send: Granted,
    /// The socket's inode, which names it in `/proc/net/udp`; `None` where unknown.
    pub inode: Option<u64>,
}

/// Binds a UDP socket to `addr` (as `quinn::Endpoint::server` does) and sizes its buffers.
/// A kernel that grants less than asked is not an error: the shortfall is logged with the
/// setting that caps it.
pub fn bind(addr: SocketAddr, sizes: BufferSizes) -> io::Result<QuicSocket> {
    let socket = UdpSocket::bind(addr)?;
    let sock = SockRef::from(&socket);
    // A refused request (an unprivileged process asking beyond a hard limit on some
    // systems) leaves the default buffer, which the read-back below reports.
    if let Err(err) = sock.set_recv_buffer_size(sizes.recv_bytes) {
        warn!(%err, asked_bytes = sizes.recv_bytes, "cannot size the QUIC socket's receive buffer");
    }
    if let Err(err) = sock.set_send_buffer_size(sizes.send_bytes) {
        warn!(%err, asked_bytes = sizes.send_bytes, "cannot size the QUIC socket's send buffer");
    }
    let recv = Granted::new(sizes.recv_bytes, sock.recv_buffer_size()?);
    let send = Granted::new(sizes.send_bytes, sock.send_buffer_size()?);
    for (buffer, granted, setting) in [
        ("receive", recv, "net.core.rmem_max"),
        ("send", send, "net.core.wmem_max"),
    ] {
        if granted.is_short() {
            warn!(
                setting,
                asked_bytes = granted.asked,
                granted_bytes = granted.granted,
                "the kernel granted the QUIC socket a smaller {buffer} buffer than asked; \
                 raise {setting} (sysctl) to at least the asked size"
            );
        }
    }
    info!(
        recv_buffer_bytes = recv.granted,
        send_buffer_bytes = send.granted,
        "QUIC socket bound"
    );
    let inode = inode_of(&socket);
    Ok(QuicSocket {
        socket,
        recv,
        send,
        inode,
    })
}

/// The socket's inode (what `/proc/net/udp` and `ss -e` name it by).
#[cfg(unix)]
fn inode_of(socket: &UdpSocket) -> Option<u64> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    // A duplicate descriptor as a `File` gives the socket's `fstat` without `unsafe`;
    // it is closed again at once.
    let file = std::fs::File::from(socket.as_fd().try_clone_to_owned().ok()?);
    file.metadata().ok().map(|meta| meta.ino())
}

#[cfg(not(unix))]
fn inode_of(_socket: &UdpSocket) -> Option<u64> {
    None
}

/// Datagrams the kernel dropped at the socket with this inode since it was opened;
/// `None` where the kernel does not say (not Linux, or the socket is not listed).
pub fn socket_drops(inode: u64) -> Option<u64> {
    ["/proc/net/udp", "/proc/net/udp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .find_map(|table| drops_in_table(&table, inode))
}

/// The `drops` column (the last) of the row of a `/proc/net/udp` table whose `inode`
/// column (the tenth) is `inode`.
fn drops_in_table(table: &str, inode: u64) -> Option<u64> {
    table.lines().skip(1).find_map(|row| {
        let columns: Vec<&str> = row.split_whitespace().collect();
        let row_inode: u64 = columns.get(9)?.parse().ok()?;
        if row_inode != inode {
            return None;
        }
        columns.last()?.parse().ok()
    })
}

/// Problem counts at one moment, for the periodic summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Problems {
    handshakes_failed: u64,
    handshakes_timed_out: u64,
    refused_server_full: u64,
    refused_per_address: u64,
    refused_shutting_down: u64,
    invalid_datagrams: u64,
    invalid_frames: u64,
    invalid_inputs: u64,
    socket_drops: u64,
}

impl Problems {
    /// The counts so far.
    fn read(metrics: &Metrics) -> Problems {
        Problems {
            handshakes_failed: metrics.handshakes_failed_for(HandshakeFailure::Error),
            handshakes_timed_out: metrics.handshakes_failed_for(HandshakeFailure::Timeout),
            refused_server_full: metrics.refused_for(Refusal::ServerFull),
            refused_per_address: metrics.refused_for(Refusal::PerAddress),
            refused_shutting_down: metrics.refused_for(Refusal::ShuttingDown),
            invalid_datagrams: metrics.invalid_for(Invalid::Datagram),
            invalid_frames: metrics.invalid_for(Invalid::Frame),
            invalid_inputs: metrics.invalid_for(Invalid::Input),
            socket_drops: metrics.udp_receive_drops.get(),
        }
    }

    /// Counts since `earlier`.
    fn since(&self, earlier: &Problems) -> Problems {
        Problems {
            handshakes_failed: self
                .handshakes_failed
                .saturating_sub(earlier.handshakes_failed),
            handshakes_timed_out: self
                .handshakes_timed_out
                .saturating_sub(earlier.handshakes_timed_out),
            refused_server_full: self
                .refused_server_full
                .saturating_sub(earlier.refused_server_full),
            refused_per_address: self
                .refused_per_address
                .saturating_sub(earlier.refused_per_address),
            refused_shutting_down: self
                .refused_shutting_down
                .saturating_sub(earlier.refused_shutting_down),
            invalid_datagrams: self
                .invalid_datagrams
                .saturating_sub(earlier.invalid_datagrams),
            invalid_frames: self.invalid_frames.saturating_sub(earlier.invalid_frames),
            invalid_inputs: self.invalid_inputs.saturating_sub(earlier.invalid_inputs),
            socket_drops: self.socket_drops.saturating_sub(earlier.socket_drops),
        }
    }

    fn any(&self) -> bool {
        *self != Problems::default()
    }
}

/// Samples the socket's drop count into `metrics` every [`SAMPLE_PERIOD`] and logs a
/// summary of connection problems every [`SUMMARY_PERIOD`] in which there were any. Ends
/// when `shutdown` flips to `true` (or its sender is gone).
pub async fn watch(metrics: Arc<Metrics>, inode: Option<u64>, mut shutdown: watch::Receiver<bool>) {
    // Drops before the server started (none for a fresh socket) are not this server's.
    let mut drops_seen = inode.and_then(socket_drops).unwrap_or(0);
    let mut reported = Problems::read(&metrics);
    let mut samples = tokio::time::interval(SAMPLE_PERIOD);
    samples.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let per_summary = (SUMMARY_PERIOD.as_millis() / SAMPLE_PERIOD.as_millis()).max(1);
    let mut sampled = 0u128;
    loop {
        tokio::select! {
            _ = samples.tick() => {}
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    return;
                }
                continue;
            }
        }
        if let Some(drops) = inode.and_then(socket_drops) {
            // The kernel's counter only grows while the socket lives; a smaller value
            // would mean another socket, and is not counted.
            metrics
                .udp_receive_drops
                .inc_by(drops.saturating_sub(drops_seen));
            drops_seen = drops_seen.max(drops);
        }
        sampled += 1;
        if !sampled.is_multiple_of(per_summary) {
            continue;
        }
        let now = Problems::read(&metrics);
        let new = now.since(&reported);
        reported = now;
        if new.any() {
            warn!(
                seconds = SUMMARY_PERIOD.as_secs(),
                handshakes_failed = new.handshakes_failed,
                handshakes_timed_out = new.handshakes_timed_out,
                refused_server_full = new.refused_server_full,
                refused_per_address = new.refused_per_address,
                refused_shutting_down = new.refused_shutting_down,
                invalid_datagrams = new.invalid_datagrams,
                invalid_frames = new.invalid_frames,
                invalid_inputs = new.invalid_inputs,
                socket_drops = new.socket_drops,
                "connection problems since the last summary"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_read_from_the_row_of_the_inode() {
        let table = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  171: 0100007F:1151 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4711 2 0000000000000000 0
  172: 0100007F:1152 00000000:0000 07 00000000:00034000 00:00000000 00000000     0        0 4712 2 0000000000000000 153
";
        assert_eq!(drops_in_table(table, 4711), Some(0));
        assert_eq!(drops_in_table(table, 4712), Some(153));
        assert_eq!(drops_in_table(table, 4713), None);
        assert_eq!(drops_in_table("", 4711), None);
        assert_eq!(drops_in_table("header\ngarbage row\n", 4711), None);
    }

    #[test]
    fn a_linux_report_is_twice_the_grant() {
        let granted = Granted::new(4 << 20, 8 << 20);
        if cfg!(target_os = "linux") {
            assert_eq!(granted.granted, 4 << 20);
            assert!(!granted.is_short());
            // Capped at half the request: the report equals the request, yet it is short.
            assert!(Granted::new(8 << 20, 8 << 20).is_short());
        }
    }

    /// A socket nobody reads overflows its small buffer, and the kernel's count of the
    /// datagrams it dropped is found by the socket's inode.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_kernel_drop_count_of_a_flooded_socket_is_read() {
        let small = BufferSizes {
            recv_bytes: 4096,
            send_bytes: 64 * 1024,
        };
        let flooded = bind("127.0.0.1:0".parse().unwrap(), small).unwrap();
        let inode = flooded.inode.expect("an inode");
        assert_eq!(socket_drops(inode), Some(0));
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = flooded.socket.local_addr().unwrap();
        for _ in 0..500 {
            // Loopback sends do not fail when the receiver is full: the receiver drops.
            let _ = sender.send_to(&[0xab; 1000], to);
        }
        let drops = socket_drops(inode).expect("the socket is listed");
        assert!(drops > 400, "{drops} of 500 dropped");
    }

    #[test]
    fn buffers_are_granted_as_asked_where_the_kernel_allows() {
        let sizes = BufferSizes {
            recv_bytes: 1 << 20,
            send_bytes: 1 << 20,
        };
        let bound = bind("127.0.0.1:0".parse().unwrap(), sizes).unwrap();
        assert_eq!(bound.recv.asked, 1 << 20);
        let max = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|text| text.trim().parse::<usize>().ok());
        match max {
            Some(max) if max >= 1 << 20 => assert_eq!(bound.recv.granted, 1 << 20),
            Some(max) => {
                assert_eq!(bound.recv.granted, max);
                assert!(bound.recv.is_short());
            }
            None => {}
        }
    }
}
