//! `math.random` as Redis 7.0 defines it: its own 48-bit generator (`redisLrand48`,
//! rand.c), seeded identically at start, so a simulated node draws what redis-server draws.

use std::cell::Cell;
use std::rc::Rc;

use mlua::{Function, Lua, Variadic};

/// Redis's `redisLrand48` (rand.c): the 48-bit linear congruential generator behind its
/// `math.random`, with the same constants and start state, so draws match redis-server.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lrand48(u64);

impl Lrand48 {
    pub(super) const MULTIPLIER: u64 = 0x5_DEEC_E66D;
    pub(super) const INCREMENT: u64 = 0xB;
    pub(super) const MASK: u64 = (1 << 48) - 1;
    pub(super) const START: Lrand48 = Lrand48(0x1234_ABCD_330E);
    /// `REDIS_LRAND48_MAX`.
    pub(super) const MAX: i64 = i32::MAX as i64;

    pub(super) fn seeded(seed: i32) -> Self {
        Lrand48((((seed as u32) as u64) << 16) | 0x330E)
    }

    pub(super) fn next(&mut self) -> i64 {
        self.0 = (self
            .0
            .wrapping_mul(Self::MULTIPLIER)
            .wrapping_add(Self::INCREMENT))
            & Self::MASK;
        (self.0 >> 17) as i64
    }
}

/// `math.random` as Redis defines it over [`Lrand48`].
pub(super) fn random_function(lua: &Lua, state: Rc<Cell<Lrand48>>) -> mlua::Result<Function> {
    lua.create_function(move |_, bounds: Variadic<f64>| {
        let mut generator = state.get();
        let r = (generator.next() % Lrand48::MAX) as f64 / Lrand48::MAX as f64;
        state.set(generator);
        let empty = || mlua::Error::RuntimeError("bad argument to 'random' (interval is empty)".into());
        match bounds[..] {
            [] => Ok(r),
            [upper] => {
                let upper = upper.trunc();
                if upper < 1.0 {
                    return Err(empty());
                }
                Ok((r * upper).floor() + 1.0)
            }
            [lower, upper] => {
                let (lower, upper) = (lower.trunc(), upper.trunc());
                if lower > upper {
                    return Err(empty());
                }
                Ok((r * (upper - lower + 1.0)).floor() + lower)
            }
            _ => Err(mlua::Error::RuntimeError("wrong number of arguments".into())),
        }
    })
}
