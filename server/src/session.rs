//! One client's session: the handshake on the control stream, then inputs from datagrams
//! to the world, pings, and the session's end with a reason.
//!
//! Everything from the client is checked here, before the world sees it: frames and
//! datagrams decode within their size limits, inputs carry finite numbers inside the map
//! and arrive no faster than the input rate. Invalid messages are dropped and counted, the
//! client is told (`Event::InvalidInput`, at most once a second), and after
//! [`protocol::MAX_INVALID_MESSAGES`] the session ends with `TooManyInvalid`. A client
//! whose QUIC connection takes datagrams, but none big enough for a snapshot, is refused
//! at login with `DatagramsUnsupported`; one that takes none at all gets its snapshots on a
//! stream ([`link`]). Browsers come over WebTransport ([`crate::webtransport`]), which
//! [`link`] hides from the rest.
//!
//! Logins are checked in [`login`]: with a public key configured the login's token must be
//! signed for it and name the login's account; one account has at most one live session
//! (a second login is refused, see [`login`] for why). Every refused login is
//! `LoginRejected` with a text saying why, counted in `mmo_logins_rejected_total{why}`.
//!
//! The rules live in [`machine`], a state machine without I/O that takes each message with
//! the time and returns what to do; this module is its async shell: it reads the
//! connection, counts, writes, and talks to the world thread.

pub mod link;
pub mod login;
pub mod machine;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use protocol::codec::{FrameReader, encode_frame};
use protocol::{
    Bounds, ClientMessage, DecodeError, DisconnectReason, Event, PROTOCOL_VERSION, ServerMessage,
    Welcome,
};
use quinn::{Connection, RecvStream, SendStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::timeout;
use tracing::{debug, info, warn};

use crate::cluster::gateway::JOIN_ANSWERED_WITHIN;
use crate::config::MIN_SNAPSHOT_BYTES;
use crate::game::{Joined, Kick, SessionId, ToWorld};
use crate::metrics::{InputDrop, Invalid, Metrics};
use crate::persist::{Claimed, LoadError, Persist};
use link::{Link, LinkError};
use login::{LiveAccounts, Rejected};
use machine::{End, Handshake, HandshakeStep, InvalidKind, Session, Verdict, bad_frame};

/// HTTP/3's `H3_REQUEST_REJECTED`: the close code of a connection whose WebTransport
/// request opened no session.
const H3_REQUEST_REJECTED: u32 = 0x010b;

/// Longest a session waits for the world to place its character, once its saved state
/// is loaded. `server run`'s world answers within a tick and a gateway within
/// [`JOIN_ANSWERED_WITHIN`]; past this the answer is lost or the world is stuck, and the
/// session ends rather than holding its connection slot and its account for ever.
const JOIN_DEADLINE: Duration = JOIN_ANSWERED_WITHIN.saturating_add(Duration::from_secs(2));

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
    /// Where characters are kept; `None` when the server keeps none.
    pub persist: Option<Persist>,
    /// The public key login tokens must be signed for; `None`: development mode, the
    /// login's name is its account, unproven.
    pub auth_key: Option<auth::PublicKey>,
    /// The accounts with a live session (one each).
    pub accounts: Arc<LiveAccounts>,
}

/// How a session ended, for the caller's bookkeeping.
#[derive(Debug)]
pub enum Ending {
    /// The server closed it with this reason.
    Disconnected(DisconnectReason),
    /// The connection was lost (timeout, reset, client closed without leaving).
    Lost,
}

/// Runs one session to its end.
pub async fn run(session: SessionId, conn: Connection, ctx: Arc<SessionContext>) -> Ending {
    let peer = conn.remote_address();
    let opened = match timeout(ctx.handshake_timeout, handshake(&conn, &ctx)).await {
        Ok(opened) => opened,
        Err(_) => {
            let end = End::handshake_timeout(ctx.handshake_timeout);
            return disconnect(&conn, None, end, &ctx).await;
        }
    };
    let Open {
        link,
        mut send,
        recv,
        name,
        spectate,
        reader,
    } = match opened {
        Opened::Ready(open) => *open,
        Opened::Refused { send, end } => return disconnect(&conn, Some(send), end, &ctx).await,
        Opened::Lost => return lost(&conn, &ctx),
    };
    // Held until the session ends, however it ends: the account is free again after. A
    // spectator holds no character, so it claims nothing.
    let _claim = match spectate {
        Some(_) => None,
        None => match ctx.accounts.claim(&name) {
            Some(claim) => Some(claim),
            None => {
                let rejected = Rejected::already_logged_in(&name);
                ctx.metrics.login_rejected(rejected.why);
                return disconnect(&conn, Some(send), rejected.end, &ctx).await;
            }
        },
    };
    // And in the store, for the processes that share it (a cluster's gateways: see
    // `persist::claims`); given back when the session ends.
    let mut stored_claim = match (&ctx.persist, spectate) {
        (Some(persist), None) => match persist.claim(&name).await {
            Ok(Some(claim)) => Some(claim),
            Ok(None) => {
                let rejected = Rejected::already_logged_in(&name);
                ctx.metrics.login_rejected(rejected.why);
                return disconnect(&conn, Some(send), rejected.end, &ctx).await;
            }
            Err(err) => return disconnect(&conn, Some(send), load_refused(&err), &ctx).await,
        },
        _ => None,
    };

    let (kick_tx, mut kick_rx) = mpsc::channel(4);
    let closed = async {
        conn.closed().await;
    };
    let login = stored_claim.as_ref().map_or(0, Claimed::login);
    if let Some(claim) = &stored_claim {
        // Should another process take the account (its claim lapsed while the store was
        // out of reach), this session ends: the account is live there now.
        let lost = claim.lost();
        let kick = kick_tx.clone();
        tokio::spawn(async move {
            if lost.await {
                let text = "this account logged in elsewhere while the server could not \
                            reach the character store";
                let kicked = Kick {
                    reason: DisconnectReason::LoginRejected,
                    text: text.to_owned(),
                };
                let _ = kick.send(kicked).await;
            }
        });
    }
    let joined = match join_world(
        session,
        (&name, login),
        spectate,
        &link,
        kick_tx,
        &ctx,
        closed,
    )
    .await
    {
        Ok(joined) => joined,
        Err(NotJoined::Refused(end)) => return disconnect(&conn, Some(send), end, &ctx).await,
        Err(NotJoined::Closed) => {
            debug!(session, %peer, %name, "the connection closed while its character was placed");
            return lost(&conn, &ctx);
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
        let claim = stored_claim.take();
        let _ = ctx.world.send(ToWorld::Leave { session, claim }).await;
        return lost(&conn, &ctx);
    }
    ctx.metrics.clients.inc();
    info!(
        session,
        %peer,
        %name,
        entity = ?joined.entity,
        webtransport = link.path.is_some(),
        snapshots_on_stream = link.streams_snapshots(),
        "session started"
    );

    // The control stream is read by a task of its own (stopped when the session ends, the
    // stream dropped with it), so that each input datagram wakes the loop below without
    // polling the stream again.
    let (chunks, reading) = read_in_background(recv);
    let _reading = AbortOnDrop(reading);
    let served = serve(
        session,
        &link,
        (&mut send, chunks, reader),
        &mut kick_rx,
        &ctx,
    )
    .await;
    ctx.metrics.clients.dec();
    let claim = stored_claim.take();
    let _ = ctx.world.send(ToWorld::Leave { session, claim }).await;
    let ending = match served {
        Ok(Lost) => lost(&conn, &ctx),
        Err(end) => disconnect(&conn, Some(send), end, &ctx).await,
    };
    info!(session, %peer, ending = ?ending, "session ended");
    ending
}

/// The connection went away without a reason (timeout, reset, the client closed it).
struct Lost;

/// A finished handshake: the control stream, the player's name, and frames already read
/// past the login.
struct Open {
    link: Link,
    send: SendStream,
    recv: RecvStream,
    name: String,
    /// Where a spectator's view starts; `None` for a player.
    spectate: Option<(f32, f32)>,
    reader: FrameReader,
}

/// How a handshake ended.
enum Opened {
    /// Hello and login were accepted.
    Ready(Box<Open>),
    /// The client was refused; the reason goes out on its control stream.
    Refused {
        /// The control stream.
        send: SendStream,
        /// Why.
        end: End,
    },
    /// The connection or its control stream went away.
    Lost,
}

/// What reading the control stream gave.
enum Frame {
    /// A whole message.
    Message(ClientMessage),
    /// A frame that does not decode.
    Bad(DecodeError),
    /// The stream ended (or the connection went away).
    Ended,
}

/// Why a session got no character.
#[derive(Debug)]
enum NotJoined {
    /// Refused, or not answered in time; the client is told this.
    Refused(End),
    /// The connection closed while the session waited.
    Closed,
}

/// Asks the world thread for a character and waits for it, at most [`JOIN_DEADLINE`] and
/// no longer than the connection lasts (`closed`).
/// `login` is the login's number in the store ([`Claimed::login`]).
async fn join_world(
    session: SessionId,
    (name, login): (&str, u64),
    spectate: Option<(f32, f32)>,
    link: &Link,
    kick: mpsc::Sender<Kick>,
    ctx: &SessionContext,
    closed: impl Future<Output = ()>,
) -> Result<Joined, NotJoined> {
    let (reply, answer) = oneshot::channel();
    // A known account resumes where it was saved on this map; a new one spawns as usual.
    let (resume_at, saved_order) = match &ctx.persist {
        _ if spectate.is_some() => (None, None),
        None => (None, None),
        Some(persist) => match persist.load(name).await {
            Ok(Some(character)) => {
                let at = sim::Vec2::new(character.pos[0], character.pos[1]);
                ((character.map == ctx.map_id).then_some(at), character.order)
            }
            Ok(None) => (None, None),
            Err(err) => return Err(NotJoined::Refused(load_refused(&err))),
        },
    };
    let join = ToWorld::Join {
        session,
        name: name.to_owned(),
        login,
        resume_at,
        saved_order,
        spectate: spectate.map(|(x, y)| sim::Vec2::new(x, y)),
        sink: link.sink(),
        kick,
        reply,
    };
    await_join(&ctx.world, session, (join, answer), JOIN_DEADLINE, closed).await
}

/// Hands the world a join and waits for its answer, at most `deadline` and no longer
/// than `closed` takes. A session that gives up tells the world it left, so that the
/// character, should it be placed after all, is taken out again: the answer may have been
/// sent just as the session gave up, so the leave waits for room in a full inbox rather
/// than be dropped (the world also takes out a character whose answer finds no one).
async fn await_join(
    world: &mpsc::Sender<ToWorld>,
    session: SessionId,
    (join, answer): (ToWorld, oneshot::Receiver<Result<Joined, DisconnectReason>>),
    deadline: Duration,
    closed: impl Future<Output = ()>,
) -> Result<Joined, NotJoined> {
    let asked = async {
        world.send(join).await.map_err(|_| End::world_stopped())?;
        match answer.await {
            Ok(Ok(joined)) => Ok(joined),
            Ok(Err(reason)) => Err(End::join_refused(reason)),
            Err(_) => Err(End::world_stopped()),
        }
    };
    let gave_up = tokio::select! {
        answered = timeout(deadline, asked) => match answered {
            Ok(answered) => return answered.map_err(NotJoined::Refused),
            Err(_) => {
                warn!(session, ?deadline, "the world did not answer a join in time");
                NotJoined::Refused(End::new(
                    DisconnectReason::Internal,
                    format!("the world did not place your character within {deadline:?}; try again"),
                ))
            }
        },
        () = closed => NotJoined::Closed,
    };
    let leave = ToWorld::Leave {
        session,
        claim: None,
    };
    let _ = world.send(leave).await;
    Err(gave_up)
}

/// What a login is told when its character could not be loaded. Both are `Internal`
/// (the protocol has no reason of its own for a damaged record; `LoginRejected` is about
/// the login's name and token); only an unavailable store is worth trying again.
pub(crate) fn load_refused(err: &LoadError) -> End {
    let text = match err {
        LoadError::Unavailable => format!("{err}; try again shortly"),
        LoadError::Corrupt { .. } => err.to_string(),
    };
    End::new(DisconnectReason::Internal, text)
}

/// Accepts the control stream and drives the [`Handshake`] through hello and login.
async fn handshake(conn: &Connection, ctx: &SessionContext) -> Opened {
    let (link, send, mut recv) = match Link::open(conn).await {
        Ok(opened) => opened,
        Err(LinkError::Lost) => return Opened::Lost,
        Err(LinkError::WebTransport(err)) => {
            // A request that opened no session (already answered, when it was one) is
            // an invalid message; the connection is of no further use.
            debug!(%err, "no WebTransport session");
            count_invalid(InvalidKind::Frame, ctx);
            conn.close(H3_REQUEST_REJECTED.into(), err.to_string().as_bytes());
            return Opened::Lost;
        }
    };
    // The peer's transport parameters, datagram support among them, are known once the
    // QUIC handshake is done, which it is by now.
    let mut machine = Handshake::new(
        link.max_snapshot_bytes(),
        MIN_SNAPSHOT_BYTES as usize,
        ctx.auth_key,
    );
    let mut reader = FrameReader::new();
    let mut buf = vec![0u8; 4096];
    loop {
        let message = match next_frame(&mut recv, &mut reader, &mut buf, ctx).await {
            Frame::Message(message) => message,
            Frame::Bad(err) => {
                count_invalid(InvalidKind::Frame, ctx);
                let end = bad_frame(&err);
                return Opened::Refused { send, end };
            }
            Frame::Ended => return Opened::Lost,
        };
        match machine.on_frame(message, unix_secs_now()) {
            HandshakeStep::AwaitLogin => {}
            HandshakeStep::Join { name, spectate } => {
                return Opened::Ready(Box::new(Open {
                    link,
                    send,
                    recv,
                    name,
                    spectate,
                    reader,
                }));
            }
            HandshakeStep::Refuse(end) => return Opened::Refused { send, end },
            HandshakeStep::Reject(Rejected { why, end }) => {
                ctx.metrics.login_rejected(why);
                return Opened::Refused { send, end };
            }
        }
    }
}

/// The wall-clock time in Unix seconds, for token expiry (0 for a clock before 1970,
/// which only makes tokens look younger than they are).
fn unix_secs_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Reads the control stream until one whole frame is there.
async fn next_frame(
    recv: &mut RecvStream,
    reader: &mut FrameReader,
    buf: &mut [u8],
    ctx: &SessionContext,
) -> Frame {
    loop {
        match reader.next_message::<ClientMessage>() {
            Ok(Some(message)) => return Frame::Message(message),
            Ok(None) => {}
            Err(err) => return Frame::Bad(err),
        }
        match recv.read(buf).await {
            Ok(Some(n)) => {
                ctx.metrics.bytes_in.inc_by(n as u64);
                reader.push(&buf[..n]);
            }
            Ok(None) | Err(_) => return Frame::Ended,
        }
    }
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

/// Bytes read from the control stream at most at once.
const CHUNK_BYTES: usize = 4096;

/// Reads the control stream into a channel, in a task of its own: each chunk as it comes,
/// then `None` once the stream ends or fails. The channel holds a few chunks; while it is
/// full the task stops reading, and QUIC's flow control holds the client back.
fn read_in_background(
    mut recv: RecvStream,
) -> (mpsc::Receiver<Option<Bytes>>, tokio::task::JoinHandle<()>) {
    let (chunks, rx) = mpsc::channel(4);
    let task = tokio::spawn(async move {
        loop {
            let chunk = match recv.read_chunk(CHUNK_BYTES, true).await {
                Ok(Some(chunk)) => Some(chunk.bytes),
                Ok(None) | Err(_) => None,
            };
            let ended = chunk.is_none();
            if chunks.send(chunk).await.is_err() || ended {
                // Kept until the session ends and stops the task: dropping the stream
                // would ask the client to stop sending on it.
                std::future::pending::<()>().await;
            }
        }
    });
    (rx, task)
}

/// Stops a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The session's main loop, after the welcome: feeds datagrams and control-stream frames
/// (read by [`read_in_background`]) to the [`Session`] and carries out its verdicts;
/// watches for kicks and the shutdown.
async fn serve(
    session: SessionId,
    link: &Link,
    stream: (&mut SendStream, mpsc::Receiver<Option<Bytes>>, FrameReader),
    kick: &mut mpsc::Receiver<Kick>,
    ctx: &SessionContext,
) -> Result<Lost, End> {
    let (send, mut chunks, mut reader) = stream;
    let mut machine = Session::new(ctx.bounds, ctx.input_rate_per_sec, Instant::now());
    let mut shutdown = ctx.shutdown.clone();
    drain_frames(&mut reader, &mut machine, session, send, ctx).await?;
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
            datagram = link.read_datagram() => {
                let Ok(datagram) = datagram else { return Ok(Lost) };
                ctx.metrics.datagrams_in.inc();
                let Some(datagram) = datagram else {
                    let verdict = machine.on_foreign_datagram(Instant::now());
                    carry_out(verdict, session, send, ctx).await?;
                    continue;
                };
                ctx.metrics.bytes_in.inc_by(datagram.len() as u64);
                let verdict = machine.on_datagram(&datagram, Instant::now());
                carry_out(verdict, session, send, ctx).await?;
            }
            chunk = chunks.recv() => {
                let Some(Some(chunk)) = chunk else { return Ok(Lost) };
                ctx.metrics.bytes_in.inc_by(chunk.len() as u64);
                reader.push(&chunk);
                drain_frames(&mut reader, &mut machine, session, send, ctx).await?;
            }
            // Once every sender is gone (the world thread stopped) the branch is off: a
            // closed channel must not wake the loop again at once, for ever.
            Some(Kick { reason, text }) = kick.recv() => {
                return Err(End::new(reason, text));
            }
            changed = shutdown.changed(), if !notified => {
                if changed.is_err() || *shutdown.borrow() {
                    notice_shutdown(send, grace_end.as_mut(), ctx).await?;
                    notified = true;
                }
            }
            () = &mut grace_end => return Err(End::shutdown()),
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

/// Feeds every whole frame the reader holds to the session.
async fn drain_frames(
    reader: &mut FrameReader,
    machine: &mut Session,
    session: SessionId,
    send: &mut SendStream,
    ctx: &SessionContext,
) -> Result<(), End> {
    loop {
        let verdict = match reader.next_message::<ClientMessage>() {
            Ok(None) => return Ok(()),
            Ok(Some(message)) => machine.on_frame(message, Instant::now()),
            Err(err) => machine.on_bad_frame(&err),
        };
        carry_out(verdict, session, send, ctx).await?;
    }
}

/// Does what the session decided: counts, replies, forwards, or ends.
async fn carry_out(
    verdict: Verdict,
    session: SessionId,
    send: &mut SendStream,
    ctx: &SessionContext,
) -> Result<(), End> {
    match verdict {
        Verdict::Nothing => Ok(()),
        Verdict::Reply(message) => write(send, &message, ctx).await,
        Verdict::Forward(input) => {
            if ctx
                .world
                .try_send(ToWorld::Input { session, input })
                .is_err()
            {
                ctx.metrics.input_dropped(InputDrop::QueueFull);
            }
            Ok(())
        }
        Verdict::RateLimited => {
            ctx.metrics.input_dropped(InputDrop::RateLimited);
            Ok(())
        }
        Verdict::Invalid { kind, tell } => {
            count_invalid(kind, ctx);
            match tell {
                Some(event) => write(send, &event, ctx).await,
                None => Ok(()),
            }
        }
        Verdict::End { end, invalid } => {
            if let Some(kind) = invalid {
                count_invalid(kind, ctx);
            }
            Err(end)
        }
    }
}

fn count_invalid(kind: InvalidKind, ctx: &SessionContext) {
    ctx.metrics.invalid(match kind {
        InvalidKind::Datagram => Invalid::Datagram,
        InvalidKind::Frame => Invalid::Frame,
        InvalidKind::Input => Invalid::Input,
    });
}

/// The session ends without a reason to give: the connection is closed here too, since
/// the server's tasks that still hold it (a WebTransport session's stream reader, a
/// stream sink) would keep a connection the client leaves open alive, uncounted by the
/// connection limits.
fn lost(conn: &Connection, ctx: &SessionContext) -> Ending {
    conn.close(0u32.into(), b"");
    ctx.metrics.connections_lost.inc();
    Ending::Lost
}

/// Tells the client why (a disconnect frame when the stream is open), waits briefly for it
/// to arrive, and closes the connection with the reason's code.
async fn disconnect(
    conn: &Connection,
    send: Option<SendStream>,
    end: End,
    ctx: &SessionContext,
) -> Ending {
    let End { reason, text } = end;
    ctx.metrics.disconnected(reason);
    debug!(reason = reason.name(), text, "disconnecting");
    if let Some(mut send) = send {
        let frame = encode_frame(&ServerMessage::Disconnect {
            reason,
            text: text.clone(),
        });
        if let Ok(frame) = frame {
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
mod tests;
