//! One engine open on its directory for a run: after each write phase it
//! is closed and reopened, and what the close and the reopen wrote (a
//! checkpoint, a memtable flush, a compaction, a recovery) is counted
//! with the phase ("WA through close").

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::engine::{Engine, Opener, Setup};
use crate::measure::written_bytes;
use crate::outcome::{caught, measure, Closed, Outcome, Ran};

pub struct Session {
    open: Opener,
    setup: Setup,
    dir: PathBuf,
    /// `None` once a close or a reopen failed: the run cannot go on.
    engine: Option<Box<dyn Engine>>,
}

impl Session {
    /// Creates the engine's store in `dir`, which must exist and be empty.
    pub fn create(open: Opener, setup: Setup, dir: &Path) -> Result<Session, String> {
        let engine = caught(|| open(dir, setup)).map_err(|e| format!("open: {e}"))?;
        Ok(Session {
            open,
            setup,
            dir: dir.to_path_buf(),
            engine: Some(engine),
        })
    }

    /// The open engine, or why there is none.
    pub fn engine(&mut self) -> Result<&mut dyn Engine, String> {
        match self.engine.as_mut() {
            Some(e) => Ok(e.as_mut()),
            None => Err("an earlier close or reopen failed".into()),
        }
    }

    /// Closes and reopens the engine; the bytes both wrote and their time.
    pub fn cycle(&mut self) -> Result<Closed, String> {
        let engine = self
            .engine
            .take()
            .ok_or("an earlier close or reopen failed")?;
        let before = written_bytes().map_err(|e| e.to_string())?;
        let start = Instant::now();
        caught(|| engine.close()).map_err(|e| format!("close: {e}"))?;
        let (open, dir, setup) = (self.open, &self.dir, self.setup);
        self.engine = Some(caught(|| open(dir, setup)).map_err(|e| format!("reopen: {e}"))?);
        let seconds = start.elapsed().as_secs_f64();
        let after = written_bytes().map_err(|e| e.to_string())?;
        Ok(Closed {
            bytes: after.saturating_sub(before),
            seconds,
        })
    }

    /// Closes the engine, runs `between` on its directory while it is
    /// closed, and reopens it.
    pub fn rest(
        &mut self,
        between: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<(), String> {
        let engine = self
            .engine
            .take()
            .ok_or("an earlier close or reopen failed")?;
        caught(|| engine.close()).map_err(|e| format!("close: {e}"))?;
        between(&self.dir)?;
        let (open, dir, setup) = (self.open, &self.dir, self.setup);
        self.engine = Some(caught(|| open(dir, setup)).map_err(|e| format!("reopen: {e}"))?);
        Ok(())
    }

    /// Closes the engine for good.
    pub fn finish(mut self) -> Result<(), String> {
        match self.engine.take() {
            Some(e) => caught(|| e.close()).map_err(|e| format!("close: {e}")),
            None => Err("an earlier close or reopen failed".into()),
        }
    }
}

/// Runs the write phase `f` on the session's engine, then closes and
/// reopens it, counting the close with the phase.
pub fn write_phase(
    session: &mut Session,
    f: impl FnOnce(&mut dyn Engine) -> crate::engine::Result<Ran>,
) -> Outcome {
    let engine = match session.engine() {
        Ok(e) => e,
        Err(e) => return Outcome::Skipped(e),
    };
    let mut outcome = measure(|| f(engine));
    if let Outcome::Done(m) = &mut outcome {
        match session.cycle() {
            Ok(c) => m.closed = Some(c),
            Err(e) => return Outcome::Failed(e),
        }
    }
    outcome
}

/// Runs the read phase `f` on the session's engine.
pub fn read_phase(
    session: &mut Session,
    f: impl FnOnce(&dyn Engine) -> crate::engine::Result<Ran>,
) -> Outcome {
    match session.engine() {
        Ok(e) => {
            let e: &dyn Engine = e;
            measure(|| f(e))
        }
        Err(e) => Outcome::Skipped(e),
    }
}
