//! The fake node never panics on any input, and keeps answering.
//!
//! 100,000 inputs (`LOCKSIM_FUZZ_INPUTS` to change), each on a connection of its own over an
//! in-memory stream to one node: a third random bytes drawn from RESP's alphabet, two thirds
//! valid requests (multibulk and inline, scripts included) mutated by flipping, inserting,
//! deleting, duplicating and splicing bytes and by replacing numbers with edge values. The
//! generator is seeded (`LOCKSIM_FUZZ_SEED` to change), so a failure replays. After every input the node must still be
//! serving, and every 1,000 inputs a new connection must get PONG.

use std::io;
use std::time::{Duration, Instant};

use locksim::platform::Listener;
use locksim::real::HostClock;
use locksim::redis::server;
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::{Mutex, mpsc};

const DEFAULT_INPUTS: u64 = 100_000;
const DEFAULT_SEED: u64 = 11;
const PING_EVERY: u64 = 1_000;
/// An input that blocks the connection (WAIT for replicas that do not exist) is abandoned
/// after this long; the node must go on serving others.
const REPLY_WAIT: Duration = Duration::from_millis(300);

/// Hands the node in-memory streams as if they were accepted connections.
struct ChannelListener(Mutex<mpsc::UnboundedReceiver<DuplexStream>>);

impl Listener for ChannelListener {
    type Stream = DuplexStream;

    /// An in-memory stream has no peer: each comes from one made-up address.
    async fn accept(&self) -> io::Result<(DuplexStream, std::net::SocketAddr)> {
        let stream = self.0.lock().await.recv().await;
        let peer = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
        stream
            .map(|stream| (stream, peer))
            .ok_or_else(|| io::Error::other("no more connections"))
    }
}

fn multibulk(words: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for word in words {
        out.extend(format!("${}\r\n", word.len()).as_bytes());
        out.extend(*word);
        out.extend(b"\r\n");
    }
    out
}

/// Valid requests to mutate: every command the node knows, some with options and scripts.
fn corpus() -> Vec<Vec<u8>> {
    let requests: &[&[&[u8]]] = &[
        &[b"PING"],
        &[b"PING", b"hi"],
        &[b"ECHO", b"x"],
        &[b"HELLO", b"3"],
        &[b"HELLO", b"2", b"SETNAME", b"fuzz", b"AUTH", b"default", b"pw"],
        &[b"SELECT", b"0"],
        &[b"CLIENT", b"SETNAME", b"n"],
        &[b"CLIENT", b"GETNAME"],
        &[b"CLIENT", b"ID"],
        &[b"SET", b"lock", b"token", b"NX", b"PX", b"30000"],
        &[b"SET", b"k", b"v", b"XX", b"EXAT", b"99999999999", b"KEEPTTL"],
        &[b"GET", b"lock"],
        &[b"SETNX", b"k", b"1"],
        &[b"INCR", b"n"],
        &[b"INCRBY", b"n", b"-9223372036854775808"],
        &[b"DEL", b"lock", b"k"],
        &[b"EXISTS", b"lock", b"k"],
        &[b"TYPE", b"k"],
        &[b"TTL", b"lock"],
        &[b"PTTL", b"lock"],
        &[b"PERSIST", b"lock"],
        &[b"EXPIRE", b"lock", b"10", b"NX"],
        &[b"PEXPIRE", b"lock", b"10000", b"GT", b"XX"],
        &[b"EXPIREAT", b"lock", b"1"],
        &[b"PEXPIREAT", b"lock", b"9223372036854775807", b"LT"],
        &[b"DBSIZE"],
        &[b"FLUSHALL", b"ASYNC"],
        &[b"WAIT", b"0", b"0"],
        &[
            b"EVAL",
            br#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#,
            b"1",
            b"lock",
            b"token",
        ],
        &[b"EVAL", b"return {1,{2,'x',{ok='s'}},true,false,redis.pcall('incr',KEYS[1])}", b"1", b"k"],
        &[b"EVAL", b"error({err='X y'})", b"0"],
        &[b"EVAL", b"return redis.call(ARGV[1], KEYS[1])", b"1", b"k", b"get"],
        &[b"EVALSHA", b"b70c2384248f88e6b75b9f89241a180f856ad852", b"1", b"lock", b"t"],
        &[b"SCRIPT", b"LOAD", b"return math.random(10)"],
        &[b"SCRIPT", b"EXISTS", b"b70c2384248f88e6b75b9f89241a180f856ad852"],
        &[b"SCRIPT", b"FLUSH"],
        &[b"QUIT"],
    ];
    let mut corpus: Vec<Vec<u8>> = requests.iter().map(|words| multibulk(words)).collect();
    corpus.extend(
        [
            "PING\r\n",
            "set k \"a\\x41\\n\" px 100\r\n",
            "get 'k'\r\n",
            "eval \"return redis.call('incr', KEYS[1])\" 1 n\n",
            "hello 3\r\n",
        ]
        .map(|line| line.as_bytes().to_vec()),
    );
    corpus
}

/// Bytes RESP and the commands are made of, drawn more often than others.
const ALPHABET: &[u8] = b"*$:+-_%=\r\n\r\n0123456789-  \"'\\xPINGSETEVALKEYSARGV{}()";

fn random_bytes(rng: &mut impl Rng) -> Vec<u8> {
    let len = rng.random_range(0..64);
    (0..len)
        .map(|_| {
            if rng.random_bool(0.8) {
                ALPHABET[rng.random_range(0..ALPHABET.len())]
            } else {
                rng.random()
            }
        })
        .collect()
}

/// Numbers worth putting into headers and arguments.
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "-2147483648",
    "2147483647",
    "2147483648",
    "536870912",
    "536870913",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999",
    "00",
    "+1",
    "",
];

fn mutate(rng: &mut impl Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut input = corpus[rng.random_range(0..corpus.len())].clone();
    for _ in 0..rng.random_range(1..4) {
        let len = input.len();
        let at = rng.random_range(0..=len);
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                input[i] ^= 1 << rng.random_range(0..8);
            }
            1 => input.splice(at..at, random_bytes(rng)).for_each(drop),
            2 => {
                let end = rng.random_range(at..=len);
                input.drain(at..end);
            }
            3 => {
                let end = rng.random_range(at..=len);
                let copy = input[at..end].to_vec();
                input.splice(end..end, copy).for_each(drop);
            }
            4 => {
                let other = &corpus[rng.random_range(0..corpus.len())];
                input.truncate(at);
                input.extend_from_slice(&other[rng.random_range(0..=other.len())..]);
            }
            5 => {
                // Replace the digits after a random position with an edge number.
                let start = (at..len).find(|&i| input[i].is_ascii_digit() || input[i] == b'-');
                if let Some(start) = start {
                    let end = (start + 1..len)
                        .find(|&i| !input[i].is_ascii_digit())
                        .unwrap_or(len);
                    let number = EDGE_NUMBERS[rng.random_range(0..EDGE_NUMBERS.len())];
                    input.splice(start..end, number.bytes()).for_each(drop);
                }
            }
            _ => input.truncate(at),
        }
    }
    input
}

/// Sends one input on a new connection, closes the sending side and reads what comes back.
async fn feed(connections: &mpsc::UnboundedSender<DuplexStream>, input: &[u8]) -> (Vec<u8>, bool) {
    let (mut client, node_side) = tokio::io::duplex(1 << 16);
    connections.send(node_side).expect("the node accepts connections");
    let exchange = async {
        let _ = client.write_all(input).await;
        let _ = client.shutdown().await;
        let mut replies = Vec::new();
        let _ = client.read_to_end(&mut replies).await;
        replies
    };
    match tokio::time::timeout(REPLY_WAIT, exchange).await {
        Ok(replies) => (replies, false),
        Err(_) => (Vec::new(), true),
    }
}

#[test]
fn the_node_survives_random_and_mutated_requests() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let inputs = env("LOCKSIM_FUZZ_INPUTS", DEFAULT_INPUTS);
    let seed = env("LOCKSIM_FUZZ_SEED", DEFAULT_SEED);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let (sender, receiver) = mpsc::unbounded_channel();
    let listener = ChannelListener(Mutex::new(receiver));
    let (blocked, protocol_errors, answered) = runtime.block_on(async {
        let node = server::serve(listener, HostClock::new());
        let fuzz = async {
            let corpus = corpus();
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let (mut blocked, mut protocol_errors, mut answered) = (0, 0, 0);
            for i in 0..inputs {
                let input = if rng.random_bool(1.0 / 3.0) {
                    random_bytes(&mut rng)
                } else {
                    mutate(&mut rng, &corpus)
                };
                let (replies, timed_out) = feed(&sender, &input).await;
                blocked += timed_out as u64;
                answered += !replies.is_empty() as u64;
                protocol_errors += replies.windows(20).any(|w| w == b"-ERR Protocol error:") as u64;
                if (i + 1) % PING_EVERY == 0 {
                    let (pong, _) = feed(&sender, b"*1\r\n$4\r\nPING\r\n").await;
                    assert_eq!(
                        pong,
                        b"+PONG\r\n",
                        "after input {i}: {:?}",
                        String::from_utf8_lossy(&input)
                    );
                }
            }
            (blocked, protocol_errors, answered)
        };
        tokio::select! {
            biased;
            result = node => panic!("the node stopped serving: {result:?}"),
            counts = fuzz => counts,
        }
    });
    eprintln!(
        "fuzz: {inputs} inputs (seed {seed}), {answered} answered, {protocol_errors} with a protocol error, \
         {blocked} still blocked after {REPLY_WAIT:?}, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        protocol_errors > 0,
        "the generator must reach the protocol errors"
    );
    assert!(answered > inputs / 2, "most inputs must reach a command");
}
