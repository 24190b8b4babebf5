//! Public block-trace formats, parsed into one [`TraceRecord`] stream.
//!
//! * `msr`: MSR Cambridge CSV, `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`;
//!   timestamps in Windows 100 ns ticks, offsets and sizes in bytes, type `Read`/`Write`.
//!   The trace device is the disk number.
//! * `spc`: SPC / UMass (Financial, WebSearch), `ASU,LBA,Size,Opcode,Timestamp[,...]`;
//!   LBA in 512-byte blocks, size in bytes, opcode `r`/`w`, timestamp in seconds.
//!   The trace device is the ASU.
//! * `disksim`: DiskSim ASCII input, `time devno blkno size flags`; time in ms,
//!   block number and size in 512-byte sectors, flags bit 0 set for a read.
//!   The trace device is the device number.
//! * `blkparse`: `blkparse` default text output; only queue (`Q`) events with a
//!   read or write and a `sector + count` are requests (discards, flushes and
//!   other actions are skipped), the summary at the end is ignored. Time in
//!   seconds; one trace device (0).
//!
//! A [`TimeUnit`] given to [`parse_with`] overrides the format's time unit
//! (DiskSim traces made for MQSim are in ns). Times are made relative to the
//! first record. A malformed line is an error naming its line number.

use std::io::BufRead;
use std::path::Path;
use std::str::FromStr;

use thiserror::Error;

/// One request of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct TraceRecord {
    /// Issue time, ns after the first record.
    pub time_ns: u64,
    /// Byte offset.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// A write (else a read).
    pub write: bool,
    /// The trace's device (DiskSim device number, MSR disk number, SPC ASU).
    pub device: u32,
}

/// The unit of a trace's timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl TimeUnit {
    fn ns(self) -> u64 {
        match self {
            TimeUnit::Ns => 1,
            TimeUnit::Us => 1_000,
            TimeUnit::Ms => 1_000_000,
            TimeUnit::S => 1_000_000_000,
        }
    }
}

impl FromStr for TimeUnit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ns" => Ok(TimeUnit::Ns),
            "us" => Ok(TimeUnit::Us),
            "ms" => Ok(TimeUnit::Ms),
            "s" => Ok(TimeUnit::S),
            o => Err(format!("unknown time unit '{o}' (ns, us, ms or s)")),
        }
    }
}

/// Why a trace could not be read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TraceError {
    /// A line that is not a record of the format.
    #[error("line {line}: {reason}")]
    Malformed {
        /// Line number, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The trace file could not be read.
    #[error("reading trace: {0}")]
    Io(#[from] std::io::Error),
    /// No such trace format.
    #[error("unknown trace format '{0}' (expected msr, spc, disksim or blkparse)")]
    UnknownFormat(String),
}

/// A trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// MSR Cambridge CSV.
    Msr,
    /// SPC (UMass) CSV.
    Spc,
    /// DiskSim ASCII.
    Disksim,
    /// `blkparse` default output.
    Blkparse,
}

impl FromStr for Format {
    type Err = TraceError;
    fn from_str(s: &str) -> Result<Self, TraceError> {
        match s {
            "msr" => Ok(Format::Msr),
            "spc" | "umass" => Ok(Format::Spc),
            "disksim" => Ok(Format::Disksim),
            "blkparse" => Ok(Format::Blkparse),
            other => Err(TraceError::UnknownFormat(other.to_string())),
        }
    }
}

impl Format {
    /// Nanoseconds per timestamp unit when none is given: 100 (MSR's
    /// Windows ticks), 10^9 (SPC, blkparse: seconds), 10^6 (DiskSim: ms).
    pub fn default_ns_per_unit(self) -> u64 {
        match self {
            Format::Msr => 100,
            Format::Spc | Format::Blkparse => TimeUnit::S.ns(),
            Format::Disksim => TimeUnit::Ms.ns(),
        }
    }
}

const SECTOR: u64 = 512;

/// A request in the format's own time unit, before times are made relative.
struct Raw {
    /// Absolute, in the trace's epoch (MSR ticks overflow f64 precision).
    time_ns: u128,
    offset: u64,
    len: u64,
    write: bool,
    device: u32,
}

fn num<T: FromStr>(field: Option<&str>, what: &str) -> Result<T, String> {
    let f = field.ok_or_else(|| format!("missing {what}"))?.trim();
    f.parse().map_err(|_| format!("bad {what} '{f}'"))
}

/// A timestamp of `unit` ns per unit in ns: exact for whole numbers (MSR
/// ticks overflow f64 precision), rounded for decimals.
fn time_ns(field: &str, unit: u64) -> Result<u128, String> {
    let f = field.trim();
    if let Ok(v) = f.parse::<u64>() {
        return Ok(u128::from(v) * u128::from(unit));
    }
    match f.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok((v * unit as f64).round() as u128),
        _ => Err(format!("bad timestamp '{f}'")),
    }
}

fn sectors(n: u64, what: &str) -> Result<u64, String> {
    n.checked_mul(SECTOR)
        .ok_or_else(|| format!("{what} {n} overflows"))
}

fn msr(line: &str, unit: u64) -> Result<Option<Raw>, String> {
    if line.starts_with("Timestamp") {
        return Ok(None); // a header some copies carry
    }
    let f: Vec<&str> = line.split(',').collect();
    if f.len() != 7 {
        return Err(format!(
            "expected 7 comma-separated fields, found {}",
            f.len()
        ));
    }
    let write = match f[3].trim() {
        "Write" | "write" => true,
        "Read" | "read" => false,
        t => return Err(format!("bad type '{t}' (Read or Write)")),
    };
    Ok(Some(Raw {
        time_ns: time_ns(f[0], unit)?,
        offset: num(Some(f[4]), "offset")?,
        len: num(Some(f[5]), "size")?,
        write,
        device: num(Some(f[2]), "disk number")?,
    }))
}

fn spc(line: &str, unit: u64) -> Result<Option<Raw>, String> {
    let f: Vec<&str> = line.split(',').collect();
    if f.len() < 5 {
        return Err(format!(
            "expected at least 5 comma-separated fields, found {}",
            f.len()
        ));
    }
    let asu: u32 = num(Some(f[0]), "ASU")?;
    let lba: u64 = num(Some(f[1]), "LBA")?;
    let write = match f[3].trim() {
        "w" | "W" => true,
        "r" | "R" => false,
        o => return Err(format!("bad opcode '{o}' (r or w)")),
    };
    Ok(Some(Raw {
        time_ns: time_ns(f[4], unit)?,
        offset: sectors(lba, "LBA")?,
        len: num(Some(f[2]), "size")?,
        write,
        device: asu,
    }))
}

fn disksim(line: &str, unit: u64) -> Result<Option<Raw>, String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() != 5 {
        return Err(format!(
            "expected 5 fields (time devno blkno size flags), found {}",
            f.len()
        ));
    }
    let flags: u64 = num(Some(f[4]), "flags")?;
    Ok(Some(Raw {
        time_ns: time_ns(f[0], unit)?,
        offset: sectors(num(Some(f[2]), "block number")?, "block number")?,
        len: sectors(num(Some(f[3]), "size")?, "size")?,
        write: flags & 1 == 0,
        device: num(Some(f[1]), "device number")?,
    }))
}

fn is_device(tok: &str) -> bool {
    tok.split_once(',').is_some_and(|(a, b)| {
        !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
    })
}

/// `Err` for a malformed event; `Ok(None)` for events that are not requests.
fn blkparse(line: &str, unit: u64) -> Result<Option<Raw>, String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 7 {
        return Err(format!("expected at least 7 fields, found {}", f.len()));
    }
    let (action, rwbs) = (f[5], f[6]);
    let write = rwbs.contains('W');
    if action != "Q"
        || !(write || rwbs.contains('R'))
        || rwbs.contains('D')
        || rwbs.contains('F') && f.get(8) != Some(&"+")
    {
        return Ok(None);
    }
    if f.get(8) != Some(&"+") {
        return Err("queue event without 'sector + count'".into());
    }
    Ok(Some(Raw {
        time_ns: time_ns(f[3], unit)?,
        offset: sectors(num(f.get(7).copied(), "sector")?, "sector")?,
        len: sectors(num(f.get(9).copied(), "sector count")?, "sector count")?,
        write,
        device: 0,
    }))
}

/// Parses a whole trace, timestamps in the format's own unit.
pub fn parse(format: Format, input: impl BufRead) -> Result<Vec<TraceRecord>, TraceError> {
    parse_with(format, None, input)
}

/// Parses a whole trace, timestamps in `unit` if given.
pub fn parse_with(
    format: Format,
    unit: Option<TimeUnit>,
    input: impl BufRead,
) -> Result<Vec<TraceRecord>, TraceError> {
    Records::new(format, unit, input).collect()
}

/// A trace read one line at a time, for traces larger than memory: yields
/// each request, or the error that ends the trace.
pub struct Records<R> {
    lines: std::io::Lines<R>,
    line: usize,
    format: Format,
    unit: u64,
    first: Option<u128>,
    done: bool,
}

impl<R: BufRead> Records<R> {
    /// Records of `input`, timestamps in `unit` if given.
    pub fn new(format: Format, unit: Option<TimeUnit>, input: R) -> Self {
        Records {
            lines: input.lines(),
            line: 0,
            format,
            unit: unit.map_or(format.default_ns_per_unit(), TimeUnit::ns),
            first: None,
            done: false,
        }
    }

    /// The next request; `Ok(None)` at the end.
    fn next_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        while let Some(line) = self.lines.next() {
            let line = line?;
            self.line += 1;
            let text = line.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let malformed = |reason| TraceError::Malformed {
                line: self.line,
                reason,
            };
            let blk = self.format == Format::Blkparse;
            if blk && !is_device(text.split_whitespace().next().unwrap_or("")) {
                if text.starts_with("CPU") || text.starts_with("Total") {
                    return Ok(None); // the per-CPU summary that ends blkparse output
                }
                return Err(malformed(
                    "not a blkparse event (expected 'major,minor' first)".into(),
                ));
            }
            let raw = match self.format {
                Format::Msr => msr(text, self.unit),
                Format::Spc => spc(text, self.unit),
                Format::Disksim => disksim(text, self.unit),
                Format::Blkparse => blkparse(text, self.unit),
            }
            .map_err(malformed)?;
            let Some(r) = raw else { continue };
            let t0 = *self.first.get_or_insert(r.time_ns);
            return Ok(Some(TraceRecord {
                time_ns: u64::try_from(r.time_ns.saturating_sub(t0)).unwrap_or(u64::MAX),
                offset: r.offset,
                len: r.len,
                write: r.write,
                device: r.device,
            }));
        }
        Ok(None)
    }
}

impl<R: BufRead> Iterator for Records<R> {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.next_record().transpose();
        // An error, or the end, ends the trace.
        self.done = !matches!(r, Some(Ok(_)));
        r
    }
}

/// Opens a trace file to be read one record at a time.
pub fn open_file(
    format: Format,
    unit: Option<TimeUnit>,
    path: &Path,
) -> Result<Records<std::io::BufReader<std::fs::File>>, TraceError> {
    let f = std::fs::File::open(path)?;
    Ok(Records::new(format, unit, std::io::BufReader::new(f)))
}

/// Reads and parses a trace file.
pub fn read_file(format: Format, path: &Path) -> Result<Vec<TraceRecord>, TraceError> {
    read_file_with(format, None, path)
}

/// Reads and parses a trace file, timestamps in `unit` if given.
pub fn read_file_with(
    format: Format,
    unit: Option<TimeUnit>,
    path: &Path,
) -> Result<Vec<TraceRecord>, TraceError> {
    open_file(format, unit, path)?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(format: Format, text: &str) -> Result<Vec<TraceRecord>, TraceError> {
        parse(format, text.as_bytes())
    }

    #[test]
    fn msr_times_are_relative_ticks_of_100ns() {
        let r = p(
            Format::Msr,
            "128166372003061629,hm,1,Read,3154152960,32768,2184\n128166372003071629,hm,1,Write,4096,512,100\n",
        )
        .unwrap();
        assert_eq!(
            r,
            vec![
                TraceRecord {
                    time_ns: 0,
                    offset: 3154152960,
                    len: 32768,
                    write: false,
                    device: 1
                },
                TraceRecord {
                    time_ns: 1_000_000,
                    offset: 4096,
                    len: 512,
                    write: true,
                    device: 1
                },
            ]
        );
    }

    #[test]
    fn spc_lba_is_in_sectors_and_time_in_seconds() {
        let r = p(
            Format::Spc,
            "0,303567,3584,w,0.000000\n1,10,512,R,0.5,extra\n",
        )
        .unwrap();
        assert_eq!(
            r[0],
            TraceRecord {
                time_ns: 0,
                offset: 303567 * 512,
                len: 3584,
                write: true,
                device: 0
            }
        );
        assert_eq!(
            r[1],
            TraceRecord {
                time_ns: 500_000_000,
                offset: 5120,
                len: 512,
                write: false,
                device: 1
            }
        );
    }

    #[test]
    fn disksim_flags_bit0_means_read() {
        let r = p(Format::Disksim, "1.5 0 100 8 1\n2.5 0 200 16 0\n").unwrap();
        assert_eq!(
            r[0],
            TraceRecord {
                time_ns: 0,
                offset: 51200,
                len: 4096,
                write: false,
                device: 0
            }
        );
        assert_eq!(
            r[1],
            TraceRecord {
                time_ns: 1_000_000,
                offset: 102400,
                len: 8192,
                write: true,
                device: 0
            }
        );
    }

    #[test]
    fn blkparse_takes_queue_events_and_stops_at_the_summary() {
        let text = "  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]\n\
                    8,0    3        2     0.000001000   697  G   W 223490 + 8 [kjournald]\n\
                    8,0    1        3     0.002000000   100  Q  FWS [jbd2]\n\
                    8,0    1        4     0.003000000   100  Q   R 16 + 16 [cat]\n\
                    8,0    1        5     0.004000000   100  Q   D 16 + 16 [fstrim]\n\
                    CPU0 (8,0):\n Reads Queued: 1, 8KiB\n";
        let r = p(Format::Blkparse, text).unwrap();
        assert_eq!(
            r,
            vec![
                TraceRecord {
                    time_ns: 0,
                    offset: 223490 * 512,
                    len: 4096,
                    write: true,
                    device: 0
                },
                TraceRecord {
                    time_ns: 3_000_000,
                    offset: 8192,
                    len: 8192,
                    write: false,
                    device: 0
                },
            ]
        );
    }

    #[test]
    fn a_time_unit_overrides_the_formats_own() {
        let text = "0 3 8 8 1\n136000000 15 16 8 0\n";
        let ns = parse_with(Format::Disksim, Some(TimeUnit::Ns), text.as_bytes()).unwrap();
        assert_eq!(ns[1].time_ns, 136_000_000);
        assert_eq!((ns[0].device, ns[1].device), (3, 15));
        // Read as DiskSim's default milliseconds, it would be 38 hours.
        assert_eq!(
            p(Format::Disksim, text).unwrap()[1].time_ns,
            136_000_000 * 1_000_000
        );
        let us = parse_with(
            Format::Msr,
            Some(TimeUnit::Us),
            "5,h,0,Read,0,512,1\n7,h,2,Write,0,512,1\n".as_bytes(),
        )
        .unwrap();
        assert_eq!((us[1].time_ns, us[1].device), (2_000, 2));
        assert_eq!("ms".parse::<TimeUnit>(), Ok(TimeUnit::Ms));
        assert!("min".parse::<TimeUnit>().is_err());
    }

    #[test]
    fn records_stream_and_stop_at_the_first_error() {
        let text = "0 0 1 8 1\n1 0 2 8 0\nbad\n3 0 4 8 0\n";
        let mut it = Records::new(Format::Disksim, None, text.as_bytes());
        assert_eq!(it.next().unwrap().unwrap().offset, 512);
        assert_eq!(it.next().unwrap().unwrap().time_ns, 1_000_000);
        assert!(matches!(
            it.next(),
            Some(Err(TraceError::Malformed { line: 3, .. }))
        ));
        assert!(it.next().is_none());
    }

    #[test]
    fn malformed_lines_are_rejected_with_their_number() {
        let cases = [
            (
                Format::Msr,
                "1,h,0,Read,0,512,1\n\n2,h,0,Erase,0,512,1\n",
                3,
                "type",
            ),
            (Format::Spc, "0,1,512,w,0.0\n0,x,512,w,0.1\n", 2, "LBA"),
            (Format::Disksim, "0.0 0 1 8 1\n0.1 0 1 8\n", 2, "5 fields"),
            (
                Format::Blkparse,
                "8,0 0 1 0.0 1 Q W 1 + 8 [a]\ngarbage here\n",
                2,
                "blkparse event",
            ),
            (
                Format::Blkparse,
                "8,0 0 1 0.0 1 Q W 1 - 8 [a]\n",
                1,
                "sector + count",
            ),
            (Format::Spc, "0,1,512,w,-1\n", 1, "timestamp"),
        ];
        for (format, text, line, what) in cases {
            match p(format, text) {
                Err(TraceError::Malformed { line: l, reason }) => {
                    assert_eq!(l, line, "{format:?}: {reason}");
                    assert!(reason.contains(what), "{format:?}: {reason}");
                }
                other => panic!("{format:?}: expected a malformed line, got {other:?}"),
            }
        }
        assert!(matches!(
            "xyz".parse::<Format>(),
            Err(TraceError::UnknownFormat(_))
        ));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_input_is_parsed_or_rejected_never_a_panic(text in "[ -~\n,+\t]{0,300}") {
            let lines = text.lines().count();
            for f in [Format::Msr, Format::Spc, Format::Disksim, Format::Blkparse] {
                match p(f, &text) {
                    // Never more records than lines, times relative to the first.
                    Ok(records) => {
                        proptest::prop_assert!(records.len() <= lines);
                        proptest::prop_assert!(records.first().is_none_or(|r| r.time_ns == 0));
                    }
                    // A rejection names a line of the input, on one line.
                    Err(TraceError::Malformed { line, reason }) => {
                        proptest::prop_assert!(line >= 1 && line <= lines, "{f:?}: line {line} of {lines}");
                        proptest::prop_assert!(!reason.contains('\n'), "{f:?}: {reason}");
                    }
                    Err(e) => proptest::prop_assert!(false, "{f:?}: {e}"),
                }
            }
        }
    }
}
