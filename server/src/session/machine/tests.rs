//! The session state machine's tests: the handshake and its refusals, frames and datagrams
//! after the welcome, and the limits on bad messages and input rates.

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
        Handshake::new(Some(1_150), 200, None).on_frame(ClientMessage::Hello { version: 999 }, NOW),
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
fn datagrams_of_another_webtransport_session_count_toward_the_limit() {
    let now = Instant::now();
    let mut session = Session::new(BOUNDS, 30, now);
    // Mixed with undecodable ones: one count for both.
    for k in 1..MAX_INVALID_MESSAGES {
        let verdict = if k % 2 == 0 {
            session.on_datagram(&[1, 2, 3], now)
        } else {
            session.on_foreign_datagram(now)
        };
        assert!(matches!(verdict, Verdict::Invalid { .. }), "{verdict:?}");
    }
    match session.on_foreign_datagram(now) {
        Verdict::End {
            end,
            invalid: Some(InvalidKind::Datagram),
        } => {
            assert_eq!(end.reason, DisconnectReason::TooManyInvalid);
            assert!(
                end.text.contains("another WebTransport session"),
                "{}",
                end.text
            );
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

/// A second's worth of pings is answered at once, then one every tenth of a second; a ping
/// beyond the rate gets no pong and is an invalid message, so a flood ends the session.
#[test]
fn pings_beyond_the_rate_are_invalid_and_a_flood_ends_the_session() {
    let start = Instant::now();
    let mut session = Session::new(BOUNDS, 30, start);
    let ping = |session: &mut Session, nonce: u64, at: Instant| {
        session.on_frame(ClientMessage::Ping { nonce }, at)
    };
    for nonce in 0..u64::from(MAX_PINGS_PER_SEC) {
        assert_eq!(
            ping(&mut session, nonce, start),
            Verdict::Reply(ServerMessage::Pong { nonce })
        );
    }
    match ping(&mut session, 99, start) {
        Verdict::Invalid {
            kind: InvalidKind::Frame,
            tell: Some(ServerMessage::Event(Event::InvalidInput { count: 1, reason })),
        } => assert!(reason.contains("pings a second"), "{reason}"),
        other => panic!("a ping over the rate: {other:?}"),
    }
    let later = start + Duration::from_millis(110);
    assert_eq!(
        ping(&mut session, 100, later),
        Verdict::Reply(ServerMessage::Pong { nonce: 100 })
    );
    let mut ended = None;
    for nonce in 0..u64::from(MAX_INVALID_MESSAGES) {
        if let Verdict::End { end, .. } = ping(&mut session, nonce, later) {
            ended = Some((nonce, end.reason));
            break;
        }
    }
    assert_eq!(
        ended,
        Some((98, DisconnectReason::TooManyInvalid)),
        "the flood went on"
    );
}
