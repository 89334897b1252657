//! The session's rules without I/O, after quinn-proto: the handshake ([`Handshake`]) and
//! the session after the welcome ([`Session`]) take what the client sent, with the time
//! passed in, and return what to do. They own the input rate limit and the strike count;
//! they send nothing, read no clock and touch no metric, so every rejection is tested
//! here without sockets. The async shell in [`crate::session`] only drives them.

use std::time::{Duration, Instant};

use auth::PublicKey;
use protocol::codec::decode_datagram;
use protocol::{
    Bounds, ClientDatagram, ClientMessage, Command, DecodeError, DisconnectReason, Event, Input,
    MAX_INVALID_MESSAGES, MAX_PINGS_PER_SEC, PROTOCOL_VERSION, ServerMessage,
};

use super::login::{self, Rejected};

/// How often at most a client is told that its messages were invalid.
const TELL_EVERY: Duration = Duration::from_secs(1);

/// What kind of message was invalid; the shell counts each under its metric label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidKind {
    /// A datagram that does not decode.
    Datagram,
    /// A control frame that does not decode or comes out of order.
    Frame,
    /// An input with non-finite numbers, a point outside the map or a zero direction.
    Input,
}

/// A session's end: the reason (sent in the disconnect frame and as the QUIC close code)
/// and a text for the client's user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct End {
    /// Why, as a code.
    pub reason: DisconnectReason,
    /// Why, for a human.
    pub text: String,
}

impl End {
    /// An end with this reason and text.
    pub fn new(reason: DisconnectReason, text: impl Into<String>) -> End {
        End {
            reason,
            text: text.into(),
        }
    }

    /// The end of a client that did not finish hello and login within `limit`.
    pub fn handshake_timeout(limit: Duration) -> End {
        End::new(
            DisconnectReason::Timeout,
            format!("hello and login must finish within {limit:?}"),
        )
    }

    /// The end of a session the world would not give a character.
    pub fn join_refused(reason: DisconnectReason) -> End {
        match reason {
            DisconnectReason::ServerFull => End::new(reason, "the server is full"),
            _ => End::new(reason, "the world could not place your character"),
        }
    }

    /// The end of a session whose world thread has stopped.
    pub fn world_stopped() -> End {
        End::new(DisconnectReason::Shutdown, "the world has stopped")
    }

    /// The end of a session when the server shuts down.
    pub fn shutdown() -> End {
        End::new(DisconnectReason::Shutdown, "the server is shutting down")
    }
}

/// A control frame that does not decode ends the session: an oversized frame with
/// `FrameTooLarge`, any other with `BadMessage` (the length was fine, so the stream is
/// still in step, but a client writing garbage on its reliable stream is broken). The
/// frame counts as invalid ([`InvalidKind::Frame`]).
pub fn bad_frame(err: &DecodeError) -> End {
    let reason = match err {
        DecodeError::TooLarge { .. } => DisconnectReason::FrameTooLarge,
        _ => DisconnectReason::BadMessage,
    };
    End::new(reason, format!("bad control frame: {err}"))
}

/// The handshake: hello, then login (its name and token, [`login::check`]), then the
/// check that the client can receive snapshots.
#[derive(Debug)]
pub struct Handshake {
    /// Whether hello has come.
    greeted: bool,
    /// The public key login tokens must be signed for; `None`: development mode.
    key: Option<PublicKey>,
    /// The largest datagram the client's connection accepts; `None`: none at all.
    max_datagram_bytes: Option<usize>,
    /// The smallest datagram limit that still carries a snapshot.
    min_datagram_bytes: usize,
}

/// What the shell does after a handshake frame.
#[derive(Debug, PartialEq)]
pub enum HandshakeStep {
    /// Hello taken; read the login next.
    AwaitLogin,
    /// Login accepted: ask the world for a character for this player, or, for a
    /// spectator, for a view from this point.
    Join {
        /// The player's name, checked; it is also the account (the token's, when a key
        /// is configured).
        name: String,
        /// Where a spectator's view starts; `None` for a player.
        spectate: Option<(f32, f32)>,
    },
    /// Refused: disconnect with this.
    Refuse(End),
    /// The login was refused (`LoginRejected`): count it and disconnect.
    Reject(Rejected),
}

impl Handshake {
    /// A handshake on a connection whose peer accepts datagrams up to
    /// `max_datagram_bytes` (`None`: no datagrams), needing at least `min_datagram_bytes`;
    /// logins need a token signed for `key`, when there is one.
    pub fn new(
        max_datagram_bytes: Option<usize>,
        min_datagram_bytes: usize,
        key: Option<PublicKey>,
    ) -> Handshake {
        Handshake {
            greeted: false,
            key,
            max_datagram_bytes,
            min_datagram_bytes,
        }
    }

    /// Takes the next control frame, at `now_unix_secs` (for the token's expiry).
    pub fn on_frame(&mut self, message: ClientMessage, now_unix_secs: u64) -> HandshakeStep {
        if !self.greeted {
            return match message {
                ClientMessage::Hello { version } if version == PROTOCOL_VERSION => {
                    self.greeted = true;
                    HandshakeStep::AwaitLogin
                }
                ClientMessage::Hello { version } => HandshakeStep::Refuse(End::new(
                    DisconnectReason::VersionMismatch,
                    format!(
                        "client speaks protocol version {version}, this server speaks version {PROTOCOL_VERSION}"
                    ),
                )),
                _ => HandshakeStep::Refuse(End::new(
                    DisconnectReason::BadMessage,
                    "the first message must be hello",
                )),
            };
        }
        let (name, token, spectate) = match message {
            ClientMessage::Login { name, token } => (name, token, None),
            ClientMessage::Spectate { name, token, x, y } if x.is_finite() && y.is_finite() => {
                (name, token, Some((x, y)))
            }
            ClientMessage::Spectate { x, y, .. } => {
                return HandshakeStep::Refuse(End::new(
                    DisconnectReason::BadMessage,
                    format!("the spectator's point ({x}, {y}) is not finite"),
                ));
            }
            _ => {
                return HandshakeStep::Refuse(End::new(
                    DisconnectReason::BadMessage,
                    "the second message must be login (or spectate)",
                ));
            }
        };
        let name = match login::check(&name, token.as_deref(), self.key.as_ref(), now_unix_secs) {
            Ok(account) => account,
            Err(rejected) => return HandshakeStep::Reject(rejected),
        };
        // A client that cannot take a snapshot datagram would hold a slot and see nothing.
        match self.max_datagram_bytes {
            None => HandshakeStep::Refuse(End::new(
                DisconnectReason::DatagramsUnsupported,
                "your QUIC connection does not accept datagrams (RFC 9221); snapshots are sent as datagrams",
            )),
            Some(max) if max < self.min_datagram_bytes => HandshakeStep::Refuse(End::new(
                DisconnectReason::DatagramsUnsupported,
                format!(
                    "your QUIC connection accepts datagrams of at most {max} bytes; snapshots need {}",
                    self.min_datagram_bytes
                ),
            )),
            Some(_) => HandshakeStep::Join { name, spectate },
        }
    }
}

/// What the shell does after a message of a session past its welcome.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Nothing.
    Nothing,
    /// Send this on the control stream.
    Reply(ServerMessage),
    /// Hand this checked input to the world.
    Forward(Input),
    /// The input came above the rate limit and is dropped (counted as rate limited).
    RateLimited,
    /// An invalid message, dropped and counted as `kind`; `tell` is the event for the
    /// client, when it was not told within the last second.
    Invalid {
        /// What was invalid.
        kind: InvalidKind,
        /// The event to send.
        tell: Option<ServerMessage>,
    },
    /// End the session; `invalid` is the invalid message that ended it, to be counted.
    End {
        /// Why.
        end: End,
        /// The message that ended it, when it was invalid.
        invalid: Option<InvalidKind>,
    },
}

/// A session after its welcome: checks inputs, limits their rate, answers pings (at most
/// [`MAX_PINGS_PER_SEC`] a second) and counts invalid messages up to [`MAX_INVALID_MESSAGES`].
#[derive(Debug)]
pub struct Session {
    bounds: Bounds,
    rate: RateLimit,
    pings: RateLimit,
    strikes: Strikes,
}

impl Session {
    /// A session on a map with these bounds, taking `input_rate_per_sec` inputs a second
    /// (a second's worth at once), starting at `now`.
    pub fn new(bounds: Bounds, input_rate_per_sec: u32, now: Instant) -> Session {
        Session {
            bounds,
            rate: RateLimit::new(input_rate_per_sec, now),
            pings: RateLimit::new(MAX_PINGS_PER_SEC, now),
            strikes: Strikes::default(),
        }
    }

    /// Takes a control frame.
    pub fn on_frame(&mut self, message: ClientMessage, now: Instant) -> Verdict {
        match message {
            ClientMessage::Ping { nonce } => {
                if self.pings.allow(now) {
                    Verdict::Reply(ServerMessage::Pong { nonce })
                } else {
                    let why = format!("more than {MAX_PINGS_PER_SEC} pings a second");
                    self.strike(InvalidKind::Frame, why, now)
                }
            }
            ClientMessage::Pong { .. } => Verdict::Nothing,
            ClientMessage::Leave => Verdict::End {
                end: End::new(DisconnectReason::ClientLeft, "goodbye"),
                invalid: None,
            },
            ClientMessage::Input(input) => self.on_input(input, now),
            ClientMessage::Hello { .. }
            | ClientMessage::Login { .. }
            | ClientMessage::Spectate { .. } => self.strike(
                InvalidKind::Frame,
                "hello and login (or spectate) come once, before the welcome".to_owned(),
                now,
            ),
        }
    }

    /// Takes a control frame that did not decode: the session ends ([`bad_frame`]).
    pub fn on_bad_frame(&mut self, err: &DecodeError) -> Verdict {
        Verdict::End {
            end: bad_frame(err),
            invalid: Some(InvalidKind::Frame),
        }
    }

    /// Takes a datagram.
    pub fn on_datagram(&mut self, bytes: &[u8], now: Instant) -> Verdict {
        let input = match decode_datagram::<ClientDatagram>(bytes) {
            Ok(ClientDatagram::Input(input)) => input,
            Err(err) => {
                return self.strike(
                    InvalidKind::Datagram,
                    format!("undecodable datagram: {err}"),
                    now,
                );
            }
        };
        self.on_input(input, now)
    }

    /// Takes a WebTransport datagram that names another session than this one (a
    /// connection holds one session): invalid, like a datagram that does not decode.
    pub fn on_foreign_datagram(&mut self, now: Instant) -> Verdict {
        let why = "a datagram of another WebTransport session than this one".to_owned();
        self.strike(InvalidKind::Datagram, why, now)
    }

    /// Takes a decoded input, from a datagram or the control stream.
    fn on_input(&mut self, input: protocol::Input, now: Instant) -> Verdict {
        if let Err(bad) = check_command(&input.command, &self.bounds) {
            return self.strike(InvalidKind::Input, bad.to_string(), now);
        }
        if self.rate.allow(now) {
            Verdict::Forward(input)
        } else {
            Verdict::RateLimited
        }
    }

    /// Counts an invalid message; ends the session at the limit.
    fn strike(&mut self, kind: InvalidKind, why: String, now: Instant) -> Verdict {
        let strikes = &mut self.strikes;
        strikes.count += 1;
        if strikes.count >= MAX_INVALID_MESSAGES {
            let text = format!("{} invalid messages; the last: {why}", strikes.count);
            return Verdict::End {
                end: End::new(DisconnectReason::TooManyInvalid, text),
                invalid: Some(kind),
            };
        }
        let tell = strikes
            .last_told
            .is_none_or(|told| now.saturating_duration_since(told) >= TELL_EVERY);
        let tell = tell.then(|| {
            strikes.last_told = Some(now);
            ServerMessage::Event(Event::InvalidInput {
                count: strikes.count,
                reason: why,
            })
        });
        Verdict::Invalid { kind, tell }
    }
}

/// Input rate limiting: a token bucket holding one second of inputs.
#[derive(Debug)]
struct RateLimit {
    tokens: f64,
    rate: f64,
    last: Instant,
}

impl RateLimit {
    fn new(rate_per_sec: u32, now: Instant) -> RateLimit {
        let rate = f64::from(rate_per_sec);
        RateLimit {
            tokens: rate,
            rate,
            last: now,
        }
    }

    fn allow(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.rate);
        self.last = self.last.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Invalid messages so far, and when the client was last told.
#[derive(Debug, Default)]
struct Strikes {
    count: u32,
    last_told: Option<Instant>,
}

/// Why an input's command is refused.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum BadCommand {
    /// A move-to point with a NaN or infinite coordinate.
    #[error("move-to point ({x}, {y}) is not finite")]
    PointNotFinite {
        /// x as sent.
        x: f32,
        /// y as sent.
        y: f32,
    },
    /// A move-to point outside the map's bounds.
    #[error("move-to point ({x}, {y}) is outside the map")]
    PointOutsideMap {
        /// x as sent.
        x: f32,
        /// y as sent.
        y: f32,
    },
    /// A direction whose length is not finite.
    #[error("direction ({x}, {y}) is not finite")]
    DirectionNotFinite {
        /// x as sent.
        x: f32,
        /// y as sent.
        y: f32,
    },
    /// A direction of (nearly) zero length.
    #[error("direction has zero length")]
    ZeroDirection,
}

/// Checks an input's numbers: finite, points inside the map, directions not zero.
pub fn check_command(command: &Command, bounds: &Bounds) -> Result<(), BadCommand> {
    match *command {
        Command::Nothing | Command::Stop => Ok(()),
        Command::MoveTo { x, y } => {
            if !(x.is_finite() && y.is_finite()) {
                Err(BadCommand::PointNotFinite { x, y })
            } else if !bounds.contains(x, y) {
                Err(BadCommand::PointOutsideMap { x, y })
            } else {
                Ok(())
            }
        }
        Command::Direction { x, y } => {
            let length = x.hypot(y);
            if !length.is_finite() {
                Err(BadCommand::DirectionNotFinite { x, y })
            } else if length < 1e-6 {
                Err(BadCommand::ZeroDirection)
            } else {
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests;
