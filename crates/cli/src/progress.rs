//! Progress on stderr: an `indicatif` bar with percent and ETA on a
//! terminal, and otherwise a line per finished step (or per tenth of a long
//! fill), so logs of piped runs show where the time goes. Never on stdout.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::rc::Rc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use crate::units::human;

/// What the bar counts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Steps,
    Bytes,
}

pub struct Progress {
    label: String,
    unit: Unit,
    total: u64,
    done: u64,
    /// Tenths of `total` already reported as lines (bytes only).
    tenths: u64,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(label: &str, total: u64, unit: Unit) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let counts = match unit {
                Unit::Steps => "{pos}/{len}",
                Unit::Bytes => "{bytes}/{total_bytes}",
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
            done: 0,
            tenths: 0,
            bar,
        }
    }

    /// Shows what runs now (terminal only; lines are written when it ends).
    pub fn start(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    /// `what` finished; `done` steps or bytes are behind us.
    pub fn finished(&mut self, done: u64, what: &str) {
        self.done = done.min(self.total);
        if let Some(b) = &self.bar {
            b.set_position(self.done);
            return;
        }
        match self.unit {
            Unit::Steps => eprintln!("{}: [{}/{}] {what}", self.label, self.done, self.total),
            Unit::Bytes => {
                let tenths = self.done * 10 / self.total.max(1);
                if tenths > self.tenths {
                    self.tenths = tenths;
                    eprintln!(
                        "{}: {} of {} ({}%)",
                        self.label,
                        human(self.done),
                        human(self.total),
                        tenths * 10
                    );
                }
            }
        }
    }

    pub fn finish(self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// The lab's progress: it reports a description before each step (`seed004
/// hdd-15k …`), whose first word names the experiment. The bar counts
/// experiments (percent and ETA over them) and shows the step; piped, each
/// finished step is a line with how long it took. Cloned into the lab's
/// callback, so the state is shared.
#[derive(Clone)]
pub struct LabProgress(Rc<RefCell<LabState>>);

struct LabState {
    names: Vec<&'static str>,
    bar: Option<ProgressBar>,
    current: Option<(String, Instant)>,
    steps: u64,
}

impl LabProgress {
    pub fn new(names: Vec<&'static str>) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let style = ProgressStyle::with_template(
                "lab [{bar:30}] {percent:>3}% {pos}/{len} experiments, ETA {eta} {wide_msg}",
            )
            .expect("valid template")
            .progress_chars("=> ");
            ProgressBar::new(names.len() as u64).with_style(style)
        });
        LabProgress(Rc::new(RefCell::new(LabState {
            names,
            bar,
            current: None,
            steps: 0,
        })))
    }

    /// The callback the lab calls before each step.
    pub fn callback(&self) -> Box<dyn Fn(&str)> {
        let me = self.clone();
        Box::new(move |what| me.0.borrow_mut().step(what))
    }

    pub fn finish(&self) {
        let mut s = self.0.borrow_mut();
        s.end_step();
        if let Some(b) = &s.bar {
            b.finish_and_clear();
        }
    }
}

impl LabState {
    /// A new step starts; the one before it has finished.
    fn step(&mut self, what: &str) {
        self.end_step();
        self.steps += 1;
        let first = what.split([' ', ':']).next().unwrap_or("");
        if let (Some(b), Some(i)) = (&self.bar, self.names.iter().position(|n| *n == first)) {
            b.set_position(i as u64);
            b.set_message(format!("step {}: {what}", self.steps));
        }
        self.current = Some((what.to_string(), Instant::now()));
    }

    fn end_step(&mut self) {
        if let Some((what, t)) = self.current.take() {
            if self.bar.is_none() {
                let s = t.elapsed().as_secs_f64();
                eprintln!("lab: [{}] {what} done in {s:.1} s", self.steps);
            }
        }
    }
}
