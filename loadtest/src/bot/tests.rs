//! The bot's checks of what a session receives, and its orders.

use super::*;
use protocol::codec::encode_datagram;
use protocol::{Bounds, EntityKind, Motion, ServerDatagram};

fn welcome() -> Welcome {
    Welcome {
        version: protocol::PROTOCOL_VERSION,
        entity: NetId {
            index: 7,
            generation: 0,
        },
        tick_rate_hz: 20,
        map_id: "test".to_owned(),
        bounds: Bounds {
            min_x: 0.0,
            min_y: 0.0,
            max_x: 100.0,
            max_y: 100.0,
        },
        view_radius_m: 30.0,
    }
}

fn me_at(x: f32, y: f32) -> EntityState {
    EntityState {
        id: welcome().entity,
        kind: EntityKind::Player,
        radius_cm: 40,
        pos: QPos::from_metres(x, y),
        motion: Motion::Idle,
    }
}

fn full(tick: u64, seq: u32, entities: Vec<EntityState>) -> Vec<u8> {
    encode_datagram(&ServerDatagram::Snapshot(Snapshot {
        tick,
        baseline_tick: None,
        last_input_seq: seq,
        entered: entities,
        changed: Vec::new(),
        left: Vec::new(),
    }))
    .unwrap()
}

fn violations(bot: &mut Bot) -> Vec<Violation> {
    bot.drain()
        .filter_map(|s| match s {
            Sample::Violation(v) => Some(v),
            _ => None,
        })
        .collect()
}

#[test]
fn a_correct_stream_has_no_violations_and_measures_round_trips() {
    let t0 = Instant::now();
    let mut bot = Bot::new(Behaviour::Wander, 1);
    bot.on_welcome(welcome(), t0);
    bot.on_datagram(&full(1, 0, vec![me_at(50.0, 50.0)]), t0);
    let input = bot.next_input(t0).expect("an input is due at once");
    let later = t0 + Duration::from_millis(40);
    bot.on_datagram(&full(2, input.seq, vec![me_at(50.0, 50.0)]), later);
    let samples: Vec<Sample> = bot.drain().collect();
    assert!(samples.contains(&Sample::Rtt(Duration::from_millis(40))));
    assert!(samples.contains(&Sample::SnapshotInterval(Duration::from_millis(40))));
    assert!(!samples.iter().any(|s| matches!(s, Sample::Violation(_))));
}

#[test]
fn breaches_are_counted() {
    let t0 = Instant::now();
    let mut bot = Bot::new(Behaviour::Idle, 1);
    bot.on_welcome(welcome(), t0);
    bot.on_datagram(&full(5, 0, vec![me_at(50.0, 50.0)]), t0);
    bot.on_datagram(&full(5, 0, vec![me_at(50.0, 50.0)]), t0);
    assert_eq!(violations(&mut bot), vec![Violation::TickBackwards]);
    bot.on_datagram(&full(6, 0, vec![me_at(150.0, 50.0)]), t0);
    assert_eq!(violations(&mut bot), vec![Violation::OutOfBounds]);
    let mut other = me_at(10.0, 10.0);
    other.id.index = 8;
    bot.on_datagram(&full(7, 0, vec![other]), t0);
    assert_eq!(violations(&mut bot), vec![Violation::SelfNotInView]);
    bot.on_datagram(&[protocol::PROTOCOL_VERSION as u8, 0xff, 0xff], t0);
    assert_eq!(violations(&mut bot), vec![Violation::BadSnapshot]);
}

/// An entity past any one side, by more than the slack, among others inside, is a
/// breach; one within the slack is not.
#[test]
fn entities_past_each_side_are_out_of_bounds() {
    let t0 = Instant::now();
    let mut bot = Bot::new(Behaviour::Idle, 1);
    bot.on_welcome(welcome(), t0);
    let sides = [(-0.1, 50.0), (100.1, 50.0), (50.0, -0.1), (50.0, 100.1)];
    for (tick, (x, y)) in (1..).zip(sides) {
        let mut stray = me_at(x, y);
        stray.id.index = 3;
        let mut near = me_at(x.clamp(-0.04, 100.04), y.clamp(-0.04, 100.04));
        near.id.index = 9;
        let snapshot = full(2 * tick, 0, vec![stray, me_at(50.0, 50.0)]);
        bot.on_datagram(&snapshot, t0);
        assert_eq!(
            violations(&mut bot),
            vec![Violation::OutOfBounds],
            "{x} {y}"
        );
        bot.on_datagram(&full(2 * tick + 1, 0, vec![me_at(50.0, 50.0), near]), t0);
        assert_eq!(violations(&mut bot), vec![], "{x} {y}");
    }
}

#[test]
fn an_ignored_order_is_a_violation() {
    let t0 = Instant::now();
    let mut bot = Bot::new(Behaviour::Wander, 3);
    bot.on_welcome(welcome(), t0);
    bot.on_datagram(&full(1, 0, vec![me_at(50.0, 50.0)]), t0);
    // Orders until one points at least 3 m away.
    let mut now = t0;
    let seq = loop {
        now += Duration::from_secs(9);
        if let Some(Input {
            seq,
            command: Command::MoveTo { x, y },
            ..
        }) = bot.next_input(now)
            && distance((x, y), (50.0, 50.0)) >= 3.0
        {
            break seq;
        }
    };
    // The server acknowledges it but the character never moves.
    for tick in 2..(2 + 11 * 20) {
        now += Duration::from_millis(50);
        bot.on_datagram(&full(tick, seq, vec![me_at(50.0, 50.0)]), now);
    }
    assert!(violations(&mut bot).contains(&Violation::OrderIgnored));
}

/// The server telling the bot its inputs were invalid is a violation: the bot sends only
/// inputs the protocol allows (a server that refused every order passed before, each
/// refused order looking acknowledged by the inputs after it). Other events are not.
#[test]
fn an_invalid_input_event_is_a_violation() {
    let now = Instant::now();
    let mut bot = Bot::new(Behaviour::Wander, 1);
    bot.on_welcome(welcome(), now);
    let shutting = ServerMessage::Event(Event::ShuttingDown { grace_ms: 500 });
    assert_eq!(bot.on_message(&shutting, now), None);
    assert!(violations(&mut bot).is_empty());
    let refused = ServerMessage::Event(Event::InvalidInput {
        count: 1,
        reason: "move target outside the map".to_owned(),
    });
    assert_eq!(bot.on_message(&refused, now), None);
    assert_eq!(violations(&mut bot), vec![Violation::InputRefused]);
}

/// West and east halves of the test map, sharing the border x = 50.
fn halves() -> Arc<Borders> {
    let zone = |name: &str, x0: f32, x1: f32| crate::borders::Zone {
        name: name.to_owned(),
        min: (x0, 0.0),
        max: (x1, 100.0),
    };
    Arc::new(Borders::from_zones(vec![zone("west", 0.0, 50.0), zone("east", 50.0, 100.0)]).unwrap())
}

/// The next order a bot gives, letting time pass until it gives one.
fn next_order(bot: &mut Bot, now: &mut Instant) -> (f32, f32) {
    for _ in 0..100 {
        *now += Duration::from_millis(100);
        if let Some(Input {
            command: Command::MoveTo { x, y },
            ..
        }) = bot.next_input(*now)
        {
            return (x, y);
        }
    }
    panic!("no order within 10 s");
}

#[test]
fn a_border_bot_orders_its_character_across_the_border_and_back() {
    for number in 0..20 {
        let mut now = Instant::now();
        let mut bot = Bot::with_borders(Behaviour::Border, number, halves());
        bot.on_welcome(welcome(), now);
        let mut tick = 1;
        let mut here = (45.0, 99.0);
        for round in 0..6 {
            bot.on_datagram(&full(tick, 0, vec![me_at(here.0, here.1)]), now);
            tick += 1;
            let (x, y) = next_order(&mut bot, &mut now);
            // The other side, 6 to 12 m past the line, beside the shared edge and in
            // the map (the edge runs the map's height, less 1 m at each end).
            let depth = if here.0 < 50.0 { x - 50.0 } else { 50.0 - x };
            assert!(
                (5.99..=12.01).contains(&depth),
                "bot {number} round {round}: {x}"
            );
            assert!((1.0..=99.0).contains(&y), "bot {number} round {round}: {y}");
            assert!(
                (here.1 - y).abs() <= 3.01,
                "bot {number}: slid {here:?} → {y}"
            );
            // The character arrives: the next order comes at once, back across.
            here = (x, y);
            bot.on_datagram(&full(tick, bot.seq, vec![me_at(x, y)]), now);
            tick += 1;
            assert!(bot.next_wake().is_some_and(|wake| wake <= now));
        }
    }
}

#[test]
fn a_border_bot_held_up_walks_to_another_target() {
    let rows = vec![".".repeat(100); 100].join("\n");
    let map = format!("type octile\nheight 100\nwidth 100\nmap\n{rows}\n");
    let mesh = navmesh_builder::load::build_source(
        "open",
        &map,
        navmesh_builder::pipeline::SourceKind::Grid,
    )
    .unwrap()
    .mesh;
    let borders = halves();
    let targets = Arc::new(BorderTargets::new(mesh, &borders, 2.0, 3));
    let mut now = Instant::now();
    let mut bot = Bot::with_borders(Behaviour::Border, 4, borders).with_targets(targets);
    bot.on_welcome(welcome(), now);
    bot.on_datagram(&full(1, 0, vec![me_at(45.0, 50.0)]), now);
    let first = next_order(&mut bot, &mut now);
    assert!(first.0 > 50.0, "{first:?}");
    // Acknowledged; the character gets 0.2 m closer every second, so it has not come
    // the 1 m that counts as progress when 4 s have passed: it is held up.
    let mut tick = 2;
    let mut here = (45.0, 50.0);
    let start = now;
    while now.duration_since(start) < STALL_AFTER + Duration::from_millis(100) {
        now += Duration::from_millis(100);
        here.0 += 0.02;
        bot.on_datagram(&full(tick, bot.seq, vec![me_at(here.0, here.1)]), now);
        tick += 1;
        if bot.stalled {
            break;
        }
    }
    assert!(bot.stalled, "not held up");
    assert!(now.duration_since(start) >= STALL_AFTER, "held up early");
    assert!(bot.next_order_at.is_some_and(|at| at <= now));
    let second = next_order(&mut bot, &mut now);
    assert_eq!(bot.retargets, 1);
    assert_ne!(second, first);
    // Still heading east: a fresh point past the border on the same side.
    assert!(second.0 > 50.0, "{second:?}");
}

#[test]
fn a_border_bot_reorders_every_three_to_six_seconds() {
    let mut now = Instant::now();
    let mut bot = Bot::with_borders(Behaviour::Border, 5, halves());
    bot.on_welcome(welcome(), now);
    bot.on_datagram(&full(1, 0, vec![me_at(45.0, 50.0)]), now);
    next_order(&mut bot, &mut now);
    let first = now;
    // The server acknowledges the order but the character never gets there; the bot
    // orders again on its clock.
    bot.on_datagram(&full(2, bot.seq, vec![me_at(45.0, 50.0)]), now);
    next_order(&mut bot, &mut now);
    let waited = now.duration_since(first);
    assert!(
        (Duration::from_secs(3)..=Duration::from_millis(6_100)).contains(&waited),
        "{waited:?}"
    );
}

#[test]
fn crossings_are_counted_from_the_characters_positions() {
    let t0 = Instant::now();
    let path = [
        (45.0, 50.0),
        (55.0, 50.0),
        (56.0, 50.0),
        (49.0, 50.0),
        (49.0, 60.0),
    ];
    let mut bot = Bot::with_borders(Behaviour::Idle, 1, halves());
    let mut plain = Bot::new(Behaviour::Idle, 1);
    for bot in [&mut bot, &mut plain] {
        bot.on_welcome(welcome(), t0);
        for (tick, (x, y)) in path.iter().enumerate() {
            bot.on_datagram(&full(tick as u64 + 1, 0, vec![me_at(*x, *y)]), t0);
        }
        // Snapshots without the character do not count, nor reset the zone.
        let mut other = me_at(70.0, 10.0);
        other.id.index = 8;
        bot.on_datagram(&full(10, 0, vec![other]), t0);
        bot.on_datagram(&full(11, 0, vec![me_at(48.0, 10.0)]), t0);
    }
    assert_eq!(bot.crossings, 2);
    assert_eq!(plain.crossings, 0);
}

#[test]
fn own_missing_runs_from_the_first_snapshot_without_the_character_to_the_next_with_it() {
    let t0 = Instant::now();
    let ms = |n: u64| t0 + Duration::from_millis(n);
    let mut other = me_at(70.0, 10.0);
    other.id.index = 8;
    let mut bot = Bot::new(Behaviour::Idle, 1);
    bot.on_welcome(welcome(), t0);
    assert_eq!(bot.own_missing_max(ms(1_000)), Duration::ZERO);
    bot.on_datagram(&full(1, 0, vec![me_at(50.0, 50.0)]), ms(0));
    bot.on_datagram(&full(2, 0, vec![other]), ms(50));
    bot.on_datagram(&full(3, 0, vec![other]), ms(100));
    // A snapshot that does not apply (stale) does not end the spell.
    bot.on_datagram(&full(3, 0, vec![me_at(50.0, 50.0)]), ms(150));
    bot.on_datagram(&full(4, 0, vec![me_at(50.0, 50.0)]), ms(250));
    assert_eq!(bot.own_missing_episodes(), 1);
    assert_eq!(bot.own_missing_max(ms(250)), Duration::from_millis(200));
    // The existing violation is still counted, once per snapshot without the character.
    let seen: Vec<Violation> = violations(&mut bot);
    assert_eq!(
        seen,
        vec![
            Violation::SelfNotInView,
            Violation::SelfNotInView,
            Violation::TickBackwards
        ]
    );
    // A shorter spell leaves the longest; a spell not over yet counts up to now.
    bot.on_datagram(&full(5, 0, vec![other]), ms(300));
    bot.on_datagram(&full(6, 0, vec![me_at(50.0, 50.0)]), ms(350));
    assert_eq!(bot.own_missing_max(ms(350)), Duration::from_millis(200));
    bot.on_datagram(&full(7, 0, vec![other]), ms(400));
    assert_eq!(bot.own_missing_episodes(), 3);
    assert_eq!(bot.own_missing_max(ms(500)), Duration::from_millis(200));
    assert_eq!(bot.own_missing_max(ms(1_000)), Duration::from_millis(600));
}

#[test]
fn inputs_paced_by_snapshots_go_out_on_each_snapshot() {
    let t0 = Instant::now();
    let mut timer = Bot::new(Behaviour::Idle, 1);
    let mut paced = Bot::new(Behaviour::Idle, 1).with_pace(InputPace::Snapshot);
    for bot in [&mut timer, &mut paced] {
        bot.on_welcome(welcome(), t0);
        bot.on_datagram(&full(1, 0, vec![me_at(50.0, 50.0)]), t0);
        assert!(
            bot.next_input(t0).is_some(),
            "the first input is due at once"
        );
    }
    // The next snapshot, 50 ms later: the paced bot answers it at once and acknowledges
    // it; the timer's bot waits for its 100 ms.
    let later = t0 + Duration::from_millis(50);
    for bot in [&mut timer, &mut paced] {
        bot.on_datagram(&full(2, 1, vec![me_at(50.0, 50.0)]), later);
    }
    assert!(timer.next_input(later).is_none());
    let input = paced.next_input(later).expect("an input on the snapshot");
    assert_eq!(input.ack_tick, Some(2));
    // One input a snapshot, not more.
    assert!(paced.next_input(later).is_none());
    assert_eq!(
        timer.next_wake(),
        Some(t0 + Duration::from_millis(100)),
        "the timer's bot is due 100 ms after its last input"
    );
}
