//! Test support for flashkv's fault tests (a dev-dependency only).
//!
//! * [`Shared`]: a handle on a device a store owns, so a test can take the
//!   device back after the store crashed on it and was dropped.
//! * [`cases`] and [`soak`]: run seeded cases; a failing case prints its
//!   seed, and `FLASHKV_SEED=<n>` reruns exactly that case.
//! * [`budget`]: the assertion budget, functions and assertions counted
//!   over a crate's non-test code (`scripts/assert-budget` prints it).

pub mod budget;
mod seeds;
mod shared;

pub use seeds::{cases, report, soak, Tally};
pub use shared::Shared;
