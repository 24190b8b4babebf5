//! Profiling real storage: a file or block device, timed by the wall clock.
//!
//! [`target`] decides what may be written (files the profiler created carry
//! a marker header; anything else is read-only unless forced) and lays the
//! test span out; [`run`] drives the access patterns with `iodepth` threads,
//! each doing synchronous positioned I/O on its own descriptor of the file;
//! [`cache`] runs reads with the page cache cold or hot.

pub mod cache;
mod run;
mod target;

pub use run::{run, Budget, RealSpec};
pub use target::{
    prepare, prepare_with, Target, TargetError, TargetOptions, DEFAULT_SPAN, HEADER, MARKER,
};
