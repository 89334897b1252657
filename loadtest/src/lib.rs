//! loadtest: a swarm of bots over real QUIC that proves the game server under load.
//!
//! A bot ([`bot::Bot`]) is a plain state machine with no I/O: it is fed what arrives and
//! asked what to send, and it checks what it sees (ticks forward, snapshots that apply,
//! positions in bounds, its character moving when ordered). The swarm ([`swarm::run`])
//! drives N of them over one QUIC endpoint for a bounded time and gathers round trips,
//! snapshot intervals (HdrHistogram), bandwidth, drops by reason and violations into a
//! [`report::Report`]; [`slo::Slo`] turns thresholds into a pass or a list of misses;
//! [`scrape`] reads the server's own tick figures from its `/metrics`. Given a cluster
//! file, [`borders::Borders`] gives the bots the zones: they count the borders their
//! characters cross, and the border behaviour walks across them, to walkable points of the
//! cluster's map past the handoff margin ([`targets::BorderTargets`]).
//!
//! A run where nothing worked is a failure: unless an SLO file says otherwise, any bot
//! that failed to log in, was dropped (a session the server falls silent on included) or
//! saw a violation fails the run ([`slo::Slo::default`]).
//!
//! The swarm connects through the `client` crate and knows the server only by its wire
//! protocol: it does not link the server or the world. The border behaviour alone builds
//! the cluster's map (the navmesh builder), to walk to points that are walkable.

pub mod borders;
pub mod bot;
pub mod report;
pub mod scrape;
pub mod slo;
pub mod swarm;
pub mod targets;
