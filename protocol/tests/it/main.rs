//! Integration tests of the protocol crate: every message through the codec, decoders fed
//! arbitrary bytes, size limits, version checks, and delta snapshots over a lossy network.
//!
//! Property tests run with a fixed seed and no failure persistence, so every run checks
//! the same cases and a failure reproduces by running the test again.

mod codec;
mod examples;
mod limits;
mod reuse;
mod snapshots;
mod strategies;

use proptest::test_runner::{Config as ProptestConfig, RngAlgorithm, RngSeed};

/// The configuration of every property test here: `cases` cases from a fixed seed.
pub(crate) fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        // The std-only proptest build has no file persistence; a fixed seed makes the
        // failing case reproducible instead.
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(0x6d6d_6f2d_7369_6d31),
        ..ProptestConfig::default()
    }
}
