//! When replies leave. With `--pace real` the model's virtual time is wall
//! time since the server started (as FEMU maps its emulated NAND onto the
//! guest's clock): a request is issued at the wall time it arrived and its
//! reply is held until its virtual completion. With `--pace none` requests
//! are issued back to back on the device's clock and answered at once.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use clap::ValueEnum;
use flashkv_device::Nanos;

use super::nbd::write_reply;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Pace {
    /// Answer as soon as the model has costed the request.
    None,
    /// Hold each reply until the model's completion time, in wall time.
    Real,
}

impl Pace {
    pub fn name(self) -> &'static str {
        match self {
            Pace::None => "none",
            Pace::Real => "real",
        }
    }
}

/// A reply later than this after its completion time counts as late: the
/// server could not keep the model's schedule.
pub const LATE: Duration = Duration::from_millis(1);

/// Maps virtual nanoseconds onto wall time.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pace: Pace,
    started: Instant,
}

impl Clock {
    pub fn new(pace: Pace) -> Self {
        Clock {
            pace,
            started: Instant::now(),
        }
    }

    pub fn pace(&self) -> Pace {
        self.pace
    }

    /// The virtual time a request arriving now is issued at.
    pub fn issue(&self, device_clock: Nanos) -> Nanos {
        match self.pace {
            Pace::None => device_clock,
            Pace::Real => u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// When the reply to a request completing at virtual `end` may leave.
    pub fn due(&self, end: Nanos) -> Instant {
        match self.pace {
            Pace::None => Instant::now(),
            Pace::Real => self.started + Duration::from_nanos(end),
        }
    }
}

/// A reply waiting for its time.
pub struct Reply {
    pub due: Instant,
    pub handle: u64,
    pub error: u32,
    pub data: Vec<u8>,
}

/// Held replies, earliest due first, in arrival order among equals.
struct Held {
    due: Instant,
    seq: u64,
    reply: Reply,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

/// Writes each reply from `rx` when it is due, until the sender is gone and
/// every held reply is out; `on_late` hears of each late one.
pub fn deliver(
    rx: &Receiver<Reply>,
    w: &mut impl Write,
    on_late: &mut dyn FnMut(),
) -> io::Result<()> {
    let mut held = BinaryHeap::new();
    let mut seq = 0u64;
    let mut open = true;
    loop {
        while held
            .peek()
            .is_some_and(|Reverse(h): &Reverse<Held>| h.due <= Instant::now())
        {
            let Reverse(h) = held.pop().expect("peeked");
            if h.due.elapsed() > LATE {
                on_late();
            }
            write_reply(w, h.reply.error, h.reply.handle, &h.reply.data)?;
        }
        let wait = held
            .peek()
            .map(|Reverse(h)| h.due.saturating_duration_since(Instant::now()));
        let got = match (open, wait) {
            (false, None) => return Ok(()),
            (false, Some(d)) => {
                std::thread::sleep(d);
                continue;
            }
            (true, None) => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            (true, Some(d)) => rx.recv_timeout(d),
        };
        match got {
            Ok(reply) => {
                seq += 1;
                held.push(Reverse(Held {
                    due: reply.due,
                    seq,
                    reply,
                }));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    fn handles(out: &[u8]) -> Vec<u64> {
        out.chunks(16)
            .map(|c| u64::from_be_bytes(c[8..16].try_into().unwrap()))
            .collect()
    }

    #[test]
    fn replies_leave_in_due_order_and_all_leave_after_the_sender_ends() {
        let (tx, rx) = channel();
        let now = Instant::now();
        // Margins far above any scheduling delay: the order is by due time.
        for (handle, ms) in [(1, 600), (2, 200), (3, 200), (4, 0)] {
            let due = now + Duration::from_millis(ms);
            tx.send(Reply {
                due,
                handle,
                error: 0,
                data: Vec::new(),
            })
            .unwrap();
        }
        drop(tx);
        let mut out = Vec::new();
        deliver(&rx, &mut out, &mut || {}).unwrap();
        assert_eq!(handles(&out), [4, 2, 3, 1]);
    }

    #[test]
    fn real_pace_issues_at_wall_time_and_none_at_the_device_clock() {
        let c = Clock::new(Pace::None);
        assert_eq!(c.issue(12_345), 12_345);
        let c = Clock::new(Pace::Real);
        std::thread::sleep(Duration::from_millis(2));
        assert!(c.issue(0) >= 2_000_000);
        assert_eq!(c.due(5_000_000), c.started + Duration::from_millis(5));
    }
}
