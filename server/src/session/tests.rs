//! The session's join wait and its refusals.

use std::time::{Duration, Instant};

use protocol::{DisconnectReason, NetId};
use tokio::sync::{mpsc, oneshot};

use super::{NotJoined, await_join, load_refused};
use crate::game::{Joined, ToWorld};
use crate::persist::LoadError;

use crate::test_support::NoSink;

type Answer = oneshot::Sender<Result<Joined, DisconnectReason>>;

fn join(session: u64) -> (ToWorld, oneshot::Receiver<Result<Joined, DisconnectReason>>) {
    let (reply, answer) = oneshot::channel();
    let join = ToWorld::Join {
        session,
        name: "ada".to_owned(),
        login: 0,
        resume_at: None,
        saved_order: None,
        spectate: None,
        sink: Box::new(NoSink),
        kick: mpsc::channel(1).0,
        reply,
    };
    (join, answer)
}

/// What the world got: the join's reply (kept unanswered), then whether a leave for
/// `session` followed.
fn world_got(world: &mut mpsc::Receiver<ToWorld>, session: u64) -> (Option<Answer>, bool) {
    let reply = match world.try_recv() {
        Ok(ToWorld::Join { reply, .. }) => Some(reply),
        _ => None,
    };
    let left = matches!(world.try_recv(), Ok(ToWorld::Leave { session: s, .. }) if s == session);
    (reply, left)
}

#[tokio::test]
async fn a_join_the_world_never_answers_ends_at_the_deadline_and_leaves() {
    let (tx, mut world) = mpsc::channel(8);
    let started = Instant::now();
    let deadline = Duration::from_millis(100);
    let never = std::future::pending::<()>();
    let waited = tokio::time::timeout(
        Duration::from_secs(5),
        await_join(&tx, 7, join(7), deadline, never),
    )
    .await
    .expect("the session still waits for its join after 5 s");
    match waited {
        Err(NotJoined::Refused(end)) => {
            assert_eq!(end.reason, DisconnectReason::Internal);
            assert!(end.text.contains("did not place"), "{}", end.text);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(started.elapsed() >= deadline);
    // The world is told, so a character placed after all is taken out again.
    let (reply, left) = world_got(&mut world, 7);
    assert!(reply.is_some(), "the join never reached the world");
    assert!(left, "no leave followed the join");
}

#[tokio::test]
async fn a_join_ends_when_the_connection_closes() {
    let (tx, mut world) = mpsc::channel(8);
    let (close, closed) = oneshot::channel::<()>();
    let closed = async {
        let _ = closed.await;
    };
    let waiting = tokio::spawn({
        let tx = tx.clone();
        async move { await_join(&tx, 3, join(3), Duration::from_secs(3600), closed).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let _ = close.send(());
    let waited = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the session still waits for its join after its connection closed")
        .unwrap();
    assert!(matches!(waited, Err(NotJoined::Closed)), "{waited:?}");
    let (_, left) = world_got(&mut world, 3);
    assert!(left, "no leave followed the join");
}

#[tokio::test]
async fn an_answered_join_is_the_character() {
    let (tx, mut world) = mpsc::channel(8);
    let answering = tokio::spawn(async move {
        if let Some(ToWorld::Join { reply, .. }) = world.recv().await {
            let entity = NetId {
                index: 5,
                generation: 1,
            };
            let _ = reply.send(Ok(Joined { entity }));
        }
        world
    });
    let never = std::future::pending::<()>();
    let joined = await_join(&tx, 1, join(1), Duration::from_secs(5), never)
        .await
        .unwrap();
    assert_eq!(joined.entity.index, 5);
    let mut world = answering.await.unwrap();
    assert!(
        world.try_recv().is_err(),
        "a joined session told the world it left"
    );
}

#[test]
fn a_damaged_character_is_not_told_to_try_again() {
    let end = load_refused(&LoadError::Corrupt {
        account: "ada".to_owned(),
        reason: "unknown format version 9".to_owned(),
    });
    assert_eq!(end.reason, DisconnectReason::Internal);
    assert!(end.text.contains("damaged"), "{}", end.text);
    assert!(!end.text.contains("try again"), "{}", end.text);
    assert!(!end.text.contains("unavailable"), "{}", end.text);

    let end = load_refused(&LoadError::Unavailable);
    assert_eq!(end.reason, DisconnectReason::Internal);
    assert!(end.text.contains("unavailable; try again"), "{}", end.text);
}

/// The world answers the join (the character is a player now) just as the connection
/// closes, while other sessions fill the world's inbox: whichever the session sees first,
/// a session that gives up must say it left, so that the character does not stay in the
/// world with nobody playing it (its account free again for a second one).
#[tokio::test]
async fn a_join_answered_as_the_connection_closes_leaves_through_a_full_inbox() {
    for round in 0..32 {
        let (tx, mut world) = mpsc::channel(2);
        let (close, closed) = oneshot::channel::<()>();
        let closed = async {
            let _ = closed.await;
        };
        let mut waiting = tokio::spawn({
            let tx = tx.clone();
            async move { await_join(&tx, 3, join(3), Duration::from_secs(3600), closed).await }
        });
        let Some(ToWorld::Join { reply, .. }) = world.recv().await else {
            panic!("no join");
        };
        for other in [90, 91] {
            let leave = ToWorld::Leave {
                session: other,
                claim: None,
            };
            assert!(tx.try_send(leave).is_ok(), "the inbox has room for two");
        }
        let entity = NetId {
            index: 5,
            generation: 1,
        };
        let answered = reply.send(Ok(Joined { entity })).is_ok();
        let _ = close.send(());
        // The session runs while the inbox is full; then the world takes its messages, until
        // the session is done.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        let mut left = false;
        let waited = loop {
            tokio::select! {
                message = world.recv() => {
                    left |= matches!(message, Some(ToWorld::Leave { session: 3, .. }));
                }
                done = &mut waiting => break done.expect("the session's task"),
            }
        };
        while let Ok(message) = world.try_recv() {
            left |= matches!(message, ToWorld::Leave { session: 3, .. });
        }
        if answered && waited.is_err() {
            assert!(left, "round {round}: placed, given up, and no leave");
        }
    }
}
