//! The simulator's hot paths, one divan benchmark each: RESP decoding and encoding, command
//! dispatch on a fake node, a Lua script call, the clock model, the checkers over a long
//! history, and one whole seed of each reference workload.
//!
//! `cargo bench` (the `--cfg madsim` of .cargo/config.toml applies; a RUSTFLAGS variable
//! must repeat it). `locksim bench` measures whole sweeps; this measures the parts.

use std::hint::black_box;
use std::path::Path;
use std::sync::{Arc, LazyLock};

use divan::Bencher;
use locksim::check::{self, check_all};
use locksim::client::scripts;
use locksim::history::History;
use locksim::redis::Frame;
use locksim::redis::cmd::Writes;
use locksim::redis::cmd::{Command, Session};
use locksim::redis::connection::{Protocol, Reply};
use locksim::redis::node::Node;
use locksim::redis::request::{self, Parsed};
use locksim::scenario::{self, Scenario};
use locksim::sweep::run_seed;
use locksim::world::clock::ClockModel;

fn main() {
    divan::main();
}

const KEY: &[u8] = b"locksim:lock";
const TOKEN: &[u8] = b"73320328a1b2c3d4e5f60718";
const NOW_MS: u64 = 1_704_067_200_000;

/// The bytes of `SET locksim:lock <token> NX PX 2000`, as a client sends them.
fn set_request() -> Vec<u8> {
    let words: [&[u8]; 6] = [b"SET", KEY, TOKEN, b"NX", b"PX", b"2000"];
    let mut bytes = format!("*{}\r\n", words.len()).into_bytes();
    for word in words {
        bytes.extend(format!("${}\r\n", word.len()).as_bytes());
        bytes.extend(word);
        bytes.extend(b"\r\n");
    }
    bytes
}

fn words(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|part| part.to_vec()).collect()
}

#[divan::bench]
fn resp_decode_set_request(bencher: Bencher) {
    let bytes = set_request();
    bencher.bench(|| match request::parse(black_box(&bytes)) {
        Ok(Parsed::Request { words, .. }) => words,
        other => panic!("not a request: {other:?}"),
    });
}

#[divan::bench(args = [Protocol::Resp2, Protocol::Resp3])]
fn resp_encode_bulk_reply(bencher: Bencher, protocol: Protocol) {
    let reply = Reply::from(Frame::BulkString(TOKEN.to_vec()));
    bencher.bench(|| black_box(&reply).encode(protocol));
}

/// SET NX PX, GET and DEL of the lock key, parsed and applied to a node: what one
/// acquire, check and release cost the node.
#[divan::bench]
fn dispatch_set_get_del(bencher: Bencher) {
    let mut node = Node::new().expect("node starts");
    let mut session = Session::default();
    let requests = [
        words(&[b"SET", KEY, TOKEN, b"NX", b"PX", b"2000"]),
        words(&[b"GET", KEY]),
        words(&[b"DEL", KEY]),
    ];
    bencher.bench_local(|| {
        for request in &requests {
            let command = Command::from_words(request.clone(), Writes::Taken).expect("valid command");
            black_box(command.apply(&mut node, &mut session, NOW_MS));
            node.propagate(NOW_MS);
        }
    });
}

/// The compare-and-delete release script, cached, run by EVALSHA against a key holding its
/// token.
#[divan::bench]
fn lua_release_script(bencher: Bencher) {
    let mut node = Node::new().expect("node starts");
    let sha = node
        .scripts
        .load(scripts::RELEASE.as_bytes())
        .expect("script compiles");
    bencher.bench_local(|| {
        let set = Command::from_words(words(&[b"SET", KEY, TOKEN]), Writes::Taken).expect("valid command");
        set.apply(&mut node, &mut Session::default(), NOW_MS);
        let release = Command::from_words(
            words(&[b"EVALSHA", sha.as_bytes(), b"1", KEY, TOKEN]),
            Writes::Taken,
        )
        .expect("valid command");
        black_box(release.apply(&mut node, &mut Session::default(), NOW_MS))
    });
}

/// A fresh node: its keyspace and Lua interpreter (a cost every node of every seed pays).
#[divan::bench]
fn node_new() -> Node {
    Node::new().expect("node starts")
}

#[divan::bench]
fn clock_model_readings(bencher: Bencher) {
    let mut model = ClockModel::new(-250_000_000, 150);
    model.jump(1_000_000_000);
    bencher.bench(|| {
        let model = black_box(model);
        let mono = model.monotonic_ns(black_box(42_000_000_000));
        (
            mono,
            model.wall_ns(42_000_000_000),
            model.true_ns_for_monotonic(mono + 2_000_000_000),
        )
    });
}

fn load(file: &str) -> Scenario {
    scenario::load(Path::new(file)).expect("the bench scenario loads")
}

/// Seed 0 of the Redlock reference workload run for 10 simulated minutes: a long history.
static LONG_HISTORY: LazyLock<(History, check::CheckSettings)> = LazyLock::new(|| {
    let mut scenario = load("scenarios/bench/redlock-5.json");
    scenario.duration_ms = 600_000;
    let settings = scenario.check_settings();
    let history = run_seed(&Arc::new(scenario), 0).expect("the run succeeds");
    (history, settings)
});

#[divan::bench]
fn checkers_over_a_long_history(bencher: Bencher) {
    let (history, settings) = &*LONG_HISTORY;
    bencher
        .counter(divan::counter::ItemsCount::new(history.events.len()))
        .bench(|| check_all(black_box(history), settings));
}

#[divan::bench]
fn digest_of_a_long_history(bencher: Bencher) {
    let (history, _) = &*LONG_HISTORY;
    bencher
        .counter(divan::counter::ItemsCount::new(history.events.len()))
        .bench(|| black_box(history).digest());
}

/// One whole seed (60 simulated s) of each reference workload, on a fresh thread as a
/// sweep runs it.
#[divan::bench(args = ["scenarios/bench/single-node.json", "scenarios/bench/redlock-5.json"], sample_count = 10, sample_size = 1)]
fn one_seed(bencher: Bencher, file: &str) {
    let scenario = Arc::new(load(file));
    let mut seed = 0;
    bencher.bench_local(|| {
        seed += 1;
        run_seed(&scenario, seed).expect("the run succeeds")
    });
}
