//! How often a checker fired, as a rate a reader can trust: violating seeds out of all,
//! with the 95% Wilson score interval, and "< 3/N" (the rule of three) when none did.

use serde_json::{Value, json};

/// The z value of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Seeds with no violation a claim of *holds* needs: at 300 the 95% Wilson upper bound of
/// the rate is 1.3% (3.84 / 303.84). Fewer seeds with none say "no violation in N seeds
/// (< X%)", never *holds*.
pub const HOLDS_SEEDS: u64 = 300;

/// The significance level at which two rates differ (Fisher's exact test, two-sided).
pub const SIGNIFICANCE: f64 = 0.05;

/// `violating` of `seeds` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub violating: u64,
    pub seeds: u64,
}

impl Rate {
    /// The 95% Wilson score interval of the violation probability, as fractions. It stays
    /// within [0, 1] and is honest at 0 and at N, where the plain normal interval is not.
    pub fn wilson95(self) -> (f64, f64) {
        if self.seeds == 0 {
            return (0.0, 1.0);
        }
        let n = self.seeds as f64;
        let p = self.violating as f64 / n;
        let z2 = Z95 * Z95;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = Z95 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
        ((centre - half).max(0.0), (centre + half).min(1.0))
    }

    /// The rule of three: with no violation in N runs, the rate is below 3/N at 95%.
    pub fn upper_bound_if_none(self) -> f64 {
        (3.0 / self.seeds.max(1) as f64).min(1.0)
    }

    /// Whether no seed violated and enough seeds ran for that to be called *holds*
    /// ([`HOLDS_SEEDS`]).
    pub fn holds(self) -> bool {
        self.violating == 0 && self.seeds >= HOLDS_SEEDS
    }

    /// The two-sided p-value of Fisher's exact test on the 2×2 table of `self` against
    /// `other` (violating / not, this / that): the chance, were both the same rate, of a
    /// split at least as lopsided. Two rates differ when it is below [`SIGNIFICANCE`];
    /// 2/50 against 0/50 gives 0.495, a tie.
    pub fn fisher_p(self, other: Rate) -> f64 {
        let (a, b) = (self.violating, self.seeds.saturating_sub(self.violating));
        let (c, d) = (other.violating, other.seeds.saturating_sub(other.violating));
        let (row, column, n) = (a + b, a + c, a + b + c + d);
        if n == 0 {
            return 1.0;
        }
        let ln_factorials: Vec<f64> = std::iter::once(0.0)
            .chain((1..=n).scan(0.0, |sum, k| {
                *sum += (k as f64).ln();
                Some(*sum)
            }))
            .collect();
        let ln_choose = |n: u64, k: u64| {
            ln_factorials[n as usize] - ln_factorials[k as usize] - ln_factorials[(n - k) as usize]
        };
        // P(x violating in this row) under the hypergeometric law of the fixed margins.
        let probability =
            |x: u64| (ln_choose(column, x) + ln_choose(n - column, row - x) - ln_choose(n, row)).exp();
        let observed = probability(a);
        let low = column.saturating_sub(n - row);
        let high = column.min(row);
        let p: f64 = (low..=high)
            .map(probability)
            .filter(|&q| q <= observed * (1.0 + 1e-7))
            .sum();
        p.min(1.0)
    }

    /// Whether `self` and `other` differ at [`SIGNIFICANCE`] (Fisher's exact test).
    pub fn differs_from(self, other: Rate) -> bool {
        self.fisher_p(other) < SIGNIFICANCE
    }

    /// "0 of 100 (< 3% at 95%)", "37 of 100 (28–47% at 95%)".
    pub fn sentence(self) -> String {
        let Rate { violating, seeds } = self;
        format!("{violating} of {seeds} ({} at 95%)", self.interval("< ", "–"))
    }

    /// The table cell: "0/100 <3%", "37/100 28-47%".
    pub fn cell(self) -> String {
        let Rate { violating, seeds } = self;
        format!("{violating}/{seeds} {}", self.interval("<", "-"))
    }

    /// The interval in percent: the rule-of-three bound after `below` when nothing
    /// violated, else the Wilson interval's ends joined by `dash`.
    fn interval(self, below: &str, dash: &str) -> String {
        if self.violating == 0 {
            return format!("{below}{}", percent(self.upper_bound_if_none()));
        }
        let (low, high) = self.wilson95();
        format!("{}{dash}{}", percent(low).trim_end_matches('%'), percent(high))
    }

    /// The JSON form: counts, the rate and its interval.
    pub fn to_json(self) -> Value {
        let (low, high) = if self.violating == 0 {
            (0.0, self.upper_bound_if_none())
        } else {
            self.wilson95()
        };
        json!({
            "violating": self.violating,
            "seeds": self.seeds,
            "rate": self.violating as f64 / self.seeds.max(1) as f64,
            "ci95": [round4(low), round4(high)],
            "text": self.sentence(),
        })
    }
}

/// "1 seed", "20 seeds": a count of seeds as a sentence says it.
pub fn seeds(count: u64) -> String {
    match count {
        1 => "1 seed".to_string(),
        n => format!("{n} seeds"),
    }
}

/// A fraction as a whole percentage, or with one decimal below 10%.
fn percent(fraction: f64) -> String {
    let pct = fraction * 100.0;
    if pct > 0.0 && pct < 10.0 && (pct - pct.round()).abs() > 0.05 {
        format!("{pct:.1}%")
    } else {
        format!("{:.0}%", pct)
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_interval_matches_published_values() {
        // 37 of 100: Wilson 95% is [0.2818, 0.4678] (as statsmodels' proportion_confint(37, 100, method="wilson") gives).
        let (low, high) = Rate {
            violating: 37,
            seeds: 100,
        }
        .wilson95();
        assert!((low - 0.2818).abs() < 0.0005, "{low}");
        assert!((high - 0.4678).abs() < 0.0005, "{high}");
        // All of 100: the upper end is 1, the lower about 0.963.
        let (low, high) = Rate {
            violating: 100,
            seeds: 100,
        }
        .wilson95();
        assert!((low - 0.9630).abs() < 0.0005, "{low}");
        assert_eq!(high, 1.0);
    }

    #[test]
    fn fisher_matches_published_values_and_calls_small_gaps_a_tie() {
        let rate = |violating, seeds| Rate { violating, seeds };
        // 2/50 against 0/50: p = 0.4949 (the exact sum, as scipy.stats.fisher_exact gives).
        let p = rate(2, 50).fisher_p(rate(0, 50));
        assert!((p - 0.4949).abs() < 0.0005, "{p}");
        assert!(!rate(2, 50).differs_from(rate(0, 50)));
        // 45/50 against 0/50: p far below 5%.
        assert!(rate(45, 50).differs_from(rate(0, 50)));
        // [[7, 493], [0, 300]]: p = 0.0495 (exact, by Python big integers), just a difference at 5%.
        let p = rate(7, 500).fisher_p(rate(0, 300));
        assert!((p - 0.0495).abs() < 0.0005, "{p}");
        // Symmetric, and a rate never differs from itself.
        assert_eq!(
            rate(3, 40).fisher_p(rate(9, 40)),
            rate(9, 40).fisher_p(rate(3, 40))
        );
        assert!(!rate(20, 50).differs_from(rate(20, 50)));
    }

    #[test]
    fn holds_needs_enough_seeds_with_none() {
        assert!(
            Rate {
                violating: 0,
                seeds: HOLDS_SEEDS
            }
            .holds()
        );
        assert!(
            !Rate {
                violating: 0,
                seeds: 50
            }
            .holds(),
            "50 seeds are not enough"
        );
        assert!(
            !Rate {
                violating: 1,
                seeds: 1000
            }
            .holds()
        );
        let (_, high) = Rate {
            violating: 0,
            seeds: HOLDS_SEEDS,
        }
        .wilson95();
        assert!(high <= 0.013, "{high}");
    }

    #[test]
    fn one_seed_is_singular() {
        assert_eq!(seeds(1), "1 seed");
        assert_eq!(seeds(0), "0 seeds");
        assert_eq!(seeds(20), "20 seeds");
    }

    #[test]
    fn zero_violations_say_the_rule_of_three_bound() {
        let none = Rate {
            violating: 0,
            seeds: 100,
        };
        assert_eq!(none.sentence(), "0 of 100 (< 3% at 95%)");
        assert_eq!(none.cell(), "0/100 <3%");
        assert_eq!(
            Rate {
                violating: 0,
                seeds: 20
            }
            .cell(),
            "0/20 <15%"
        );
        assert_eq!(
            Rate {
                violating: 37,
                seeds: 100
            }
            .cell(),
            "37/100 28-47%"
        );
        assert_eq!(
            Rate {
                violating: 37,
                seeds: 100
            }
            .sentence(),
            "37 of 100 (28–47% at 95%)"
        );
    }
}
