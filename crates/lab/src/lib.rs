//! flashkv lab: the profiler, the experiments that reproduce the seed
//! documents' tables, and the reports (tables, JSON, CSV, Markdown, plots)
//! they write.

#![deny(clippy::unwrap_used)]

pub mod advisor;
mod advisor_lab;
pub mod buffer;
pub mod cache;
pub mod hybrid;
pub mod internals;
pub mod ipl;
pub mod lab;
pub mod oltp;
pub mod pgbench;
pub mod placement;
pub mod plot;
mod png;
pub mod points;
pub mod profile;
pub mod real;
pub mod report;
pub mod scorecard;
pub mod seed000;
pub mod seed002;
pub mod seed004;
pub mod shard;
pub mod sim_scale;
pub mod summary;
pub mod workload;

/// The replacement policy the seeds' engines use, LRU (seed 001 §5.1.3),
/// which the lab's stores set rather than take the engine's default
/// (CLOCK): the seeds' figures are reproduced under the seeds' policy.
/// (Not the hybrid's flush policy, `hybrid::measure::seed_policy`.)
pub(crate) fn seeds_lru() -> flashkv_engine::PolicyFactory {
    std::sync::Arc::new(|_| Box::new(flashkv_engine::Lru::default()))
}
