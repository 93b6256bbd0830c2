//! A clock as a pure function of true time, and a node's clock over a whole run.
//!
//! The simulator runs each node on a [`ClockModel`] (`world/clock.rs` wraps it for the
//! running world); a finished run keeps every node's models as a [`ClockLog`], so the
//! checkers can read a node's clock at any true instant exactly as the node read it, a key's
//! expiry included, through every step and re-rate a fault made. This module sits below
//! both, so that `check/` need not know the world.

/// Wall-clock time (ns since the Unix epoch) at true time 0 of every run: 2024-01-01 UTC.
pub const EPOCH_NS: i64 = 1_704_067_200_000_000_000;

const PPM: i128 = 1_000_000;
const NS_PER_MS: u64 = 1_000_000;

/// A clock as a pure function of true time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockModel {
    anchor_true_ns: u64,
    anchor_mono_ns: u64,
    /// Rate error in parts per million: +100 gains 100 µs per true second.
    rate_ppm: i64,
    /// wall − monotonic, in ns.
    shift_ns: i64,
}

impl ClockModel {
    /// A clock whose wall time is off by `offset_ns` and which drifts by `rate_ppm`.
    pub fn new(offset_ns: i64, rate_ppm: i64) -> Self {
        ClockModel {
            anchor_true_ns: 0,
            anchor_mono_ns: 0,
            rate_ppm,
            shift_ns: EPOCH_NS + offset_ns,
        }
    }

    /// The monotonic reading at true time `true_ns` (not before the last anchor).
    pub fn monotonic_ns(&self, true_ns: u64) -> u64 {
        let elapsed = true_ns.saturating_sub(self.anchor_true_ns);
        if self.rate_ppm == 0 {
            // The same reading without the 128-bit division (most clocks run true).
            return self.anchor_mono_ns + elapsed;
        }
        self.anchor_mono_ns + (elapsed as i128 * (PPM + self.rate_ppm as i128) / PPM) as u64
    }

    /// The wall reading (ns since the Unix epoch) at true time `true_ns`.
    pub fn wall_ns(&self, true_ns: u64) -> i64 {
        self.monotonic_ns(true_ns) as i64 + self.shift_ns
    }

    /// The earliest true time at which the monotonic reading is at least `mono_ns`.
    pub fn true_ns_for_monotonic(&self, mono_ns: u64) -> u64 {
        let ahead = mono_ns.saturating_sub(self.anchor_mono_ns);
        if self.rate_ppm == 0 {
            // The same instant without the 128-bit division (most clocks run true).
            return self.anchor_true_ns + ahead;
        }
        let ahead = ahead as i128;
        let rate = PPM + self.rate_ppm as i128;
        self.anchor_true_ns + ((ahead * PPM + rate - 1) / rate) as u64
    }

    /// The first tick of `first_tick_ms + k·period_ms` (k ≥ 0) at whose true time (when
    /// the monotonic clock reaches it) the wall clock reads `wall_ns` or later.
    pub fn first_tick_at_wall(&self, wall_ns: i128, first_tick_ms: u64, period_ms: u64) -> u64 {
        const MOST_TICKS: i128 = 1_000_000_000;
        let ns = |ms: u64| ms as i128 * NS_PER_MS as i128;
        let reaches =
            |tick: u64| self.wall_ns(self.true_ns_for_monotonic(tick * NS_PER_MS)) as i128 >= wall_ns;
        // wall = monotonic + shift, and at a tick's true time the monotonic clock reads
        // the tick or (rounding up to a whole ns of true time) a hair more.
        let ahead = (wall_ns - self.shift_ns as i128 - ns(first_tick_ms)).max(0);
        let steps = ((ahead + ns(period_ms) - 1) / ns(period_ms)).min(MOST_TICKS) as u64;
        let mut tick = first_tick_ms + steps * period_ms;
        while tick > first_tick_ms && reaches(tick - period_ms) {
            tick -= period_ms;
        }
        tick
    }

    /// The wall reading in µs relative to the run's epoch (what a trace shows) at true time
    /// `true_ns`.
    pub fn local_us(&self, true_ns: u64) -> i64 {
        (self.wall_ns(true_ns) - EPOCH_NS) / 1000
    }

    /// The rate error, in parts per million.
    pub fn rate_ppm(&self) -> i64 {
        self.rate_ppm
    }

    /// Steps the wall clock by `by_ns` (negative steps it back).
    pub fn jump(&mut self, by_ns: i64) {
        self.shift_ns += by_ns;
    }

    /// From true time `now_ns` on, runs at `rate_ppm`.
    pub fn set_rate(&mut self, now_ns: u64, rate_ppm: i64) {
        self.anchor_mono_ns = self.monotonic_ns(now_ns);
        self.anchor_true_ns = now_ns;
        self.rate_ppm = rate_ppm;
    }
}

/// One node's clock over a run: the model it ran on from each true instant (ns) on, the
/// first from the start. A step or re-rate appends the model it leaves behind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClockLog(pub Vec<(u64, ClockModel)>);

impl ClockLog {
    /// A clock that starts on `model`.
    pub fn new(model: ClockModel) -> Self {
        ClockLog(vec![(0, model)])
    }

    /// The model in force now (the last one).
    pub fn current(&self) -> ClockModel {
        self.0.last().expect("a clock log starts with a model").1
    }

    /// From true time `now_ns` on, the clock runs on `model`.
    pub fn change(&mut self, now_ns: u64, model: ClockModel) {
        self.0.push((now_ns, model));
    }

    /// The node's wall reading in µs since the run's epoch at true time `true_us`, on the
    /// model in force then; `None` for an empty log.
    pub fn local_us(&self, true_us: u64) -> Option<i64> {
        let true_ns = true_us * 1000;
        let model = self.0.iter().rev().find(|(from, _)| *from <= true_ns)?.1;
        Some(model.local_us(true_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_perfect_clock_reads_true_time_from_the_epoch() {
        let m = ClockModel::new(0, 0);
        assert_eq!(m.monotonic_ns(5 * S), 5 * S);
        assert_eq!(m.wall_ns(5 * S), EPOCH_NS + 5 * S as i64);
        assert_eq!(m.true_ns_for_monotonic(7 * S), 7 * S);
    }

    #[test]
    fn drift_scales_both_readings() {
        let m = ClockModel::new(-2_000 * NS_PER_MS as i64, 10_000); // 1% fast, 2 s behind
        assert_eq!(m.monotonic_ns(100 * S), 101 * S);
        assert_eq!(m.wall_ns(100 * S) - EPOCH_NS, 99 * S as i64);
        let t = m.true_ns_for_monotonic(101 * S);
        assert!(m.monotonic_ns(t) >= 101 * S && m.monotonic_ns(t - 1) < 101 * S);
    }

    #[test]
    fn a_jump_moves_wall_time_only() {
        let mut m = ClockModel::new(0, 0);
        m.jump(3 * S as i64);
        assert_eq!(m.monotonic_ns(S), S);
        assert_eq!(m.wall_ns(S) - EPOCH_NS, 4 * S as i64);
    }

    #[test]
    fn a_rate_change_is_continuous() {
        let mut m = ClockModel::new(0, 0);
        m.set_rate(10 * S, 1_000_000); // from t=10 s on, twice as fast
        assert_eq!(m.monotonic_ns(10 * S), 10 * S);
        assert_eq!(m.monotonic_ns(11 * S), 12 * S);
        assert_eq!(m.true_ns_for_monotonic(14 * S), 12 * S);
    }

    #[test]
    fn the_first_tick_at_a_wall_time_counts_offset_and_drift() {
        let m = ClockModel::new(-2_000 * NS_PER_MS as i64, 10_000); // 1% fast, 2 s behind
        let wall_ns = |ms: i64| (EPOCH_NS + ms * NS_PER_MS as i64) as i128;
        // The wall clock reads 1 s (epoch-relative) when the monotonic one reads 3 s.
        assert_eq!(m.first_tick_at_wall(wall_ns(1_000), 100, 100), 3_000);
        assert_eq!(m.first_tick_at_wall(wall_ns(1_001), 100, 100), 3_100);
        assert_eq!(m.first_tick_at_wall(wall_ns(1_000), 3_050, 100), 3_050);
        assert_eq!(m.first_tick_at_wall(wall_ns(-5_000), 100, 100), 100);
        for (wall, first) in [(1_000, 100), (1_001, 100), (7_777, 33), (123_456, 5)] {
            let tick = m.first_tick_at_wall(wall_ns(wall), first, 100);
            let reaches =
                |tick: u64| m.wall_ns(m.true_ns_for_monotonic(tick * NS_PER_MS)) as i128 >= wall_ns(wall);
            assert!(
                reaches(tick) && (tick == first || !reaches(tick - 100)),
                "{wall} {first}: {tick}"
            );
        }
    }

    #[test]
    fn a_clock_log_reads_each_instant_on_the_model_then_in_force() {
        let mut model = ClockModel::new(0, 0);
        let mut log = ClockLog::new(model);
        model.jump(5 * S as i64);
        log.change(2 * S, model);
        model.set_rate(4 * S, 1_000_000);
        log.change(4 * S, model);
        assert_eq!(log.local_us(1_000_000), Some(1_000_000));
        assert_eq!(log.local_us(3_000_000), Some(8_000_000));
        assert_eq!(
            log.local_us(5_000_000),
            Some(11_000_000),
            "twice as fast from 4 s"
        );
        assert_eq!(ClockLog::default().local_us(0), None);
    }
}
