//! `server zone --cluster FILE --zone NAME`: one zone of a cluster. It builds the whole
//! map's navmesh, simulates the bodies real in its region on a world thread
//! (`cluster/zone_world.rs`), and talks to the rest of the cluster over NATS through
//! bounded channels, so the world thread never waits on the bus: what arrives is drained
//! at the start of each tick (joins, leaves, handoffs and heartbeats in a lane of their own,
//! ahead of inputs and frames: `zone/inbox.rs`), what the tick says is handed to an async
//! task that publishes it in order (frame first, then the answers that depend on it).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use futures_util::StreamExt;
use protocol::bus::BusMessage;
use tokio::sync::{mpsc, watch};
use tracing::{error, info, warn};

use super::bus::{self, DIRECTORY, GATEWAYS, Verb, subject};
use super::gateway::shown;
use super::zone_world::{Settled, ZoneIn, ZoneOut, ZoneWorld};
use super::{ClusterFile, ZoneSpec};
use crate::config::Config;
use crate::game::Pacer;
use crate::http::{Health, HttpLimits, serve as serve_http};
use crate::metrics::{Counter, Gauge, Histogram, Metrics};
use crate::persist::{Persist, Saver};

mod inbox;

use inbox::{InboxRx, InboxTx};

/// Messages from the world thread waiting to be published.
const OUTBOX: usize = 4_096;
/// Messages drained per tick at most.
const MAX_MESSAGES_PER_TICK: usize = 65_536;

/// A zone's own metrics, beside the server's (`mmo_ticks_total`, `mmo_tick_seconds`...).
#[derive(Clone)]
pub struct ZoneMetrics {
    /// Bodies real in this zone.
    pub reals: Gauge,
    /// Bodies handed over and not yet acknowledged.
    pub in_flight: Gauge,
    /// Neighbours' bodies mirrored as ghosts.
    pub ghosts: Gauge,
    /// Handoffs acknowledged, counted by the zone that hands over.
    pub handoffs: Counter,
    /// Handoffs refused or unanswered (the body stayed).
    pub handoffs_failed: Counter,
    /// Time from offer to acknowledgement.
    pub handoff_seconds: Histogram,
    /// Bus payloads that did not decode (counted, logged, dropped).
    pub bus_invalid: Counter,
    /// Messages dropped because the world thread's inbox or the publisher's queue was full.
    pub bus_dropped: Counter,
    /// Bytes this zone published.
    pub bus_bytes_out: Counter,
    /// The most pairs of bodies (ghosts included) overlapping at a tick's end, since start.
    pub overlapping_pairs_max: Gauge,
    /// The most bodies standing in walls at a tick's end, since start.
    pub bodies_in_walls_max: Gauge,
    /// Ticks that ended with a pair of bodies overlapping (ghosts included).
    pub ticks_overlapping: Counter,
    /// Characters saved and removed because their gateway was gone.
    pub orphans_removed: Counter,
    /// The largest 99th percentile of the bodies' overlap depth (fraction of the radius)
    /// at a tick's end, since start, in millionths.
    pub overlap_p99_max_ppm: Gauge,
}

impl ZoneMetrics {
    fn register(&self, metrics: &mut Metrics) {
        metrics.register_extra(
            "mmo_zone_reals",
            "Bodies real in this zone",
            self.reals.clone(),
        );
        metrics.register_extra(
            "mmo_handoffs_in_flight",
            "Bodies handed over and not yet acknowledged",
            self.in_flight.clone(),
        );
        metrics.register_extra(
            "mmo_zone_ghosts",
            "Neighbours' bodies mirrored as ghosts",
            self.ghosts.clone(),
        );
        metrics.register_extra(
            "mmo_handoffs",
            "Handoffs acknowledged, counted by the zone that hands over",
            self.handoffs.clone(),
        );
        metrics.register_extra(
            "mmo_handoffs_failed",
            "Handoffs refused or unanswered (the body stayed)",
            self.handoffs_failed.clone(),
        );
        metrics.register_extra(
            "mmo_handoff_seconds",
            "Time from a handoff's offer to its acknowledgement",
            self.handoff_seconds.clone(),
        );
        metrics.register_extra(
            "mmo_bus_invalid",
            "Bus payloads that did not decode",
            self.bus_invalid.clone(),
        );
        metrics.register_extra(
            "mmo_bus_dropped",
            "Bus messages dropped on a full queue",
            self.bus_dropped.clone(),
        );
        metrics.register_extra(
            "mmo_bus_bytes_out",
            "Bytes published on the bus",
            self.bus_bytes_out.clone(),
        );
        metrics.register_extra(
            "mmo_zone_overlapping_pairs_max",
            "The most pairs of bodies, ghosts included, overlapping at a tick's end since start",
            self.overlapping_pairs_max.clone(),
        );
        metrics.register_extra(
            "mmo_zone_bodies_in_walls_max",
            "The most bodies in walls at a tick's end since start",
            self.bodies_in_walls_max.clone(),
        );
        metrics.register_extra(
            "mmo_zone_orphans_removed",
            "Characters saved and removed because their gateway was gone",
            self.orphans_removed.clone(),
        );
        metrics.register_extra(
            "mmo_zone_ticks_overlapping",
            "Ticks that ended with a pair of bodies, ghosts included, overlapping",
            self.ticks_overlapping.clone(),
        );
        metrics.register_extra(
            "mmo_zone_overlap_p99_max_ppm",
            "The largest 99th percentile of the bodies' overlap depth at a tick's end since start, millionths of the radius",
            self.overlap_p99_max_ppm.clone(),
        );
    }
}

/// The handoff histogram's buckets, seconds: 1 ms to 2 s.
fn handoff_histogram() -> Histogram {
    Histogram::new([
        0.001, 0.002, 0.005, 0.010, 0.020, 0.050, 0.100, 0.200, 0.500, 1.0, 2.0,
    ])
}

/// Loads the cluster's map (the embedded default when the file names none) and checks
/// the zones cover it; returns the mesh and the map's id.
pub fn load_cluster_map(file: &ClusterFile) -> Result<(navmesh::NavMesh, String)> {
    let config = Config {
        map: file.map.clone(),
        ..Config::default()
    };
    let (mesh, id) = crate::run::load_map(&config)?;
    file.check_map(&mesh).context("the cluster file's zones")?;
    Ok((mesh, id))
}

/// Runs zone `name` of the cluster file at `path` until `shutdown` turns true.
pub async fn run(path: &Path, name: &str, mut shutdown: watch::Receiver<bool>) -> Result<()> {
    let file = Arc::new(ClusterFile::load(path)?);
    let (index, spec) = file.zone(name)?;
    let spec: ZoneSpec = spec.clone();
    let (mesh, map_id) = load_cluster_map(&file)?;
    let mesh = Arc::new(mesh);
    // Counts the connections to NATS: the world thread gives the gateways their whole
    // wait again after each one (a NATS restart is no gateway's death).
    let connections = Arc::new(AtomicU64::new(0));
    let client = bus::connect_counting(
        &file.nats,
        &format!("zone {name}"),
        Arc::clone(&connections),
    )
    .await?;

    let zone_metrics = ZoneMetrics {
        reals: Gauge::default(),
        in_flight: Gauge::default(),
        ghosts: Gauge::default(),
        handoffs: Counter::default(),
        handoffs_failed: Counter::default(),
        handoff_seconds: handoff_histogram(),
        bus_invalid: Counter::default(),
        bus_dropped: Counter::default(),
        bus_bytes_out: Counter::default(),
        overlapping_pairs_max: Gauge::default(),
        bodies_in_walls_max: Gauge::default(),
        ticks_overlapping: Counter::default(),
        orphans_removed: Counter::default(),
        overlap_p99_max_ppm: Gauge::default(),
    };
    let mut metrics = Metrics::new();
    zone_metrics.register(&mut metrics);
    let metrics = Arc::new(metrics);

    let (persist, writer) = match &file.store {
        Some(url) => {
            let spec = url
                .parse::<store::StoreSpec>()
                .context("the cluster file's store")?;
            let (persist, writer) = Persist::start(&spec, Arc::clone(&metrics))?;
            (Some(persist), Some(writer))
        }
        None => (None, None),
    };
    let ready = Arc::new(AtomicBool::new(false));
    let listener = tokio::net::TcpListener::bind(spec.metrics_listen)
        .await
        .with_context(|| format!("cannot listen for HTTP on {}", spec.metrics_listen))?;
    let metrics_addr = listener.local_addr()?;
    let http = tokio::spawn(serve_http(
        listener,
        Arc::new(Health {
            metrics: Arc::clone(&metrics),
            ready: Arc::clone(&ready),
            shutdown: shutdown.clone(),
            store: persist.clone(),
            map: None,
            certificates: None,
            quic_port: 0,
            world: None,
        }),
        HttpLimits::default(),
    ));

    let (in_tx, in_rx) = inbox::inbox(
        inbox::Bound {
            count: inbox::CONTROL,
            bytes: inbox::CONTROL_BYTES,
        },
        inbox::Bound {
            count: inbox::DATA,
            bytes: inbox::DATA_BYTES,
        },
    );
    let (out_tx, out_rx) = mpsc::channel::<ZoneOut>(OUTBOX);
    let mut subscriptions = Vec::new();
    for verb in [Verb::Join, Verb::Input, Verb::Leave, Verb::Handoff] {
        subscriptions.push(subject(&spec.name, verb));
    }
    for neighbour in file.neighbours(&spec) {
        subscriptions.push(subject(&neighbour.name, Verb::Frame));
    }
    subscriptions.push(GATEWAYS.to_owned());
    subscriptions.push(DIRECTORY.to_owned());
    for subject in subscriptions {
        let subscriber = client
            .subscribe(subject.clone())
            .await
            .with_context(|| format!("cannot subscribe to {subject}"))?;
        tokio::spawn(listen(
            subscriber,
            in_tx.clone(),
            zone_metrics.clone(),
            Arc::clone(&file),
        ));
    }
    let publisher = tokio::spawn(publish(
        client.clone(),
        out_rx,
        in_tx.clone(),
        zone_metrics.clone(),
    ));

    let incarnation = incarnation();
    let saver = persist.map(|p| Saver::new(p, map_id.clone()));
    let zone = ZoneWorld::new(
        Arc::clone(&mesh),
        Arc::clone(&file),
        index,
        incarnation,
        saver,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (stop, ready, metrics, zone_metrics) = (
            Arc::clone(&stop),
            Arc::clone(&ready),
            Arc::clone(&metrics),
            zone_metrics.clone(),
        );
        std::thread::Builder::new()
            .name(format!("zone {name}"))
            .spawn(move || {
                let bus = ZoneBus {
                    inbox: in_rx,
                    outbox: out_tx,
                    connections,
                };
                zone_loop(zone, bus, &metrics, &zone_metrics, &stop, &ready);
                if let Some(writer) = writer {
                    writer.stop();
                }
            })
            .context("cannot start the zone's world thread")?
    };
    info!(
        zone = %name, incarnation, metrics = %metrics_addr, nats = %file.nats,
        region = ?spec.region, "zone started"
    );
    let thread_done = tokio::task::spawn_blocking(move || thread.join());
    tokio::pin!(thread_done);
    let result = tokio::select! {
        joined = &mut thread_done => Err(anyhow!("the zone's world thread stopped: {:?}", joined.map(|j| j.is_ok()))),
        _ = shutdown.wait_for(|&s| s) => Ok(()),
    };
    stop.store(true, Ordering::Relaxed);
    if result.is_ok() {
        let _ = thread_done.await;
    }
    // The last frames and answers go out before the connection closes.
    let _ = tokio::time::timeout(Duration::from_secs(2), publisher).await;
    // Bounded: with NATS down, a flush waits for a reconnection that may never come, and
    // the zone would not stop.
    let _ = tokio::time::timeout(Duration::from_secs(2), client.flush()).await;
    http.abort();
    // What the zone saw, for runs whose metrics endpoint is gone with it (compose).
    let m = &zone_metrics;
    info!(
        zone = %name,
        handoffs = m.handoffs.get(),
        handoffs_failed = m.handoffs_failed.get(),
        ticks_overlapping = m.ticks_overlapping.get(),
        overlapping_pairs_max = m.overlapping_pairs_max.get(),
        overlap_p99_max_ppm = m.overlap_p99_max_ppm.get(),
        bodies_in_walls_max = m.bodies_in_walls_max.get(),
        bus_bytes_out = m.bus_bytes_out.get(),
        "zone stopped"
    );
    result
}

/// A number telling this start of a zone from earlier ones.
fn incarnation() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (nanos as u32) ^ std::process::id().rotate_left(16)
}

/// Gateways not in the cluster file that a zone warns about (once each), at most.
const MAX_STRANGERS: usize = 64;

/// Forwards one subscription's messages to the world thread; `file` names the gateways
/// whose heartbeats count.
async fn listen(
    mut subscriber: async_nats::Subscriber,
    inbox: InboxTx,
    m: ZoneMetrics,
    file: Arc<ClusterFile>,
) {
    let mut strangers = std::collections::HashSet::new();
    while let Some(message) = subscriber.next().await {
        let reply = message.reply.as_ref().map(|r| r.to_string());
        let decoded = match bus::decode(&message.subject, &message.payload) {
            Ok(decoded) => decoded,
            Err(why) => {
                m.bus_invalid.inc();
                warn!(%why, "bus payload refused");
                continue;
            }
        };
        let item = match decoded {
            BusMessage::Frame(frame) => ZoneIn::Frame(Box::new(frame)),
            BusMessage::Join(join) => ZoneIn::Join(join, reply),
            BusMessage::Input(input) => ZoneIn::Input(input),
            BusMessage::Leave(leave) => ZoneIn::Leave(leave.id),
            BusMessage::Superseded(newer) => ZoneIn::Superseded(newer.id, newer.epoch),
            BusMessage::Handoff(handoff) => ZoneIn::Handoff(Box::new(handoff), reply),
            // Only the cluster file's gateways, each under its own name.
            BusMessage::GatewayAlive(alive)
                if file
                    .gateways
                    .get(alive.index as usize)
                    .is_some_and(|spec| spec.name == alive.gateway) =>
            {
                ZoneIn::GatewayAlive {
                    index: alive.index,
                    incarnation: alive.incarnation,
                }
            }
            BusMessage::Announce(_) => ZoneIn::Announced,
            BusMessage::GatewayAlive(alive) => {
                // A gateway of another cluster file on the same NATS, say: counted, and
                // said once a name (it speaks every second).
                m.bus_invalid.inc();
                if strangers.len() < MAX_STRANGERS && strangers.insert(alive.gateway.clone()) {
                    warn!(
                        gateway = %shown(&alive.gateway), index = alive.index,
                        "a heartbeat from a gateway the cluster file does not name so: ignored"
                    );
                }
                continue;
            }
            other => {
                m.bus_invalid.inc();
                warn!(subject = %message.subject, ?other, "a message this subject does not carry");
                continue;
            }
        };
        if !inbox.offer(item, message.payload.len()) {
            m.bus_dropped.inc();
        }
    }
}

/// Publishes what the world thread says, in order; handoff requests wait for their answer
/// on a task of their own.
async fn publish(
    client: async_nats::Client,
    mut outbox: mpsc::Receiver<ZoneOut>,
    inbox: InboxTx,
    m: ZoneMetrics,
) {
    while let Some(out) = outbox.recv().await {
        match out {
            ZoneOut::Publish(subject, message) => {
                let Ok(payload) = bus::encode(&message) else {
                    error!(%subject, "a bus message too large to send");
                    continue;
                };
                m.bus_bytes_out.inc_by(payload.len() as u64);
                if let Err(err) = client.publish(subject.clone(), payload).await {
                    warn!(%subject, %err, "cannot publish");
                }
            }
            ZoneOut::Request(subject, message, id, epoch) => {
                let Ok(payload) = bus::encode(&message) else {
                    error!(%subject, "a handoff too large to send");
                    continue;
                };
                m.bus_bytes_out.inc_by(payload.len() as u64);
                let (client, inbox) = (client.clone(), inbox.clone());
                tokio::spawn(async move {
                    let ack = match client.request(subject.clone(), payload).await {
                        Ok(reply) => match bus::decode(&subject, &reply.payload) {
                            Ok(BusMessage::HandoffAck(ack)) => Some(ack),
                            _ => None,
                        },
                        Err(err) => {
                            warn!(%subject, %err, "handoff unanswered");
                            None
                        }
                    };
                    // The world thread always takes answers: they settle custody.
                    inbox
                        .must_send(ZoneIn::HandoffAnswer { id, epoch, ack })
                        .await;
                });
            }
        }
    }
}

/// The world thread's side of the bus: what it hears, what it says, and how many times
/// the zone has connected to NATS.
struct ZoneBus {
    inbox: InboxRx,
    outbox: mpsc::Sender<ZoneOut>,
    connections: Arc<AtomicU64>,
}

/// The zone's world thread: the inbox drained, a tick stepped, what it says handed to the
/// publisher, the metrics set, until `stop`.
fn zone_loop(
    mut zone: ZoneWorld,
    bus: ZoneBus,
    metrics: &Metrics,
    m: &ZoneMetrics,
    stop: &AtomicBool,
    ready: &AtomicBool,
) {
    let ZoneBus {
        mut inbox,
        outbox,
        connections,
    } = bus;
    let mut pacer = Pacer::new();
    let mut connected = 0;
    while !stop.load(Ordering::Relaxed) {
        let start = Instant::now();
        let now_connected = connections.load(Ordering::Relaxed);
        if now_connected != connected {
            connected = now_connected;
            zone.bus_connected();
        }
        for _ in 0..MAX_MESSAGES_PER_TICK {
            let Some(message) = inbox.next() else {
                break;
            };
            match zone.handle(message) {
                Some(Settled::Handed(took)) => {
                    m.handoffs.inc();
                    m.handoff_seconds.observe(took.as_secs_f64());
                }
                Some(Settled::Failed) => {
                    m.handoffs_failed.inc();
                }
                None => {}
            }
        }
        let (out, said) = zone.tick();
        for message in said {
            if outbox.try_send(message).is_err() {
                m.bus_dropped.inc();
            }
        }
        m.orphans_removed.inc_by(zone.take_orphans_removed());
        m.handoffs_failed.inc_by(zone.take_flights_expired());
        let counts = zone.counts();
        m.reals.set(counts.reals as i64);
        m.in_flight.set(counts.in_flight as i64);
        m.ghosts.set(counts.ghosts as i64);
        metrics.players.set(counts.players as i64);
        metrics.npcs.set((counts.reals - counts.players) as i64);
        metrics.paths_waiting.set(out.paths_waiting as i64);
        let worst = |gauge: &Gauge, now: usize| {
            if now as i64 > gauge.get() {
                gauge.set(now as i64);
            }
        };
        worst(&m.overlapping_pairs_max, out.overlapping_pairs);
        worst(&m.bodies_in_walls_max, out.bodies_in_walls);
        if out.overlapping_pairs > 0 {
            m.ticks_overlapping.inc();
        }
        worst(
            &m.overlap_p99_max_ppm,
            (f64::from(out.p99_overlap) * 1e6).round() as usize,
        );
        let took = start.elapsed();
        metrics.ticks.inc();
        metrics.observe_tick(took);
        ready.store(true, Ordering::Relaxed);
        pacer.wait(metrics);
    }
    zone.save_everyone();
}
