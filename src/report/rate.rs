//! How often a checker fired, as a rate a reader can trust: violating seeds out of all,
//! with the 95% Wilson score interval, and "< 3/N" (the rule of three) when none did.

use serde_json::{Value, json};

/// The z value of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

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
