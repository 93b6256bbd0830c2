//! A workload's speed as a share of the ping-pong's (`bench --pingpong`), over one round
//! or several (`--rounds`).
//!
//! Why rounds: the machine's own speed drifts while a bench runs (on the shared two-core
//! VM the ping-pong alone ran at 0.79–1.06 million messages a second over ten runs, and
//! one run's share of Redlock-5 came out anywhere from 34% to 50%). A round's workloads
//! are therefore judged only against the ping-pongs run just before and just after them,
//! the faster of the two (a neighbour slowing one of them would flatter the share), and
//! with several rounds the figure to quote is the median of the rounds' shares, with
//! their range beside it.

use serde_json::{Value, json};

use super::pingpong::PingPong;

/// What the ping-pong line says each run did.
const DESCRIPTION: &str = "ping-pong (madsim TCP, 40-byte messages, 1-5 ms latency, 500 ms timeout per read)";

/// The ping-pong runs of one bench: one before the first round, and one after each round.
pub struct Limits {
    runs: Vec<PingPong>,
}

impl Limits {
    /// Starts with the run before the first round.
    pub fn new(before: PingPong) -> Self {
        Limits { runs: vec![before] }
    }

    /// Adds the run made after the latest round.
    pub fn push(&mut self, after: PingPong) {
        self.runs.push(after);
    }

    /// How many rounds the runs enclose.
    pub fn rounds(&self) -> usize {
        self.runs.len() - 1
    }

    /// The limit of round `round` (from 0): the faster of the runs on either side of it.
    pub fn of_round(&self, round: usize) -> f64 {
        self.runs[round]
            .messages_per_s()
            .max(self.runs[round + 1].messages_per_s())
    }

    /// The events/s of a workload in round `round`, as a share of that round's limit.
    pub fn share(&self, round: usize, events_per_s: f64) -> f64 {
        events_per_s / self.of_round(round)
    }

    /// The line that says what the ping-pong runs did.
    pub fn line(&self) -> String {
        let rates: Vec<f64> = self.runs.iter().map(PingPong::messages_per_s).collect();
        let messages = self.runs[0].messages;
        match rates.as_slice() {
            [before, after] => format!(
                "{DESCRIPTION}: {messages} messages, {before:.0} messages/s before the workloads, \
                 {after:.0} after; limit {:.0}",
                self.of_round(0)
            ),
            _ => format!(
                "{DESCRIPTION}: {messages} messages a run, before the {} rounds, between them and after: {} \
                 messages/s; each round's limit is the faster run beside it",
                self.rounds(),
                rates
                    .iter()
                    .map(|rate| format!("{rate:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    pub fn json(&self) -> Value {
        let rates: Vec<f64> = self.runs.iter().map(PingPong::messages_per_s).collect();
        let limits: Vec<f64> = (0..self.rounds()).map(|round| self.of_round(round)).collect();
        json!({
            "messages": self.runs[0].messages,
            "rounds": self.rounds(),
            "messages_per_s_before": rates.first(),
            "messages_per_s_after": rates.last(),
            "runs_messages_per_s": rates,
            // One round: its limit, as before rounds existed; several: each has its own.
            "limit_messages_per_s": (limits.len() == 1).then(|| limits[0]),
            "round_limits_messages_per_s": limits,
        })
    }
}

/// One workload's shares of the limit over the rounds: their median and range.
pub struct Shares {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// The median of the workload's events/s over the rounds.
    pub median_events_per_s: f64,
    pub rounds: usize,
}

impl Shares {
    /// `by_round`: the workload's (events/s, share of that round's limit), one per round.
    pub fn of(by_round: &[(f64, f64)]) -> Shares {
        let shares: Vec<f64> = by_round.iter().map(|&(_, share)| share).collect();
        let rates: Vec<f64> = by_round.iter().map(|&(rate, _)| rate).collect();
        Shares {
            median: median(&shares),
            min: shares.iter().copied().fold(f64::INFINITY, f64::min),
            max: shares.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            median_events_per_s: median(&rates),
            rounds: by_round.len(),
        }
    }

    /// The workload's line under the ping-pong's.
    pub fn line(&self, name: &str) -> String {
        let head = format!(
            "{name:<44} {:>12.0} events/s = {:.1}% of the limit",
            self.median_events_per_s,
            100.0 * self.median
        );
        match self.rounds {
            1 => head,
            rounds => format!(
                "{head} (medians of {rounds} rounds; shares {:.1}–{:.1}%)",
                100.0 * self.min,
                100.0 * self.max
            ),
        }
    }

    pub fn json(&self, name: &str) -> Value {
        json!({
            "scenario": name,
            "rounds": self.rounds,
            "median_share_of_limit": self.median,
            "min_share_of_limit": self.min,
            "max_share_of_limit": self.max,
            "median_events_per_s": self.median_events_per_s,
        })
    }
}

/// The middle value (the mean of the two middle ones for an even count); `values` is not
/// empty and holds no NaN (rates of runs that took time).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() % 2 {
        1 => sorted[middle],
        _ => (sorted[middle - 1] + sorted[middle]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pingpong(messages_per_s: f64) -> PingPong {
        PingPong {
            messages: 1000,
            wall_s: 1000.0 / messages_per_s,
        }
    }

    #[test]
    fn a_rounds_limit_is_the_faster_ping_pong_beside_it() {
        let mut limits = Limits::new(pingpong(800.0));
        limits.push(pingpong(1000.0));
        limits.push(pingpong(500.0));
        assert_eq!(limits.rounds(), 2);
        assert!((limits.of_round(0) - 1000.0).abs() < 1e-9);
        assert!((limits.of_round(1) - 1000.0).abs() < 1e-9);
        assert!((limits.share(1, 400.0) - 0.4).abs() < 1e-9);
        assert_eq!(limits.json()["limit_messages_per_s"], Value::Null);
        let mut one = Limits::new(pingpong(800.0));
        one.push(pingpong(600.0));
        assert!((one.json()["limit_messages_per_s"].as_f64().unwrap() - 800.0).abs() < 1e-9);
        assert!(
            one.line()
                .contains("800 messages/s before the workloads, 600 after; limit 800")
        );
    }

    #[test]
    fn the_shares_median_is_the_middle_round_and_the_range_is_kept() {
        let shares = Shares::of(&[(300.0, 0.30), (500.0, 0.50), (400.0, 0.45)]);
        assert!((shares.median - 0.45).abs() < 1e-9);
        assert!((shares.median_events_per_s - 400.0).abs() < 1e-9);
        assert_eq!((shares.min, shares.max), (0.30, 0.50));
        assert!(
            shares
                .line("w")
                .ends_with("(medians of 3 rounds; shares 30.0–50.0%)")
        );
        let even = Shares::of(&[(1.0, 0.2), (1.0, 0.4)]);
        assert!((even.median - 0.3).abs() < 1e-9);
        let single = Shares::of(&[(100.0, 0.25)]);
        assert!(single.line("w").ends_with("events/s = 25.0% of the limit"));
    }
}
