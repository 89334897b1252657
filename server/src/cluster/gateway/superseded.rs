//! Claims left behind. Of two real claims on one id in the zones' frames, the one with the
//! lower epoch is stale: neighbouring zones settle that between them from each other's
//! frames, but a zone whose frames did not reach the gateway for a while (a partial
//! partition), whose player the gateway then asked another zone for again, may be no
//! neighbour of that zone and would keep its claim until it hands the body on or stops.
//! The gateway, which hears every zone, tells the zone of the older claim
//! ([`protocol::bus::Superseded`]), at most once a second for each while the frames
//! still show both.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use protocol::NetId;
use protocol::bus::{BusMessage, Superseded, ZoneFrame};

use super::GatewayOut;
use super::outbox::Outbox;
use crate::cluster::bus::{Verb, subject};

/// How often a zone is told again while its frames still show the older claim.
const TELL_EVERY: Duration = Duration::from_secs(1);

/// Tells the zone of each frame in `superseded` (frame, id, newer epoch) to drop its
/// claim, unless it was told within [`TELL_EVERY`].
pub(super) fn tell(
    outbox: &mut Outbox,
    live: &[&ZoneFrame],
    superseded: &[(u32, NetId, u32)],
    told: &mut HashMap<(NetId, String), Instant>,
    now: Instant,
) {
    for &(frame, id, epoch) in superseded {
        let Some(frame) = live.get(frame as usize) else {
            continue;
        };
        let key = (id, frame.zone.clone());
        if told
            .get(&key)
            .is_some_and(|at| now.duration_since(*at) < TELL_EVERY)
        {
            continue;
        }
        told.insert(key, now);
        tracing::info!(zone = %frame.zone, ?id, newer = epoch, "an older claim is told to go");
        outbox.control(GatewayOut::Publish(
            subject(&frame.zone, Verb::Leave),
            BusMessage::Superseded(Superseded { id, epoch }),
        ));
    }
}

/// Forgets the zones told more than a few seconds ago.
pub(super) fn forget_old(told: &mut HashMap<(NetId, String), Instant>, now: Instant) {
    told.retain(|_, at| now.duration_since(*at) < 10 * TELL_EVERY);
}
