//! A script's `#!lua flags=…` first line (Redis 7.0, eval.c `evalExtractShebangFlags`).
//!
//! A script without one runs in the old "compatibility" mode: the node's own state decides
//! whether a write inside it is refused. A script with one declares what it does, and the
//! node refuses the whole run up front when that does not fit (a script that may write, on
//! a replica or through EVAL_RO); `no-writes` makes every write inside it a refusal. The
//! line itself is not compiled: the script starts at its line feed, so Lua's line numbers
//! stay the user's.

/// What a script's shebang declares; [`ScriptFlags::COMPAT`] for a script without one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// No shebang: Redis 7.0's compatibility mode, which declares nothing.
    pub compat: bool,
    /// `no-writes`: the script never writes (so it may run on a replica or via EVAL_RO).
    pub no_writes: bool,
    /// `allow-oom`: the script may run when memory is over `maxmemory`.
    pub allow_oom: bool,
    /// `allow-stale`: the script may run on a replica whose master link is down.
    pub allow_stale: bool,
    /// `no-cluster`: the script refuses to run in cluster mode.
    pub no_cluster: bool,
    /// `allow-cross-slot-keys`: the script may touch keys of several slots.
    pub allow_cross_slot_keys: bool,
}

impl ScriptFlags {
    /// A script without a shebang.
    pub const COMPAT: ScriptFlags = ScriptFlags {
        compat: true,
        no_writes: false,
        allow_oom: false,
        allow_stale: false,
        no_cluster: false,
        allow_cross_slot_keys: false,
    };

    /// Sets the flag Redis names `name`; false for a name Redis does not know.
    fn set(&mut self, name: &str) -> bool {
        let flag = match name {
            "no-writes" => &mut self.no_writes,
            "allow-oom" => &mut self.allow_oom,
            "allow-stale" => &mut self.allow_stale,
            "no-cluster" => &mut self.no_cluster,
            "allow-cross-slot-keys" => &mut self.allow_cross_slot_keys,
            _ => return false,
        };
        *flag = true;
        true
    }
}

/// A script's flags and the length of its shebang line (0 without one, else up to but not
/// including its line feed), or the error Redis replies (without its `ERR ` prefix).
///
/// Redis splits the line with `sdssplitargs`, which also reads quotes (and answers "Invalid
/// engine in script shebang" to unbalanced ones); scripts' shebangs are plain words, which
/// this splits on whitespace.
pub fn parse(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::COMPAT, 0));
    }
    let Some(length) = body.iter().position(|&byte| byte == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let line = String::from_utf8_lossy(&body[..length]);
    let mut parts = line.split_ascii_whitespace();
    // The line starts with `#!`, so it has a first word.
    let engine = parts.next().unwrap_or_default();
    if engine != "#!lua" {
        return Err(format!("Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags::default();
    for part in parts {
        let Some(names) = part.strip_prefix("flags=") else {
            return Err(format!("Unknown lua shebang option: {part}"));
        };
        // `sdssplitlen` of an empty string gives no names: `flags=` declares none.
        for name in names.split(',').filter(|_| !names.is_empty()) {
            if !flags.set(name) {
                return Err(format!("Unexpected flag in script shebang: {name}"));
            }
        }
    }
    Ok((flags, length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_without_a_shebang_is_in_compatibility_mode() {
        assert_eq!(parse(b"return 1"), Ok((ScriptFlags::COMPAT, 0)));
    }

    #[test]
    fn the_shebang_declares_flags_and_keeps_the_line_feed() {
        let (flags, length) = parse(b"#!lua flags=no-writes,allow-stale\nreturn 1").unwrap();
        assert_eq!(length, "#!lua flags=no-writes,allow-stale".len());
        assert!(flags.no_writes && flags.allow_stale && !flags.compat && !flags.allow_oom);
        assert_eq!(parse(b"#!lua\nreturn 1"), Ok((ScriptFlags::default(), 5)));
        assert_eq!(parse(b"#!lua flags=\nreturn 1"), Ok((ScriptFlags::default(), 12)));
    }

    #[test]
    fn a_bad_shebang_is_refused_as_redis_words_it() {
        let error = |body: &[u8]| parse(body).unwrap_err();
        assert_eq!(error(b"#!lua"), "Invalid script shebang");
        assert_eq!(error(b"#! \n"), "Unexpected engine in script shebang: #!");
        assert_eq!(
            error(b"#!not-lua\n"),
            "Unexpected engine in script shebang: #!not-lua"
        );
        assert_eq!(
            error(b"#!lua badger=data\n"),
            "Unknown lua shebang option: badger=data"
        );
        assert_eq!(
            error(b"#!lua flags=allow-oom,what?\n"),
            "Unexpected flag in script shebang: what?"
        );
    }
}
