//! Safety envelopes: where a configuration stops being safe. Each envelope sweeps two
//! parameters over a grid, runs seeds at every point, and sets the fraction of seeds that
//! broke mutual exclusion beside the analytic bound the published analyses give:
//!
//! - pause × network delay (single node and Redlock side by side): safe while
//!   `pause + delay + drift·TTL + 2 ms < TTL` (Kleppmann; the distlock page's validity);
//! - clock drift × drift factor (Redlock, careful clients working to the end of their
//!   validity): safe while the nodes' clocks run fast by less than the factor allows;
//! - replication lag × failover delay (one master, one replica): a grant the master has not
//!   streamed when it dies is lost, and a second holder appears if the replica is promoted
//!   while the first still believes it holds the lock (`down_after < TTL`).
//!
//! The plans and their scenario templates are in [`crate::campaign::envelopes`]; this
//! module draws and describes what their points found.

use serde_json::{Value, json};

use super::figures::heatmap::{self, Cell, Fill, Heatmap, Panel};
use super::rate::{Rate, seeds};

/// One setup's grid of results.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    /// `rates[y][x]`: mutual-exclusion violations at that point.
    pub rates: Vec<Vec<Rate>>,
    /// `files[y][x]`: the point's scenario file, which `locksim replay` runs.
    pub files: Vec<Vec<String>>,
}

/// One envelope: two swept parameters, the measured rates and the analytic bound.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// A name usable in file names (`pause-delay`).
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub series: Vec<Series>,
    /// The bound as a line in the same units: safe on the side `safe_below` names.
    pub bound: Vec<(f64, f64)>,
    /// What the bound says of each point: `safe[y][x]`, for each series.
    pub bound_safe: Vec<Vec<Vec<bool>>>,
    pub seeds: u64,
}

impl Envelope {
    /// The envelope as a figure: one panel per setup, the bound around its safe points.
    pub fn heatmap(&self) -> Heatmap {
        let panels = self
            .series
            .iter()
            .zip(&self.bound_safe)
            .map(|(series, safe)| Panel {
                title: series.label.clone(),
                columns: self.xs.iter().map(|x| x.to_string()).collect(),
                rows: self.ys.iter().map(|y| y.to_string()).collect(),
                cells: series
                    .rates
                    .iter()
                    .map(|row| {
                        row.iter()
                            .map(|rate| {
                                Cell::plain(
                                    Fill::Rate(rate.violating as f64 / rate.seeds.max(1) as f64),
                                    &format!("{}/{}", rate.violating, rate.seeds),
                                )
                            })
                            .collect()
                    })
                    .collect(),
                inside_bound: Some(safe.clone()),
            })
            .collect();
        Heatmap {
            title: format!(
                "{} — mutual exclusion violated, {} per point",
                self.title,
                seeds(self.seeds)
            ),
            x_label: self.x_label.clone(),
            y_label: self.y_label.clone(),
            panels,
            row_label_width: 70,
            cell_width: heatmap::NARROW_CELL,
            note: "Black line: the analytic bound, around the points it calls safe.".into(),
        }
    }

    /// Where the bound and the measurement disagree, in one or two sentences: points the
    /// bound calls safe that broke, and points it calls unsafe that never did.
    pub fn caption(&self) -> String {
        let mut broke_inside = Vec::new();
        let mut held_outside = 0;
        let mut outside = 0;
        for (series, safe) in self.series.iter().zip(&self.bound_safe) {
            for (y, row) in series.rates.iter().enumerate() {
                for (x, rate) in row.iter().enumerate() {
                    match (safe[y][x], rate.violating > 0) {
                        (true, true) => broke_inside.push(format!(
                            "{} at {} = {}, {} = {} ({})",
                            series.label,
                            self.x_label,
                            self.xs[x],
                            self.y_label,
                            self.ys[y],
                            rate.sentence()
                        )),
                        (false, false) => {
                            held_outside += 1;
                            outside += 1;
                        }
                        (false, true) => outside += 1,
                        (true, false) => {}
                    }
                }
            }
        }
        let mut caption = match broke_inside.len() {
            0 => "Every point the bound calls safe held in every seed.".to_string(),
            n => format!(
                "{n} point(s) the bound calls safe broke: {}.",
                broke_inside
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        if outside > 0 {
            caption.push_str(&format!(
                " {held_outside} of the {outside} points beyond the bound never broke in {}: the bound is \
                 what the algorithm promises, and the workload (short critical sections, no contender ready at \
                 the instant the key expired) does not always use the whole window.",
                seeds(self.seeds)
            ));
        }
        caption
    }

    /// The JSON form: axes, rates per series and point, the bound, the caption.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "x_label": self.x_label,
            "y_label": self.y_label,
            "xs": self.xs,
            "ys": self.ys,
            "seeds": self.seeds,
            "bound": self.bound,
            "series": self.series.iter().zip(&self.bound_safe).map(|(series, safe)| json!({
                "label": series.label,
                "points": series.rates.iter().enumerate().flat_map(|(y, row)| {
                    row.iter().enumerate().map(move |(x, rate)| {
                        let mut point = rate.to_json();
                        point["x"] = json!(self.xs[x]);
                        point["y"] = json!(self.ys[y]);
                        point["bound_safe"] = json!(safe[y][x]);
                        point["scenario"] = json!(series.files[y][x]);
                        point
                    })
                }).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "caption": self.caption(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_counts_its_seeds_as_a_sentence_does() {
        let envelope = |seeds| Envelope {
            name: "e".into(),
            title: "Holder pause".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            xs: vec![1.0],
            ys: vec![1.0],
            series: Vec::new(),
            bound: Vec::new(),
            bound_safe: Vec::new(),
            seeds,
        };
        assert_eq!(
            envelope(1).heatmap().title,
            "Holder pause — mutual exclusion violated, 1 seed per point"
        );
        assert_eq!(
            envelope(20).heatmap().title,
            "Holder pause — mutual exclusion violated, 20 seeds per point"
        );
    }
}
