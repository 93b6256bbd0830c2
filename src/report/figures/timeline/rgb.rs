//! A colour as its red, green and blue, for serde (plotters' colour has none): a timeline
//! is kept in a report's cache of runs.

use plotters::style::RGBColor;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub fn serialize<S: Serializer>(colour: &RGBColor, to: S) -> Result<S::Ok, S::Error> {
    (colour.0, colour.1, colour.2).serialize(to)
}

pub fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<RGBColor, D::Error> {
    let (red, green, blue) = <(u8, u8, u8)>::deserialize(from)?;
    Ok(RGBColor(red, green, blue))
}
