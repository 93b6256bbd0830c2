//! The read-only script commands and the function library on the fake node against
//! redis-server 7.0, reply for reply in RESP2 and RESP3: EVAL_RO and EVALSHA_RO (a write
//! inside refused, by `redis.call` and by `redis.pcall`), and FUNCTION / FCALL on a library
//! with nothing loaded; and the two cases of Redis's own Tcl suite (unit/scripting) the
//! fake node used to fail: `redis.sha1hex` reporting its errors, and a `redis.call` with
//! all the arguments Lua 5.1's `unpack` can give; and `loadstring` refusing bytecode (the
//! Tcl suite's "Binary code loading failed"); the `#!lua` shebang's flags; the read-only
//! globals, `redis` and `bit` tables; the commands a script is refused; `maxmemory` and
//! the `-OOM` refusals of clients and scripts; and the `cjson` and `cmsgpack` libraries.

use crate::support;

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

/// The Tcl suite's "Script - disallow write on OOM", "allow-oom shebang flag", "reject
/// script do not cause a Lua stack leak" and "Consistent eval error reporting", with their
/// neighbours: over `maxmemory`, a command that may grow the dataset is refused, one that
/// cannot (GET, DEL) runs; a script without a shebang is refused such a call until its
/// first write; one with a shebang is refused up front unless it declares `allow-oom` or
/// `no-writes`; inside MULTI everything but EXEC and DISCARD is refused (after the
/// commands MULTI refuses anyway, SAVE); `maxmemory`
/// takes units; the error statistics count each refusal once.
fn oom_dialogue() -> Vec<String> {
    [
        "CONFIG|RESETSTAT",
        "SET|x|123",
        "CONFIG|SET|maxmemory|1",
        "SET|x|1",
        "INCR|n",
        "GET|x",
        "DEL|nosuch",
        "EVAL|redis.call('set','x',1) return 1|1|x",
        "EVAL|return redis.pcall('set','x',1)|1|x",
        "EVAL|local t = redis.pcall('set','x','y') return t['err']|1|x",
        "EVAL|return redis.call('get','x')|1|x",
        "EVAL_RO|return redis.call('get','x')|1|x",
        "EVAL|redis.call('del','nosuch') return redis.call('set','x',5)|1|x",
        "EVAL|#!lua flags=\n return 1|0",
        "EVAL|#!lua\n return 1|0",
        "EVAL|#!lua flags=allow-oom\n redis.call('set','x',6) return 1|1|x",
        "EVAL|#!lua flags=no-writes\n return redis.call('get','x')|1|x",
        "EVAL_RO|#!lua flags=no-writes\n return redis.call('get','x')|1|x",
        "MULTI",
        "MULTI",
        "SAVE",
        "GET|x",
        "DISCARD",
        "MULTI",
        "PING",
        "EXEC",
        "CONFIG|SET|maxmemory|100mb",
        "CONFIG|GET|maxmemory",
        "SET|x|7",
        "CONFIG|SET|maxmemory|1",
        "CONFIG|SET|maxmemory|0",
        "GET|x",
        "INFO|errorstats",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn over_maxmemory_clients_and_scripts_are_refused_as_redis_server_7_0_refuses_them() {
    let transcript = |addr: SocketAddr, resp3: bool| {
        replies(
            addr,
            resp3,
            &["FLUSHALL", "SCRIPT|FLUSH", "CONFIG|SET|maxmemory|0"],
            oom_dialogue(),
        )
    };
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let oom = Value::Error("OOM command not allowed when used memory > 'maxmemory'.".into());
        let reply = |request: &str| {
            got.iter()
                .find(|(sent, _)| sent == request)
                .map(|(_, reply)| reply.clone())
                .unwrap_or_else(|| panic!("{request} was sent"))
        };
        assert_eq!(reply("SET|x|1"), oom, "RESP3: {resp3}");
        assert_eq!(reply("EVAL|#!lua flags=\n return 1|0"), oom, "RESP3: {resp3}");
        assert_eq!(reply("SET|x|7"), Value::Simple("OK".into()), "RESP3: {resp3}");
    }
}

/// Hex of a string, for the libraries' byte-exact output.
const HEX: &str = "local function hex(s) local h = '' for i = 1, #s do h = h .. string.format('%02x', string.byte(s, i)) end return h end ";

/// The Tcl suite's "EVAL - JSON numeric decoding", "JSON string decoding", "JSON smoke
/// test" and "Try trick readonly table on json table", with their neighbours: cjson's
/// number format, escapes, arrays and objects, sparse arrays, nesting limits, invalid
/// numbers, `cjson.null`, and its error messages.
fn cjson_dialogue() -> Vec<String> {
    [
        "EVAL|return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')|0",
        "EVAL|local d = cjson.decode('{\"keya\": \"a\", \"keyb\": \"b\"}') return {d.keya, d.keyb}|0",
        "EVAL|return cjson.encode({1, 2.5, 'a', true, false, 0.1, 1e300, -1/3, 123456789012345678})|0",
        "EVAL|return cjson.encode({'/\\\"', '\\1\\8\\9\\10\\12\\13\\31\\127\\200'})|0",
        "EVAL|return cjson.encode({a = {}})|0",
        "EVAL|return cjson.encode({[1] = 1, [3] = 3})|0",
        "EVAL|return cjson.encode({[1.5] = 'x'})|0",
        "EVAL|return cjson.encode({one = 'one'})|0",
        "EVAL|return cjson.encode(cjson.null)|0",
        "EVAL|local ok, e = pcall(cjson.encode, {[true] = 1}) return e|0",
        "EVAL|local ok, e = pcall(cjson.encode, {f = print or type}) return e|0",
        "EVAL|cjson.encode_invalid_numbers(true) local s = cjson.encode({0/0, 1/0, -1/0}) cjson.encode_invalid_numbers(false) return s|0",
        "EVAL|cjson.encode_invalid_numbers('null') local s = cjson.encode({1/0}) cjson.encode_invalid_numbers(false) return s|0",
        "EVAL|cjson.encode_max_depth(2) local ok, e = pcall(cjson.encode, {{{1}}}) cjson.encode_max_depth(1000) return e|0",
        "EVAL|cjson.decode_max_depth(1) local ok = pcall(cjson.decode, '{\"obj\": {\"array\": [1,2,3,4]}}') cjson.decode_max_depth(1000) return tostring(ok)|0",
        "EVAL|return {tostring(cjson.encode_keep_buffer()), cjson.encode_max_depth(), cjson.encode_number_precision()}|0",
        "EVAL|cjson.encode_number_precision(3) local s = cjson.encode({math.pi}) cjson.encode_number_precision(14) return s|0",
        "EVAL|local t = cjson.decode('[1, null, true, \"x\\u00e9\\/\"]') return {t[1], tostring(t[2] == cjson.null), tostring(t[3]), t[4]}|0",
        "EVAL|return cjson.decode('{\"a\": {\"b\": [10, 20]}}').a.b[2]|0",
        "EVAL|return tostring((pcall(cjson.decode, '[1,')))|0",
        "EVAL|return cjson.encode(cjson.decode('\"x\"'))|0",
        "EVAL|return {cjson._NAME, cjson._VERSION, type(cjson.new().encode)}|0",
        "EVAL|cjson.encode = function() return 1 end|0",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn cjson_encodes_and_decodes_as_in_redis_server_7_0() {
    let transcript = |addr: SocketAddr, resp3: bool| replies(addr, resp3, &[], cjson_dialogue());
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let (_, numbers) = &got[0];
        assert_eq!(
            *numbers,
            Value::Bulk("0 -5000 -1 0.0003 1023.2 0".into()),
            "RESP3: {resp3}"
        );
    }
}

/// The Tcl suite's "EVAL - cmsgpack can pack double?", "can pack negative int64?",
/// "pack/unpack smoke test", "can pack and unpack circular references?" and "Try trick
/// readonly table on cmsgpack table", with their neighbours: each number, string, array
/// and map form, nesting cut at 16 levels, the streaming unpacks, and malformed input.
fn cmsgpack_dialogue() -> Vec<String> {
    [
        "return {hex(cmsgpack.pack(0.1)), hex(cmsgpack.pack(-1099511627776)), hex(cmsgpack.pack(1.5)), hex(cmsgpack.pack(2^63)), hex(cmsgpack.pack(-2^63))}",
        "return {hex(cmsgpack.pack(-33)), hex(cmsgpack.pack(200)), hex(cmsgpack.pack(70000)), hex(cmsgpack.pack(-129)), hex(cmsgpack.pack(2^40)), hex(cmsgpack.pack(0/0 ~= 0/0 and 1/0))}",
        "return {hex(cmsgpack.pack({1, 2, 3})), hex(cmsgpack.pack({a = 1})), hex(cmsgpack.pack(true, false, nil, 'abc')), hex(cmsgpack.pack(string.rep('x', 40)))}",
        "return {hex(cmsgpack.pack({[1] = 1, [3] = 3})), hex(cmsgpack.pack({})), hex(cmsgpack.pack(print or type)), #cmsgpack.pack(string.rep('y', 70000))}",
        "local a = {y = 5} local b = {x = a} a.x = b return hex(cmsgpack.pack(a))",
        "local t = cmsgpack.unpack(cmsgpack.pack({1, {2, 'x'}, {k = 'v'}, 2^40, -0.5})) return {t[1], t[2][2], t[3].k, tostring(t[4]), tostring(t[5])}",
        "local s = cmsgpack.pack(1, 'two', 3) local o1, v1 = cmsgpack.unpack_one(s) local o2, v2, v3 = cmsgpack.unpack_limit(s, 2, o1) return {o1, v1, o2, v2, v3}",
        "local s = cmsgpack.pack(1, 2) local o, v = cmsgpack.unpack_one(s, 1) return {o, v}",
        "return {cmsgpack.unpack(cmsgpack.pack(1, 2, 3))}",
        "local ok, e = pcall(cmsgpack.unpack, '\\196\\1a') return e",
        "local ok, e = pcall(cmsgpack.unpack, '\\205\\1') return e",
        "local ok, e = pcall(cmsgpack.unpack_one, 'abc', 5) return e",
        "local ok, e = pcall(cmsgpack.unpack_limit, 'abc', -1) return e",
        "return {cmsgpack._NAME, cmsgpack._VERSION}",
        "cmsgpack.pack = function() return 1 end",
    ]
    .map(|script| format!("EVAL|{HEX}{script}|0"))
    .to_vec()
}

#[test]
fn cmsgpack_packs_and_unpacks_as_in_redis_server_7_0() {
    let transcript = |addr: SocketAddr, resp3: bool| replies(addr, resp3, &[], cmsgpack_dialogue());
    for (resp3, got) in same_transcripts_on_real_and_fake(transcript) {
        let Value::Array(hexes) = &got[0].1 else {
            panic!("{:?} (RESP3: {resp3})", got[0]);
        };
        assert_eq!(
            hexes[0],
            Value::Bulk("cb3fb999999999999a".into()),
            "RESP3: {resp3}"
        );
        assert_eq!(
            hexes[1],
            Value::Bulk("d3ffffff0000000000".into()),
            "RESP3: {resp3}"
        );
    }
}
