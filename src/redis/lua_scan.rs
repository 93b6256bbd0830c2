//! Whether a script can change the interpreter it runs in: the scan that decides whether a
//! node's interpreter may be kept for the next node (see `super::lua_pool`). Apart from the
//! pool so that the interpreter (`super::lua`), which runs the scan on each script it
//! compiles, and the pool, which holds interpreters, do not import each other.

/// Globals a script may name and still leave the interpreter as it found it: the `redis`
/// library (a read-only proxy; its functions reach the keyspace, not the interpreter), the
/// run's own KEYS and ARGV, and functions that keep no state.
const HARMLESS_GLOBALS: &[&str] = &[
    "redis", "KEYS", "ARGV", "tonumber", "tostring", "type", "pairs", "ipairs", "next", "unpack", "select",
    "error", "assert", "pcall",
];

const KEYWORDS: &[&str] = &[
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in", "local", "nil",
    "not", "or", "repeat", "return", "then", "true", "until", "while",
];

/// Whether the script `body` cannot change the interpreter it runs in: every name it uses
/// outside strings and comments is a keyword, a field name (after `.` or `:`), one of
/// [`HARMLESS_GLOBALS`], or no global at all (`is_global`: a local of its own; a global it
/// does not know fails in the sandbox, reading or writing). Anything the scan does not
/// follow (a long string or comment, a byte that is not ASCII outside a string, an
/// unfinished string) counts as a change: the interpreter is then not kept, as before.
pub fn leaves_no_trace(body: &[u8], is_global: impl Fn(&str) -> bool) -> bool {
    let byte = |at: usize| body.get(at).copied();
    let mut at = 0;
    // The last token was a lone `.` or a `:`: a field name follows.
    let mut field_follows = false;
    while let Some(current) = byte(at) {
        match current {
            b' ' | b'\t' | b'\r' | b'\n' => at += 1,
            b'-' if byte(at + 1) == Some(b'-') => {
                if byte(at + 2) == Some(b'[') {
                    return false;
                }
                at = body[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(body.len(), |n| at + n);
            }
            b'[' if matches!(byte(at + 1), Some(b'[' | b'=')) => return false,
            b'"' | b'\'' => {
                let Some(end) = string_end(body, at) else {
                    return false;
                };
                at = end;
                field_follows = false;
            }
            b'.' if byte(at + 1) == Some(b'.') => {
                while byte(at) == Some(b'.') {
                    at += 1;
                }
                field_follows = false;
            }
            b'.' | b'0'..=b'9' if current != b'.' || byte(at + 1).is_some_and(|b| b.is_ascii_digit()) => {
                while byte(at).is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_')) {
                    at += 1;
                }
                field_follows = false;
            }
            b'.' | b':' => {
                at += 1;
                field_follows = true;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = at;
                while byte(at).is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
                    at += 1;
                }
                let name = std::str::from_utf8(&body[start..at]).unwrap_or_default();
                let harmless = field_follows
                    || KEYWORDS.contains(&name)
                    || HARMLESS_GLOBALS.contains(&name)
                    || !is_global(name);
                if !harmless {
                    return false;
                }
                field_follows = false;
            }
            _ if current.is_ascii() => {
                at += 1;
                field_follows = false;
            }
            _ => return false,
        }
    }
    true
}

/// Where the quoted string starting at `start` ends (just after its closing quote); `None`
/// if it does not end on its line.
fn string_end(body: &[u8], start: usize) -> Option<usize> {
    let quote = body[start];
    let mut at = start + 1;
    loop {
        match *body.get(at)? {
            b'\\' => at += 2,
            b'\n' => return None,
            byte if byte == quote => return Some(at + 1),
            _ => at += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fresh interpreter's globals, as far as these tests name them.
    fn is_global(name: &str) -> bool {
        [
            "string",
            "table",
            "math",
            "loadstring",
            "rawset",
            "getmetatable",
            "setmetatable",
            "_G",
            "collectgarbage",
            "cjson",
            "coroutine",
            "bit",
        ]
        .contains(&name)
            || HARMLESS_GLOBALS.contains(&name)
    }

    #[test]
    fn the_lock_clients_scripts_leave_no_trace() {
        use crate::client::scripts;
        for script in [
            scripts::RELEASE,
            scripts::EXTEND,
            scripts::REACQUIRE,
            scripts::EXTEND_OR_SET,
            scripts::ACQUIRE_OR_REFRESH,
        ] {
            assert!(leaves_no_trace(script.as_bytes(), is_global), "{script}");
        }
        let harmless = [
            "local v = redis.call('get', KEYS[1]) -- string.x = 1\nreturn v",
            "return tostring(#ARGV) .. \"string.rep\" .. 1.5e3",
            "local t = {} t.string = 1 return t:len()",
            "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])",
        ];
        for script in harmless {
            assert!(leaves_no_trace(script.as_bytes(), is_global), "{script}");
        }
    }

    #[test]
    fn a_script_that_may_change_the_interpreter_is_caught() {
        let changing = [
            "string.x = 1",
            "loadstring('g = 1')()",
            "math.randomseed(7)",
            "rawset(_G, 'x', 1)",
            "getmetatable('').__index = nil",
            "cjson.encode_keep_buffer(false)",
            "collectgarbage('stop')",
            "local string = string string.x = 1",
            "return 1 --[[ long comment ]]",
            "return [[long string]]",
            "return 'unfinished",
            "return 'é'..é",
        ];
        for script in changing {
            assert!(!leaves_no_trace(script.as_bytes(), is_global), "{script}");
        }
    }
}
