//! Requests parsed and run on a keyspace, each expected reply as redis-server 7.0 gives it.

use super::*;
use crate::redis::request::build as request;

fn run(db: &mut Db, now_ms: u64, words: &[&str]) -> Frame {
    let frame = request(words.iter().map(|w| w.as_bytes().to_vec()));
    match Command::from_frame(frame) {
        Ok(cmd) => cmd.apply_to_db(db, now_ms).into_resp2(),
        Err(ParseError::Reply(e)) => e.into(),
        Err(ParseError::Protocol(p)) => panic!("protocol error {p}"),
    }
}
fn err(text: &str) -> Frame {
    Frame::Error(text.into())
}

#[test]
fn set_nx_px_grants_once_until_expiry() {
    let mut db = Db::default();
    assert_eq!(run(&mut db, 0, &["SET", "lock", "a", "NX", "PX", "2000"]), ok());
    assert_eq!(
        run(&mut db, 1999, &["set", "lock", "b", "nx", "px", "2000"]),
        Frame::Null
    );
    assert_eq!(run(&mut db, 1999, &["PTTL", "lock"]), Frame::Integer(1));
    // At the expiry millisecond the key still lives (Redis: expired when now > when).
    assert_eq!(
        run(&mut db, 2000, &["SET", "lock", "b", "NX", "PX", "2000"]),
        Frame::Null
    );
    assert_eq!(
        run(&mut db, 2001, &["SET", "lock", "b", "NX", "PX", "2000"]),
        ok()
    );
    assert_eq!(
        run(&mut db, 2001, &["GET", "lock"]),
        Frame::BulkString(b"b".to_vec())
    );
}

#[test]
fn set_options_follow_redis() {
    let mut db = Db::default();
    assert_eq!(run(&mut db, 0, &["SET", "k", "v", "XX"]), Frame::Null);
    assert_eq!(
        run(&mut db, 0, &["SET", "k", "v", "NX", "XX"]),
        err("ERR syntax error")
    );
    assert_eq!(run(&mut db, 0, &["SET", "k", "v", "PX"]), err("ERR syntax error"));
    assert_eq!(
        run(&mut db, 0, &["SET", "k", "v", "EX", "1", "PX", "5"]),
        err("ERR syntax error")
    );
    assert_eq!(
        run(&mut db, 0, &["SET", "k", "v", "PX", "0"]),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(
        run(&mut db, 0, &["SET", "k", "v", "PX", "ten"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(run(&mut db, 0, &["SET", "k", "v", "EX", "3"]), ok());
    assert_eq!(run(&mut db, 500, &["PTTL", "k"]), Frame::Integer(2500));
    assert_eq!(run(&mut db, 500, &["SET", "k", "w", "KEEPTTL"]), ok());
    assert_eq!(run(&mut db, 500, &["PTTL", "k"]), Frame::Integer(2500));
    assert_eq!(run(&mut db, 500, &["SET", "k", "w", "PXAT", "9000"]), ok());
    assert_eq!(run(&mut db, 1000, &["PTTL", "k"]), Frame::Integer(8000));
}

#[test]
fn keys_commands_follow_redis() {
    let mut db = Db::default();
    assert_eq!(run(&mut db, 0, &["PTTL", "k"]), Frame::Integer(-2));
    run(&mut db, 0, &["SET", "k", "v"]);
    assert_eq!(run(&mut db, 0, &["PTTL", "k"]), Frame::Integer(-1));
    assert_eq!(run(&mut db, 0, &["PEXPIRE", "k", "100"]), Frame::Integer(1));
    assert_eq!(run(&mut db, 40, &["PTTL", "k"]), Frame::Integer(60));
    assert_eq!(run(&mut db, 40, &["PEXPIRE", "nope", "100"]), Frame::Integer(0));
    assert_eq!(run(&mut db, 40, &["PEXPIRE", "k", "-5"]), Frame::Integer(1));
    assert_eq!(run(&mut db, 40, &["GET", "k"]), Frame::Null);
    run(&mut db, 0, &["SET", "a", "1"]);
    run(&mut db, 0, &["SET", "b", "1"]);
    assert_eq!(run(&mut db, 0, &["DEL", "a", "b", "c"]), Frame::Integer(2));
}

#[test]
fn setnx_expire_and_incr_follow_redis() {
    let mut db = Db::default();
    assert_eq!(run(&mut db, 0, &["SETNX", "k", "a"]), Frame::Integer(1));
    assert_eq!(run(&mut db, 0, &["SETNX", "k", "b"]), Frame::Integer(0));
    assert_eq!(
        run(&mut db, 0, &["PTTL", "k"]),
        Frame::Integer(-1),
        "SETNX sets no TTL"
    );
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "10"]), Frame::Integer(1));
    assert_eq!(run(&mut db, 0, &["PTTL", "k"]), Frame::Integer(10_000));
    assert_eq!(
        run(&mut db, 0, &["INCR", "k"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(run(&mut db, 0, &["INCR", "n"]), Frame::Integer(1));
    assert_eq!(run(&mut db, 0, &["INCR", "n"]), Frame::Integer(2));
    assert_eq!(run(&mut db, 0, &["SET", "m", "9223372036854775807"]), ok());
    assert_eq!(
        run(&mut db, 0, &["INCR", "m"]),
        err("ERR increment or decrement would overflow")
    );
}

#[test]
fn arity_and_unknown_commands_are_worded_as_redis() {
    let mut db = Db::default();
    assert_eq!(
        run(&mut db, 0, &["GET"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        run(&mut db, 0, &["get", "a", "b"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        run(&mut db, 0, &["FOO", "a", "b"]),
        err("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ")
    );
    assert_eq!(run(&mut db, 0, &["PING"]), Frame::SimpleString(b"PONG".to_vec()));
    assert_eq!(
        run(&mut db, 0, &["PING", "hi"]),
        Frame::BulkString(b"hi".to_vec())
    );
}

// Expected replies below were read from redis-server 7.0.15 for the same requests.
#[test]
fn key_commands_follow_redis() {
    let mut db = Db::default();
    let int = Frame::Integer;
    run(&mut db, 0, &["SET", "k", "v"]);
    assert_eq!(run(&mut db, 0, &["EXISTS", "k", "k", "nokey"]), int(2));
    assert_eq!(
        run(&mut db, 0, &["TYPE", "k"]),
        Frame::SimpleString(b"string".to_vec())
    );
    assert_eq!(
        run(&mut db, 0, &["TYPE", "nokey"]),
        Frame::SimpleString(b"none".to_vec())
    );
    assert_eq!(run(&mut db, 0, &["PERSIST", "k"]), int(0));
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100"]), int(1));
    assert_eq!(run(&mut db, 0, &["TTL", "k"]), int(100));
    assert_eq!(run(&mut db, 0, &["PERSIST", "k"]), int(1));
    assert_eq!(run(&mut db, 0, &["TTL", "k"]), int(-1));
    assert_eq!(run(&mut db, 0, &["TTL", "nokey"]), int(-2));
    run(&mut db, 0, &["PEXPIRE", "k", "1499"]);
    assert_eq!(
        run(&mut db, 0, &["TTL", "k"]),
        int(1),
        "TTL rounds to the nearest second"
    );
    run(&mut db, 0, &["PEXPIRE", "k", "499"]);
    assert_eq!(run(&mut db, 0, &["TTL", "k"]), int(0));
    assert_eq!(run(&mut db, 0, &["DBSIZE"]), int(1));
    assert_eq!(run(&mut db, 0, &["FLUSHALL", "x"]), err("ERR syntax error"));
    assert_eq!(run(&mut db, 0, &["FLUSHALL", "async"]), ok());
    assert_eq!(run(&mut db, 0, &["DBSIZE"]), int(0));
    assert_eq!(run(&mut db, 0, &["ECHO", "a"]), Frame::BulkString(b"a".to_vec()));
    assert_eq!(run(&mut db, 0, &["SELECT", "0"]), ok());
    assert_eq!(
        run(&mut db, 0, &["SELECT", "16"]),
        err("ERR DB index is out of range")
    );
}

#[test]
fn expire_options_follow_redis() {
    let mut db = Db::default();
    let int = Frame::Integer;
    run(&mut db, 0, &["SET", "k", "v"]);
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100", "NX"]), int(1));
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100", "NX"]), int(0));
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "200", "XX"]), int(1));
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100", "GT"]), int(0));
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "300", "gt"]), int(1));
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "400", "LT"]), int(0));
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "200", "LT"]), int(1));
    assert_eq!(run(&mut db, 0, &["EXPIRE", "k", "100", "XX", "GT"]), int(0));
    assert_eq!(
        run(&mut db, 0, &["EXPIRE", "k", "100", "NX", "XX"]),
        err("ERR NX and XX, GT or LT options at the same time are not compatible")
    );
    assert_eq!(
        run(&mut db, 0, &["EXPIRE", "k", "100", "GT", "LT"]),
        err("ERR GT and LT options at the same time are not compatible")
    );
    assert_eq!(
        run(&mut db, 0, &["EXPIRE", "k", "x", "bogus"]),
        err("ERR Unsupported option bogus")
    );
    run(&mut db, 0, &["SET", "p", "v"]);
    assert_eq!(
        run(&mut db, 0, &["EXPIRE", "p", "100", "GT"]),
        int(0),
        "no TTL is infinite"
    );
    assert_eq!(run(&mut db, 0, &["EXPIRE", "p", "100", "LT"]), int(1));
    assert_eq!(
        run(&mut db, 0, &["EXPIRE", "k", "92233720368547758"]),
        err("ERR invalid expire time in 'expire' command")
    );
    assert_eq!(
        run(&mut db, 0, &["PEXPIREAT", "k", "9223372036854775807"]),
        int(1)
    );
    assert_eq!(run(&mut db, 5, &["PEXPIREAT", "k", "1"]), int(1));
    assert_eq!(
        run(&mut db, 5, &["EXISTS", "k"]),
        int(0),
        "a past time deletes the key"
    );
    run(&mut db, 0, &["SET", "k", "v"]);
    assert_eq!(run(&mut db, 0, &["EXPIREAT", "k", "3"]), int(1));
    assert_eq!(run(&mut db, 1000, &["PTTL", "k"]), int(2000));
}

#[test]
fn incrby_follows_redis() {
    let mut db = Db::default();
    assert_eq!(run(&mut db, 0, &["INCRBY", "n", "5"]), Frame::Integer(5));
    assert_eq!(
        run(&mut db, 0, &["INCRBY", "n", "9223372036854775807"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(
        run(&mut db, 0, &["INCRBY", "n", "x"]),
        err("ERR value is not an integer or out of range")
    );
    for stored in [" 1", "01", "-0", "1.0", "+1"] {
        run(&mut db, 0, &["SET", "s", stored]);
        assert_eq!(
            run(&mut db, 0, &["INCR", "s"]),
            err("ERR value is not an integer or out of range"),
            "{stored}"
        );
    }
}

#[test]
fn client_frames_parse_back_to_the_same_command() {
    let expire = |kind, time| {
        Command::Expire(ExpireRequest {
            kind,
            key: b"k".to_vec(),
            time,
            flags: ExpireFlags::default(),
        })
    };
    let wait = Wait {
        replicas: 1,
        timeout_ms: 100,
    };
    let cases = [
        (
            Get { key: b"k".to_vec() }.into_frame(),
            Command::Get(Get { key: b"k".to_vec() }),
        ),
        (
            Setnx {
                key: b"k".to_vec(),
                value: b"v".to_vec(),
            }
            .into_frame(),
            Command::Setnx(Setnx {
                key: b"k".to_vec(),
                value: b"v".to_vec(),
            }),
        ),
        (
            Incr { key: b"k".to_vec() }.into_frame(),
            Command::Incr(Incr { key: b"k".to_vec() }),
        ),
        (
            Del {
                keys: vec![b"a".to_vec(), b"b".to_vec()],
            }
            .into_frame(),
            Command::Del(Del {
                keys: vec![b"a".to_vec(), b"b".to_vec()],
            }),
        ),
        (
            Pttl { key: b"k".to_vec() }.into_frame(),
            Command::Pttl(Pttl { key: b"k".to_vec() }),
        ),
        (
            Expire {
                key: b"k".to_vec(),
                seconds: 10,
            }
            .into_frame(),
            expire(ExpireKind::Expire, 10),
        ),
        (
            Pexpire {
                key: b"k".to_vec(),
                ms: 10,
            }
            .into_frame(),
            expire(ExpireKind::Pexpire, 10),
        ),
        (wait.clone().into_frame(), Command::Wait(wait)),
    ];
    for (frame, command) in cases {
        assert_eq!(Command::from_frame(frame), Ok(command));
    }
}

#[test]
fn non_array_frames_are_protocol_errors() {
    assert!(matches!(
        Command::from_frame(Frame::Integer(3)),
        Err(ParseError::Protocol(_))
    ));
    assert!(matches!(
        Command::from_frame(Frame::Array(vec![Frame::Integer(3)])),
        Err(ParseError::Protocol(_))
    ));
}

#[test]
fn options_match_in_any_ascii_case_and_no_other_case_mapping() {
    let mut db = Db::default();
    assert_eq!(
        run(&mut db, 0, &["SET", "lock", "a", "nX", "Px", "2000", "gEt"]),
        Frame::Null
    );
    assert_eq!(run(&mut db, 0, &["PTTL", "lock"]), Frame::Integer(2000));
    assert_eq!(
        run(&mut db, 0, &["GETEX", "lock", "Persist"]),
        Frame::BulkString(b"a".to_vec())
    );
    assert_eq!(run(&mut db, 0, &["PTTL", "lock"]), Frame::Integer(-1));
    // Redis compares options with strcasecmp: "ſ" (U+017F), whose Unicode upper case is
    // "S", spells no option.
    assert_eq!(
        run(&mut db, 0, &["GETEX", "lock", "perſiſt"]),
        err("ERR syntax error")
    );
}
