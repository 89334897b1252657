//! The census: a listener to every zone's frames that checks, at every frame, the custody
//! rules of `docs/zones.md`: no id is real in two zones at once, and the NPCs in the
//! zones' custody (real or in flight) stay the same number. It also counts the handoffs it
//! saw complete (an id real in one zone, later real in another) and the zones' restarts
//! (a new incarnation).
//!
//! [`Census`] is the check itself, fed one frame at a time (no sockets, no clock);
//! [`watch`] feeds it from NATS for `server census`, the loopback bench and the compose
//! cluster.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

use anyhow::Result;
use futures_util::StreamExt as _;
use protocol::NetId;
use protocol::bus::{BusMessage, Custody, ZoneFrame};
use protocol::messages::EntityKind;
use serde::Serialize;

use super::bus;

/// The most examples of a broken rule a report keeps.
const EXAMPLES: usize = 10;

/// Ticks of a restarted zone over which the NPC count is not compared: a restarted zone
/// places its NPCs once it has heard from its neighbours, or after 2 s (`docs/zones.md`),
/// so its count moves over its first seconds. Ids real twice are checked throughout.
pub const RESTART_SETTLE_TICKS: u64 = 100;

/// A zone is taken for down once the other zones published this many frames each (one
/// second at 20 Hz) since its last one, as the gateways take it: its last frame then
/// claims nothing (its players may join elsewhere), and the NPC count is not compared
/// until it is back and has settled.
pub const DOWN_AFTER_FRAMES: u64 = 20;

/// What the census saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CensusReport {
    /// Zones the cluster file names.
    pub zones: usize,
    /// Frames checked.
    pub frames: u64,
    /// Messages on the frame subjects that were not frames of the cluster file's zones
    /// (named in `bad_messages`).
    pub bad_frames: u64,
    /// Checks made once every zone had published: each frame after that is one.
    pub checks: u64,
    /// Frames at which an id was real in two zones' latest frames at once.
    pub doubles: u64,
    /// A few of them: `"ID real in A and B (tick T of B)"`.
    pub double_examples: Vec<String>,
    /// The fewest and the most NPC ids in custody at any check.
    pub npcs_min: usize,
    /// See `npcs_min`.
    pub npcs_max: usize,
    /// Checks at which the number of NPCs in custody changed, except over the first
    /// [`RESTART_SETTLE_TICKS`] of a restarted zone.
    pub npc_changes: u64,
    /// A few of them: `"N → M at tick T of ZONE"`.
    pub npc_change_examples: Vec<String>,
    /// Players real somewhere at the last check.
    pub players_last: usize,
    /// Handoffs seen complete: an id real in one zone's frame, then in another's.
    pub handoffs: u64,
    /// Zones that came back with a new incarnation, by name.
    pub restarts: BTreeMap<String, u32>,
    /// Times each zone was taken for down ([`DOWN_AFTER_FRAMES`]), by name.
    pub downs: BTreeMap<String, u32>,
    /// A few messages that were not frames, with their subject and what was wrong.
    pub bad_messages: Vec<String>,
}

impl CensusReport {
    /// Whether every rule held: no id real twice, the NPC count steady (a restarted zone
    /// respawns its share of the NPCs: see [`RESTART_SETTLE_TICKS`]), every message a
    /// frame, and at least one check made.
    pub fn passed(&self) -> bool {
        self.doubles == 0 && self.npc_changes == 0 && self.bad_frames == 0 && self.checks > 0
    }

    /// One line for people.
    pub fn summary(&self) -> String {
        let verdict = if self.passed() { "exact" } else { "BROKEN" };
        let named = |counts: &BTreeMap<String, u32>| {
            if counts.is_empty() {
                return "none".to_owned();
            }
            let named: Vec<String> = counts.iter().map(|(z, n)| format!("{z} ×{n}")).collect();
            named.join(", ")
        };
        let (downs, restarts) = (named(&self.downs), named(&self.restarts));
        format!(
            "census {verdict}: {} frames of {} zones, {} checks, {} with an id real twice, \
             NPCs in custody {}–{} ({} unexplained changes), {} handoffs seen, {} players \
             at the end, zones down {downs}, restarts {restarts}, {} bad messages",
            self.frames,
            self.zones,
            self.checks,
            self.doubles,
            if self.checks == 0 { 0 } else { self.npcs_min },
            self.npcs_max,
            self.npc_changes,
            self.handoffs,
            self.players_last,
            self.bad_frames,
        )
    }
}

/// One zone's latest frame, as the census keeps it.
#[derive(Debug, Default)]
struct Latest {
    incarnation: u32,
    tick: u64,
    /// Frames of the other zones since this one's last.
    silent: u64,
    /// Taken for down: silent for a second of the others' frames.
    down: bool,
    bodies: Vec<(NetId, Custody, EntityKind)>,
}

/// The custody check, fed one frame at a time.
#[derive(Debug, Default)]
pub struct Census {
    report: CensusReport,
    /// The zones the cluster file names.
    names: BTreeSet<String>,
    latest: BTreeMap<String, Latest>,
    /// The zone each id was last seen real in.
    owner: HashMap<NetId, String>,
    /// Restarted zones, with the tick of theirs until which the NPC count is not
    /// compared ([`RESTART_SETTLE_TICKS`]).
    settling: BTreeMap<String, u64>,
    /// The NPC count at the last check.
    last_npcs: Option<usize>,
    /// Scratch: the zone each id is real in, this check.
    real: HashMap<NetId, String>,
    /// Scratch: NPC ids in custody, this check.
    npcs: HashSet<NetId>,
}

impl Census {
    /// A census of the cluster whose zones are `names` (the cluster file's): a frame
    /// under any other name is counted as a bad message, not taken for a zone.
    pub fn new(names: impl IntoIterator<Item = impl Into<String>>) -> Census {
        let names: BTreeSet<String> = names.into_iter().map(Into::into).collect();
        Census {
            report: CensusReport {
                zones: names.len(),
                ..CensusReport::default()
            },
            names,
            ..Census::default()
        }
    }

    /// What it saw so far.
    pub fn report(&self) -> &CensusReport {
        &self.report
    }

    /// Counts a message on a frame subject that was not a frame; `what` names the
    /// subject and what was wrong.
    pub fn bad_message(&mut self, what: String) {
        self.report.bad_frames += 1;
        if self.report.bad_messages.len() < EXAMPLES {
            self.report.bad_messages.push(what);
        }
    }

    /// Takes one zone's frame and checks the rules over every zone's latest frame.
    pub fn observe(&mut self, frame: &ZoneFrame) {
        if !self.names.contains(&frame.zone) {
            let mut name = frame.zone.clone();
            name.truncate(name.floor_char_boundary(64));
            self.bad_message(format!(
                "mmo.zone.*.frame: a frame of zone {name:?}, which the cluster file does not name"
            ));
            return;
        }
        self.report.frames += 1;
        let others = self.report.zones.saturating_sub(1).max(1) as u64;
        let mut went_down = Vec::new();
        for (zone, latest) in &mut self.latest {
            if *zone == frame.zone || latest.down {
                continue;
            }
            latest.silent += 1;
            if latest.silent > DOWN_AFTER_FRAMES * others {
                latest.down = true;
                *self.report.downs.entry(zone.clone()).or_default() += 1;
                // Not compared while down; once back, until settled (below).
                self.settling.insert(zone.clone(), u64::MAX);
                went_down.push(zone.clone());
            }
        }
        // Its bodies died with it: one that appears elsewhere later was not handed over.
        for zone in went_down {
            self.owner.retain(|_, owner| *owner != zone);
        }
        let latest = self.latest.entry(frame.zone.clone()).or_default();
        let restarted = latest.tick != 0 && latest.incarnation != frame.incarnation;
        if restarted {
            *self.report.restarts.entry(frame.zone.clone()).or_default() += 1;
        }
        if restarted || latest.down {
            self.settling.insert(
                frame.zone.clone(),
                frame.tick.saturating_add(RESTART_SETTLE_TICKS),
            );
        }
        latest.silent = 0;
        latest.down = false;
        latest.incarnation = frame.incarnation;
        latest.tick = frame.tick;
        latest.bodies.clear();
        latest
            .bodies
            .extend(frame.bodies.iter().map(|b| (b.id, b.custody, b.kind)));
        for b in frame.bodies.iter().filter(|b| b.custody == Custody::Real) {
            match self.owner.get_mut(&b.id) {
                Some(zone) if *zone != frame.zone => {
                    self.report.handoffs += 1;
                    zone.clone_from(&frame.zone);
                }
                Some(_) => {}
                None => {
                    self.owner.insert(b.id, frame.zone.clone());
                }
            }
        }
        if self.latest.len() < self.report.zones {
            return;
        }
        self.check(frame);
    }

    fn check(&mut self, frame: &ZoneFrame) {
        let report = &mut self.report;
        report.checks += 1;
        self.real.clear();
        self.npcs.clear();
        let mut doubled = false;
        let mut players = 0;
        for (zone, latest) in self.latest.iter().filter(|(_, l)| !l.down) {
            for &(id, custody, kind) in &latest.bodies {
                if custody == Custody::Real {
                    if let Some(other) = self.real.insert(id, zone.clone()) {
                        doubled = true;
                        if report.double_examples.len() < EXAMPLES {
                            report.double_examples.push(format!(
                                "{}v{} real in {other} and {zone} (tick {} of {})",
                                id.index, id.generation, frame.tick, frame.zone
                            ));
                        }
                    }
                    if kind == EntityKind::Player {
                        players += 1;
                    }
                }
                if kind == EntityKind::Npc {
                    self.npcs.insert(id);
                }
            }
        }
        report.doubles += u64::from(doubled);
        report.players_last = players;
        let npcs = self.npcs.len();
        if report.checks == 1 {
            report.npcs_min = npcs;
        }
        report.npcs_min = report.npcs_min.min(npcs);
        report.npcs_max = report.npcs_max.max(npcs);
        let latest = &self.latest;
        self.settling
            .retain(|zone, until| latest.get(zone).is_some_and(|l| l.tick < *until));
        if let Some(last) = self.last_npcs
            && last != npcs
            && self.settling.is_empty()
        {
            report.npc_changes += 1;
            if report.npc_change_examples.len() < EXAMPLES {
                report.npc_change_examples.push(format!(
                    "{last} → {npcs} at tick {} of {}",
                    frame.tick, frame.zone
                ));
            }
        }
        self.last_npcs = Some(npcs);
    }
}

/// Listens to every zone's frames on the NATS server at `url` for `duration`, or until
/// `stop` completes, and returns what the census saw.
pub async fn watch(
    url: &str,
    zones: Vec<String>,
    duration: Duration,
    stop: impl std::future::Future<Output = ()>,
) -> Result<CensusReport> {
    let client = bus::connect(url, "census").await?;
    let mut frames = client.subscribe("mmo.zone.*.frame").await?;
    let mut census = Census::new(zones);
    let deadline = tokio::time::sleep(duration);
    tokio::pin!(deadline, stop);
    loop {
        tokio::select! {
            () = &mut deadline => break,
            () = &mut stop => break,
            message = frames.next() => {
                let Some(message) = message else { break };
                match bus::decode(&message.subject, &message.payload) {
                    Ok(BusMessage::Frame(frame)) => census.observe(&frame),
                    Ok(_) => census.bad_message(format!(
                        "{}: a bus message that is not a frame",
                        message.subject
                    )),
                    Err(error) => census.bad_message(error),
                }
            }
        }
    }
    Ok(census.report)
}

#[cfg(test)]
mod tests {
    use protocol::NetId;
    use protocol::bus::{Custody, FrameBody, ZoneFrame};
    use protocol::messages::{EntityKind, Motion};

    use super::Census;

    fn body(index: u32, custody: Custody, kind: EntityKind) -> FrameBody {
        FrameBody {
            id: NetId {
                index,
                generation: 1,
            },
            epoch: 0,
            custody,
            kind,
            pos: [0.0, 0.0],
            radius_m: 0.4,
            speed_mps: 1.5,
            motion: Motion::Idle,
        }
    }

    fn npc(index: u32, custody: Custody) -> FrameBody {
        body(index, custody, EntityKind::Npc)
    }

    fn frame(zone: &str, incarnation: u32, tick: u64, bodies: Vec<FrameBody>) -> ZoneFrame {
        ZoneFrame {
            zone: zone.to_owned(),
            incarnation,
            tick,
            bodies,
            applied: Vec::new(),
        }
    }

    #[test]
    fn a_handoff_done_by_the_rules_keeps_the_census_exact() {
        use Custody::{InFlight, Real};
        let mut census = Census::new(["east", "west"]);
        census.observe(&frame("west", 1, 1, vec![npc(1, Real), npc(2, Real)]));
        assert_eq!(census.report().checks, 0, "east has not published yet");
        census.observe(&frame("east", 7, 1, vec![npc(3, Real)]));
        // West offers 2 to east: in flight in west's frame, then real in east's, then
        // gone from west's.
        census.observe(&frame("west", 1, 2, vec![npc(1, Real), npc(2, InFlight)]));
        census.observe(&frame("east", 7, 2, vec![npc(3, Real), npc(2, Real)]));
        census.observe(&frame("west", 1, 3, vec![npc(1, Real)]));
        let report = census.report();
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.checks, 4);
        assert_eq!(report.handoffs, 1);
        assert_eq!((report.npcs_min, report.npcs_max), (3, 3));
    }

    #[test]
    fn an_id_real_in_two_zones_is_caught() {
        use Custody::Real;
        let mut census = Census::new(["east", "west"]);
        census.observe(&frame("west", 1, 1, vec![npc(1, Real), npc(2, Real)]));
        // East makes 2 real before west has let it go.
        census.observe(&frame("east", 2, 1, vec![npc(2, Real)]));
        let report = census.report();
        assert!(!report.passed());
        assert_eq!(report.doubles, 1);
        assert!(
            report.double_examples[0].contains("real in east and west"),
            "{:?}",
            report.double_examples
        );
        assert!(report.summary().starts_with("census BROKEN"));
    }

    #[test]
    fn an_npc_in_no_zone_is_caught_but_a_restart_may_change_the_count() {
        use Custody::{InFlight, Real};
        let mut census = Census::new(["east", "west"]);
        census.observe(&frame("west", 1, 1, vec![npc(1, Real), npc(2, InFlight)]));
        census.observe(&frame("east", 2, 1, vec![npc(3, Real)]));
        // West forgets 2 with east never making it real: it is in nobody's custody.
        census.observe(&frame("west", 1, 2, vec![npc(1, Real)]));
        assert_eq!(census.report().npc_changes, 1);
        assert!(!census.report().passed());

        let mut census = Census::new(["east", "west"]);
        census.observe(&frame("west", 1, 1, vec![npc(1, Real)]));
        census.observe(&frame("east", 2, 1, vec![npc(3, Real), npc(4, Real)]));
        // East killed and started again: a new incarnation, its NPCs placed a few ticks
        // after its first frame.
        census.observe(&frame("east", 5, 1, vec![]));
        census.observe(&frame("east", 5, 40, vec![npc(5, Real), npc(6, Real)]));
        assert_eq!(census.report().restarts.get("east"), Some(&1));
        assert_eq!(census.report().npc_changes, 0, "{:?}", census.report());
        // Once it has settled, an NPC lost is caught again.
        census.observe(&frame("east", 5, 101, vec![npc(5, Real), npc(6, Real)]));
        census.observe(&frame("east", 5, 102, vec![npc(5, Real)]));
        assert_eq!(census.report().npc_changes, 1, "{:?}", census.report());
        assert_eq!(census.report().checks, 5);
    }

    #[test]
    fn a_silent_zone_is_taken_for_down_and_claims_nothing() {
        use Custody::Real;
        let player = |i| body(i, Real, EntityKind::Player);
        let mut census = Census::new(["east", "west"]);
        census.observe(&frame("west", 1, 1, vec![npc(1, Real)]));
        census.observe(&frame("east", 2, 1, vec![npc(2, Real), player(9)]));
        // East is killed; a second of west's frames later it is down, and its player
        // joins west from the store: not a double, and the NPC count is not compared.
        for tick in 2..=22 {
            census.observe(&frame("west", 1, tick, vec![npc(1, Real)]));
        }
        assert_eq!(census.report().downs.get("east"), Some(&1));
        census.observe(&frame("west", 1, 23, vec![npc(1, Real), player(9)]));
        let report = census.report();
        assert_eq!(report.doubles, 0, "{report:?}");
        assert_eq!(report.npc_changes, 0, "{report:?}");
        assert_eq!(report.players_last, 1);
        assert_eq!(report.handoffs, 0, "a join from the store is no handoff");
        // Before a second, the same join would be a double.
        let mut census = Census::new(["east", "west"]);
        census.observe(&frame("west", 1, 1, vec![npc(1, Real)]));
        census.observe(&frame("east", 2, 1, vec![npc(2, Real), player(9)]));
        for tick in 2..=10 {
            census.observe(&frame("west", 1, tick, vec![npc(1, Real)]));
        }
        census.observe(&frame("west", 1, 11, vec![npc(1, Real), player(9)]));
        assert_eq!(census.report().doubles, 1);
    }

    #[test]
    fn players_joining_and_leaving_do_not_count_as_npcs() {
        use Custody::Real;
        let mut census = Census::new(["all"]);
        census.observe(&frame("all", 1, 1, vec![npc(1, Real)]));
        census.observe(&frame(
            "all",
            1,
            2,
            vec![npc(1, Real), body(9, Real, EntityKind::Player)],
        ));
        census.observe(&frame("all", 1, 3, vec![npc(1, Real)]));
        let report = census.report();
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.players_last, 0);
    }

    #[test]
    fn a_message_that_is_not_a_frame_fails_the_census() {
        let mut census = Census::new(["all"]);
        census.observe(&frame("all", 1, 1, vec![]));
        census.bad_message("mmo.zone.all.frame: truncated".to_owned());
        assert!(!census.report().passed());
        assert_eq!(census.report().bad_messages.len(), 1);
    }
}

#[cfg(test)]
mod strangers {
    use protocol::bus::ZoneFrame;

    use super::Census;

    fn empty(zone: &str) -> ZoneFrame {
        ZoneFrame {
            zone: zone.to_owned(),
            incarnation: 1,
            tick: 1,
            bodies: Vec::new(),
            applied: Vec::new(),
        }
    }

    /// A frame under a name the cluster file does not give (another cluster on the same
    /// NATS, say) is a bad message: it does not stand in for a silent zone, and its name
    /// is not kept.
    #[test]
    fn a_frame_of_a_zone_the_file_does_not_name_is_a_bad_message() {
        let mut census = Census::new(["east", "west"]);
        census.observe(&empty("west"));
        for k in 0..1_000 {
            census.observe(&empty(&format!("stranger-{k}")));
        }
        let report = census.report();
        assert_eq!(
            report.checks, 0,
            "checked with east never heard: {report:?}"
        );
        assert_eq!(report.bad_frames, 1_000);
        assert!(
            report.bad_messages[0].contains("\"stranger-0\""),
            "{report:?}"
        );
        assert!(!report.passed());
        assert_eq!(census.latest.len(), 1, "strangers kept");
    }
}
