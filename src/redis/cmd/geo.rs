//! GEOADD: members of a sorted set placed by longitude and latitude, their score the
//! 52-bit geohash of the point, as Redis 7.0 stores them (geo.c `geoaddCommand`, which
//! turns the request into a ZADD; geohash.c `geohashEncodeWGS84`).

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, borrowed};
use super::zsets::{parse_score, zadd};
use crate::redis::connection::Reply;
use crate::redis::db::Db;

/// The geo commands.
pub(super) const fn commands<C>() -> [Spec<C>; 1] {
    [Spec {
        name: "geoadd",
        arity: -5,
        flags: Flags::WRITE_DENYOOM,
        summary: "add members by longitude and latitude (their geohash is the score); NX|XX, CH",
        handler: Handler::Keyspace(geoadd),
    }]
}

/// The longitudes and latitudes Redis can place (`GEO_LONG_MIN`…, geohash.h): the
/// latitudes of the Web Mercator projection.
const LONGITUDE: (f64, f64) = (-180.0, 180.0);
const LATITUDE: (f64, f64) = (-85.051_128_78, 85.051_128_78);

/// Bits of each coordinate in the hash (`GEO_STEP_MAX`): 52 bits in all, which a double
/// score holds exactly.
const STEP_BITS: u32 = 26;

/// `GEOADD key [NX|XX] [CH] longitude latitude member [...]`: as ZADD of each member with
/// its point's geohash as score; a coordinate that is no number, or outside the ranges, is
/// refused before anything is added.
fn geoadd(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let mut words = args.rest();
    let options = words
        .iter()
        .take_while(|word| {
            [&b"NX"[..], b"XX", b"CH"]
                .iter()
                .any(|option| word.eq_ignore_ascii_case(option))
        })
        .count();
    let triples = words.split_off(options);
    let has = |option: &[u8]| words.iter().any(|word| word.eq_ignore_ascii_case(option));
    if !triples.len().is_multiple_of(3) || (has(b"NX") && has(b"XX")) {
        return Err(ReplyError::syntax());
    }
    let mut zadd_words = vec![key];
    zadd_words.extend(words);
    for triple in triples.chunks(3) {
        let longitude = parse_score(&triple[0])?;
        let latitude = parse_score(&triple[1])?;
        let hash = geohash(longitude, latitude).ok_or_else(|| {
            ReplyError(format!(
                "ERR invalid longitude,latitude pair {longitude:.6},{latitude:.6}"
            ))
        })?;
        zadd_words.push(hash.to_string().into_bytes());
        zadd_words.push(triple[2].clone());
    }
    zadd(&mut Args::new(&borrowed(&zadd_words)), db, now_ms)
}

/// The 52-bit geohash of a point (`geohashEncodeWGS84` at 26 steps, `interleave64`):
/// each coordinate's offset in its range as a 26-bit fixed-point number, latitude bits in
/// the even positions, longitude bits in the odd ones; `None` outside the ranges.
fn geohash(longitude: f64, latitude: f64) -> Option<u64> {
    let within = |x: f64, (min, max): (f64, f64)| (min..=max).contains(&x);
    if !within(longitude, LONGITUDE) || !within(latitude, LATITUDE) {
        return None;
    }
    let fixed =
        |x: f64, (min, max): (f64, f64)| ((x - min) / (max - min) * f64::from(1u32 << STEP_BITS)) as u32;
    let spread = |bits: u32| (0..STEP_BITS).fold(0u64, |out, i| out | (u64::from(bits >> i & 1) << (2 * i)));
    Some(spread(fixed(latitude, LATITUDE)) | (spread(fixed(longitude, LONGITUDE)) << 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The scores redis-server 7.0.15 gives (GEOADD, then ZSCORE).
    #[test]
    fn points_hash_to_the_scores_redis_gives_them() {
        assert_eq!(geohash(13.361389, 38.115556), Some(3_479_099_956_230_698));
        assert_eq!(geohash(15.087269, 37.502669), Some(3_479_447_370_796_909));
        assert_eq!(geohash(200.0, 0.0), None);
        assert_eq!(geohash(0.0, 86.0), None);
    }
}
