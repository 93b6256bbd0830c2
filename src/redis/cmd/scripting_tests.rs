//! Unit tests of the scripting commands (`scripting.rs`) on a node, each reply read from
//! redis-server 7.0.15 for the same request.

use super::super::{Command, Session, run_for_script};
use super::*;
use crate::client::scripts;
use crate::redis::connection::Reply;
use crate::redis::lua::sha1_hex;

/// Runs one request on the node; every expected reply below was read from
/// redis-server 7.0.15 for the same request.
fn run(node: &mut Node, words: &[&str]) -> Frame {
    let words = words.iter().map(|w| w.as_bytes().to_vec()).collect();
    match Command::from_words(words, crate::redis::cmd::Writes::Taken) {
        Ok(command) => match command.apply(node, &mut Session::default(), 0) {
            Reply::Frame(frame) => frame,
            Reply::Counted(reply) => reply.into_resp2(),
            other => panic!("not a frame: {other:?}"),
        },
        Err(error) => error.into(),
    }
}

fn eval(node: &mut Node, script: &str) -> Frame {
    run(node, &["EVAL", script, "0"])
}

fn err(text: &str) -> Frame {
    Frame::Error(text.into())
}

/// The error of a failed script, with Redis's suffix naming the script and line.
fn script_err(script: &str, message: &str, line: usize) -> Frame {
    let sha = sha1_hex(script.as_bytes());
    err(&format!("{message} script: {sha}, on @user_script:{line}."))
}

fn bulk(text: &str) -> Frame {
    Frame::BulkString(text.as_bytes().to_vec())
}

#[test]
fn the_lock_release_script_deletes_only_our_token() {
    let mut node = Node::new().unwrap();
    node.db.set(b"lock".to_vec(), b"mine".to_vec(), Some(1000));
    let release = |token: &str| Eval {
        script: scripts::RELEASE.to_string(),
        keys: vec![b"lock".to_vec()],
        args: vec![token.as_bytes().to_vec()],
    };
    assert_eq!(
        release("theirs").apply(&mut node, 10, run_for_script),
        Frame::Integer(0)
    );
    assert_eq!(
        release("mine").apply(&mut node, 10, run_for_script),
        Frame::Integer(1)
    );
    assert!(node.db.is_empty());
    assert_eq!(
        release("mine").apply(&mut node, 10, run_for_script),
        Frame::Integer(0)
    );
}

#[test]
fn return_values_convert_as_redis_converts_them() {
    let mut node = Node::new().unwrap();
    assert_eq!(
        eval(&mut node, "return {1,2,nil,3}"),
        Frame::Array(vec![Frame::Integer(1), Frame::Integer(2)])
    );
    assert_eq!(
        eval(&mut node, "return {1,{2,'x',{ok='s'}},true,false}"),
        Frame::Array(vec![
            Frame::Integer(1),
            Frame::Array(vec![
                Frame::Integer(2),
                bulk("x"),
                Frame::SimpleString(b"s".to_vec())
            ]),
            Frame::Integer(1),
            Frame::Null,
        ])
    );
    assert_eq!(
        eval(&mut node, "return {1, {err='inner'}}"),
        Frame::Array(vec![Frame::Integer(1), err("inner")])
    );
    assert_eq!(
        eval(&mut node, "return {1.9, -1.9, 0.5}"),
        Frame::Array(vec![Frame::Integer(1), Frame::Integer(-1), Frame::Integer(0)])
    );
    assert_eq!(eval(&mut node, "return 1e20"), Frame::Integer(i64::MIN));
    assert_eq!(eval(&mut node, "return 0/0"), Frame::Integer(i64::MIN));
    assert_eq!(eval(&mut node, "return 2^53"), Frame::Integer(1 << 53));
    assert_eq!(eval(&mut node, "return"), Frame::Null);
    assert_eq!(eval(&mut node, "return 'x', 'y'"), bulk("x"));
    assert_eq!(eval(&mut node, "return {ok='a', err='b'}"), err("b"));
    assert_eq!(eval(&mut node, "return {ok=1}"), Frame::Array(vec![]));
    assert_eq!(eval(&mut node, "return function() end"), Frame::Null);
    assert_eq!(
        eval(&mut node, "return redis.status_reply('a\\r\\nb')"),
        Frame::SimpleString(b"a  b".to_vec())
    );
    assert_eq!(
        run(
            &mut node,
            &["EVAL", "return KEYS[1]..ARGV[1]..#ARGV", "1", "a", "b"]
        ),
        bulk("ab1")
    );
}

#[test]
fn redis_call_converts_replies_and_arguments() {
    let mut node = Node::new().unwrap();
    assert_eq!(
        eval(&mut node, "return redis.call('set','k','v')['ok']"),
        bulk("OK")
    );
    assert_eq!(
        eval(&mut node, "return type(redis.call('get','nokey'))"),
        bulk("boolean")
    );
    assert_eq!(
        eval(
            &mut node,
            "redis.call('set','n',3.7) return redis.call('get','n')"
        ),
        bulk("3.7000000000000002")
    );
    assert_eq!(
        eval(
            &mut node,
            "redis.call('set','n',1e20) return redis.call('get','n')"
        ),
        bulk("1e+20")
    );
    assert_eq!(
        eval(&mut node, "return redis.call('incr', 'n2')"),
        Frame::Integer(1)
    );
    assert_eq!(
        eval(&mut node, "return redis.sha1hex('')"),
        bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")
    );
}

#[test]
fn script_errors_are_worded_as_redis_words_them() {
    let mut node = Node::new().unwrap();
    let cases = [
        (
            "return redis.call('nosuch', 'a')",
            "ERR Unknown Redis command called from script",
        ),
        (
            "return redis.call('get')",
            "ERR Wrong number of args calling Redis command from script",
        ),
        (
            "return redis.call('eval', 'return 1', 0)",
            "ERR This Redis command is not allowed from script",
        ),
        (
            "return redis.call('wait', 0, 0)",
            "ERR This Redis command is not allowed from script",
        ),
        (
            "return redis.call()",
            "ERR Please specify at least one argument for this redis lib call",
        ),
        (
            "return redis.call('get', nil)",
            "ERR Lua redis lib command arguments must be strings or integers",
        ),
        (
            "return redis.call('SET','k','v','px','0')",
            "ERR invalid expire time in 'set' command",
        ),
        ("return redis.call('SET','k','v','bogus')", "ERR syntax error"),
        ("error('boom')", "ERR user_script:1: boom"),
        ("error('x', 0)", "ERR x"),
        ("error()", "ERR nil"),
        ("error({err='X y'})", "X y"),
        ("x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
        (
            "return x",
            "ERR user_script:1: Script attempted to access nonexistent global variable 'x'",
        ),
        (
            "return os",
            "ERR user_script:1: Script attempted to access nonexistent global variable 'os'",
        ),
        (
            "local ok,e = pcall(redis.call,'FOO') error(e, 0)",
            "ERR ERR Unknown Redis command called from script",
        ),
    ];
    for (script, message) in cases {
        assert_eq!(
            eval(&mut node, script),
            script_err(script, message, 1),
            "{script}"
        );
    }
    let two_lines = "\nreturn redis.call('get')";
    assert_eq!(
        eval(&mut node, two_lines),
        script_err(
            two_lines,
            "ERR Wrong number of args calling Redis command from script",
            2
        )
    );
}

#[test]
fn pcall_and_reply_helpers_return_errors_as_values() {
    let mut node = Node::new().unwrap();
    assert_eq!(
        eval(&mut node, "return redis.pcall('get')"),
        err("ERR Wrong number of args calling Redis command from script")
    );
    assert_eq!(
        eval(
            &mut node,
            "local ok, e = pcall(redis.call, 'get', 'a', 'b') return e"
        ),
        bulk("ERR Wrong number of args calling Redis command from script")
    );
    assert_eq!(
        eval(&mut node, "local ok,e = pcall(error,{err='X y'}) return type(e)"),
        bulk("string")
    );
    assert_eq!(
        eval(&mut node, "return redis.error_reply('boom')"),
        err("ERR boom")
    );
    assert_eq!(
        eval(&mut node, "return redis.error_reply('MY boom')"),
        err("MY boom")
    );
    assert_eq!(
        eval(&mut node, "return redis.error_reply('-X boom')"),
        err("X boom")
    );
    assert_eq!(eval(&mut node, "return redis.error_reply('')"), err("ERR "));
    assert_eq!(
        eval(&mut node, "return redis.error_reply(1)"),
        err("ERR wrong number or type of arguments")
    );
    assert_eq!(
        eval(&mut node, "return redis.status_reply('fine')"),
        Frame::SimpleString(b"fine".to_vec())
    );
}

#[test]
fn compile_errors_and_the_script_cache_follow_redis() {
    let mut node = Node::new().unwrap();
    assert_eq!(
        eval(&mut node, "syntax error here"),
        err("ERR Error compiling script (new function): user_script:1: '=' expected near 'error'")
    );
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    assert_eq!(
        run(&mut node, &["EVALSHA", sha, "0"]),
        err("NOSCRIPT No matching script. Please use EVAL.")
    );
    assert_eq!(run(&mut node, &["SCRIPT", "LOAD", "return 1"]), bulk(sha));
    assert_eq!(
        run(&mut node, &["EVALSHA", &sha.to_uppercase(), "0"]),
        Frame::Integer(1)
    );
    assert_eq!(
        run(&mut node, &["script", "exists", sha, "nope"]),
        Frame::Array(vec![Frame::Integer(1), Frame::Integer(0)])
    );
    assert_eq!(run(&mut node, &["SCRIPT", "FLUSH", "async"]), ok());
    assert_eq!(
        run(&mut node, &["SCRIPT", "EXISTS", sha]),
        Frame::Array(vec![Frame::Integer(0)])
    );
    assert_eq!(
        run(&mut node, &["SCRIPT", "FLUSH", "bogus"]),
        err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    );
    assert_eq!(
        run(&mut node, &["SCRIPT", "bogus"]),
        err("ERR unknown subcommand 'bogus'. Try SCRIPT HELP.")
    );
    assert_eq!(
        run(&mut node, &["SCRIPT", "LOAD"]),
        err("ERR wrong number of arguments for 'script|load' command")
    );
    // EVAL caches what it runs, so EVALSHA finds it afterwards.
    eval(&mut node, "return 2");
    assert_eq!(
        run(&mut node, &["EVALSHA", &sha1_hex(b"return 2"), "0"]),
        Frame::Integer(2)
    );
}

#[test]
fn math_random_draws_redis_sequence() {
    let mut node = Node::new().unwrap();
    // A fresh redis-server answers 40, then 85 and 36, then 0.44658343468168.
    assert_eq!(eval(&mut node, "return math.random(100)"), Frame::Integer(40));
    assert_eq!(
        eval(&mut node, "return {math.random(100),math.random(100)}"),
        Frame::Array(vec![Frame::Integer(85), Frame::Integer(36)])
    );
    assert_eq!(
        eval(&mut node, "return tostring(math.random())"),
        bulk("0.44658343468168")
    );
    assert_eq!(
        eval(&mut node, "math.randomseed(1) return math.random(1000)"),
        Frame::Integer(42)
    );
}

#[test]
fn a_runaway_script_is_stopped() {
    let mut node = Node::new().unwrap();
    let Frame::Error(message) = eval(&mut node, "while true do end") else {
        panic!("expected an error")
    };
    assert!(message.contains("locksim stopped the script"), "{message}");
    assert_eq!(
        eval(&mut node, "return 1"),
        Frame::Integer(1),
        "the node still runs scripts"
    );
}

/// A watcher that stops the script at its `stop_at`th look (none: never), and records
/// what it was told.
#[derive(Default)]
struct CountingWatcher {
    stop_at: Option<u32>,
    looks: std::cell::Cell<u32>,
    wrote: std::cell::Cell<bool>,
    busy_after_ms: std::cell::Cell<u64>,
}

impl crate::redis::lua::Watcher for CountingWatcher {
    fn script_started(&self, busy_after_ms: u64) {
        self.looks.set(0);
        self.busy_after_ms.set(busy_after_ms);
    }

    fn script_running(&self, wrote: bool) -> bool {
        self.looks.set(self.looks.get() + 1);
        self.wrote.set(wrote);
        self.stop_at.is_some_and(|at| self.looks.get() >= at)
    }

    fn script_ended(&self) {}
}

#[test]
fn a_watched_script_stops_when_told_even_inside_pcall_and_the_next_runs_whole() {
    let mut node = Node::new().unwrap();
    let watcher = std::rc::Rc::new(CountingWatcher {
        stop_at: Some(3),
        ..CountingWatcher::default()
    });
    node.watch_scripts(watcher.clone());
    assert_eq!(watcher.busy_after_ms.get(), 0, "not told before a run");
    run(&mut node, &["CONFIG", "SET", "lua-time-limit", "10"]);
    let spins = "local f = function() while true do end end while true do pcall(f) end";
    assert_eq!(
        eval(&mut node, spins),
        script_err(spins, "ERR Script killed by user with SCRIPT KILL...", 1)
    );
    assert_eq!(watcher.looks.get(), 3);
    assert_eq!(watcher.busy_after_ms.get(), 10, "the threshold CONFIG SET gave");
    assert!(!watcher.wrote.get());
    // A script that runs long but ends, after a write: told so, and not stopped early.
    let counts = "redis.call('set','k','v') local n = 0 for i = 1, 300000 do n = n + 1 end return n";
    let patient = std::rc::Rc::new(CountingWatcher::default());
    node.watch_scripts(patient.clone());
    assert_eq!(eval(&mut node, counts), Frame::Integer(300000));
    assert!(patient.looks.get() >= 3 && patient.wrote.get());
}

#[test]
fn the_instruction_budget_holds_only_on_an_unwatched_node() {
    // Two instructions a turn (ADD, FORLOOP): past the 200,000,000 budget.
    let long = "local n = 0 for i = 1, 110000000 do n = n + 1 end return n";
    let mut node = Node::new().unwrap();
    let Frame::Error(message) = eval(&mut node, long) else {
        panic!("expected the budget's error")
    };
    assert!(message.contains("locksim stopped the script"), "{message}");
    node.watch_scripts(std::rc::Rc::new(CountingWatcher::default()));
    assert_eq!(eval(&mut node, long), Frame::Integer(110000000));
}

#[test]
fn a_client_eval_parses_back_to_itself() {
    let eval = Eval {
        script: scripts::RELEASE.to_string(),
        keys: vec![b"lock".to_vec()],
        args: vec![b"tok".to_vec()],
    };
    assert_eq!(
        Command::from_frame(eval.clone().into_frame()),
        Ok(Command::Eval(eval))
    );
}

/// What each script counts in the node's error statistics (a list at `l`): every
/// expectation was read from redis-server 7.0.15's INFO errorstats after CONFIG
/// RESETSTAT and the same script. A called command's error counts once, when it
/// happens, whether the script swallows it, returns it or raises it; the Lua library's
/// refusals of arguments, and errors the script makes itself, count when they reach the
/// client.
#[test]
fn script_errors_count_once_as_redis_counts_them() {
    const WRONGTYPE: &str = "WRONGTYPE";
    let cases: &[(&str, &[&str])] = &[
        ("return redis.call('incr','l')", &[WRONGTYPE]),
        ("return redis.pcall('incr','l')", &[WRONGTYPE]),
        ("redis.pcall('incr','l') return 1", &[WRONGTYPE]),
        ("return {redis.pcall('incr','l')}", &[WRONGTYPE]),
        ("local e = redis.pcall('incr','l'); error(e)", &[WRONGTYPE]),
        (
            "local e = redis.pcall('incr','l'); return {err=e.err}",
            &[WRONGTYPE, WRONGTYPE],
        ),
        (
            "local e = redis.pcall('incr','l'); e.ignore_error_stats_update = false; return e",
            &[WRONGTYPE, WRONGTYPE],
        ),
        (
            "local e = redis.pcall('incr','l'); return e.ignore_error_stats_update",
            &[WRONGTYPE],
        ),
        (
            "local ok, e = pcall(redis.call, 'incr', 'l'); return e",
            &[WRONGTYPE],
        ),
        (
            "local t = redis.pcall('incr','l'); return redis.call('incr','l')",
            &[WRONGTYPE, WRONGTYPE],
        ),
        ("return redis.error_reply('MY thing')", &["MY"]),
        ("return redis.error_reply('nospace')", &["ERR"]),
        ("return {1, redis.error_reply('IN array')}", &["IN"]),
        ("return {err='lower case'}", &["lower"]),
        ("error('boom')", &["ERR"]),
        ("x(", &["ERR"]),
        ("return redis.call('nosuch')", &["ERR"]),
        ("redis.pcall('nosuch') return 1", &["ERR"]),
        ("redis.pcall('set','k') return 1", &["ERR"]),
        ("redis.pcall() return 1", &[]),
        ("return redis.pcall()", &["ERR"]),
        ("redis.pcall('set','k',{}) return 1", &[]),
        ("return redis.pcall('set','k',{})", &["ERR"]),
        ("redis.call('set','k',{})", &["ERR"]),
        ("return redis.status_reply('x')", &[]),
    ];
    for (script, codes) in cases {
        let mut node = Node::new().unwrap();
        run(&mut node, &["RPUSH", "l", "1"]);
        eval(&mut node, script);
        let mut expected = crate::redis::stats::ErrorStats::default();
        for code in *codes {
            expected.count(&format!("{code} message"));
        }
        assert_eq!(node.stats.errors, expected, "{script}");
    }
    let mut node = Node::new().unwrap();
    run(&mut node, &["EVALSHA", &"0".repeat(40), "0"]);
    assert_eq!(
        node.stats.errors.info_lines().collect::<Vec<_>>(),
        ["errorstat_NOSCRIPT:count=1"]
    );
}

#[test]
fn an_interpreter_made_from_the_compiled_prelude_answers_as_redis_does() {
    // The first interpreter of the process compiles the prelude's text; every later one
    // (this second node's at least) loads the bytecode it left.
    Node::new().unwrap();
    let mut node = Node::new().unwrap();
    let failures = [
        ("x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
        (
            "redis.call = 1",
            "ERR user_script:1: Attempt to modify a readonly table",
        ),
        (
            "return os",
            "ERR user_script:1: Script attempted to access nonexistent global variable 'os'",
        ),
        ("error('boom')", "ERR user_script:1: boom"),
    ];
    for (script, message) in failures {
        assert_eq!(
            eval(&mut node, script),
            script_err(script, message, 1),
            "{script}"
        );
    }
    let replies = [
        (
            "return redis.sha1hex('')",
            bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ),
        (
            "return redis.status_reply('FINE')",
            Frame::SimpleString(b"FINE".to_vec()),
        ),
        ("return redis.error_reply('no')", err("ERR no")),
        (
            "return redis.pcall('SET', 'k', 'v')",
            Frame::SimpleString(b"OK".to_vec()),
        ),
        ("return redis.call('GET', 'k')", bulk("v")),
        ("return tostring(pcall(setmetatable, redis, {}))", bulk("false")),
    ];
    for (script, reply) in replies {
        assert_eq!(eval(&mut node, script), reply, "{script}");
    }
}

#[test]
fn a_restarted_node_gets_the_interpreter_a_node_that_ran_only_lock_scripts_left_as_good_as_new() {
    use crate::redis::lua_pool::kept;
    let first_draw = |node: &mut Node| eval(node, "return math.random(1000000)");
    let fresh_draw = first_draw(&mut Node::new().unwrap());
    assert_eq!(
        kept(),
        0,
        "a node that drew from math.random left nothing to keep"
    );
    let mut node = Node::new().unwrap();
    node.db.set(b"lock".to_vec(), b"mine".to_vec(), Some(1000));
    assert_eq!(
        run(&mut node, &["EVAL", scripts::RELEASE, "1", "lock", "mine"]),
        Frame::Integer(1)
    );
    assert_eq!(node.scripts.cached(), 1);
    drop(node);
    assert_eq!(kept(), 1);
    let mut restarted = Node::new().unwrap();
    assert_eq!(kept(), 0, "the kept interpreter was taken");
    assert_eq!(restarted.scripts.cached(), 0);
    let release_sha = sha1_hex(scripts::RELEASE.as_bytes());
    assert_eq!(
        run(&mut restarted, &["SCRIPT", "EXISTS", &release_sha]),
        Frame::Array(vec![Frame::Integer(0)])
    );
    assert_eq!(first_draw(&mut restarted), fresh_draw);
}

#[test]
fn an_interpreter_a_script_may_have_changed_is_closed_with_its_node() {
    use crate::redis::lua_pool::kept;
    let mut node = Node::new().unwrap();
    assert_eq!(eval(&mut node, "string.locksim = 1 return 1"), Frame::Integer(1));
    assert_eq!(eval(&mut node, "return string.locksim"), Frame::Integer(1));
    drop(node);
    assert_eq!(kept(), 0);
    let mut next = Node::new().unwrap();
    assert_eq!(eval(&mut next, "return string.locksim"), Frame::Null);
}
