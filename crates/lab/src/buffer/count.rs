//! Hit ratio as a buffer manager means it: the B+-tree asks for a page
//! again right after fetching it (to find, then to change), which the pool
//! counts as hits. A policy wrapper counts references instead: a request
//! for the page requested just before is the same reference.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use flashkv_engine::{FrameInfo, FrameView, PageId, Policy, PolicyFactory};

/// References and hits, shared between a policy and the lab.
#[derive(Debug, Default)]
pub struct Refs {
    refs: AtomicU64,
    hits: AtomicU64,
}

impl Refs {
    /// (references, hits) so far.
    pub fn get(&self) -> (u64, u64) {
        (self.refs.load(Relaxed), self.hits.load(Relaxed))
    }
}

struct Counted {
    inner: Box<dyn Policy>,
    last: Option<PageId>,
    refs: Arc<Refs>,
}

impl Policy for Counted {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn admit(&mut self, page: PageId) {
        self.refs.refs.fetch_add(1, Relaxed);
        self.last = Some(page);
        self.inner.admit(page)
    }
    fn access(&mut self, page: PageId) {
        if self.last.replace(page) != Some(page) {
            self.refs.refs.fetch_add(1, Relaxed);
            self.refs.hits.fetch_add(1, Relaxed);
        }
        self.inner.access(page)
    }
    fn forget(&mut self, page: PageId) {
        self.inner.forget(page)
    }
    fn dirtied(&mut self, page: PageId) {
        self.inner.dirtied(page)
    }
    fn victim(&mut self, frames: &dyn FrameView) -> Option<PageId> {
        self.inner.victim(frames)
    }
    fn write_group(&mut self, victim: FrameInfo, frames: &dyn FrameView) -> Vec<PageId> {
        self.inner.write_group(victim, frames)
    }
}

/// `factory`'s policies, counting into the returned [`Refs`].
pub fn counted(factory: PolicyFactory) -> (PolicyFactory, Arc<Refs>) {
    let refs = Arc::new(Refs::default());
    let r = refs.clone();
    let f: PolicyFactory = Arc::new(move |frames| {
        Box::new(Counted {
            inner: factory(frames),
            last: None,
            refs: r.clone(),
        }) as Box<dyn Policy>
    });
    (f, refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_immediate_repeat_is_one_reference() {
        let (f, refs) = counted(Arc::new(|_| Box::new(flashkv_engine::Lru::default())));
        let mut p = f(4);
        p.admit(1); // miss
        p.access(1); // same reference
        p.admit(2); // miss
        p.access(1); // hit
        p.access(1); // same reference
        p.access(2); // hit
        assert_eq!(refs.get(), (4, 2));
        assert_eq!(p.name(), "lru");
    }
}
