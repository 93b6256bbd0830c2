//! The fake node against redis-server 7.0, frame for frame, in RESP2 and RESP3.
//!
//! proptest generates short command sequences: every command the fake implements (strings,
//! keys, hashes, sorted sets, lists, BLPOP/BRPOP with short timeouts and served by another
//! connection's push, pub/sub, MULTI/EXEC/DISCARD/WATCH with queued errors, EVAL/EVALSHA of
//! scripts calling them, SCRIPT, SELECT/SWAPDB/FLUSHDB/FLUSHALL, RESET, TIME, ROLE, CONFIG
//! GET), with expiries in the past or long enough that nothing expires mid-case, wrong
//! arities and bad arguments, inline requests, HELLO 3, and a closing QUIT or malformed
//! request. Each step runs on one of [`CONNECTIONS`] connections (a subscriber and a
//! publisher, a WATCH on one and a write on another). Each sequence goes to a fake node
//! served on real TCP by the code `locksim serve` runs and to a real redis-server, and
//! every frame must be equal (TTL within a second, PTTL within a tolerance, HELLO's client
//! id and TIME's clock aside). After each step every connection not inside MULTI is sent
//! `PING <marker>` and read up to its answer, so each step's replies and each connection's
//! pushes (RESP2 message arrays, RESP3 `>` frames) are compared in order without waiting
//! on the clock; inside MULTI (where that PING would be queued) the reply is the one frame
//! read. A read that times out fails the case. One server pair serves all cases, emptied
//! between them. A mismatch shrinks to a minimal sequence and prints it with every
//! connection's frames at every step.
//!
//! `LOCKSIM_DIFF_CASES` sets the number of sequences (default [`DEFAULT_CASES`], sized for
//! CI; a bigger run: `LOCKSIM_DIFF_CASES=5000 cargo test --locked --test
//! redis_differential`); `LOCKSIM_DIFF_SEED` the generator's seed.

mod support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestRunner};
use support::resp::{RespClient, Value, encode};
use support::{FakeServer, RedisServer};

const DEFAULT_CASES: u32 = 256;
const DEFAULT_SEED: u64 = 7;

/// Two PTTL readings of the same key on the two servers may differ by this much: the
/// servers set and read it a few moments apart, on a loaded machine.
const PTTL_TOLERANCE_MS: i64 = 1000;

/// How far (in seconds) a TIME reply may be from the test's clock.
const CLOCK_TOLERANCE_S: i64 = 2;

/// One word of a request; absolute times are computed when the request is sent.
#[derive(Debug, Clone)]
enum Word {
    Text(String),
    /// Unix time in milliseconds, this far from now.
    UnixMsFromNow(i64),
    /// Unix time in seconds, this far (in ms) from now.
    UnixSecondsFromNow(i64),
}

/// How two replies must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Exact,
    /// A TTL reply: within one second.
    Seconds,
    /// A PTTL reply: within [`PTTL_TOLERANCE_MS`].
    Millis,
    /// The same elements in any order (KEYS, and the keys of SCAN): arrays of bulk strings
    /// are compared sorted.
    Unordered,
    /// DBSIZE counts keys whose time has passed until expiry deletes them, which a real
    /// server does at moments of its own: first touch every key (EXISTS deletes the
    /// expired ones), then compare exactly.
    KeyCount,
}

/// Every key the sequences use (hash, list and sorted-set commands favour `h`, `l`, `z`).
const KEYS: [&str; 7] = ["k1", "k2", "lock", "n", "h", "l", "z"];

/// Connections per case, on each server.
const CONNECTIONS: usize = 3;

/// Pub/sub channels and patterns the sequences use.
const CHANNELS: [&str; 3] = ["c1", "c2", "lock-signal"];
const PATTERNS: [&str; 3] = ["c*", "c?", "x*"];

/// The argument of the `PING` that closes each connection's frames of a step: its answer
/// (`$` it, or RESP2 subscribed mode's `["pong", it]`) is no other request's reply.
const SYNC_MARKER: &str = "locksim-differential-sync";

#[derive(Debug, Clone)]
enum Step {
    /// A request on connection `conn`, sent as multibulk or, when `inline` and the words
    /// allow it, as an inline line.
    Request {
        conn: usize,
        words: Vec<Word>,
        inline: bool,
        check: Check,
    },
    /// A blocking pop on `waiter` that another connection's push may serve: the pop is
    /// sent, the test waits until the server has it blocked (or answered), then `pusher`
    /// sends `push`, and the waiter's reply is read.
    BlockedPop {
        waiter: usize,
        pop: Vec<Word>,
        pusher: usize,
        push: Vec<Word>,
    },
    /// Raw bytes after which both servers close the connection (QUIT, a protocol error).
    Last(Vec<u8>),
}

/// How long a generated [`Step::BlockedPop`] blocks when no push serves it, in seconds.
const BLOCKED_POP_TIMEOUT: &str = "0.1";

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

impl Word {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Word::Text(text) => text.clone().into_bytes(),
            Word::UnixMsFromNow(offset) => (now_ms() + offset).to_string().into_bytes(),
            Word::UnixSecondsFromNow(offset) => ((now_ms() + offset) / 1000).to_string().into_bytes(),
        }
    }
}

/// Words as a mismatch report shows them.
fn shown(words: &[Word]) -> String {
    let shown: Vec<String> = words
        .iter()
        .map(|w| match w {
            Word::Text(text) => format!("{text:?}"),
            Word::UnixMsFromNow(o) => format!("<now{o:+}ms>"),
            Word::UnixSecondsFromNow(o) => format!("<now{o:+}ms in s>"),
        })
        .collect();
    shown.join(" ")
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Request {
                conn, words, inline, ..
            } => write!(
                f,
                "c{conn}: {}{}",
                if *inline { "inline " } else { "" },
                shown(words)
            ),
            Step::BlockedPop {
                waiter,
                pop,
                pusher,
                push,
            } => write!(
                f,
                "c{waiter} blocks: {}, then c{pusher}: {}",
                shown(pop),
                shown(push)
            ),
            Step::Last(bytes) => write!(f, "raw {:?}", String::from_utf8_lossy(bytes)),
        }
    }
}

/// Scripts the sequences run: the lock client's and others covering conversions, errors,
/// pcall, globals, randomness. (A script raising an empty table crashes redis-server
/// 7.0.15, so none does.)
const SCRIPTS: &[&str] = &[
    locksim::client::scripts::RELEASE,
    r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#,
    "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])",
    "return redis.call('get', KEYS[1])",
    "return redis.call('incr', KEYS[1])",
    "return redis.pcall('incr', KEYS[1])",
    "return redis.call('exists', KEYS[1], KEYS[2])",
    "return redis.call('del', KEYS[1])",
    "return redis.call('type', KEYS[1])",
    "return redis.call('set', KEYS[1], 3.7)",
    "return {1,2,nil,3}",
    "return {1,{2,'x',{ok='s'}},true,false}",
    "return {1.9, -1.9, 1e20}",
    "return {KEYS[1], ARGV[1], #KEYS, #ARGV}",
    "return tostring(1/3)",
    "return",
    "return {ok='a', err='b'}",
    "error('boom')",
    "error({err='MY boom'})",
    "return redis.error_reply('MY boom')",
    "return redis.error_reply('boom')",
    "return redis.status_reply('fine')",
    "return redis.status_reply(1)",
    "return x",
    "x = 1",
    "return os",
    "return redis.call('nosuch', 'a')",
    "return redis.call('get')",
    "return redis.call('get', nil)",
    "return redis.call()",
    "return redis.call('eval', 'return 1', 0)",
    "\nreturn redis.call('set', KEYS[1], 'v', 'PX', '0')",
    "local ok, e = pcall(redis.call, 'get', 'a', 'b') return e",
    "local ok, e = pcall(error, {err='X y'}) return e",
    "return redis.pcall('set', 'k1', 'v', 'bogus')",
    "return math.random(100)",
    "return tostring(math.random())",
    "return redis.sha1hex(ARGV[1] or '')",
    "syntax error here",
    "return {redis.replicate_commands(), redis.REDIS_VERSION, redis.REDIS_VERSION_NUM, redis.REPL_ALL}",
    "return {type(unpack), type(loadstring), type(setmetatable), type(_G)}",
    "return type(print)",
    "return type(getfenv)",
    "return redis.log(redis.LOG_WARNING, 'x')",
    "return nil + 1",
    "local t = nil\nreturn t.x",
    "return {string.format('%d|%5.2f|%s', 3, 1/3, 'x'), table.concat({1, 2}, ','), tonumber('0x10')}",
    "return {math.floor(3.7), math.max(1, 5), string.len(ARGV[1] or ''), ('x'):rep(3)}",
    "return redis.call('ping')",
    "return redis.call('echo', KEYS[1])",
    "return redis.call('ttl', 'nokey')",
    "return redis.call('select', 0)",
    "return pcall(error)",
    "return select('#', redis.call('get', 'nokey'))",
    "return redis.call('zadd', KEYS[1], 1.5, 'a', 2, 'b')",
    "return redis.call('zadd', KEYS[1], 'INCR', 0.1, 'a')",
    "return redis.call('zrange', KEYS[1], 0, -1, 'WITHSCORES')",
    "return redis.call('zscore', KEYS[1], 'a')",
    "return redis.call('zremrangebyscore', KEYS[1], '-inf', 1)",
    "return redis.call('hset', KEYS[1], 'f', 1, 'g', 2)",
    "return redis.call('hincrby', KEYS[1], 'f', 5)",
    "return redis.call('hgetall', KEYS[1])",
    "return redis.call('hexists', KEYS[1], 'f')",
    "return redis.call('rpush', KEYS[1], 'x', 'y')",
    "return redis.call('blpop', KEYS[1], 0)",
    "return redis.pcall('brpop', KEYS[1], 1)",
    "return redis.call('lpop', KEYS[1], 5)",
    "return redis.call('lrange', KEYS[1], 0, -1)",
    "redis.call('select', 1) redis.call('set', KEYS[1], 'in1') return redis.call('get', KEYS[1])",
    "return redis.call('getdel', KEYS[1])",
    "return redis.call('mget', KEYS[1], 'k2')",
    "return redis.call('type', KEYS[1])",
    // KEYS answers in the order of Redis's dict, random per process: sorted here.
    "local keys = redis.call('keys', '*') table.sort(keys) return keys",
    "return redis.call('publish', 'c1', ARGV[1] or 'm')",
    "return redis.call('time')",
    "return redis.call('dbsize')",
    "return redis.call('flushdb')",
    "return redis.call('swapdb', 0, 1)",
    "return redis.call('setex', KEYS[1], 100, 'v')",
    "return redis.call('getex', KEYS[1], 'PERSIST')",
    "return redis.call('incrby', KEYS[1], 2) + redis.call('decrby', KEYS[1], 1)",
    "return redis.call('append', KEYS[1], 'x')",
    "return {redis.call('hlen', KEYS[1]), redis.call('hkeys', KEYS[1])}",
    "return redis.call('hdel', KEYS[1], 'f', 'g')",
    "return {redis.call('zrank', KEYS[1], 'a'), redis.call('zcount', KEYS[1], '-inf', '+inf')}",
    "return redis.call('zrevrange', KEYS[1], 0, -1, 'WITHSCORES')",
    "return redis.call('zincrby', KEYS[1], 2.5, 'a')",
    "return redis.call('zrangebyscore', KEYS[1], '(1', '+inf', 'LIMIT', 0, 1)",
    "return {redis.call('lindex', KEYS[1], -1), redis.call('llen', KEYS[1]), redis.call('lrem', KEYS[1], 0, 'x')}",
    "return redis.call('ltrim', KEYS[1], 0, 0)",
    "return redis.call('rename', KEYS[1], KEYS[2])",
    "return redis.call('multi')",
    "return redis.call('subscribe', 'c1')",
    "return redis.pcall('expire', KEYS[1], 100, 'GT')",
    "return redis.call('pubsub', 'numsub', 'c1')",
    // python-redis-lock's release script
    "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 1 else redis.call('del', KEYS[2]) redis.call('lpush', KEYS[2], 1) redis.call('pexpire', KEYS[2], 1000) redis.call('del', KEYS[1]) return 0 end",
    // redis-semaphore's Semaphore acquire script (the client's clock as ARGV[4])
    "local key, limit, identifier, lockTimeout, now = KEYS[1], tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]) redis.call('zremrangebyscore', key, '-inf', now - lockTimeout) if redis.call('zcard', key) < limit then redis.call('zadd', key, now, identifier) redis.call('pexpire', key, lockTimeout) return 1 else return 0 end",
];

fn text(s: &str) -> Word {
    Word::Text(s.to_string())
}

fn key() -> impl Strategy<Value = Word> {
    select(KEYS.to_vec()).prop_map(text)
}

fn value() -> impl Strategy<Value = Word> {
    select(vec![
        "v",
        "1",
        "-5",
        "0",
        "9223372036854775807",
        "01",
        "token-1",
        "x y",
    ])
    .prop_map(text)
}

/// Relative times: long enough that no key expires within a case, or already past, or
/// out of range, or not a number.
fn relative_time() -> impl Strategy<Value = Word> {
    prop_oneof![
        4 => (5_000i64..100_000).prop_map(|n| Word::Text(n.to_string())),
        1 => select(vec!["0", "-1", "-5000", "x", "9223372036854775807", "9223372036854775", "92233720368547758"])
            .prop_map(text),
    ]
}

/// Absolute times in ms or s: in the future, in the past, or huge.
fn absolute_time(seconds: bool) -> impl Strategy<Value = Word> {
    prop_oneof![
        3 => (5_000i64..100_000).prop_map(move |o| if seconds { Word::UnixSecondsFromNow(o) } else { Word::UnixMsFromNow(o) }),
        1 => (-100_000i64..-2_000).prop_map(move |o| if seconds { Word::UnixSecondsFromNow(o) } else { Word::UnixMsFromNow(o) }),
        1 => select(vec!["1", "0", "-1", "9223372036854775807", "x"]).prop_map(text),
    ]
}

fn words(parts: Vec<Vec<Word>>) -> Vec<Word> {
    parts.into_iter().flatten().collect()
}

fn set_options() -> impl Strategy<Value = Vec<Word>> {
    let option = prop_oneof![
        select(vec!["NX", "XX", "nx", "KEEPTTL", "GET", "bogus"]).prop_map(|o| vec![text(o)]),
        (select(vec!["EX", "PX", "px"]), relative_time()).prop_map(|(o, t)| vec![text(o), t]),
        absolute_time(false).prop_map(|t| vec![text("PXAT"), t]),
        absolute_time(true).prop_map(|t| vec![text("EXAT"), t]),
        Just(vec![text("EX")]),
    ];
    prop::collection::vec(option, 0..3).prop_map(words)
}

fn expire_flags() -> impl Strategy<Value = Vec<Word>> {
    prop::collection::vec(
        select(vec!["NX", "XX", "GT", "LT", "gt", "bogus"]).prop_map(text),
        0..3,
    )
}

/// EVAL or EVALSHA of a known script (or an unknown SHA), with 0–2 keys and 0–2 arguments,
/// or a bad key count.
fn script_call() -> impl Strategy<Value = Vec<Word>> {
    let numkeys = prop_oneof![
        8 => (0usize..=2).prop_map(|n| n.to_string()),
        1 => select(vec!["-1", "3", "x"]).prop_map(str::to_string),
    ];
    (
        any::<bool>(),
        select(SCRIPTS.to_vec()),
        numkeys,
        prop::collection::vec(key(), 2),
        // No small positive numbers: a script could use one as a TTL that runs out between
        // the two servers' replies.
        prop::collection::vec(
            prop_oneof![
                select(vec!["token-1", "v", "x y", "-5"]).prop_map(text),
                relative_time()
            ],
            0..=2,
        ),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(by_sha, script, numkeys, keys, args, unknown)| {
            let (command, first) = match (by_sha, unknown) {
                (false, _) => ("EVAL", script.to_string()),
                (true, false) => ("EVALSHA", sha1_smol::Sha1::from(script).digest().to_string()),
                (true, true) => ("EVALSHA", "0000000000000000000000000000000000000000".to_string()),
            };
            let key_count = numkeys.parse::<usize>().map_or(0, |n| n.min(2));
            let mut request = vec![text(command), Word::Text(first), Word::Text(numkeys)];
            request.extend(keys.into_iter().take(key_count));
            request.extend(args);
            request
        })
}

/// Hash, list and sorted-set requests, on their own keys and on the others (WRONGTYPE).
fn typed_request() -> impl Strategy<Value = Vec<Word>> {
    let member = || select(vec!["a", "b", "c", "x y"]).prop_map(text);
    let score = || {
        select(vec![
            "1", "1.5", "-2", "0.1", "0", "3", "inf", "-inf", "+inf", "1e3", "x", "nan", "2.5e-5",
        ])
        .prop_map(text)
    };
    let bound = || {
        select(vec![
            "-inf", "+inf", "0", "1", "(1", "1.5", "(3", "-2", "x", "(", "inf",
        ])
        .prop_map(text)
    };
    let index = || select(vec!["0", "1", "-1", "2", "-3", "10", "-10", "x"]).prop_map(text);
    let field = || select(vec!["f", "g", "h"]).prop_map(text);
    let zadd_flags = prop::collection::vec(
        select(vec!["NX", "XX", "GT", "LT", "CH", "INCR", "ch"]).prop_map(text),
        0..3,
    );
    let zrange_options = prop::collection::vec(
        prop_oneof![
            select(vec!["WITHSCORES", "REV", "BYSCORE", "withscores", "bogus"]).prop_map(|o| vec![text(o)]),
            (
                select(vec!["0", "1", "-1", "x"]),
                select(vec!["1", "2", "-1", "0"])
            )
                .prop_map(|(o, c)| vec![text("LIMIT"), text(o), text(c)]),
        ],
        0..3,
    )
    .prop_map(words);
    prop_oneof![
        3 => (key(), prop::collection::vec((field(), value()), 1..3))
            .prop_map(|(k, p)| words(vec![vec![text("HSET"), k], p.into_iter().flat_map(|(f, v)| [f, v]).collect()])),
        1 => key().prop_map(|k| vec![text("HSET"), k, text("f")]),
        2 => (key(), field()).prop_map(|(k, f)| vec![text("HGET"), k, f]),
        1 => (key(), prop::collection::vec(field(), 1..3)).prop_map(|(k, f)| words(vec![vec![text("HDEL"), k], f])),
        1 => (key(), field()).prop_map(|(k, f)| vec![text("HEXISTS"), k, f]),
        2 => (key(), field(), value()).prop_map(|(k, f, n)| vec![text("HINCRBY"), k, f, n]),
        1 => (select(vec!["HLEN", "HKEYS", "HGETALL"]), key()).prop_map(|(c, k)| vec![text(c), k]),
        3 => (key(), zadd_flags, prop::collection::vec((score(), member()), 1..3))
            .prop_map(|(k, f, p)| words(vec![vec![text("ZADD"), k], f, p.into_iter().flat_map(|(s, m)| [s, m]).collect()])),
        1 => (key(), score(), member()).prop_map(|(k, s, m)| vec![text("ZINCRBY"), k, s, m]),
        2 => (select(vec!["ZSCORE", "ZRANK"]), key(), member()).prop_map(|(c, k, m)| vec![text(c), k, m]),
        1 => (key(), prop::collection::vec(member(), 1..3)).prop_map(|(k, m)| words(vec![vec![text("ZREM"), k], m])),
        1 => key().prop_map(|k| vec![text("ZCARD"), k]),
        2 => (select(vec!["ZCOUNT", "ZREMRANGEBYSCORE"]), key(), bound(), bound())
            .prop_map(|(c, k, a, b)| vec![text(c), k, a, b]),
        3 => (key(), prop_oneof![index(), bound()], prop_oneof![index(), bound()], zrange_options.clone())
            .prop_map(|(k, a, b, o)| words(vec![vec![text("ZRANGE"), k, a, b], o])),
        1 => (key(), index(), index(), prop::option::of(Just(text("WITHSCORES"))))
            .prop_map(|(k, a, b, w)| words(vec![vec![text("ZREVRANGE"), k, a, b], w.into_iter().collect()])),
        2 => (key(), bound(), bound(), zrange_options)
            .prop_map(|(k, a, b, o)| words(vec![vec![text("ZRANGEBYSCORE"), k, a, b], o])),
        3 => (select(vec!["LPUSH", "RPUSH"]), key(), prop::collection::vec(member(), 1..4))
            .prop_map(|(c, k, m)| words(vec![vec![text(c), k], m])),
        2 => (select(vec!["LPOP", "RPOP"]), key(), prop::option::of(select(vec!["0", "1", "2", "5", "-1", "x"])))
            .prop_map(|(c, k, n)| words(vec![vec![text(c), k], n.into_iter().map(text).collect()])),
        1 => (key(), index()).prop_map(|(k, i)| vec![text("LINDEX"), k, i]),
        2 => (select(vec!["LRANGE", "LTRIM"]), key(), index(), index()).prop_map(|(c, k, a, b)| vec![text(c), k, a, b]),
        1 => (key(), select(vec!["0", "1", "-1", "2", "x"]), member()).prop_map(|(k, n, m)| vec![text("LREM"), k, text(n), m]),
        1 => key().prop_map(|k| vec![text("LLEN"), k]),
        1 => (select(vec!["BLPOP", "BRPOP"]), prop::collection::vec(key(), 1..3), select(vec!["0.01", "0.05", "0.0001", "x", "-1"]))
            .prop_map(|(c, k, t)| words(vec![vec![text(c)], k, vec![text(t)]])),
    ]
}

/// String, key and database requests beyond the lock's.
fn more_request() -> impl Strategy<Value = (Vec<Word>, Check)> {
    let exact = |s: BoxedStrategy<Vec<Word>>| s.prop_map(|w| (w, Check::Exact));
    let database = || select(vec!["0", "1", "15", "16", "-1", "x"]).prop_map(text);
    prop_oneof![
        2 => exact((select(vec!["SETEX", "PSETEX"]), key(), relative_time(), value())
            .prop_map(|(c, k, t, v)| vec![text(c), k, t, v]).boxed()),
        1 => exact(key().prop_map(|k| vec![text("GETDEL"), k]).boxed()),
        2 => exact((key(), prop::collection::vec(prop_oneof![
                select(vec!["PERSIST", "bogus"]).prop_map(|o| vec![text(o)]),
                (select(vec!["EX", "PX"]), relative_time()).prop_map(|(o, t)| vec![text(o), t]),
                absolute_time(false).prop_map(|t| vec![text("PXAT"), t]),
                absolute_time(true).prop_map(|t| vec![text("EXAT"), t]),
            ], 0..3))
            .prop_map(|(k, o)| words(vec![vec![text("GETEX"), k], o.into_iter().flatten().collect()])).boxed()),
        1 => exact(key().prop_map(|k| vec![text("DECR"), k]).boxed()),
        1 => exact((key(), value()).prop_map(|(k, n)| vec![text("DECRBY"), k, n]).boxed()),
        1 => exact(prop::collection::vec(key(), 1..4).prop_map(|k| words(vec![vec![text("MGET")], k])).boxed()),
        2 => exact((select(vec!["MSET", "MSETNX"]), prop::collection::vec((key(), value()), 1..3), any::<bool>())
            .prop_map(|(c, p, odd)| {
                let mut w = vec![text(c)];
                w.extend(p.into_iter().flat_map(|(k, v)| [k, v]));
                if odd { w.pop(); }
                w
            }).boxed()),
        1 => exact((key(), value()).prop_map(|(k, v)| vec![text("APPEND"), k, v]).boxed()),
        1 => exact(key().prop_map(|k| vec![text("STRLEN"), k]).boxed()),
        1 => exact(prop::collection::vec(key(), 1..3).prop_map(|k| words(vec![vec![text("UNLINK")], k])).boxed()),
        1 => select(vec!["*", "k*", "?", "[hl]", "*o*", "[^k]*", "\\*"]).prop_map(|p| (vec![text("KEYS"), text(p)], Check::Unordered)),
        2 => prop::collection::vec(prop_oneof![
                select(vec!["*", "k*", "[hlz]"]).prop_map(|p| vec![text("MATCH"), text(p)]),
                select(vec!["string", "hash", "list", "zset", "none"]).prop_map(|t| vec![text("TYPE"), text(t)]),
                select(vec!["100", "0", "x"]).prop_map(|c| vec![text("COUNT"), text(c)]),
            ], 0..3)
            .prop_map(|o| (words(vec![vec![text("SCAN"), text("0")], o.into_iter().flatten().collect()]), Check::Unordered)),
        1 => exact(select(vec!["x", " 1", "1x"]).prop_map(|c| vec![text("SCAN"), text(c)]).boxed()),
        1 => exact(key().prop_map(|k| vec![text("TYPE"), k]).boxed()),
        2 => exact((key(), key()).prop_map(|(a, b)| vec![text("RENAME"), a, b]).boxed()),
        3 => exact(database().prop_map(|d| vec![text("SELECT"), d]).boxed()),
        1 => exact((database(), database()).prop_map(|(a, b)| vec![text("SWAPDB"), a, b]).boxed()),
        1 => exact(select(vec![vec!["FLUSHDB"], vec!["FLUSHDB", "ASYNC"], vec!["FLUSHDB", "x"]])
            .prop_map(|w| w.into_iter().map(text).collect()).boxed()),
        6 => exact(typed_request().boxed()),
    ]
}

/// SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB, on a few channels.
fn pubsub_request() -> impl Strategy<Value = Vec<Word>> {
    let channels = |min| prop::collection::vec(select(CHANNELS.to_vec()).prop_map(text), min..3);
    let patterns = |min| prop::collection::vec(select(PATTERNS.to_vec()).prop_map(text), min..3);
    prop_oneof![
        3 => channels(1).prop_map(|c| words(vec![vec![text("SUBSCRIBE")], c])),
        2 => channels(0).prop_map(|c| words(vec![vec![text("UNSUBSCRIBE")], c])),
        2 => patterns(1).prop_map(|p| words(vec![vec![text("PSUBSCRIBE")], p])),
        1 => patterns(0).prop_map(|p| words(vec![vec![text("PUNSUBSCRIBE")], p])),
        5 => (select(CHANNELS.to_vec()), value()).prop_map(|(c, v)| vec![text("PUBLISH"), text(c), v]),
        1 => select(vec![
            vec!["PUBLISH", "c1"], vec!["SUBSCRIBE"], vec!["PSUBSCRIBE"], vec!["PUBSUB", "NUMPAT"],
            vec!["PUBSUB", "NUMSUB", "c1", "c2"],
        ])
        .prop_map(|w| w.into_iter().map(text).collect()),
    ]
}

/// MULTI, EXEC, DISCARD, WATCH and UNWATCH (queued errors come from the other requests:
/// unknown commands and wrong arities inside MULTI).
fn transaction_request() -> impl Strategy<Value = Vec<Word>> {
    prop_oneof![
        4 => Just(vec![text("MULTI")]),
        3 => Just(vec![text("EXEC")]),
        1 => Just(vec![text("DISCARD")]),
        3 => prop::collection::vec(key(), 1..3).prop_map(|k| words(vec![vec![text("WATCH")], k])),
        1 => Just(vec![text("UNWATCH")]),
        1 => select(vec![vec!["MULTI", "x"], vec!["EXEC", "x"], vec!["WATCH"]])
            .prop_map(|w| w.into_iter().map(text).collect()),
    ]
}

fn request() -> impl Strategy<Value = (Vec<Word>, Check)> {
    let exact = |s: BoxedStrategy<Vec<Word>>| s.prop_map(|w| (w, Check::Exact));
    prop_oneof![
        4 => exact(pubsub_request().boxed()),
        // Redis lists channels in its dict's order.
        1 => select(vec![vec!["PUBSUB", "CHANNELS"], vec!["PUBSUB", "CHANNELS", "c?"]])
            .prop_map(|w| (w.into_iter().map(text).collect(), Check::Unordered)),
        4 => exact(transaction_request().boxed()),
        6 => exact((key(), value(), set_options()).prop_map(|(k, v, o)| words(vec![vec![text("SET"), k, v], o])).boxed()),
        3 => exact(key().prop_map(|k| vec![text("GET"), k]).boxed()),
        1 => exact((key(), value()).prop_map(|(k, v)| vec![text("SETNX"), k, v]).boxed()),
        2 => exact(prop::collection::vec(key(), 1..3).prop_map(|k| words(vec![vec![text("DEL")], k])).boxed()),
        2 => exact(prop::collection::vec(key(), 1..3).prop_map(|k| words(vec![vec![text("EXISTS")], k])).boxed()),
        2 => exact(key().prop_map(|k| vec![text("INCR"), k]).boxed()),
        1 => exact((key(), value()).prop_map(|(k, n)| vec![text("INCRBY"), k, n]).boxed()),
        2 => exact((select(vec!["EXPIRE", "PEXPIRE", "pexpire"]), key(), relative_time(), expire_flags())
            .prop_map(|(c, k, t, f)| words(vec![vec![text(c), k, t], f])).boxed()),
        1 => exact((key(), absolute_time(false), expire_flags())
            .prop_map(|(k, t, f)| words(vec![vec![text("PEXPIREAT"), k, t], f])).boxed()),
        1 => exact((key(), absolute_time(true), expire_flags())
            .prop_map(|(k, t, f)| words(vec![vec![text("EXPIREAT"), k, t], f])).boxed()),
        2 => key().prop_map(|k| (vec![text("PTTL"), k], Check::Millis)),
        1 => key().prop_map(|k| (vec![text("TTL"), k], Check::Seconds)),
        1 => exact(key().prop_map(|k| vec![text("PERSIST"), k]).boxed()),
        1 => exact(key().prop_map(|k| vec![text("TYPE"), k]).boxed()),
        1 => Just((vec![text("DBSIZE")], Check::KeyCount)),
        5 => exact(script_call().boxed()),
        1 => exact(select(SCRIPTS.to_vec()).prop_map(|s| vec![text("SCRIPT"), text("LOAD"), text(s)]).boxed()),
        1 => exact(select(SCRIPTS.to_vec())
            .prop_map(|s| vec![text("SCRIPT"), text("EXISTS"), Word::Text(sha1_smol::Sha1::from(s).digest().to_string())])
            .boxed()),
        10 => more_request(),
        1 => Just((vec![text("TIME")], Check::Exact)),
        2 => exact(select(vec![
            vec!["RESET"], vec!["RESET", "x"], vec!["FLUSHALL"], vec!["FLUSHALL", "ASYNC"], vec!["FLUSHALL", "sync"],
            vec!["FLUSHDB", "SYNC"], vec!["SCRIPT", "FLUSH"], vec!["SCRIPT", "FLUSH", "ASYNC"], vec!["SCRIPT", "FLUSH", "SYNC"],
            vec!["ROLE"], vec!["ROLE", "x"], vec!["TIME", "x"], vec!["CONFIG", "GET", "maxmemory"],
            vec!["CONFIG", "GET", "databases"], vec!["CONFIG", "GET", "appendonly"], vec!["CONFIG", "GET", "nosuch"],
            vec!["CONFIG", "GET", "min-replicas-to-write"], vec!["CONFIG", "GET", "maxmemory-policy"],
            vec!["CONFIG", "SET", "nosuch", "1"], vec!["CONFIG", "SET", "hz", "x"], vec!["CONFIG", "bogus"],
            vec!["CONFIG"], vec!["CLIENT", "GETNAME", "x"], vec!["ECHO", "a", "b"],
        ])
        .prop_map(|w| w.into_iter().map(text).collect())
        .boxed()),
        1 => exact(select(vec![
            vec!["PING"], vec!["ping", "hi"], vec!["PING", "a", "b"], vec!["ECHO", "e"], vec!["ECHO"],
            vec!["SELECT", "0"], vec!["SELECT", "16"], vec!["SELECT", "x"],
            vec!["CLIENT", "SETNAME", "me"], vec!["CLIENT", "SETNAME", "a b"], vec!["CLIENT", "GETNAME"],
            vec!["CLIENT", "bogus"], vec!["HELLO", "3"], vec!["HELLO", "2"], vec!["HELLO", "3", "SETNAME", "h"],
            vec!["HELLO", "4"], vec!["HELLO", "2", "bogus"], vec!["HELLO", "2", "AUTH", "a", "b"],
            vec!["WAIT", "0", "0"], vec!["WAIT", "0", "-1"], vec!["FLUSHALL", "x"], vec!["DBSIZE", "x"],
            vec!["SCRIPT", "FLUSH", "bogus"], vec!["SCRIPT", "bogus"], vec!["SCRIPT", "EXISTS"],
            vec!["GET"], vec!["GET", "a", "b"], vec!["SET", "k"], vec!["INCR"], vec!["FOO", "a", "b"],
            vec!["EVAL", "return 1"], vec!["EXPIRE", "k1"],
        ])
        .prop_map(|w| w.into_iter().map(text).collect())
        .boxed()),
    ]
}

fn last_step() -> impl Strategy<Value = Step> {
    select(vec![
        &b"*1\r\n$4\r\nQUIT\r\n"[..],
        b"QUIT\r\n",
        b"*1\r\n:1\r\n",
        b"*x\r\n",
        b"*1\r\n$-1\r\n",
        b"*1\r\n$600000000\r\n",
        b"*1\r\n*1\r\n",
        b"echo \"a\r\n",
        b"echo 'a'b\r\n",
    ])
    .prop_map(|bytes| Step::Last(bytes.to_vec()))
}

fn sequence() -> impl Strategy<Value = Vec<Step>> {
    // Most steps on the first connection; the others subscribe, watch, publish and write.
    let conn = prop_oneof![5 => Just(0usize), 3 => Just(1), 2 => Just(2)];
    let request = (conn, request(), prop::bool::weighted(0.15)).prop_map(|(conn, (words, check), inline)| {
        Step::Request {
            conn,
            words,
            inline,
            check,
        }
    });
    let step = prop_oneof![12 => request, 1 => blocked_pop()];
    (
        any::<bool>(),
        prop::collection::vec(step, 1..10),
        prop::option::weighted(0.1, last_step()),
    )
        .prop_map(|(resp3, steps, last)| {
            // RESP3 from the start on every connection: every reply in its RESP3 shape.
            let hello = (0..CONNECTIONS).filter(|_| resp3).map(|conn| Step::Request {
                conn,
                words: vec![text("HELLO"), text("3")],
                inline: false,
                check: Check::Exact,
            });
            hello.chain(steps).chain(last).collect()
        })
}

/// A BLPOP or BRPOP on one connection and an LPUSH or RPUSH on another, mostly of the
/// list the pop waits on.
fn blocked_pop() -> impl Strategy<Value = Step> {
    let list_key = prop_oneof![3 => Just(text("l")), 1 => key()];
    (
        0..CONNECTIONS,
        1..CONNECTIONS,
        select(vec!["BLPOP", "BRPOP"]),
        prop::collection::vec(list_key.clone(), 1..3),
        select(vec!["LPUSH", "RPUSH"]),
        list_key,
        prop::collection::vec(select(vec!["a", "b", "c"]).prop_map(text), 1..3),
    )
        .prop_map(
            |(waiter, offset, pop, keys, push, key, elements)| Step::BlockedPop {
                waiter,
                pop: words(vec![vec![text(pop)], keys, vec![text(BLOCKED_POP_TIMEOUT)]]),
                pusher: (waiter + offset) % CONNECTIONS,
                push: words(vec![vec![text(push), key], elements]),
            },
        )
}

/// The bytes of a step: inline only when every word survives Redis's inline splitting.
fn request_bytes(words: &[Vec<u8>], inline: bool) -> Vec<u8> {
    let plain = |w: &Vec<u8>| !w.is_empty() && !w.iter().any(|b| b" \t\r\n\"'\\".contains(b) || *b == 0);
    if inline && words.iter().all(plain) {
        let mut line = words.join(&b' ');
        line.extend(b"\r\n");
        line
    } else {
        encode(words)
    }
}

/// HELLO's client id differs between servers (each counts its own connections).
fn without_client_id(value: Value) -> Value {
    let is_id = |k: &Value| *k == Value::Bulk("id".into());
    match value {
        Value::Map(pairs) => Value::Map(
            pairs
                .into_iter()
                .map(|(k, v)| if is_id(&k) { (k, Value::Int(0)) } else { (k, v) })
                .collect(),
        ),
        Value::Array(items) if items.first() == Some(&Value::Bulk("server".into())) => {
            let mut items = items;
            if let Some(i) = items.iter().position(is_id)
                && let Some(id) = items.get_mut(i + 1)
            {
                *id = Value::Int(0);
            }
            Value::Array(items)
        }
        other => other,
    }
}

/// TIME's reply, `[seconds, microseconds]`, differs between two servers asked moments
/// apart: wherever it appears (EXEC's replies too), one within [`CLOCK_TOLERANCE_S`] of
/// the test's own clock becomes `<time>`; another stays as it is, and shows.
fn without_clock(value: Value) -> Value {
    let now_s = now_ms() / 1000;
    match value {
        Value::Array(items) => match &items[..] {
            [Value::Bulk(seconds), Value::Bulk(micros)]
                if micros.parse::<u32>().is_ok_and(|us| us < 1_000_000)
                    && seconds
                        .parse::<i64>()
                        .is_ok_and(|s| (s - now_s).abs() <= CLOCK_TOLERANCE_S) =>
            {
                Value::Simple("<time>".into())
            }
            _ => Value::Array(items.into_iter().map(without_clock).collect()),
        },
        other => other,
    }
}

/// The parts of a pub/sub exchange redis-server 7.0 orders by its dicts' iteration (random
/// per process: the hash seed is), sorted: in a run of one message's `pmessage`s (one per
/// matching pattern), the patterns; in a run of `unsubscribe` or `punsubscribe`
/// confirmations (UNSUBSCRIBE without arguments), the names, each count staying where it
/// is (they count down the same way in any order).
fn in_dict_order_sorted(frames: &[Value]) -> Vec<Value> {
    /// A frame's kind and what a run shares, and the place of the name that varies.
    fn run_key(frame: &Value) -> Option<(Vec<Value>, usize)> {
        let (Value::Array(items) | Value::Push(items)) = frame else {
            return None;
        };
        match items.first() {
            Some(Value::Bulk(kind)) if kind == "pmessage" && items.len() == 4 => {
                Some((vec![items[0].clone(), items[2].clone(), items[3].clone()], 1))
            }
            Some(Value::Bulk(kind))
                if (kind == "unsubscribe" || kind == "punsubscribe") && items.len() == 3 =>
            {
                Some((vec![items[0].clone()], 1))
            }
            _ => None,
        }
    }
    let mut frames = frames.to_vec();
    let mut start = 0;
    while start < frames.len() {
        let Some((key, at)) = run_key(&frames[start]) else {
            start += 1;
            continue;
        };
        let end = (start..frames.len())
            .find(|&i| run_key(&frames[i]).is_none_or(|(k, _)| k != key))
            .unwrap_or(frames.len());
        let name = |frame: &mut Value| match frame {
            Value::Array(items) | Value::Push(items) => std::mem::replace(&mut items[at], Value::Null),
            _ => unreachable!("a run holds arrays and pushes only"),
        };
        let mut names: Vec<Value> = frames[start..end].iter_mut().map(name).collect();
        names.sort_by_key(|n| format!("{n:?}"));
        for (frame, sorted) in frames[start..end].iter_mut().zip(names) {
            if let Value::Array(items) | Value::Push(items) = frame {
                items[at] = sorted;
            }
        }
        start = end;
    }
    frames
}

/// `value` with every array of bulk strings in it sorted.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Array(items) if items.iter().all(|i| matches!(i, Value::Bulk(_))) => {
            let mut items = items.clone();
            items.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
            Value::Array(items)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn agree(real: &Value, fake: &Value, check: Check) -> bool {
    match (check, real, fake) {
        (Check::Unordered, _, _) => sorted(real) == sorted(fake),
        (Check::Seconds, Value::Int(a), Value::Int(b)) if *a >= 0 && *b >= 0 => (a - b).abs() <= 1,
        (Check::Millis, Value::Int(a), Value::Int(b)) if *a >= 0 && *b >= 0 => {
            (a - b).abs() <= PTTL_TOLERANCE_MS
        }
        _ => real == fake,
    }
}

/// One server's connections of a case, which of them are inside MULTI, and one more that
/// only watches the server (how many connections it has blocked).
struct Connections {
    clients: Vec<RespClient>,
    in_multi: Vec<bool>,
    observer: RespClient,
}

/// Whether `frame` answers the closing `PING` ([`SYNC_MARKER`]).
fn is_sync_answer(frame: &Value) -> bool {
    let marker = Value::Bulk(SYNC_MARKER.into());
    *frame == marker || *frame == Value::Array(vec![Value::Bulk("pong".into()), marker])
}

impl Connections {
    fn open(addr: std::net::SocketAddr) -> Connections {
        Connections {
            clients: (0..CONNECTIONS).map(|_| RespClient::connect(addr)).collect(),
            in_multi: vec![false; CONNECTIONS],
            observer: RespClient::connect(addr),
        }
    }

    /// Sends `bytes` (a request) on connection `conn` and reads what it answered. Inside
    /// MULTI, and for a MULTI (after which a `PING` would be queued, not answered), the
    /// reply is the first frame that is not a RESP3 push; outside, everything up to the
    /// answer of a closing `PING` ([`Connections::sync`]), which also collects what follows
    /// the reply (SUBSCRIBE's further confirmations, messages published to itself, what
    /// EXEC's commands sent).
    fn request(&mut self, conn: usize, words: &[Vec<u8>], bytes: &[u8]) -> Vec<Value> {
        self.clients[conn].send(bytes);
        self.answer(conn, words)
    }

    /// Reads what connection `conn` answered to the request `words` it sent (see
    /// [`Connections::request`]).
    fn answer(&mut self, conn: usize, words: &[Vec<u8>]) -> Vec<Value> {
        let command = words.first().map(|w| w.to_ascii_uppercase());
        let opens_multi = command.as_deref() == Some(b"MULTI");
        let mut frames = if self.in_multi[conn] || opens_multi {
            self.read_until(conn, |frame| !matches!(frame, Value::Push(_)))
        } else {
            Vec::new()
        };
        match command.as_deref() {
            Some(b"MULTI") if frames.last() == Some(&Value::Simple("OK".into())) => {
                self.in_multi[conn] = true
            }
            // `EXEC x` is a wrong arity, queued as an error: the transaction goes on.
            Some(b"EXEC" | b"DISCARD" | b"RESET") if words.len() == 1 => self.in_multi[conn] = false,
            _ => {}
        }
        if !self.in_multi[conn] {
            frames.extend(self.sync(conn));
        }
        frames
    }

    /// Sends the blocking `pop` on `waiter`, waits until the server has blocked it (or
    /// answered it at once), sends `push` on `pusher`; returns the pusher's frames, then
    /// the waiter's.
    fn blocked_pop(&mut self, waiter: usize, pop: &[Vec<u8>], pusher: usize, push: &[Vec<u8>]) -> Vec<Value> {
        self.clients[waiter].send(&encode(pop));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.clients[waiter].has_pending_reply()
            && self.blocked_clients() == 0
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut frames = self.request(pusher, push, &encode(push));
        frames.extend(self.answer(waiter, pop));
        frames
    }

    /// INFO's `blocked_clients`: how many connections wait in a blocking command.
    fn blocked_clients(&mut self) -> u64 {
        let info = self.observer.request(&[b"INFO".to_vec(), b"clients".to_vec()]);
        let Value::Bulk(info) = info else {
            panic!("INFO clients answered {info:?}")
        };
        info.lines()
            .find_map(|line| line.strip_prefix("blocked_clients:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("INFO clients has no blocked_clients: {info}"))
    }

    /// Sends `PING <marker>` on `conn` and returns the frames read before its answer (all
    /// of them, and the last, when the connection closed or went silent instead).
    fn sync(&mut self, conn: usize) -> Vec<Value> {
        self.clients[conn].send(&encode(&[b"PING".to_vec(), SYNC_MARKER.into()]));
        let mut frames = self.read_until(conn, is_sync_answer);
        if frames.last().is_some_and(is_sync_answer) {
            frames.pop();
        }
        frames
    }

    /// What connection `conn` received since its last step (pub/sub messages), up to the
    /// closing `PING`'s answer; nothing for a connection inside MULTI.
    fn pending(&mut self, conn: usize) -> Vec<Value> {
        if self.in_multi[conn] {
            return Vec::new();
        }
        self.sync(conn)
    }

    /// Frames read on `conn` until one that `ends` (included), the connection closes or no
    /// reply comes.
    fn read_until(&mut self, conn: usize, ends: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let frame = without_clock(without_client_id(self.clients[conn].read()));
            let last = ends(&frame) || matches!(frame, Value::Closed | Value::NoReply);
            frames.push(frame);
            if last {
                return frames;
            }
        }
    }
}

/// Whether two servers' frames of one step agree: the first (the reply) as `check` says,
/// the rest (further confirmations, messages) exactly. A read that timed out is never
/// agreement, even on both: every step is answered at once or the sync is wrong.
fn frames_agree(real: &[Value], fake: &[Value], check: Check) -> bool {
    if real.contains(&Value::NoReply) || fake.contains(&Value::NoReply) {
        return false;
    }
    let (real, fake) = (in_dict_order_sorted(real), in_dict_order_sorted(fake));
    match (real.split_first(), fake.split_first()) {
        (Some((real_reply, real_rest)), Some((fake_reply, fake_rest))) => {
            agree(real_reply, fake_reply, check) && real_rest == fake_rest
        }
        _ => real == fake,
    }
}

/// Runs one sequence on both servers; `Err` shows every step with every connection's frames
/// on both.
fn run_case(steps: &[Step], real: &RedisServer, fake: &FakeServer) -> Result<(), String> {
    let mut real = Connections::open(real.addr);
    let mut fake = Connections::open(fake.addr);
    // Each case starts from empty servers (the Lua random state stays in step: both saw the
    // same scripts).
    for client in [&mut real.clients[0], &mut fake.clients[0]] {
        client.request(&[b"FLUSHALL".to_vec()]);
        client.request(&[b"SCRIPT".to_vec(), b"FLUSH".to_vec()]);
    }
    let mut transcript = Vec::new();
    let mut failed = false;
    let touch_every_key = |conn| Step::Request {
        conn,
        words: std::iter::once("EXISTS").chain(KEYS).map(text).collect(),
        inline: false,
        check: Check::Exact,
    };
    let steps = steps.iter().flat_map(|step| match step {
        Step::Request {
            conn,
            check: Check::KeyCount,
            ..
        } => vec![touch_every_key(*conn), step.clone()],
        _ => vec![step.clone()],
    });
    for step in steps {
        let (real_frames, fake_frames, mut ok) = match &step {
            Step::Request {
                conn,
                words,
                inline,
                check,
            } => {
                let words: Vec<Vec<u8>> = words.iter().map(Word::bytes).collect();
                let bytes = request_bytes(&words, *inline);
                let real_frames = real.request(*conn, &words, &bytes);
                let fake_frames = fake.request(*conn, &words, &bytes);
                let ok = frames_agree(&real_frames, &fake_frames, *check);
                (real_frames, fake_frames, ok)
            }
            Step::BlockedPop {
                waiter,
                pop,
                pusher,
                push,
            } => {
                let pop: Vec<Vec<u8>> = pop.iter().map(Word::bytes).collect();
                let push: Vec<Vec<u8>> = push.iter().map(Word::bytes).collect();
                let real_frames = real.blocked_pop(*waiter, &pop, *pusher, &push);
                let fake_frames = fake.blocked_pop(*waiter, &pop, *pusher, &push);
                let ok = frames_agree(&real_frames, &fake_frames, Check::Exact);
                (real_frames, fake_frames, ok)
            }
            Step::Last(bytes) => {
                real.clients[0].send(bytes);
                fake.clients[0].send(bytes);
                let (real_reply, fake_reply) = (real.clients[0].read(), fake.clients[0].read());
                let ok =
                    real_reply == fake_reply && real.clients[0].is_closed() && fake.clients[0].is_closed();
                (vec![real_reply], vec![fake_reply], ok)
            }
        };
        transcript.push(format!(
            "{} {step}\n      redis-server: {real_frames:?}\n      fake node:    {fake_frames:?}",
            if ok { "  " } else { "!!" }
        ));
        if ok && !matches!(step, Step::Last(_)) {
            for conn in 0..CONNECTIONS {
                let (real_pushes, fake_pushes) = (real.pending(conn), fake.pending(conn));
                if real_pushes.is_empty() && fake_pushes.is_empty() {
                    continue;
                }
                let same = frames_agree(&real_pushes, &fake_pushes, Check::Exact);
                transcript.push(format!(
                    "{}   c{conn} received\n      redis-server: {real_pushes:?}\n      fake node:    {fake_pushes:?}",
                    if same { "  " } else { "!!" }
                ));
                ok &= same;
            }
        }
        if !ok {
            failed = true;
            break;
        }
    }
    if failed {
        return Err(format!("replies differ:\n{}", transcript.join("\n")));
    }
    Ok(())
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn the_fake_node_answers_as_redis_server_7_0_does() {
    let cases = env_or("LOCKSIM_DIFF_CASES", DEFAULT_CASES);
    let seed = env_or("LOCKSIM_DIFF_SEED", DEFAULT_SEED);
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_iters: 200,
        ..Config::default()
    });
    let started = Instant::now();
    let (runs, steps) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let result = runner.run(&sequence(), |case| {
        runs.set(runs.get() + 1);
        steps.set(steps.get() + case.len());
        run_case(&case, &real, &fake).map_err(TestCaseError::fail)
    });
    eprintln!(
        "differential: {runs} sequences of {cases} ({steps} steps, shrinking included), seed {seed}, in {:.1} s",
        started.elapsed().as_secs_f64(),
        runs = runs.get(),
        steps = steps.get()
    );
    if let Err(error) = result {
        panic!("{error}");
    }
}

/// Minimal sequences the generator shrank a mismatch to, each fixed in the fake node since:
/// requests on one connection, words split at spaces.
const FOUND: &[&[&str]] = &[
    // A master no replica ever attached to has no backlog: writes leave ROLE's offset 0.
    &["SET k1 v", "ROLE"],
    // LINDEX looks the key up before it reads the index: nil for a missing key.
    &["LINDEX k1 x", "RPUSH l a", "LINDEX l x", "LINDEX l -1"],
    // A timeout under a millisecond rounds up and times out, instead of blocking forever.
    &["BLPOP l 0.0001", "BRPOP l k1 0.0001"],
    // A command's own count check past its arity runs at EXEC: queued, as Redis queues it.
    &[
        "MULTI",
        "PING a b",
        "LPOP l 1 2",
        "HSET h f v g",
        "MSET k1 v k2",
        "EXEC",
    ],
];

#[test]
fn the_mismatches_the_generator_found_stay_fixed() {
    let real = RedisServer::start(&[]);
    let fake = FakeServer::start();
    for requests in FOUND {
        for resp3 in [false, true] {
            let hello = resp3.then_some("HELLO 3");
            let steps: Vec<Step> = hello
                .iter()
                .chain(requests.iter())
                .map(|request| Step::Request {
                    conn: 0,
                    words: request.split(' ').map(text).collect(),
                    inline: false,
                    check: Check::Exact,
                })
                .collect();
            if let Err(error) = run_case(&steps, &real, &fake) {
                panic!("{error}");
            }
        }
    }
}
