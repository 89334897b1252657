//! A session with the server: the QUIC endpoint, the login, the control stream read in the
//! background, inputs sent as datagrams, and the view rebuilt from delta snapshots.

use std::net::SocketAddr;
use std::time::Duration;

use protocol::codec::{FrameReader, decode_datagram, encode_datagram, encode_frame};
use protocol::{
    ClientDatagram, ClientMessage, Command, DisconnectReason, Input, PROTOCOL_VERSION, Received,
    ServerDatagram, ServerMessage, Shown, Snapshot, View, ViewHistory, Welcome,
};
use quinn::{Connection, ConnectionError, SendStream};
use thiserror::Error;
use tokio::sync::mpsc;

use crate::tls::{TransportLimits, Trust, client_config};

/// Why a client operation failed.
#[derive(Debug, Error)]
pub enum ClientError {
    /// The QUIC endpoint or connection could not be set up.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The server ended the session.
    #[error("disconnected by the server ({reason:?}): {text}")]
    Disconnected {
        /// The reason.
        reason: DisconnectReason,
        /// The server's text.
        text: String,
    },
    /// The connection closed without a disconnect message.
    #[error("connection closed: {0}")]
    Closed(String),
    /// The server sent something this client cannot use.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The server did not answer in time (it keeps the connection alive, but says
    /// nothing).
    #[error("timed out: {0}")]
    TimedOut(String),
}

/// How long [`Client::connect`] waits for the server's welcome after logging in.
pub const WELCOME_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A client QUIC endpoint on an ephemeral local port that accepts the server certificates
/// `trust` allows.
pub fn endpoint(server: SocketAddr, trust: Trust) -> Result<quinn::Endpoint, ClientError> {
    bind_endpoint(server, trust, None)
}

/// [`endpoint`] whose socket asks the kernel for a receive buffer of
/// `receive_buffer_bytes` (Linux grants at most `net.core.rmem_max`). One endpoint serving
/// many connections, as a load-test swarm's does, receives every server tick's snapshots
/// in one burst; with the default buffer (about 200 KB on Linux) the kernel drops what
/// does not fit before the process can read it.
pub fn endpoint_with_receive_buffer(
    server: SocketAddr,
    trust: Trust,
    receive_buffer_bytes: usize,
) -> Result<quinn::Endpoint, ClientError> {
    bind_endpoint(server, trust, Some(receive_buffer_bytes))
}

fn bind_endpoint(
    server: SocketAddr,
    trust: Trust,
    receive_buffer_bytes: Option<usize>,
) -> Result<quinn::Endpoint, ClientError> {
    use std::net::{Ipv4Addr, Ipv6Addr};
    let local: SocketAddr = match (server.is_ipv6(), server.ip().is_loopback()) {
        (false, true) => (Ipv4Addr::LOCALHOST, 0).into(),
        (true, true) => (Ipv6Addr::LOCALHOST, 0).into(),
        (false, false) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        (true, false) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let connect = |err: std::io::Error| ClientError::Connect(err.to_string());
    let socket = std::net::UdpSocket::bind(local).map_err(connect)?;
    if let Some(bytes) = receive_buffer_bytes {
        // Best effort: a smaller grant leaves a smaller buffer, not an error.
        let _ = socket2::SockRef::from(&socket).set_recv_buffer_size(bytes);
    }
    let mut endpoint = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        socket,
        std::sync::Arc::new(quinn::TokioRuntime),
    )
    .map_err(connect)?;
    let limits = TransportLimits {
        idle_timeout: Duration::from_secs(15),
        keep_alive: Duration::from_secs(4),
    };
    let config =
        client_config(trust, limits).map_err(|err| ClientError::Connect(err.to_string()))?;
    endpoint.set_default_client_config(config);
    Ok(endpoint)
}

/// Opens a QUIC connection and the control stream, without saying anything yet (tests use
/// this to misbehave).
pub async fn open(
    endpoint: &quinn::Endpoint,
    server: SocketAddr,
) -> Result<(Connection, SendStream, quinn::RecvStream), ClientError> {
    let connecting = endpoint
        .connect(server, "localhost")
        .map_err(|err| ClientError::Connect(err.to_string()))?;
    let conn = connecting
        .await
        .map_err(|err| ClientError::Connect(err.to_string()))?;
    match conn.open_bi().await {
        Ok((send, recv)) => Ok((conn, send, recv)),
        Err(err) => Err(closed_error(&err)),
    }
}

/// A connection error as the server's disconnect when it closed with one of our codes.
fn closed_error(err: &ConnectionError) -> ClientError {
    match close_reason(err) {
        Some((reason, text)) => ClientError::Disconnected { reason, text },
        None => ClientError::Closed(err.to_string()),
    }
}

/// The reason a closed connection gives, if the server closed it with one of ours.
pub fn close_reason(err: &ConnectionError) -> Option<(DisconnectReason, String)> {
    match err {
        ConnectionError::ApplicationClosed(close) => {
            let reason = DisconnectReason::from_code(close.error_code.into_inner())?;
            Some((reason, String::from_utf8_lossy(&close.reason).into_owned()))
        }
        _ => None,
    }
}

/// A logged-in session.
pub struct Client {
    conn: Connection,
    send: SendStream,
    control: mpsc::Receiver<Result<ServerMessage, ClientError>>,
    welcome: Welcome,
    history: ViewHistory,
    /// What to draw: of each entity, what the snapshots carried last.
    shown: Shown,
    seq: u32,
    /// Snapshots dropped because their baseline was no longer held.
    pub missing_baselines: u64,
    /// Snapshots dropped because a newer one had been applied.
    pub stale: u64,
}

impl Client {
    /// Connects, says hello, logs in as `name` and waits for the welcome, at most
    /// [`WELCOME_TIMEOUT`] (a server whose QUIC stack answers keep-alives keeps the
    /// connection open whatever the server itself does).
    pub async fn connect(
        endpoint: &quinn::Endpoint,
        server: SocketAddr,
        name: &str,
    ) -> Result<Client, ClientError> {
        let (conn, mut send, recv) = open(endpoint, server).await?;
        let greeting = [
            ClientMessage::Hello {
                version: PROTOCOL_VERSION,
            },
            ClientMessage::Login {
                name: name.to_owned(),
                token: None,
            },
        ];
        for message in &greeting {
            if let Err(err) = write(&mut send, message).await {
                return Err(match conn.close_reason() {
                    Some(closed) => closed_error(&closed),
                    None => err,
                });
            }
        }
        let mut control = spawn_reader(conn.clone(), recv);
        let Ok(answer) = tokio::time::timeout(WELCOME_TIMEOUT, control.recv()).await else {
            conn.close(0u32.into(), b"no welcome");
            return Err(ClientError::TimedOut(format!(
                "no welcome within {WELCOME_TIMEOUT:?} of the login"
            )));
        };
        let welcome = match answer {
            Some(Ok(ServerMessage::Welcome(welcome))) => welcome,
            Some(Ok(ServerMessage::Disconnect { reason, text })) => {
                return Err(ClientError::Disconnected { reason, text });
            }
            Some(Ok(other)) => {
                return Err(ClientError::Protocol(format!(
                    "expected a welcome, got {other:?}"
                )));
            }
            Some(Err(err)) => return Err(err),
            None => return Err(ClientError::Closed("before the welcome".to_owned())),
        };
        Ok(Client {
            conn,
            send,
            control,
            welcome,
            history: ViewHistory::new(),
            shown: Shown::new(),
            seq: 0,
            missing_baselines: 0,
            stale: 0,
        })
    }

    /// The server's welcome.
    pub fn welcome(&self) -> &Welcome {
        &self.welcome
    }

    /// The QUIC connection.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The newest view and its tick: what the next snapshots are deltas against.
    pub fn view(&self) -> Option<(u64, &View)> {
        self.history.newest()
    }

    /// What to draw: of each entity, what the received snapshots carried last. Unlike the
    /// newest view, it never steps an entity back to an older state when acknowledgements
    /// take longer than a tick to reach the server (see [`Shown`]).
    pub fn shown(&self) -> &Shown {
        &self.shown
    }

    /// Sends a command (acknowledging the newest snapshot); returns its sequence number.
    pub fn send_command(&mut self, command: Command) -> Result<u32, ClientError> {
        self.seq += 1;
        let input = Input {
            seq: self.seq,
            ack_tick: self.history.newest().map(|(tick, _)| tick),
            command,
        };
        self.send_datagram(&ClientDatagram::Input(input))?;
        Ok(self.seq)
    }

    /// Sends raw bytes as a datagram (tests use this to send garbage).
    pub fn send_raw(&self, bytes: Vec<u8>) -> Result<(), ClientError> {
        self.conn
            .send_datagram(bytes.into())
            .map_err(|err| ClientError::Closed(err.to_string()))
    }

    fn send_datagram(&self, datagram: &ClientDatagram) -> Result<(), ClientError> {
        let bytes =
            encode_datagram(datagram).map_err(|err| ClientError::Protocol(err.to_string()))?;
        self.send_raw(bytes)
    }

    /// Sends a control message.
    pub async fn send_message(&mut self, message: &ClientMessage) -> Result<(), ClientError> {
        write(&mut self.send, message).await
    }

    /// Waits for the next snapshot that applies, applies it and returns it. Snapshots out
    /// of order or without a held baseline are skipped (and counted).
    pub async fn next_snapshot(&mut self) -> Result<Snapshot, ClientError> {
        loop {
            let datagram = match self.conn.read_datagram().await {
                Ok(datagram) => datagram,
                Err(err) => return Err(self.closed(err).await),
            };
            let ServerDatagram::Snapshot(snapshot) = decode_datagram(&datagram)
                .map_err(|err| ClientError::Protocol(format!("bad snapshot: {err}")))?;
            let received = self.history.receive(&snapshot).map_err(|err| {
                ClientError::Protocol(format!("snapshot {}: {err}", snapshot.tick))
            })?;
            match received {
                Received::Applied => {
                    if let Some((_, view)) = self.history.newest() {
                        self.shown.update(&snapshot, view);
                    }
                }
                Received::Stale => {
                    self.stale += 1;
                    continue;
                }
                Received::MissingBaseline => {
                    self.missing_baselines += 1;
                    continue;
                }
            }
            return Ok(snapshot);
        }
    }

    /// Waits for the next control message from the server.
    pub async fn next_message(&mut self) -> Result<ServerMessage, ClientError> {
        match self.control.recv().await {
            Some(result) => result,
            None => Err(ClientError::Closed("control stream ended".to_owned())),
        }
    }

    /// Says goodbye and waits for the server to close the connection (at most a second).
    pub async fn leave(mut self) {
        let _ = write(&mut self.send, &ClientMessage::Leave).await;
        let _ = tokio::time::timeout(Duration::from_secs(1), self.conn.closed()).await;
    }

    /// Turns a connection error into the server's disconnect, when it sent one.
    async fn closed(&mut self, err: ConnectionError) -> ClientError {
        while let Ok(message) = self.control.try_recv() {
            if let Ok(ServerMessage::Disconnect { reason, text }) = message {
                return ClientError::Disconnected { reason, text };
            }
        }
        closed_error(&err)
    }
}

async fn write(send: &mut SendStream, message: &ClientMessage) -> Result<(), ClientError> {
    let frame = encode_frame(message).map_err(|err| ClientError::Protocol(err.to_string()))?;
    send.write_all(&frame)
        .await
        .map_err(|err| ClientError::Closed(err.to_string()))
}

/// Reads control frames in the background; ends with the disconnect or the close reason.
fn spawn_reader(
    conn: Connection,
    mut recv: quinn::RecvStream,
) -> mpsc::Receiver<Result<ServerMessage, ClientError>> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut reader = FrameReader::new();
        let mut buf = vec![0u8; 4096];
        loop {
            loop {
                match reader.next_message::<ServerMessage>() {
                    Ok(Some(message)) => {
                        if tx.send(Ok(message)).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(err) => {
                        let _ = tx.send(Err(ClientError::Protocol(err.to_string()))).await;
                        return;
                    }
                }
            }
            match recv.read(&mut buf).await {
                Ok(Some(n)) => reader.push(&buf[..n]),
                Ok(None) | Err(_) => {
                    let err = closed_error(&conn.closed().await);
                    let _ = tx.send(Err(err)).await;
                    return;
                }
            }
        }
    });
    rx
}
