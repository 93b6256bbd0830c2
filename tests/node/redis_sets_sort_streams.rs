//! Sets, SORT, streams and ACL users on the fake node against redis-server 7.0, request for
//! request, in RESP2 and RESP3: what Redis's Tcl tests of scripts call (SADD and SORT,
//! XGROUP/XREAD/XREADGROUP, ACL SETUSER with `redis.acl_check_cmd`), and the errors around
//! them. Only replies whose order Redis fixes are compared: sets of integers (intsets list
//! by value), SPOP of a whole set, SORT's sorted output.

use crate::support;

use std::net::SocketAddr;

use support::differential::same_transcripts_on_real_and_fake;
use support::resp::{RespClient, Value};

fn words(request: &str) -> Vec<Vec<u8>> {
    request.split('|').map(|w| w.as_bytes().to_vec()).collect()
}

/// Runs `dialogue` on one connection (RESP3 after HELLO 3 if asked) on a server that is
/// emptied first, and gives each request with its reply.
fn run(addr: SocketAddr, resp3: bool, dialogue: &[&str]) -> Vec<(String, Value)> {
    let mut client = RespClient::connect(addr);
    if resp3 {
        client.request(&words("HELLO|3"));
    }
    client.request(&words("FLUSHALL"));
    dialogue
        .iter()
        .map(|request| (request.to_string(), client.request(&words(request))))
        .collect()
}

const SETS: &[&str] = &[
    "SADD|s|3|1|2|10|2",
    "SMEMBERS|s",
    "SCARD|s",
    "SISMEMBER|s|10",
    "SISMEMBER|s|11",
    "SREM|s|2|7",
    "SMEMBERS|s",
    "TYPE|s",
    "SMEMBERS|nosuch",
    "SPOP|nosuch",
    "SPOP|nosuch|2",
    "SPOP|s|0",
    "SPOP|s|-1",
    "SPOP|s|x",
    "SPOP|s|1|2",
    "SPOP|s|10",
    "EXISTS|s",
    "SADD|one|only",
    "SPOP|one",
    "EXISTS|one",
    "SET|str|v",
    "SADD|str|a",
    "SMEMBERS|str",
    "SADD|s",
    "EVAL|return redis.call('smembers', KEYS[1])|1|s",
];

const SORTS: &[&str] = &[
    "RPUSH|l|3|10|1|2",
    "SORT|l",
    "SORT|l|DESC",
    "SORT|l|LIMIT|1|2",
    "SORT|l|LIMIT|-5|100",
    "SORT|l|LIMIT|9|1",
    "SORT|l|ALPHA",
    "SORT|l|BY|nosort",
    "SORT|l|BY|nosort|DESC|LIMIT|1|2",
    "MSET|w_1|30|w_2|20|w_3|10|w_10|0|o_1|one|o_3|three",
    "HSET|h_2|f|two",
    "SORT|l|BY|w_*",
    "SORT|l|BY|w_*|GET|#|GET|o_*|GET|h_*->f",
    "SORT|l|BY|o_*|ALPHA",
    "SORT|l|STORE|dst",
    "LRANGE|dst|0|-1",
    "SORT|l|GET|o_*|STORE|dst",
    "LRANGE|dst|0|-1",
    "SORT|nosuch|STORE|dst",
    "EXISTS|dst",
    "SADD|myset|1|2|3|4|10",
    "EVAL|return redis.call('sort',KEYS[1],'desc')|1|myset",
    "DEL|myset",
    "SADD|myset|b|c|a|aa",
    "EVAL|return redis.call('sort',KEYS[1],'by','_')|1|myset",
    "EVAL|return redis.call('sort',KEYS[1],'by','_','get','#','get','_:*')|1|myset",
    "SORT|myset|BY|_|STORE|dst",
    "LRANGE|dst|0|-1",
    "RPUSH|bad|1|x",
    "SORT|bad",
    "SORT|bad|ALPHA",
    "SORT|l|LIMIT|x|1",
    "SORT|l|FOO",
    "SET|str|v",
    "SORT|str",
    "ZADD|z|1|c|2|a|3|b",
    "SORT|z|ALPHA",
    "SORT|z|BY|nosort|DESC",
];

const STREAMS: &[&str] = &[
    "XGROUP|CREATE|s|g|$",
    "XGROUP|CREATE|s|g|$|MKSTREAM",
    "XGROUP|CREATE|s|g|$|MKSTREAM",
    "TYPE|s",
    "XLEN|s",
    "EVAL|return redis.pcall('xread','STREAMS','s','$')|1|s",
    "EVAL|return redis.pcall('xread','BLOCK',0,'STREAMS','s','$')|1|s",
    "EVAL|return redis.pcall('xreadgroup','group','g','c','STREAMS','s','>')|1|s",
    "EVAL|return redis.pcall('xreadgroup','group','g','c','BLOCK',0,'STREAMS','s','>')|1|s",
    "XADD|s|1-1|f|v",
    "XADD|s|1-1|f|v",
    "XADD|s|0-0|f|v",
    "XADD|s|2|f|v|g|w",
    "XADD|s|2-1|f",
    "XADD|s|x|f|v",
    "XADD|s|NOMKSTREAM|3-0|a|b",
    "XADD|nosuch|NOMKSTREAM|3-0|a|b",
    "XLEN|s",
    "XRANGE|s|-|+",
    "XRANGE|s|2|+|COUNT|1",
    "XRANGE|s|3|1",
    "XREAD|STREAMS|s|0",
    "XREAD|COUNT|1|STREAMS|s|1-1",
    "XREAD|STREAMS|s|$",
    "XREAD|STREAMS|s|nosuch|0|0",
    "XREAD|STREAMS|s",
    "XREAD|STREAMS|s|>",
    "XREAD|GROUP|g|c|STREAMS|s|0",
    "XREADGROUP|GROUP|g|c|COUNT|2|STREAMS|s|>",
    "XREADGROUP|GROUP|g|c|STREAMS|s|>",
    "XREADGROUP|GROUP|g|c|STREAMS|s|>",
    "XREADGROUP|GROUP|g|c|STREAMS|s|0",
    "XREADGROUP|GROUP|g|other|STREAMS|s|0",
    "XREADGROUP|GROUP|g|c|STREAMS|s|$",
    "XREADGROUP|GROUP|nogroup|c|STREAMS|s|>",
    "XREADGROUP|STREAMS|s|>",
    "XREAD|BLOCK|100|STREAMS|s|0",
    "SET|str|v",
    "XADD|str|1-1|f|v",
    "XREAD|STREAMS|str|0",
];

const ACL: &[&str] = &[
    "ACL|SETUSER|bob|reset|on|>123|+@scripting|+set|~x*",
    "ACL|SETUSER|bob|+nosuchcommand",
    "ACL|SETUSER|bob|+@nosuchcategory",
    "ACL|SETUSER|bob|<nosuchpassword",
    "ACL|SETUSER|bob|bogus",
    "ACL|USERS",
    "ACL|WHOAMI",
    "AUTH|bob|124",
    "AUTH|nobody|123",
    "AUTH|bob|123",
    "EVAL|return redis.acl_check_cmd('set','xx',1)|1|xx",
    "EVAL|return redis.acl_check_cmd('hset','xx','f',1)|1|xx",
    "EVAL|return redis.acl_check_cmd('set','yy',1)|0",
    "EVAL|return redis.acl_check_cmd('invalid-cmd','arg')|0",
    "AUTH|default|anything",
    "ACL|WHOAMI",
    "EVAL|return redis.acl_check_cmd('hset','xx','f',1)|0",
    "ACL|DELUSER|bob|nobody",
    "ACL|NOSUCH",
];

#[test]
fn set_commands_answer_as_redis_server_7_0_does() {
    same_transcripts_on_real_and_fake(|addr, resp3| run(addr, resp3, SETS));
}

#[test]
fn sort_answers_as_redis_server_7_0_does_from_clients_and_scripts() {
    same_transcripts_on_real_and_fake(|addr, resp3| run(addr, resp3, SORTS));
}

#[test]
fn stream_commands_answer_as_redis_server_7_0_does_and_scripts_may_not_block() {
    same_transcripts_on_real_and_fake(|addr, resp3| run(addr, resp3, STREAMS));
}

#[test]
fn acl_users_authenticate_and_scripts_check_their_permissions_as_redis_server_7_0_does() {
    for (resp3, got) in same_transcripts_on_real_and_fake(|addr, resp3| run(addr, resp3, ACL)) {
        let checked: Vec<&Value> = got
            .iter()
            .filter(|(request, _)| request.contains("acl_check_cmd"))
            .map(|(_, reply)| reply)
            .collect();
        assert_eq!(checked[0], &Value::Int(1), "bob may SET xx (RESP3: {resp3})");
    }
}
