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
    MAX_INVALID_MESSAGES, PROTOCOL_VERSION, ServerMessage,
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

/// A session after its welcome: checks inputs, limits their rate, answers pings and
/// counts invalid messages up to [`MAX_INVALID_MESSAGES`].
#[derive(Debug)]
pub struct Session {
    bounds: Bounds,
    rate: RateLimit,
    strikes: Strikes,
}

impl Session {
    /// A session on a map with these bounds, taking `input_rate_per_sec` inputs a second
    /// (a second's worth at once), starting at `now`.
    pub fn new(bounds: Bounds, input_rate_per_sec: u32, now: Instant) -> Session {
        Session {
            bounds,
            rate: RateLimit::new(input_rate_per_sec, now),
            strikes: Strikes::default(),
        }
    }

    /// Takes a control frame.
    pub fn on_frame(&mut self, message: ClientMessage, now: Instant) -> Verdict {
        match message {
            ClientMessage::Ping { nonce } => Verdict::Reply(ServerMessage::Pong { nonce }),
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
mod tests {
    use protocol::MAX_NAME_CHARS;
    use protocol::codec::encode_datagram;

    use super::*;
    use crate::session::login::LoginRefusal;

    const BOUNDS: Bounds = Bounds {
        min_x: 0.0,
        min_y: 0.0,
        max_x: 10.0,
        max_y: 10.0,
    };

    fn hello() -> ClientMessage {
        ClientMessage::Hello {
            version: PROTOCOL_VERSION,
        }
    }

    fn login(name: &str) -> ClientMessage {
        ClientMessage::Login {
            name: name.to_owned(),
            token: None,
        }
    }

    /// Any time: development-mode logins carry no token to expire.
    const NOW: u64 = 1_800_000_000;

    fn refusal(step: HandshakeStep) -> End {
        match step {
            HandshakeStep::Refuse(end) => end,
            HandshakeStep::Reject(rejected) => rejected.end,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn input(command: Command) -> Vec<u8> {
        encode_datagram(&ClientDatagram::Input(Input {
            seq: 1,
            ack_tick: None,
            command,
        }))
        .unwrap()
    }

    #[test]
    fn a_handshake_takes_hello_then_login() {
        let mut handshake = Handshake::new(Some(1_150), 200, None);
        assert_eq!(handshake.on_frame(hello(), NOW), HandshakeStep::AwaitLogin);
        assert_eq!(
            handshake.on_frame(login("ada"), NOW),
            HandshakeStep::Join {
                name: "ada".to_owned(),
                spectate: None,
            }
        );
        // A spectator logs in the same way, with its point; a point must be finite.
        let spectate = |x: f32| ClientMessage::Spectate {
            name: "eve".to_owned(),
            token: None,
            x,
            y: 2.0,
        };
        let mut handshake = Handshake::new(Some(1_150), 200, None);
        handshake.on_frame(hello(), NOW);
        assert_eq!(
            handshake.on_frame(spectate(1.0), NOW),
            HandshakeStep::Join {
                name: "eve".to_owned(),
                spectate: Some((1.0, 2.0)),
            }
        );
        let mut handshake = Handshake::new(Some(1_150), 200, None);
        handshake.on_frame(hello(), NOW);
        let end = refusal(handshake.on_frame(spectate(f32::NAN), NOW));
        assert_eq!(end.reason, DisconnectReason::BadMessage);
        // Exactly the minimum is enough.
        let mut handshake = Handshake::new(Some(200), 200, None);
        handshake.on_frame(hello(), NOW);
        assert!(matches!(
            handshake.on_frame(login("bob"), NOW),
            HandshakeStep::Join { .. }
        ));
    }

    #[test]
    fn a_handshake_out_of_order_or_of_another_version_is_refused() {
        let end = refusal(
            Handshake::new(Some(1_150), 200, None)
                .on_frame(ClientMessage::Hello { version: 999 }, NOW),
        );
        assert_eq!(end.reason, DisconnectReason::VersionMismatch);
        assert!(end.text.contains("999") && end.text.contains(&PROTOCOL_VERSION.to_string()));

        let end = refusal(Handshake::new(Some(1_150), 200, None).on_frame(login("ada"), NOW));
        assert_eq!(end.reason, DisconnectReason::BadMessage);
        assert_eq!(end.text, "the first message must be hello");

        let mut handshake = Handshake::new(Some(1_150), 200, None);
        handshake.on_frame(hello(), NOW);
        let end = refusal(handshake.on_frame(ClientMessage::Ping { nonce: 1 }, NOW));
        assert_eq!(end.reason, DisconnectReason::BadMessage);
        assert_eq!(end.text, "the second message must be login (or spectate)");
    }

    #[test]
    fn bad_names_are_refused() {
        let long = "x".repeat(MAX_NAME_CHARS + 1);
        for name in ["", long.as_str(), "ada\n", "\u{7}bell"] {
            let mut handshake = Handshake::new(Some(1_150), 200, None);
            handshake.on_frame(hello(), NOW);
            let end = refusal(handshake.on_frame(login(name), NOW));
            assert_eq!(end.reason, DisconnectReason::LoginRejected, "{name:?}");
        }
        // Characters, not bytes, are counted.
        let mut handshake = Handshake::new(Some(1_150), 200, None);
        handshake.on_frame(hello(), NOW);
        let wide = "é".repeat(MAX_NAME_CHARS);
        assert!(matches!(
            handshake.on_frame(login(&wide), NOW),
            HandshakeStep::Join { .. }
        ));
    }

    #[test]
    fn a_keyed_handshake_wants_a_token_for_the_name() {
        let key = auth::SigningKey::generate().unwrap();
        let keyed = |message: ClientMessage, now: u64| {
            let mut handshake = Handshake::new(Some(1_150), 200, Some(key.public_key()));
            handshake.on_frame(hello(), now);
            handshake.on_frame(message, now)
        };
        let with = |token: String| ClientMessage::Login {
            name: "ada".to_owned(),
            token: Some(token),
        };
        let token = key.mint("ada", NOW + 60).unwrap();
        assert_eq!(
            keyed(with(token.clone()), NOW),
            HandshakeStep::Join {
                name: "ada".to_owned(),
                spectate: None,
            }
        );
        let why = |step: HandshakeStep| match step {
            HandshakeStep::Reject(rejected) => rejected.why,
            other => panic!("expected a rejected login, got {other:?}"),
        };
        assert_eq!(why(keyed(login("ada"), NOW)), LoginRefusal::NoToken);
        // The time passed in is the time the expiry is checked against.
        assert_eq!(
            why(keyed(with(token), NOW + 60 + auth::CLOCK_SKEW_SECS + 1)),
            LoginRefusal::Expired
        );
        let bob = key.mint("bob", NOW + 60).unwrap();
        assert_eq!(why(keyed(with(bob), NOW)), LoginRefusal::AccountMismatch);
    }

    #[test]
    fn a_client_without_room_for_a_snapshot_datagram_is_refused() {
        let mut handshake = Handshake::new(None, 200, None);
        handshake.on_frame(hello(), NOW);
        let end = refusal(handshake.on_frame(login("ada"), NOW));
        assert_eq!(end.reason, DisconnectReason::DatagramsUnsupported);
        assert!(
            end.text.contains("does not accept datagrams"),
            "{}",
            end.text
        );

        let mut handshake = Handshake::new(Some(199), 200, None);
        handshake.on_frame(hello(), NOW);
        let end = refusal(handshake.on_frame(login("ada"), NOW));
        assert_eq!(end.reason, DisconnectReason::DatagramsUnsupported);
        assert!(end.text.contains("at most 199 bytes"), "{}", end.text);
    }

    #[test]
    fn bad_frames_end_the_session_with_their_reason() {
        let too_large = DecodeError::TooLarge {
            size: 1_000_000,
            limit: 4_096,
        };
        assert_eq!(
            bad_frame(&too_large).reason,
            DisconnectReason::FrameTooLarge
        );
        let garbage = DecodeError::Malformed("unexpected end".to_owned());
        assert_eq!(bad_frame(&garbage).reason, DisconnectReason::BadMessage);
        let mut session = Session::new(BOUNDS, 30, Instant::now());
        assert_eq!(
            session.on_bad_frame(&garbage),
            Verdict::End {
                end: bad_frame(&garbage),
                invalid: Some(InvalidKind::Frame)
            }
        );
        assert_eq!(
            End::handshake_timeout(Duration::from_secs(5)).reason,
            DisconnectReason::Timeout
        );
        assert_eq!(
            End::join_refused(DisconnectReason::ServerFull).text,
            "the server is full"
        );
    }

    #[test]
    fn frames_after_the_welcome() {
        let now = Instant::now();
        let mut session = Session::new(BOUNDS, 30, now);
        assert_eq!(
            session.on_frame(ClientMessage::Ping { nonce: 7 }, now),
            Verdict::Reply(ServerMessage::Pong { nonce: 7 })
        );
        assert_eq!(
            session.on_frame(ClientMessage::Pong { nonce: 7 }, now),
            Verdict::Nothing
        );
        match session.on_frame(hello(), now) {
            Verdict::Invalid {
                kind: InvalidKind::Frame,
                tell: Some(ServerMessage::Event(Event::InvalidInput { count: 1, .. })),
            } => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(
            session.on_frame(ClientMessage::Leave, now),
            Verdict::End {
                end: End::new(DisconnectReason::ClientLeft, "goodbye"),
                invalid: None
            }
        );
    }

    #[test]
    fn inputs_on_the_control_stream_are_checked_like_datagrams() {
        let now = Instant::now();
        let mut session = Session::new(BOUNDS, 30, now);
        let frame = |command| {
            ClientMessage::Input(Input {
                seq: 1,
                ack_tick: Some(3),
                command,
            })
        };
        assert!(matches!(
            session.on_frame(frame(Command::MoveTo { x: 5.0, y: 5.0 }), now),
            Verdict::Forward(Input {
                ack_tick: Some(3),
                ..
            })
        ));
        assert!(matches!(
            session.on_frame(
                frame(Command::MoveTo {
                    x: f32::NAN,
                    y: 5.0
                }),
                now
            ),
            Verdict::Invalid {
                kind: InvalidKind::Input,
                ..
            }
        ));
    }

    #[test]
    fn datagrams_are_decoded_checked_and_forwarded() {
        let now = Instant::now();
        let mut session = Session::new(BOUNDS, 30, now);
        let good = input(Command::MoveTo { x: 5.0, y: 5.0 });
        assert!(matches!(
            session.on_datagram(&good, now),
            Verdict::Forward(_)
        ));
        assert!(matches!(
            session.on_datagram(&[0xde, 0xad], now),
            Verdict::Invalid {
                kind: InvalidKind::Datagram,
                tell: Some(_)
            }
        ));
        // Told at most once a second.
        let nan = input(Command::MoveTo {
            x: f32::NAN,
            y: 1.0,
        });
        assert_eq!(
            session.on_datagram(&nan, now + Duration::from_millis(999)),
            Verdict::Invalid {
                kind: InvalidKind::Input,
                tell: None
            }
        );
        match session.on_datagram(&nan, now + Duration::from_secs(1)) {
            Verdict::Invalid {
                kind: InvalidKind::Input,
                tell: Some(ServerMessage::Event(Event::InvalidInput { count: 3, reason })),
            } => assert!(reason.contains("not finite"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_hundredth_invalid_message_ends_the_session() {
        let now = Instant::now();
        let mut session = Session::new(BOUNDS, 30, now);
        for _ in 1..MAX_INVALID_MESSAGES {
            assert!(matches!(
                session.on_datagram(&[1, 2, 3], now),
                Verdict::Invalid { .. }
            ));
        }
        match session.on_datagram(&[1, 2, 3], now) {
            Verdict::End {
                end,
                invalid: Some(InvalidKind::Datagram),
            } => {
                assert_eq!(end.reason, DisconnectReason::TooManyInvalid);
                assert!(end.text.starts_with("100 invalid messages"), "{}", end.text);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_rate_limit_allows_a_second_of_inputs_then_refills_with_time() {
        let start = Instant::now();
        let mut session = Session::new(BOUNDS, 30, start);
        let stop = input(Command::Stop);
        let forwarded = (0..100)
            .filter(|_| matches!(session.on_datagram(&stop, start), Verdict::Forward(_)))
            .count();
        assert_eq!(forwarded, 30);
        assert_eq!(session.on_datagram(&stop, start), Verdict::RateLimited);
        // A tenth of a second refills three inputs.
        let later = start + Duration::from_millis(100);
        let refilled = (0..10)
            .filter(|_| matches!(session.on_datagram(&stop, later), Verdict::Forward(_)))
            .count();
        assert_eq!(refilled, 3);
        // Invalid inputs are not rate-limited: they are struck before the bucket is asked.
        let outside = input(Command::MoveTo { x: 11.0, y: 5.0 });
        assert!(matches!(
            session.on_datagram(&outside, later),
            Verdict::Invalid {
                kind: InvalidKind::Input,
                ..
            }
        ));
    }

    #[test]
    fn commands_are_checked() {
        assert_eq!(
            check_command(&Command::MoveTo { x: 5.0, y: 5.0 }, &BOUNDS),
            Ok(())
        );
        assert_eq!(check_command(&Command::Stop, &BOUNDS), Ok(()));
        assert_eq!(
            check_command(&Command::Direction { x: 0.0, y: -2.0 }, &BOUNDS),
            Ok(())
        );
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
        let why: Vec<String> = bad
            .iter()
            .map(|command| check_command(command, &BOUNDS).unwrap_err().to_string())
            .collect();
        assert_eq!(
            why,
            [
                "move-to point (NaN, 5) is not finite",
                "move-to point (5, inf) is not finite",
                "move-to point (11, 5) is outside the map",
                "move-to point (5, -0.5) is outside the map",
                "direction has zero length",
                "direction (NaN, 1) is not finite",
                "direction (340282350000000000000000000000000000000, 340282350000000000000000000000000000000) is not finite",
            ]
        );
    }
}
