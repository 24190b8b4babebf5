//! Power states: a device idle past its standby timer goes to standby
//! (an HDD spins down), spends standby power, and the next request waits
//! for the wake-up and pays its energy. Without a timer nothing changes.

use flashkv_device::{
    presets, BlockDevice, Completion, DeviceSpec, FaultDevice, FaultPlan, MemDevice, Nanos,
    SimDevice,
};
use proptest::prelude::*;

const S: Nanos = 1_000_000_000;
/// The standby timer of these tests: one minute.
const T: Nanos = 60 * S;

/// Energy of `mw` drawn for `ns`, as the simulator rounds it.
fn nj(mw: f64, ns: Nanos) -> u64 {
    (mw * ns as f64 / 1000.0) as u64
}

fn dev(spec: &DeviceSpec, timer: Option<Nanos>) -> SimDevice {
    let mut d = SimDevice::new(spec).unwrap();
    d.set_standby_after(timer).unwrap();
    d
}

fn read(d: &mut SimDevice, at: Nanos, offset: u64) -> Completion {
    let mut buf = vec![0u8; 4096];
    d.read_at(at, offset, &mut buf).unwrap()
}

/// The must-hold of issue 28: an hdd-7200 left idle past its timeout spends
/// standby power, and the next request pays the spin-up time and energy.
#[test]
fn an_idle_disk_spins_down_and_the_next_request_pays_the_spin_up() {
    let spec = presets::get("hdd-7200").unwrap();
    let p = spec.power;
    let (standby_mw, wake) = (p.standby_mw.unwrap(), p.wake_ns());
    assert_eq!(wake, 10 * S, "the preset's spin-up");
    let mut awake = dev(&spec, None);
    let mut sleepy = dev(&spec, Some(T));

    let a1 = read(&mut awake, 0, 1 << 30);
    let d1 = read(&mut sleepy, 0, 1 << 30);
    assert_eq!(a1, d1, "the first request finds the disk spinning");
    assert_eq!(sleepy.busy_until(), d1.end, "idle from the end of the read");

    // Idle for the timer and 5 s more, then read elsewhere.
    let at = d1.end + T + 5 * S;
    awake.advance_to(at);
    sleepy.advance_to(at);
    assert_eq!(sleepy.clock(), at);
    assert_eq!(
        sleepy.stats().wakeups,
        0,
        "sleep is decided at the next request"
    );
    let d2 = read(&mut sleepy, at, 40 << 30);
    // The disk serves it as the spinning one serves it issued 10 s later
    // (issued at `at`, the spinning disk's rotational position differs).
    let a2 = read(&mut awake, at + wake, 40 << 30);
    assert_eq!(d2.start, a2.start, "the read waits for the spin-up");
    assert_eq!(d2.end, a2.end);
    assert!(d2.start >= at + wake);
    assert_eq!(d2.energy_nj, a2.energy_nj + p.wake_nj());

    let st = sleepy.stats();
    assert_eq!(st.wakeups, 1);
    assert_eq!(st.standby_ns, 5 * S, "asleep from T after the first read");
    assert_eq!(st.wake_ns, wake);
    assert_eq!(st.busy_ns, awake.stats().busy_ns);

    // Energy to a second past the last read, in closed form.
    let horizon = d2.end + S;
    let busy_nj = a1.energy_nj + a2.energy_nj;
    let idle = horizon - st.busy_ns - 5 * S - wake;
    let want = busy_nj + p.wake_nj() + nj(p.idle_mw, idle) + nj(standby_mw, 5 * S);
    assert_eq!(sleepy.energy_nj_until(horizon), want);
    let idle_awake = horizon - st.busy_ns;
    assert_eq!(
        awake.energy_nj_until(horizon),
        busy_nj + nj(p.idle_mw, idle_awake)
    );
    // Against the spinning disk: 5 s of standby at 2 W and a 200 J
    // spin-up instead of 15 s idle at 7.5 W (its horizon is the same).
    let saved = nj(p.idle_mw, idle_awake) - nj(p.idle_mw, idle);
    assert_eq!(saved, 112_500_000_000);
    assert_eq!(
        sleepy.energy_nj_until(horizon) + saved,
        awake.energy_nj_until(horizon) + 10_000_000_000 + 200_000_000_000
    );
}

/// On an SSD (no rotation) a request waits exactly the wake-up.
#[test]
fn an_ssd_request_after_standby_ends_exactly_the_wake_up_later() {
    let spec = presets::get("ssd-320").unwrap();
    let wake = spec.power.wake_ns();
    let mut awake = dev(&spec, None);
    let mut sleepy = dev(&spec, Some(S));
    for (i, at) in [0, 10 * S].into_iter().enumerate() {
        let a = read(&mut awake, at, 1 << 20);
        let d = read(&mut sleepy, at, 1 << 20);
        let shift = if i == 0 { 0 } else { wake };
        assert_eq!(
            (d.start, d.end),
            (a.start + shift, a.end + shift),
            "read {i}"
        );
    }
    assert_eq!(sleepy.stats().wakeups, 1);
}

/// Without a timer (every preset's default) completions and energy are
/// those of the same spec without a standby state.
#[test]
fn without_a_timer_nothing_changes() {
    for name in ["hdd-7200", "hdd-15k", "ssd-x25m", "nvme"] {
        let spec = presets::get(name).unwrap();
        assert!(
            spec.power.standby_mw.is_some(),
            "{name} has a standby state"
        );
        assert_eq!(spec.power.standby_after_ms, None, "{name}: no timer");
        let mut bare = spec.clone();
        bare.power.standby_mw = None;
        bare.power.wake_ms = 0.0;
        bare.power.wake_mj = 0.0;
        let (mut a, mut b) = (dev(&spec, None), dev(&bare, None));
        let mut at = 0;
        for i in 0..20u64 {
            at += (i % 4) * 100 * S;
            a.advance_to(at);
            b.advance_to(at);
            let off = (i * 7919 % 1000) << 20;
            let (ca, cb) = if i % 3 == 0 {
                let buf = vec![i as u8; 8192];
                (a.write_at(at, off, &buf), b.write_at(at, off, &buf))
            } else {
                (Ok(read(&mut a, at, off)), Ok(read(&mut b, at, off)))
            };
            assert_eq!(ca.unwrap(), cb.unwrap(), "{name} op {i}");
        }
        let end = a.clock() + 1000 * S;
        assert_eq!(a.energy_nj_until(end), b.energy_nj_until(end), "{name}");
        assert_eq!(a.stats(), b.stats(), "{name}");
        assert_eq!(a.stats().wakeups, 0);
        let idle = a.clock() - a.stats().busy_ns;
        assert_eq!(
            a.total_energy_nj(),
            a.stats().energy_nj + nj(spec.power.idle_mw, idle),
            "{name}: the energy before power states"
        );
    }
}

/// A device idle for at most the timer never sleeps.
#[test]
fn a_device_idle_for_less_than_its_timer_never_sleeps() {
    let spec = presets::get("hdd-7200").unwrap();
    let mut awake = dev(&spec, None);
    let mut sleepy = dev(&spec, Some(T));
    let mut at = 0;
    for i in 0..10u64 {
        let a = read(&mut awake, at, i << 30);
        let d = read(&mut sleepy, at, i << 30);
        assert_eq!(a, d, "read {i}");
        // The next read exactly T (then T - 1 ns) after this one ends.
        at = d.end + T - (i % 2);
    }
    assert_eq!(sleepy.stats(), awake.stats());
    assert_eq!(sleepy.stats().wakeups, 0);
    let h = sleepy.clock();
    assert_eq!(sleepy.energy_nj_until(h), awake.energy_nj_until(h));
}

/// Energy to a horizon past the clock counts idle time up to the timer,
/// then standby; a horizon before the clock counts to the clock.
#[test]
fn energy_past_the_clock_is_idle_then_standby() {
    let spec = presets::get("hdd-7200").unwrap();
    let p = spec.power;
    let mut d = dev(&spec, Some(T));
    let c = read(&mut d, 0, 0);
    let (ops, busy) = (c.energy_nj, d.stats().busy_ns);
    assert_eq!(d.energy_nj_until(0), d.energy_nj_until(c.end));
    assert_eq!(d.energy_nj_until(c.end), ops + nj(p.idle_mw, c.end - busy));
    // Before the timer runs out: idle only.
    let h = c.end + T / 2;
    assert_eq!(d.energy_nj_until(h), ops + nj(p.idle_mw, h - busy));
    // After it: idle to T, standby since, no wake-up yet.
    let h = c.end + T + 30 * S;
    let want = ops + nj(p.idle_mw, h - busy - 30 * S) + nj(p.standby_mw.unwrap(), 30 * S);
    assert_eq!(d.energy_nj_until(h), want);
    assert_eq!(d.stats().standby_ns, 0, "counted only at a wake-up");
    // Waiting to h does not change it.
    d.advance_to(h);
    assert_eq!(d.energy_nj_until(h), want);
    assert_eq!(d.total_energy_nj(), want);
}

#[test]
fn the_timer_needs_a_standby_state() {
    let spec = presets::get("dram-ssd").unwrap();
    let mut d = SimDevice::new(&spec).unwrap();
    let e = d.set_standby_after(Some(T)).unwrap_err().to_string();
    assert_eq!(
        e,
        "device dram-ssd has no standby state (its spec sets no power.standby_mw)"
    );
    d.set_standby_after(None).unwrap();
    // Through the trait and a wrapper too.
    let mut f = FaultDevice::new(d, FaultPlan::default());
    let e = BlockDevice::set_standby_after(&mut f, Some(T)).unwrap_err();
    assert!(e.to_string().contains("no standby state"), "{e}");
    let mut m = MemDevice::new(f.geometry());
    let e = m.set_standby_after(Some(T)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unsupported: standby: this device has no standby state"
    );
    // A spec may set the timer itself.
    let mut spec = presets::get("hdd-7200").unwrap();
    spec.power.standby_after_ms = Some(1000.0);
    assert_eq!(SimDevice::new(&spec).unwrap().standby_after(), Some(S));
}

/// An SSD wakes in milliseconds; a flush and a trim wake it too.
#[test]
fn an_ssd_wakes_in_milliseconds_for_any_operation() {
    let spec = presets::get("ssd-x25m").unwrap();
    let wake = spec.power.wake_ns();
    assert_eq!(wake, 10_000_000);
    let mut d = dev(&spec, Some(S));
    d.write_at(0, 0, &[1u8; 4096]).unwrap();
    let mut at = d.clock();
    for i in 0..3u64 {
        at += 2 * S;
        let c = match i {
            0 => d.flush_at(at).unwrap(),
            1 => d.trim_at(at, 0, 4096).unwrap(),
            _ => read(&mut d, at, 0),
        };
        assert!(c.start >= at + wake, "op {i} waits for the wake-up");
        at = d.clock();
    }
    assert_eq!(d.stats().wakeups, 3);
    assert_eq!(d.stats().wake_ns, 3 * wake);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Over random gaps between requests: a wake-up for each gap longer
    /// than the timer, standby for the time past it.
    #[test]
    fn standby_counts_match_the_gaps(
        gaps in prop::collection::vec(0u64..3 * T, 1..12),
        timer in 1u64..2 * T,
    ) {
        let spec = presets::get("ssd-320").unwrap();
        let mut d = dev(&spec, Some(timer));
        let wake = spec.power.wake_ns();
        let (mut wakeups, mut standby) = (0, 0);
        let mut idle_since = 0;
        for (i, gap) in gaps.iter().enumerate() {
            let at = idle_since + gap;
            let c = read(&mut d, at, (i as u64) << 20);
            if *gap > timer {
                wakeups += 1;
                standby += gap - timer;
                prop_assert!(c.start >= at + wake);
            }
            idle_since = d.busy_until().max(c.end);
        }
        let st = d.stats();
        prop_assert_eq!(st.wakeups, wakeups);
        prop_assert_eq!(st.standby_ns, standby);
        prop_assert_eq!(st.wake_ns, wakeups * wake);
        let h = d.clock();
        let idle = h - st.busy_ns - standby - wakeups * wake;
        let p = spec.power;
        let want = st.energy_nj + nj(p.idle_mw, idle) + nj(p.standby_mw.unwrap(), standby);
        prop_assert_eq!(d.energy_nj_until(h), want);
    }
}
