//! `server`: the game server binary. Today it has one command, `simulate`: a headless run
//! of the 20 Hz world ([`sim::World`]) on a map, as fast as the machine allows, that prints
//! tick times, each phase's share of them and the world's health figures, and can write
//! them as JSON and draw the final frame as SVG. Serving clients (`server run`) comes later.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod figures;
mod load;
mod progress;
mod sample;
mod simulate;
mod svg;

#[derive(Parser)]
#[command(version, about = "The game server: runs the world on a map")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the world headless on a map as fast as possible and report tick times and the
    /// world's health figures.
    ///
    /// Spawns `--npcs` wandering NPCs and `--players` player characters (which get a walk
    /// order to a random point every few seconds) at random walkable points, in the first
    /// tick, then runs `--seconds` of 20 Hz ticks and prints a table: tick times
    /// (p50/p99/max), each phase's share of the total, overlap, bodies in walls,
    /// circling/repulsed/stuck bodies, arrivals and path requests.
    Simulate {
        /// The map: a navmesh file (.navmesh), or a map the builder reads (.json polygon
        /// map, .map Moving AI grid map), built in memory first.
        #[arg(long, value_name = "FILE")]
        map: PathBuf,
        /// Wandering NPCs to spawn (at most 1,000,000).
        #[arg(long, value_name = "N")]
        npcs: u64,
        /// Simulated seconds to run (20 ticks each, rounded to whole ticks, at least one).
        #[arg(long, value_name = "S", allow_negative_numbers = true)]
        seconds: f64,
        /// Seed of the spawn and order generator and of the world.
        #[arg(long, value_name = "K", default_value_t = 1)]
        seed: u64,
        /// Player characters to spawn (at most 1,000,000); each walks to a random point
        /// every few seconds.
        #[arg(long, value_name = "P", default_value_t = 0)]
        players: u64,
        /// Also write the figures as JSON here.
        #[arg(long, value_name = "OUT.json")]
        report: Option<PathBuf>,
        /// Also draw the final frame here: the mesh, every body coloured by its motion and
        /// the remaining paths of a few NPCs.
        #[arg(long, value_name = "OUT.svg")]
        svg: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Simulate {
            map,
            npcs,
            seconds,
            seed,
            players,
            report,
            svg,
        } => simulate::run(&simulate::SimulateArgs {
            map,
            npcs,
            seconds,
            seed,
            players,
            report,
            svg,
        }),
    }
}
