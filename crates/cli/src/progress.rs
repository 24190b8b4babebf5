//! Progress on stderr, never on stdout. On a terminal an `indicatif` bar
//! with percent, a count and an ETA; otherwise a line per finished step and
//! per tenth of the work (with percent and ETA), so logs of piped runs show
//! where the time goes. Steps may be long: sub-steps move the bar between
//! them.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::rc::Rc;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::units::human;

/// What the bar counts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Things with a name (`records`, `points`), shown as `n/N name`.
    Count(&'static str),
    Bytes,
    /// Work in arbitrary units (requests and MiB written, say): percent only.
    Work,
}

/// A bar (or its lines) over `total` units of work.
pub struct Progress {
    label: String,
    unit: Unit,
    total: u64,
    started: Instant,
    /// Units done, and tenths of the total already reported as lines.
    state: Mutex<(u64, u64)>,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(label: &str, total: u64, unit: Unit) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let counts = match unit {
                Unit::Count(name) => format!("{{pos}}/{{len}} {name}"),
                Unit::Bytes => "{bytes}/{total_bytes}".into(),
                Unit::Work => String::new(),
            };
            let style = ProgressStyle::with_template(&format!(
                "{{prefix}} [{{bar:30}}] {{percent:>3}}% {counts} ETA {{eta}} {{wide_msg}}"
            ))
            .expect("valid template")
            .progress_chars("=> ");
            let b = ProgressBar::new(total).with_style(style);
            b.set_prefix(label.to_string());
            b
        });
        Progress {
            label: label.to_string(),
            unit,
            total,
            started: Instant::now(),
            state: Mutex::new((0, 0)),
            bar,
        }
    }

    /// Shows what runs now (terminal only; lines are written as work ends).
    pub fn start(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    /// Work inside a step: `done` units are behind us. Piped, a line per
    /// tenth of the total.
    pub fn advance_to(&self, done: u64, what: &str) {
        let done = done.min(self.total);
        if let Some(b) = &self.bar {
            b.set_position(done);
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.0 = done;
        let tenths = done * 10 / self.total.max(1);
        if tenths > s.1 && done < self.total {
            s.1 = tenths;
            eprintln!("{}: {}{what}", self.label, self.so_far(done));
        }
    }

    /// Moves the bar to `done` units; piped, no line (the next finished
    /// step's line counts them).
    pub fn set_done(&self, done: u64) {
        let done = done.min(self.total);
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
        self.state.lock().unwrap_or_else(PoisonError::into_inner).0 = done;
    }

    /// A step `what` finished; `done` units are behind us. Piped, one line.
    pub fn finished(&self, done: u64, what: &str, took: Duration) {
        let done = done.min(self.total);
        if let Some(b) = &self.bar {
            b.set_position(done);
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        *s = (done, done * 10 / self.total.max(1));
        eprintln!(
            "{}: {what} done in {:.1} s; {}",
            self.label,
            took.as_secs_f64(),
            self.so_far(done)
        );
    }

    /// `12/40 records, 30 %, ETA 8 s` (the count as the unit has it).
    fn so_far(&self, done: u64) -> String {
        let mut parts = match self.unit {
            Unit::Count(name) => vec![format!("{done}/{} {name}", self.total)],
            Unit::Bytes => vec![format!("{} of {}", human(done), human(self.total))],
            Unit::Work => vec![],
        };
        parts.push(format!("{} %", done * 100 / self.total.max(1)));
        parts.extend(eta(self.started.elapsed(), done, self.total).map(|s| format!("ETA {s}")));
        parts.join(", ")
    }

    pub fn finish(self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The time left at the rate so far (`None` before any work is done).
fn eta(elapsed: Duration, done: u64, total: u64) -> Option<String> {
    if done == 0 || done >= total {
        return None;
    }
    let left = elapsed.as_secs_f64() * (total - done) as f64 / done as f64;
    Some(match left {
        s if s < 90.0 => format!("{s:.0} s"),
        s if s < 5400.0 => format!("{:.0} min", s / 60.0),
        s => format!("{:.1} h", s / 3600.0),
    })
}

/// The lab's progress over the points of the run (each experiment a grid
/// of points). The lab reports a description before each step (`seed004
/// hdd-15k …`) and each finished point; the bar counts points (percent and
/// ETA) and shows the step; piped, each finished step is a line with how
/// long it took and how far the run is. Cloned into the lab's callbacks, so
/// the state is shared.
#[derive(Clone)]
pub struct LabProgress(Rc<RefCell<LabState>>);

struct LabState {
    /// None for a merge: it runs no points, and its steps take moments.
    bar: Option<Progress>,
    points: u64,
    current: Option<(String, Instant)>,
    steps: u64,
}

impl LabProgress {
    /// Progress over `points` points, or (None) a line per step.
    pub fn new(points: Option<u64>) -> Self {
        LabProgress(Rc::new(RefCell::new(LabState {
            bar: points.map(|n| Progress::new("lab", n.max(1), Unit::Count("points"))),
            points: 0,
            current: None,
            steps: 0,
        })))
    }

    /// The callback the lab calls before each step.
    pub fn callback(&self) -> Box<dyn Fn(&str)> {
        let me = self.clone();
        Box::new(move |what| me.0.borrow_mut().step(what))
    }

    /// The callback the lab calls when a point is done.
    pub fn point_callback(&self) -> Box<dyn Fn()> {
        let me = self.clone();
        Box::new(move || {
            let mut s = me.0.borrow_mut();
            s.points += 1;
            if let Some(b) = &s.bar {
                b.set_done(s.points);
            }
        })
    }

    pub fn finish(&self) {
        let mut s = self.0.borrow_mut();
        s.end_step();
        if let Some(b) = s.bar.as_ref().and_then(|p| p.bar.as_ref()) {
            b.finish_and_clear();
        }
    }
}

impl LabState {
    /// A new step starts; the one before it has finished.
    fn step(&mut self, what: &str) {
        self.end_step();
        self.steps += 1;
        if let Some(b) = &self.bar {
            b.start(&format!("step {}: {what}", self.steps));
        }
        self.current = Some((what.to_string(), Instant::now()));
    }

    fn end_step(&mut self) {
        if let Some((what, t)) = self.current.take() {
            let what = format!("[{}] {what}", self.steps);
            match &self.bar {
                Some(b) => b.finished(self.points, &what, t.elapsed()),
                None => eprintln!("lab: {what} done in {:.1} s", t.elapsed().as_secs_f64()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_follows_the_rate_so_far() {
        let s = Duration::from_secs;
        assert_eq!(eta(s(10), 0, 100), None, "nothing done: no rate");
        assert_eq!(eta(s(10), 100, 100), None, "all done");
        assert_eq!(eta(s(10), 50, 100).as_deref(), Some("10 s"));
        assert_eq!(eta(s(60), 10, 100).as_deref(), Some("9 min"));
        assert_eq!(eta(s(3600), 1, 3).as_deref(), Some("2.0 h"));
    }
}
