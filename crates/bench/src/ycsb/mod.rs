//! The YCSB core workloads A–F on the benchmark's engines.

pub mod gen;
pub mod mix;
pub mod run;
