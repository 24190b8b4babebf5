//! flashkv's cache setting for the larger-than-memory scale, where every
//! engine gets the same cache budget through its own setting (the peers'
//! live in their modules; docs/benchmarks.md lists them all). It is kept
//! apart from `flashkv.rs`, whose headline rows run the engine's defaults
//! plus `sync(true)` and nothing else.

use flashkv_engine::OptionsBuilder;

/// The engine's page size (its default, which the benchmark keeps).
const PAGE: u64 = 4096;

/// The buffer pool sized to `bytes`: one frame per 4 KiB page.
pub fn flashkv(opts: OptionsBuilder, bytes: u64) -> OptionsBuilder {
    let frames = (bytes / PAGE).max(1);
    opts.buffer_pages(usize::try_from(frames).unwrap_or(usize::MAX))
}
