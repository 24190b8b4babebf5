//! Test support for flashkv's fault tests (a dev-dependency only).
//!
//! * [`Shared`]: a handle on a device a store owns, so a test can take the
//!   device back after the store crashed on it and was dropped.
//! * [`cases`] and [`soak`]: run seeded cases; a failing case prints its
//!   seed, and `FLASHKV_SEED=<n>` reruns exactly that case.
//! * [`powercut`]: a FUSE file system that loses what no `fsync` covered
//!   when the test cuts power, for crash tests on real files.
//! * [`budget`]: the assertion budget, functions and assertions counted
//!   over a crate's non-test code (`scripts/assert-budget` prints it).

pub mod budget;
pub mod powercut;
mod seeds;
mod shared;

pub use seeds::{cases, report, soak, Tally};
pub use shared::Shared;
