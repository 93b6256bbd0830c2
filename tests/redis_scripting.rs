//! The read-only script commands and the function library on the fake node against
//! redis-server 7.0, reply for reply in RESP2 and RESP3: EVAL_RO and EVALSHA_RO (a write
//! inside refused, by `redis.call` and by `redis.pcall`), and FUNCTION / FCALL on a library
//! with nothing loaded; and the two cases of Redis's own Tcl suite (unit/scripting) the
//! fake node used to fail: `redis.sha1hex` reporting its errors, and a `redis.call` with
//! all the arguments Lua 5.1's `unpack` can give; and `loadstring` refusing bytecode (the
//! Tcl suite's "Binary code loading failed"); the `#!lua` shebang's flags; the read-only
//! globals, `redis` and `bit` tables; and the commands a script is refused.

mod support;

use std::net::SocketAddr;

use support::differential::same_transcripts_on_real_and_fake;
use support::resp::{RespClient, Value};

fn words(request: &str) -> Vec<Vec<u8>> {
    request.split('|').map(|w| w.as_bytes().to_vec()).collect()
}

/// The SHA1 of `return 1`, and of a script that writes.
const RETURN_ONE_SHA: &str = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
const WRITER_SHA: &str = "8aafe33a3280de03d71cf7b7bc5e77c6fb0c28ea";

fn dialogue() -> Vec<String> {
    [
        "SET|k|v",
        "EVAL_RO|return redis.call('GET',KEYS[1])|1|k",
        "EVAL_RO|return redis.call('SET',KEYS[1],'x')|1|k",
        "EVAL_RO|return redis.pcall('SET',KEYS[1],'x')|1|k",
        "EVAL_RO|return redis.call('DEL',KEYS[1])|1|k",
        "GET|k",
        "EVAL_RO|return 1|0",
        "EVAL_RO|return 1|-1",
        "EVAL_RO|return 1|2|a",
        "EVAL_RO|return redis.call('EVAL','return 1','0')|0",
        "EVAL_RO",
        "SCRIPT|LOAD|return redis.call('SET','k','y')",
        "EVALSHA_RO|{RETURN_ONE}|0",
        "EVALSHA_RO|{WRITER}|0",
        "EVALSHA|{WRITER}|0",
        "GET|k",
        "EVALSHA_RO|abc|0",
        "EVALSHA_RO|abc",
        "FUNCTION",
        "FUNCTION|FLUSH",
        "FUNCTION|FLUSH|ASYNC",
        "FUNCTION|flush|sync",
        "FUNCTION|FLUSH|x",
        "FUNCTION|FLUSH|a|b",
        "FUNCTION|LIST",
        "FUNCTION|LIST|WITHCODE",
        "FUNCTION|LIST|LIBRARYNAME|x",
        "FUNCTION|LIST|libraryname|x|withcode",
        "FUNCTION|LIST|x",
        "FUNCTION|LIST|LIBRARYNAME",
        "FUNCTION|LIST|WITHCODE|WITHCODE",
        "FUNCTION|LIST|LIBRARYNAME|a|LIBRARYNAME|b",
        "FUNCTION|STATS",
        "FUNCTION|STATS|x",
        "FUNCTION|DUMP",
        "FUNCTION|DUMP|x",
        "FUNCTION|KILL",
        "FUNCTION|KILL|x",
        "FUNCTION|DELETE|x",
        "FUNCTION|DELETE|x|y",
        "FUNCTION|BOGUS",
        "FCALL|f|0",
        "FCALL|f|x",
        "FCALL_RO|f|1|k",
        "FCALL",
        "FCALL_RO|f",
        "EVAL|return redis.call('FUNCTION','LIST')|0",
        "EVAL|return redis.call('EVAL_RO','return 1','0')|0",
        "MULTI",
        "EVAL_RO|return redis.call('GET',KEYS[1])|1|k",
        "FUNCTION|STATS",
        "FUNCTION|KILL",
        "EXEC",
    ]
    .iter()
    .map(|request| {
        request
            .replace("{RETURN_ONE}", RETURN_ONE_SHA)
            .replace("{WRITER}", WRITER_SHA)
    })
    .collect()
}

/// Each request of `dialogue` with its reply, on a new connection to `addr` that first
/// sends `setup` and, for RESP3, `HELLO 3`.
fn replies(addr: SocketAddr, resp3: bool, setup: &[&str], dialogue: Vec<String>) -> Vec<(String, Value)> {
    let mut client = RespClient::connect(addr);
    for request in setup {
        client.request(&words(request));
    }
    if resp3 {
        client.request(&words("HELLO|3"));
    }
    dialogue
        .into_iter()
        .map(|request| {
            let reply = client.request(&words(&request));
            (request, reply)
        })
        .collect()
}

fn transcript(addr: SocketAddr, resp3: bool) -> Vec<(String, Value)> {
    replies(addr, resp3, &["FLUSHALL", "SCRIPT|FLUSH"], dialogue())
}

#[test]
fn read_only_scripts_and_the_empty_function_library_answer_as_redis_server_7_0_does() {
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let refusal = Value::Error("ERR Write commands are not allowed from read-only scripts.".into());
        assert!(
            got.iter().any(|(_, reply)| *reply == refusal),
            "a read-only script's write was refused (RESP3: {resp3})"
        );
        let unchanged = got
            .iter()
            .filter(|(request, _)| request == "GET|k")
            .map(|(_, reply)| reply.clone())
            .collect::<Vec<_>>();
        assert_eq!(
            unchanged,
            [Value::Bulk("v".into()), Value::Bulk("y".into())],
            "only EVALSHA wrote (RESP3: {resp3})"
        );
    }
}

/// The Tcl suite's "Functions in the Redis namespace are able to report errors" and
/// "Script check unpack with massive arguments", with their neighbours: one argument too
/// few or many, numbers and other types hashed as `lua_tolstring` reads them, 7999
/// arguments (all a C function gets) and 8000 (too many for `unpack`).
fn redis_library_dialogue() -> Vec<String> {
    let unpack = |n: u32, call: &str| {
        format!(
            "EVAL|local a = {{}} for i=1,{n} do a[i] = 1 end return redis.{call}('lpush', KEYS[1], unpack(a))|1|l{n}{call}"
        )
    };
    [
        "EVAL|redis.sha1hex()|0".to_string(),
        "EVAL|return redis.sha1hex('a', 'b')|0".to_string(),
        "EVAL|return pcall(redis.sha1hex)|0".to_string(),
        "EVAL|return redis.sha1hex('')|0".to_string(),
        "EVAL|return redis.sha1hex(12)|0".to_string(),
        "EVAL|return redis.sha1hex(1.5)|0".to_string(),
        "EVAL|return redis.sha1hex(1/3)|0".to_string(),
        "EVAL|return redis.sha1hex(nil)|0".to_string(),
        "EVAL|return redis.sha1hex({})|0".to_string(),
        unpack(7999, "call"),
        unpack(7999, "pcall"),
        unpack(8000, "call"),
        "EVAL|return redis.call('SET', KEYS[1], 0.1)|1|n".to_string(),
        "EVAL|return redis.call('SET', KEYS[1], 1e17)|1|n2".to_string(),
        "MGET|n|n2".to_string(),
    ]
    .to_vec()
}

#[test]
fn the_redis_library_reports_its_errors_and_takes_every_argument_unpack_gives() {
    let transcript =
        |addr: SocketAddr, resp3: bool| replies(addr, resp3, &["FLUSHALL"], redis_library_dialogue());
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let (_, no_argument) = &got[0];
        assert!(
            matches!(no_argument, Value::Error(e) if e.starts_with("ERR wrong number of arguments")),
            "{no_argument:?} (RESP3: {resp3})"
        );
        assert!(
            got.iter().any(|(_, reply)| *reply == Value::Int(7999)),
            "RESP3: {resp3}"
        );
    }
}

/// The Tcl suite's "Binary code loading failed": Redis's Lua parses every chunk as text, so
/// `loadstring` of `string.dump`'s bytecode gives nil and the parser's message, which names
/// the chunk by its first line or by the name given; text chunks still load.
fn loadstring_dialogue() -> Vec<String> {
    let dumped = "string.dump(function() return 1 end)";
    [
        format!("EVAL|return loadstring({dumped})()|0"),
        format!("EVAL|local f, e = loadstring({dumped}) return {{type(f), e}}|0"),
        format!("EVAL|local f, e = loadstring({dumped}, 'named') return {{type(f), e}}|0"),
        "EVAL|local f, e = loadstring('\\27abc\\ndef') return {type(f), e}|0".to_string(),
        "EVAL|return loadstring('return 7')()|0".to_string(),
    ]
    .to_vec()
}

#[test]
fn loadstring_refuses_bytecode_as_redis_server_7_0_does() {
    let transcript = |addr: SocketAddr, resp3: bool| replies(addr, resp3, &[], loadstring_dialogue());
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let (_, text_chunk) = got.last().expect("the dialogue is not empty");
        assert_eq!(*text_chunk, Value::Int(7), "RESP3: {resp3}");
        let (_, bytecode_call) = &got[0];
        assert!(
            matches!(bytecode_call, Value::Error(e) if e.contains("attempt to call a nil value")),
            "{bytecode_call:?} (RESP3: {resp3})"
        );
    }
}

/// The Tcl suite's shebang cases ("Shebang support for lua engine", "Unknown shebang
/// option", "Unknown shebang flag", "no-writes shebang flag") with their neighbours: a
/// script that declares its flags on a `#!lua` first line is refused up front when it may
/// write through EVAL_RO, writes nothing with `no-writes`, keeps its flags under EVALSHA,
/// and reports errors on the user's line numbers.
fn shebang_dialogue() -> Vec<String> {
    [
        "EVAL|#!not-lua\n return 1|0",
        "EVAL|#!lua\n return 1|0",
        "EVAL|#!lua|0",
        "EVAL|#! \nreturn 1|0",
        "EVAL|#!lua badger=data\n return 1|0",
        "EVAL|#!lua flags=allow-oom,what?\n return 1|0",
        "EVAL|#!lua flags=\n return 1|0",
        "EVAL|#!lua flags=no-writes\n redis.call('set','x',1) return 1|1|x",
        "EVAL|#!lua flags=no-writes\n return redis.pcall('set','x',1)|1|x",
        "EVAL|#!lua flags=no-writes,allow-stale\n return redis.call('get','x')|1|x",
        "EVAL_RO|#!lua\n return 1|0",
        "EVAL_RO|#!lua flags=no-writes\n return 1|0",
        "EVAL|#!lua flags=allow-oom\n redis.call('set','x',2) return redis.call('get','x')|1|x",
        "SCRIPT|LOAD|#!lua\n return redis.call('get','x')",
        "EVALSHA_RO|{DECLARED}|1|x",
        "SCRIPT|LOAD|#!lua flags=no-writes\n return redis.call('set','x',3)",
        "EVALSHA|{NO_WRITES}|1|x",
        "SCRIPT|LOAD|#!bash\n return 1",
        "EVAL|#!lua\n\n error('on the third line')|0",
        "GET|x",
    ]
    .into_iter()
    .map(|request| {
        request
            .replace(
                "{DECLARED}",
                &locksim::redis::lua::sha1_hex(b"#!lua\n return redis.call('get','x')"),
            )
            .replace(
                "{NO_WRITES}",
                &locksim::redis::lua::sha1_hex(b"#!lua flags=no-writes\n return redis.call('set','x',3)"),
            )
    })
    .collect()
}

#[test]
fn a_shebang_declares_what_a_script_may_do_as_redis_server_7_0_reads_it() {
    let transcript = |addr: SocketAddr, resp3: bool| {
        replies(addr, resp3, &["FLUSHALL", "SCRIPT|FLUSH"], shebang_dialogue())
    };
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let reply = |request: &str| {
            got.iter()
                .find(|(sent, _)| sent == request)
                .map(|(_, reply)| reply.clone())
                .unwrap_or_else(|| panic!("{request} was sent"))
        };
        assert_eq!(reply("EVAL|#!lua\n return 1|0"), Value::Int(1), "RESP3: {resp3}");
        assert_eq!(
            reply("EVAL_RO|#!lua\n return 1|0"),
            Value::Error("ERR Can not execute a script with write flag using *_ro command.".into()),
            "RESP3: {resp3}"
        );
        assert_eq!(reply("GET|x"), Value::Bulk("2".into()), "RESP3: {resp3}");
    }
}

/// The Tcl suite's "Try trick global protection", "Try trick readonly table on redis / bit
/// table" and "Verify minimal bitop functionality": Redis 7.0's globals, their metatable and
/// the `redis` and `bit` tables are read-only, while a script's own tables keep their
/// metatables; `bit` computes as LuaBitOp does.
fn readonly_dialogue() -> Vec<String> {
    [
        "EVAL|setmetatable(_G, {})|0",
        "EVAL|local g = getmetatable(_G)\ng.__index = {}|0",
        "EVAL|redis = function() return 1 end|0",
        "EVAL|_G = {}|0",
        "EVAL|redis.call = function() return 1 end|0",
        "EVAL|redis.pcall = nil|0",
        "EVAL|bit.lshift = function() return 1 end|0",
        "EVAL|return {bit.tobit(1), bit.band(1), bit.bxor(1,2), bit.bor(1,2,4,8,16,32,64,128), bit.tobit(2^32+5)}|0",
        "EVAL|return {bit.tohex(-1, -4), bit.tohex(255), bit.bnot(0), bit.lshift(1, 33), bit.rshift(-1, 28)}|0",
        "EVAL|return {bit.arshift(-256, 4), bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.bswap(0x12345678)}|0",
        "EVAL|return redis.call('ping')|0",
        "EVAL|return type(redis.sha1hex)|0",
        "EVAL|local a = setmetatable({}, {__index = function() return 7 end}) return a.x|0",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn globals_and_the_redis_table_are_read_only_as_in_redis_server_7_0() {
    let transcript = |addr: SocketAddr, resp3: bool| replies(addr, resp3, &[], readonly_dialogue());
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let refused = got
            .iter()
            .filter(|(_, reply)| matches!(reply, Value::Error(e) if e.contains("Attempt to modify a readonly table")))
            .count();
        assert_eq!(refused, 7, "{got:?} (RESP3: {resp3})");
        assert_eq!(
            got.last().map(|(_, reply)| reply),
            Some(&Value::Int(7)),
            "RESP3: {resp3}"
        );
    }
}

/// The Tcl suite's "EVAL - Scripts can't run brpoplpush / blmove / bzpopmin / bzpopmax
/// command" and "CLUSTER RESET can not be invoke from within a script": the node serves none
/// of these, but a script is refused them in Redis's words (not as an unknown command),
/// after the word count, as Redis looks them up; CLUSTER's other subcommands stay unknown.
fn unserved_noscript_dialogue() -> Vec<String> {
    [
        "EVAL|return redis.pcall('brpoplpush','a','b','0')|0",
        "EVAL|return redis.pcall('BRPOPLPUSH','a','b','0')|0",
        "EVAL|return redis.pcall('brpoplpush','a')|0",
        "EVAL|return redis.pcall('blmove','a','b','left','right','0')|0",
        "EVAL|return redis.pcall('blmove','a')|0",
        "EVAL|return redis.pcall('bzpopmin','a','0')|0",
        "EVAL|return redis.pcall('bzpopmin','a')|0",
        "EVAL|return redis.pcall('bzpopmax','a','b','0')|0",
        "EVAL|return redis.pcall('cluster','reset')|0",
        "EVAL|return redis.pcall('cluster','RESET','hard')|0",
        "EVAL|return redis.pcall('cluster')|0",
        "EVAL|return redis.pcall('cluster','nosuch')|0",
        "EVAL|return redis.call('bzpopmax','a','0')|0",
    ]
    .iter()
    .map(|request| request.to_string())
    .collect()
}

#[test]
fn scripts_are_refused_the_blocking_commands_and_cluster_reset_in_redis_server_7_0_words() {
    let transcript = |addr: SocketAddr, resp3: bool| replies(addr, resp3, &[], unserved_noscript_dialogue());
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let refusal = Value::Error("ERR This Redis command is not allowed from script".into());
        let refused = got.iter().filter(|(_, reply)| *reply == refusal).count();
        assert_eq!(refused, 7, "RESP3: {resp3}: {got:?}");
    }
}
