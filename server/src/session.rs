//! One client's session: the handshake on the control stream, then inputs from datagrams
//! to the world, pings, and the session's end with a reason.
//!
//! Everything from the client is checked here, before the world sees it: frames and
//! datagrams decode within their size limits, inputs carry finite numbers inside the map
//! and arrive no faster than the input rate. Invalid messages are dropped and counted, the
//! client is told (`Event::InvalidInput`, at most once a second), and after
//! [`protocol::MAX_INVALID_MESSAGES`] the session ends with `TooManyInvalid`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol::codec::{FrameReader, decode_datagram, encode_frame};
use protocol::{
    Bounds, ClientDatagram, ClientMessage, Command, DecodeError, DisconnectReason, Event,
    MAX_INVALID_MESSAGES, MAX_NAME_CHARS, PROTOCOL_VERSION, ServerMessage, Welcome,
};
use quinn::{Connection, RecvStream, SendStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::timeout;
use tracing::{debug, info};

use crate::game::{Kick, SessionId, ToWorld};
use crate::metrics::{InputDrop, Invalid, Metrics};

/// What every session shares.
pub struct SessionContext {
    /// Server metrics.
    pub metrics: Arc<Metrics>,
    /// The world thread's inbox.
    pub world: mpsc::Sender<ToWorld>,
    /// Flips to `true` when the server starts shutting down.
    pub shutdown: watch::Receiver<bool>,
    /// Map name, bounds and view radius for the welcome.
    pub map_id: String,
    /// Map bounds.
    pub bounds: Bounds,
    /// View radius, metres.
    pub view_radius_m: f32,
    /// Time allowed for hello and login.
    pub handshake_timeout: Duration,
    /// Inputs per second allowed.
    pub input_rate_per_sec: u32,
    /// Time clients get to leave on shutdown.
    pub shutdown_grace: Duration,
}

/// How a session ended, for the caller's bookkeeping.
#[derive(Debug)]
pub enum Ending {
    /// The server closed it with this reason.
    Disconnected(DisconnectReason),
    /// The connection was lost (timeout, reset, client closed without leaving).
    Lost,
}

/// A session's failure that ends it with a reason.
struct End(DisconnectReason, String);

impl End {
    fn new(reason: DisconnectReason, text: impl Into<String>) -> End {
        End(reason, text.into())
    }
}

/// Runs one session to its end.
pub async fn run(session: SessionId, conn: Connection, ctx: Arc<SessionContext>) -> Ending {
    let peer = conn.remote_address();
    let handshake = timeout(ctx.handshake_timeout, handshake(&conn, &ctx)).await;
    let (mut send, mut recv, name, reader) = match handshake {
        Ok(Ok(open)) => open,
        Ok(Err(Some((send, End(reason, text))))) => {
            return disconnect(&conn, Some(send), reason, &text, &ctx).await;
        }
        Ok(Err(None)) => return lost(&ctx),
        Err(_) => {
            let text = format!(
                "hello and login must finish within {:?}",
                ctx.handshake_timeout
            );
            return disconnect(&conn, None, DisconnectReason::Timeout, &text, &ctx).await;
        }
    };

    let (kick_tx, mut kick_rx) = mpsc::channel(4);
    let joined = match join_world(session, &name, &conn, kick_tx, &ctx).await {
        Ok(joined) => joined,
        Err(End(reason, text)) => {
            return disconnect(&conn, Some(send), reason, &text, &ctx).await;
        }
    };
    let welcome = ServerMessage::Welcome(Welcome {
        version: PROTOCOL_VERSION,
        entity: joined.entity,
        tick_rate_hz: 20,
        map_id: ctx.map_id.clone(),
        bounds: ctx.bounds,
        view_radius_m: ctx.view_radius_m,
    });
    if write(&mut send, &welcome, &ctx).await.is_err() {
        let _ = ctx.world.send(ToWorld::Leave { session }).await;
        return lost(&ctx);
    }
    ctx.metrics.clients.inc();
    info!(session, %peer, %name, entity = ?joined.entity, "session started");

    let ending = serve(
        session,
        &conn,
        (&mut send, &mut recv, reader),
        &mut kick_rx,
        &ctx,
    )
    .await;
    ctx.metrics.clients.dec();
    let _ = ctx.world.send(ToWorld::Leave { session }).await;
    let ending = match ending {
        Ok(()) => {
            conn.close(0u32.into(), b"");
            lost(&ctx)
        }
        Err(End(reason, text)) => disconnect(&conn, Some(send), reason, &text, &ctx).await,
    };
    info!(session, %peer, ending = ?ending, "session ended");
    ending
}

/// The control stream, the player's name, and frames already read past the login.
type Open = (SendStream, RecvStream, String, FrameReader);

/// Asks the world thread for a character and waits for it.
async fn join_world(
    session: SessionId,
    name: &str,
    conn: &Connection,
    kick: mpsc::Sender<Kick>,
    ctx: &SessionContext,
) -> Result<crate::game::Joined, End> {
    let stopped = || End::new(DisconnectReason::Shutdown, "the world has stopped");
    let (reply, answer) = oneshot::channel();
    let join = ToWorld::Join {
        session,
        name: name.to_owned(),
        sink: Box::new(conn.clone()),
        kick,
        reply,
    };
    ctx.world.send(join).await.map_err(|_| stopped())?;
    match answer.await {
        Ok(Ok(joined)) => Ok(joined),
        Ok(Err(DisconnectReason::ServerFull)) => {
            Err(End::new(DisconnectReason::ServerFull, "the server is full"))
        }
        Ok(Err(reason)) => Err(End::new(reason, "the world could not place your character")),
        Err(_) => Err(stopped()),
    }
}

/// Accepts the control stream, reads hello and login. `Err(None)`: the connection died.
async fn handshake(
    conn: &Connection,
    ctx: &SessionContext,
) -> Result<Open, Option<(SendStream, End)>> {
    let (send, mut recv) = conn.accept_bi().await.map_err(|_| None)?;
    let mut reader = FrameReader::new();
    let mut buf = vec![0u8; 4096];
    let hello = match next_frame(&mut recv, &mut reader, &mut buf, ctx).await {
        Ok(Some(message)) => message,
        Ok(None) => return Err(None),
        Err(end) => return Err(Some((send, end))),
    };
    match hello {
        ClientMessage::Hello { version } if version == PROTOCOL_VERSION => {}
        ClientMessage::Hello { version } => {
            let text = format!(
                "client speaks protocol version {version}, this server speaks version {PROTOCOL_VERSION}"
            );
            return Err(Some((
                send,
                End::new(DisconnectReason::VersionMismatch, text),
            )));
        }
        _ => {
            let end = End::new(
                DisconnectReason::BadMessage,
                "the first message must be hello",
            );
            return Err(Some((send, end)));
        }
    }
    let login = match next_frame(&mut recv, &mut reader, &mut buf, ctx).await {
        Ok(Some(message)) => message,
        Ok(None) => return Err(None),
        Err(end) => return Err(Some((send, end))),
    };
    let ClientMessage::Login { name, token: _ } = login else {
        let end = End::new(
            DisconnectReason::BadMessage,
            "the second message must be login",
        );
        return Err(Some((send, end)));
    };
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        let text = format!(
            "a name is 1 to {MAX_NAME_CHARS} characters without control characters, got {chars} characters"
        );
        return Err(Some((
            send,
            End::new(DisconnectReason::LoginRejected, text),
        )));
    }
    Ok((send, recv, name, reader))
}

/// Reads the control stream until one whole frame is there. `Ok(None)`: the stream ended.
async fn next_frame(
    recv: &mut RecvStream,
    reader: &mut FrameReader,
    buf: &mut [u8],
    ctx: &SessionContext,
) -> Result<Option<ClientMessage>, End> {
    loop {
        match reader.next_message::<ClientMessage>() {
            Ok(Some(message)) => return Ok(Some(message)),
            Ok(None) => {}
            Err(err) => return Err(bad_frame(&err, ctx)),
        }
        match recv.read(buf).await {
            Ok(Some(n)) => {
                ctx.metrics.bytes_in.inc_by(n as u64);
                reader.push(&buf[..n]);
            }
            Ok(None) | Err(_) => return Ok(None),
        }
    }
}

/// Counts a control frame that does not decode and ends the session: an oversized frame
/// with `FrameTooLarge`, any other with `BadMessage` (the length was fine, so the stream is
/// still in step, but a client writing garbage on its reliable stream is broken).
fn bad_frame(err: &DecodeError, ctx: &SessionContext) -> End {
    ctx.metrics.invalid(Invalid::Frame);
    let reason = match err {
        DecodeError::TooLarge { .. } => DisconnectReason::FrameTooLarge,
        _ => DisconnectReason::BadMessage,
    };
    End::new(reason, format!("bad control frame: {err}"))
}

/// Writes one frame; a client that does not read its stream for 5 s is too slow.
async fn write(
    send: &mut SendStream,
    message: &ServerMessage,
    ctx: &SessionContext,
) -> Result<(), End> {
    let frame = encode_frame(message)
        .map_err(|err| End::new(DisconnectReason::Internal, format!("cannot encode: {err}")))?;
    match timeout(Duration::from_secs(5), send.write_all(&frame)).await {
        Ok(Ok(())) => {
            ctx.metrics.bytes_out.inc_by(frame.len() as u64);
            Ok(())
        }
        Ok(Err(_)) => Err(End::new(
            DisconnectReason::Internal,
            "control stream closed",
        )),
        Err(_) => Err(End::new(
            DisconnectReason::SlowClient,
            "the client does not read its control stream",
        )),
    }
}

/// Input rate limiting: a token bucket holding one second of inputs.
struct RateLimit {
    tokens: f64,
    rate: f64,
    last: Instant,
}

impl RateLimit {
    fn new(rate_per_sec: u32) -> RateLimit {
        let rate = f64::from(rate_per_sec);
        RateLimit {
            tokens: rate,
            rate,
            last: Instant::now(),
        }
    }

    fn allow(&mut self) -> bool {
        let now = Instant::now();
        self.tokens = (self.tokens + (now - self.last).as_secs_f64() * self.rate).min(self.rate);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Counts invalid messages and tells the client, at most once a second.
struct Strikes {
    count: u32,
    last_told: Option<Instant>,
}

/// The session's main loop, after the welcome. `Ok(())`: the connection was lost.
async fn serve(
    session: SessionId,
    conn: &Connection,
    stream: (&mut SendStream, &mut RecvStream, FrameReader),
    kick: &mut mpsc::Receiver<Kick>,
    ctx: &SessionContext,
) -> Result<(), End> {
    let (send, recv, mut reader) = stream;
    let mut buf = vec![0u8; 4096];
    let mut rate = RateLimit::new(ctx.input_rate_per_sec);
    let mut strikes = Strikes {
        count: 0,
        last_told: None,
    };
    let mut shutdown = ctx.shutdown.clone();
    drain_frames(&mut reader, send, &mut strikes, ctx).await?;
    // After a shutdown notice the session goes on for the grace period, then ends.
    let grace_end = tokio::time::sleep(Duration::from_secs(365 * 24 * 3600));
    tokio::pin!(grace_end);
    let mut notified = false;
    if *shutdown.borrow_and_update() {
        notice_shutdown(send, grace_end.as_mut(), ctx).await?;
        notified = true;
    }
    loop {
        tokio::select! {
            datagram = conn.read_datagram() => {
                let Ok(datagram) = datagram else { return Ok(()) };
                ctx.metrics.datagrams_in.inc();
                ctx.metrics.bytes_in.inc_by(datagram.len() as u64);
                let problem = match decode_datagram::<ClientDatagram>(&datagram) {
                    Err(err) => Some((Invalid::Datagram, format!("undecodable datagram: {err}"))),
                    Ok(ClientDatagram::Input(input)) => match check_command(&input.command, &ctx.bounds) {
                        Err(why) => Some((Invalid::Input, why)),
                        Ok(()) if !rate.allow() => {
                            ctx.metrics.input_dropped(InputDrop::RateLimited);
                            None
                        }
                        Ok(()) => {
                            if ctx.world.try_send(ToWorld::Input { session, input }).is_err() {
                                ctx.metrics.input_dropped(InputDrop::QueueFull);
                            }
                            None
                        }
                    },
                };
                if let Some((kind, why)) = problem {
                    strike(&mut strikes, kind, why, send, ctx).await?;
                }
            }
            read = recv.read(&mut buf) => {
                match read {
                    Ok(Some(n)) => {
                        ctx.metrics.bytes_in.inc_by(n as u64);
                        reader.push(&buf[..n]);
                    }
                    Ok(None) | Err(_) => return Ok(()),
                }
                drain_frames(&mut reader, send, &mut strikes, ctx).await?;
            }
            kicked = kick.recv() => {
                if let Some(Kick { reason, text }) = kicked {
                    return Err(End(reason, text));
                }
            }
            changed = shutdown.changed(), if !notified => {
                if changed.is_err() || *shutdown.borrow() {
                    notice_shutdown(send, grace_end.as_mut(), ctx).await?;
                    notified = true;
                }
            }
            () = &mut grace_end => {
                return Err(End::new(DisconnectReason::Shutdown, "the server is shutting down"));
            }
        }
    }
}

/// Tells the client the server is going down and starts the grace period.
async fn notice_shutdown(
    send: &mut SendStream,
    grace_end: std::pin::Pin<&mut tokio::time::Sleep>,
    ctx: &SessionContext,
) -> Result<(), End> {
    grace_end.reset(tokio::time::Instant::now() + ctx.shutdown_grace);
    let grace_ms = u32::try_from(ctx.shutdown_grace.as_millis()).unwrap_or(u32::MAX);
    write(
        send,
        &ServerMessage::Event(Event::ShuttingDown { grace_ms }),
        ctx,
    )
    .await
}

/// Handles every whole frame the reader holds.
async fn drain_frames(
    reader: &mut FrameReader,
    send: &mut SendStream,
    strikes: &mut Strikes,
    ctx: &SessionContext,
) -> Result<(), End> {
    loop {
        match reader.next_message::<ClientMessage>() {
            Ok(None) => return Ok(()),
            Ok(Some(ClientMessage::Ping { nonce })) => {
                write(send, &ServerMessage::Pong { nonce }, ctx).await?;
            }
            Ok(Some(ClientMessage::Pong { .. })) => {}
            Ok(Some(ClientMessage::Leave)) => {
                return Err(End::new(DisconnectReason::ClientLeft, "goodbye"));
            }
            Ok(Some(ClientMessage::Hello { .. } | ClientMessage::Login { .. })) => {
                let why = "hello and login come once, before the welcome".to_owned();
                strike(strikes, Invalid::Frame, why, send, ctx).await?;
            }
            Err(err) => return Err(bad_frame(&err, ctx)),
        }
    }
}

/// Counts an invalid message; ends the session at the limit.
async fn strike(
    strikes: &mut Strikes,
    kind: Invalid,
    why: String,
    send: &mut SendStream,
    ctx: &SessionContext,
) -> Result<(), End> {
    ctx.metrics.invalid(kind);
    strikes.count += 1;
    if strikes.count >= MAX_INVALID_MESSAGES {
        let text = format!("{} invalid messages; the last: {why}", strikes.count);
        return Err(End::new(DisconnectReason::TooManyInvalid, text));
    }
    let now = Instant::now();
    if strikes
        .last_told
        .is_none_or(|told| now - told >= Duration::from_secs(1))
    {
        strikes.last_told = Some(now);
        let event = ServerMessage::Event(Event::InvalidInput {
            count: strikes.count,
            reason: why,
        });
        write(send, &event, ctx).await?;
    }
    Ok(())
}

/// Checks an input's numbers: finite, points inside the map, directions not zero.
pub fn check_command(command: &Command, bounds: &Bounds) -> Result<(), String> {
    match *command {
        Command::Nothing | Command::Stop => Ok(()),
        Command::MoveTo { x, y } => {
            if !(x.is_finite() && y.is_finite()) {
                Err(format!("move-to point ({x}, {y}) is not finite"))
            } else if !bounds.contains(x, y) {
                Err(format!("move-to point ({x}, {y}) is outside the map"))
            } else {
                Ok(())
            }
        }
        Command::Direction { x, y } => {
            let length = x.hypot(y);
            if !length.is_finite() {
                Err(format!("direction ({x}, {y}) is not finite"))
            } else if length < 1e-6 {
                Err("direction has zero length".to_owned())
            } else {
                Ok(())
            }
        }
    }
}

fn lost(ctx: &SessionContext) -> Ending {
    ctx.metrics.connections_lost.inc();
    Ending::Lost
}

/// Tells the client why (a disconnect frame when the stream is open), waits briefly for it
/// to arrive, and closes the connection with the reason's code.
async fn disconnect(
    conn: &Connection,
    send: Option<SendStream>,
    reason: DisconnectReason,
    text: &str,
    ctx: &SessionContext,
) -> Ending {
    ctx.metrics.disconnected(reason);
    debug!(reason = reason.name(), text, "disconnecting");
    if let Some(mut send) = send {
        let message = ServerMessage::Disconnect {
            reason,
            text: text.to_owned(),
        };
        if let Ok(frame) = encode_frame(&message) {
            let delivered = async {
                send.write_all(&frame).await.ok()?;
                send.finish().ok()?;
                send.stopped().await.ok()
            };
            // Bounded: a client that does not read still gets the close code.
            let _ = timeout(Duration::from_millis(500), delivered).await;
        }
    }
    conn.close(reason.code().into(), text.as_bytes());
    Ending::Disconnected(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_limit_allows_a_second_of_inputs_then_refuses() {
        let mut rate = RateLimit::new(30);
        let allowed = (0..100).filter(|_| rate.allow()).count();
        // Tokens refill while the loop runs, but not by 70 in microseconds.
        assert!((30..=31).contains(&allowed), "{allowed}");
    }

    #[test]
    fn commands_are_checked() {
        let bounds = Bounds {
            min_x: 0.0,
            min_y: 0.0,
            max_x: 10.0,
            max_y: 10.0,
        };
        assert!(check_command(&Command::MoveTo { x: 5.0, y: 5.0 }, &bounds).is_ok());
        assert!(check_command(&Command::Stop, &bounds).is_ok());
        assert!(check_command(&Command::Direction { x: 0.0, y: -2.0 }, &bounds).is_ok());
        let bad = [
            Command::MoveTo {
                x: f32::NAN,
                y: 5.0,
            },
            Command::MoveTo {
                x: 5.0,
                y: f32::INFINITY,
            },
            Command::MoveTo { x: 11.0, y: 5.0 },
            Command::MoveTo { x: 5.0, y: -0.5 },
            Command::Direction { x: 0.0, y: 0.0 },
            Command::Direction {
                x: f32::NAN,
                y: 1.0,
            },
            Command::Direction {
                x: f32::MAX,
                y: f32::MAX,
            },
        ];
        for command in bad {
            assert!(check_command(&command, &bounds).is_err(), "{command:?}");
        }
    }
}
