//! Stream commands, as far as Redis's tests of scripts reach: XADD, XLEN, XRANGE, XGROUP
//! CREATE, XREAD and XREADGROUP (t_stream.c).
//!
//! Not modelled: trimming (XADD's MAXLEN/MINID), XDEL, XACK, XCLAIM, XPENDING, XINFO, the
//! other XGROUP subcommands, and blocking: a script's BLOCK is refused as Redis refuses
//! it; a client's BLOCK is served at once when there is something to read, and refused
//! (an error saying so) when it would wait.

use super::error::ReplyError;
use super::spec::{Args, Flags, Handler, Spec, parse_int};
use crate::redis::Frame;
use crate::redis::connection::Reply;
use crate::redis::db::{Db, Fields, Group, Stream, StreamId, Value, wrong_type};

/// The stream commands.
pub(super) const fn commands<C: From<Xread>>() -> [Spec<C>; 6] {
    [
        Spec {
            name: "xadd",
            arity: -5,
            flags: Flags::WRITE_DENYOOM,
            summary: "add an entry (ID `*` or given; no trimming): its ID",
            handler: Handler::Keyspace(xadd),
        },
        Spec {
            name: "xlen",
            arity: 2,
            flags: Flags::READ,
            summary: "how many entries",
            handler: Handler::Keyspace(xlen),
        },
        Spec {
            name: "xrange",
            arity: -4,
            flags: Flags::READ,
            summary: "the entries between two IDs (`-`, `+`), COUNT of them",
            handler: Handler::Keyspace(xrange),
        },
        Spec {
            name: "xgroup",
            arity: -2,
            // Redis flags the subcommands, not the container: a replica does not refuse
            // XGROUP CREATE here (subcommand flags are not modelled).
            flags: Flags::READ,
            summary: "CREATE a consumer group (MKSTREAM); no other subcommand",
            handler: Handler::Keyspace(xgroup),
        },
        Spec {
            name: "xread",
            arity: -4,
            flags: Flags::READ,
            summary: "entries after IDs (`$`: after the last); BLOCK only when something is there",
            handler: Handler::Parse(|args| Ok(C::from(Xread::parse(args, false)?))),
        },
        Spec {
            name: "xreadgroup",
            arity: -7,
            flags: Flags::WRITE,
            summary: "a group's new entries (`>`) or a consumer's pending ones",
            handler: Handler::Parse(|args| Ok(C::from(Xread::parse(args, true)?))),
        },
    ]
}

fn invalid_id() -> ReplyError {
    ReplyError("ERR Invalid stream ID specified as stream command argument".into())
}

/// An ID argument `ms-seq` or `ms` (whose sequence is `missing_seq`), as
/// `streamGenericParseIDOrReply` reads it strictly.
fn parse_id(word: &[u8], missing_seq: u64) -> Result<StreamId, ReplyError> {
    let text = std::str::from_utf8(word).map_err(|_| invalid_id())?;
    let number = |part: &str| part.parse::<u64>().ok().filter(|_| !part.starts_with('+'));
    match text.split_once('-') {
        Some((ms, seq)) => Ok(StreamId {
            ms: number(ms).ok_or_else(invalid_id)?,
            seq: number(seq).ok_or_else(invalid_id)?,
        }),
        None => Ok(StreamId {
            ms: number(text).ok_or_else(invalid_id)?,
            seq: missing_seq,
        }),
    }
}

fn read_stream<'a>(db: &'a mut Db, key: &[u8], now_ms: u64) -> Result<Option<&'a Stream>, ReplyError> {
    db.read::<Stream>(key, now_ms)
}

fn xadd(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let mut words = args.rest();
    let mut create = true;
    if words
        .first()
        .is_some_and(|w| w.eq_ignore_ascii_case(b"nomkstream"))
    {
        create = false;
        words.remove(0);
    }
    if words
        .first()
        .is_some_and(|w| w.eq_ignore_ascii_case(b"maxlen") || w.eq_ignore_ascii_case(b"minid"))
    {
        return Err(ReplyError(
            "ERR XADD trimming (MAXLEN, MINID) is not modelled by locksim".into(),
        ));
    }
    let Some((id, pairs)) = words.split_first() else {
        return Err(ReplyError::wrong_arity("xadd"));
    };
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(ReplyError::wrong_arity("xadd"));
    }
    let asked = match id.as_slice() {
        b"*" => None,
        id => Some(parse_id(id, 0)?),
    };
    if asked == Some(StreamId::default()) {
        return Err(ReplyError(
            "ERR The ID specified in XADD must be greater than 0-0".into(),
        ));
    }
    let Some(stream) = db.write::<Stream>(&key, create, now_ms)? else {
        return Ok(Frame::Null.into());
    };
    let id = match asked {
        Some(id) if id <= stream.last_id => {
            return Err(ReplyError(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item".into(),
            ));
        }
        Some(id) => id,
        None if now_ms > stream.last_id.ms => StreamId { ms: now_ms, seq: 0 },
        None => stream.last_id.next().ok_or_else(|| {
            ReplyError("ERR The stream has exhausted the last possible ID, unable to add more items".into())
        })?,
    };
    let fields: Fields = pairs
        .chunks(2)
        .map(|pair| (pair[0].clone(), pair[1].clone()))
        .collect();
    stream.entries.insert(id, fields);
    stream.last_id = id;
    Ok(Frame::BulkString(id.text()).into())
}

fn xlen(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let len = read_stream(db, &key, now_ms)?.map_or(0, |stream| stream.entries.len());
    Ok(Frame::Integer(len as i64).into())
}

/// An entry as replies write it: `[id, [field, value, …]]`.
fn entry_frame(id: StreamId, fields: &Fields) -> Frame {
    let flat = fields
        .iter()
        .flat_map(|(f, v)| [Frame::BulkString(f.clone()), Frame::BulkString(v.clone())]);
    Frame::Array(vec![Frame::BulkString(id.text()), Frame::Array(flat.collect())])
}

fn xrange(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let key = args.next_bytes()?;
    let start = match args.next_bytes()?.as_slice() {
        b"-" => StreamId::default(),
        word => parse_id(word, 0)?,
    };
    let end = match args.next_bytes()?.as_slice() {
        b"+" => StreamId {
            ms: u64::MAX,
            seq: u64::MAX,
        },
        word => parse_id(word, u64::MAX)?,
    };
    let count = match args.rest().as_slice() {
        [] => None,
        [word, count] if word.eq_ignore_ascii_case(b"count") => Some(parse_int(count)?.max(0) as usize),
        _ => return Err(ReplyError::syntax()),
    };
    let Some(stream) = read_stream(db, &key, now_ms)? else {
        return Ok(Frame::Array(Vec::new()).into());
    };
    if start > end {
        return Ok(Frame::Array(Vec::new()).into());
    }
    let entries = stream
        .entries
        .range(start..=end)
        .take(count.unwrap_or(usize::MAX));
    Ok(Frame::Array(entries.map(|(id, fields)| entry_frame(*id, fields)).collect()).into())
}

/// XGROUP CREATE key group id|$ \[MKSTREAM\].
fn xgroup(args: &mut Args, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
    let subcommand = args.next_bytes()?;
    if !subcommand.eq_ignore_ascii_case(b"create") {
        return Err(ReplyError(format!(
            "ERR unknown subcommand '{}'. Try XGROUP HELP.",
            String::from_utf8_lossy(&subcommand)
        )));
    }
    let words = args.rest();
    let (key, group, id, options) = match words.as_slice() {
        [key, group, id, options @ ..] => (key, group, id, options),
        _ => return Err(ReplyError::wrong_arity("xgroup|create")),
    };
    let mkstream = match options {
        [] => false,
        [option] if option.eq_ignore_ascii_case(b"mkstream") => true,
        _ => return Err(ReplyError::syntax()),
    };
    let Some(stream) = db.write::<Stream>(key, mkstream, now_ms)? else {
        return Err(ReplyError(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want \
             to use the MKSTREAM option to create an empty stream automatically."
                .into(),
        ));
    };
    let last_delivered = match id.as_slice() {
        b"$" => stream.last_id,
        id => parse_id(id, 0)?,
    };
    if stream.groups.contains_key(group) {
        return Err(ReplyError("BUSYGROUP Consumer Group name already exists".into()));
    }
    let group_state = Group {
        last_delivered,
        ..Group::default()
    };
    stream.groups.insert(group.clone(), group_state);
    Ok(super::ok().into())
}

/// Where a read starts in one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadFrom {
    /// After this ID.
    After(StreamId),
    /// `$`: after the stream's last ID as the read starts.
    Last,
    /// `>`: the group's entries never delivered.
    New,
}

/// `XREAD [COUNT n] [BLOCK ms] STREAMS key… id…` and `XREADGROUP GROUP group consumer
/// [COUNT n] [BLOCK ms] [NOACK] STREAMS key… id…`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xread {
    /// The words after the command's name, read as it runs (Redis reports their errors then).
    words: Vec<Vec<u8>>,
    grouped: bool,
    /// Called by a script, where BLOCK is refused.
    pub(crate) from_script: bool,
}

/// XREAD's options, read.
struct ReadOptions {
    count: usize,
    block: bool,
    group: Option<(Vec<u8>, Vec<u8>)>,
    noack: bool,
    streams: Vec<(Vec<u8>, ReadFrom)>,
}

impl Xread {
    fn parse(args: &mut Args, grouped: bool) -> Result<Self, ReplyError> {
        Ok(Xread {
            words: args.rest(),
            grouped,
            from_script: false,
        })
    }

    fn name(&self) -> &'static str {
        if self.grouped { "xreadgroup" } else { "xread" }
    }

    /// The options, as `xreadCommand` reads them, in its order of errors.
    fn options(&self) -> Result<ReadOptions, ReplyError> {
        let words = &self.words;
        let mut options = ReadOptions {
            count: 0,
            block: false,
            group: None,
            noack: false,
            streams: Vec::new(),
        };
        let mut at = 0;
        let mut streams_at = None;
        while let Some(word) = words.get(at) {
            let more = words.len() - at - 1;
            match word.to_ascii_lowercase().as_slice() {
                b"block" if more > 0 => {
                    if self.from_script {
                        return Err(ReplyError(format!(
                            "ERR {} command is not allowed with BLOCK option from scripts",
                            self.name()
                        )));
                    }
                    let timeout = parse_int(&words[at + 1])?;
                    if timeout < 0 {
                        return Err(ReplyError("ERR timeout is negative".into()));
                    }
                    options.block = true;
                    at += 1;
                }
                b"count" if more > 0 => {
                    options.count = parse_int(&words[at + 1])?.max(0) as usize;
                    at += 1;
                }
                b"streams" if more > 0 => {
                    if !(words.len() - at - 1).is_multiple_of(2) {
                        return Err(ReplyError(
                            "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be \
                             specified."
                                .into(),
                        ));
                    }
                    streams_at = Some(at + 1);
                    break;
                }
                b"group" if more >= 2 => {
                    if !self.grouped {
                        return Err(ReplyError(
                            "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
                                .into(),
                        ));
                    }
                    options.group = Some((words[at + 1].clone(), words[at + 2].clone()));
                    at += 2;
                }
                b"noack" => {
                    if !self.grouped {
                        return Err(ReplyError(
                            "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
                                .into(),
                        ));
                    }
                    options.noack = true;
                }
                _ => return Err(ReplyError::syntax()),
            }
            at += 1;
        }
        let streams_at = streams_at.ok_or_else(ReplyError::syntax)?;
        if self.grouped && options.group.is_none() {
            return Err(ReplyError("ERR Missing GROUP option for XREADGROUP".into()));
        }
        let listed = &words[streams_at..];
        let (keys, ids) = listed.split_at(listed.len() / 2);
        for (key, id) in keys.iter().zip(ids) {
            let from = match id.as_slice() {
                b"$" if self.grouped => {
                    return Err(ReplyError(
                        "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the \
                         history of this consumer by specifying a proper ID, or use the > ID to get new \
                         messages. The $ ID would just return an empty result set."
                            .into(),
                    ));
                }
                b"$" => ReadFrom::Last,
                b">" if !self.grouped => {
                    return Err(ReplyError(
                        "ERR The > ID can be specified only when calling XREADGROUP using the GROUP \
                         <group> <consumer> option."
                            .into(),
                    ));
                }
                b">" => ReadFrom::New,
                id => ReadFrom::After(parse_id(id, 0)?),
            };
            options.streams.push((key.clone(), from));
        }
        Ok(options)
    }

    pub(crate) fn apply(self, db: &mut Db, now_ms: u64) -> Reply {
        self.run(db, now_ms)
            .unwrap_or_else(|error| Frame::from(error).into())
    }

    fn run(&self, db: &mut Db, now_ms: u64) -> Result<Reply, ReplyError> {
        let options = self.options()?;
        // Every key's type and group is checked before anything is read.
        for (key, _) in &options.streams {
            let stream = match db.get(key, now_ms).map(|entry| &entry.value) {
                None => None,
                Some(Value::Stream(stream)) => Some(stream),
                Some(_) => return Err(wrong_type()),
            };
            if let Some((group, _)) = &options.group
                && stream.is_none_or(|stream| !stream.groups.contains_key(group))
            {
                return Err(ReplyError(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(group)
                )));
            }
        }
        let mut served = Vec::new();
        for (key, from) in &options.streams {
            let Some(stream) = db.write::<Stream>(key, false, now_ms)? else {
                continue;
            };
            let entries = match (&options.group, *from) {
                (None, ReadFrom::Last) => continue,
                (None, ReadFrom::After(after)) => entry_frames(stream.after(after, options.count)),
                (Some(_), ReadFrom::Last) => continue,
                (Some((name, consumer)), ReadFrom::New) => {
                    let Some(group) = stream.groups.get(name) else {
                        continue;
                    };
                    let fresh: Vec<(StreamId, Fields)> = stream
                        .after(group.last_delivered, options.count)
                        .into_iter()
                        .map(|(id, fields)| (id, fields.clone()))
                        .collect();
                    if fresh.is_empty() {
                        continue;
                    }
                    if let Some(group) = stream.groups.get_mut(name) {
                        deliver(group, consumer, &fresh, options.noack);
                    }
                    fresh
                        .iter()
                        .map(|(id, fields)| entry_frame(*id, fields))
                        .collect()
                }
                (Some((group, consumer)), ReadFrom::After(after)) => {
                    let Some(group) = stream.groups.get_mut(group) else {
                        continue;
                    };
                    remember(group, consumer);
                    let limit = if options.count == 0 {
                        usize::MAX
                    } else {
                        options.count
                    };
                    let pending = group.pending.range(after.next().unwrap_or(after)..);
                    let history = pending.filter(|(_, owner)| *owner == consumer).take(limit);
                    history
                        .map(|(id, _)| match stream.entries.get(id) {
                            Some(fields) => entry_frame(*id, fields),
                            None => Frame::Array(vec![Frame::BulkString(id.text()), Frame::Null]),
                        })
                        .collect()
                }
                (None, ReadFrom::New) => continue,
            };
            if entries.is_empty() && options.group.is_none() {
                continue;
            }
            served.push((Frame::BulkString(key.clone()), Frame::Array(entries)));
        }
        if !served.is_empty() {
            return Ok(Reply::Keyed(served));
        }
        if options.block {
            return Err(ReplyError(format!(
                "ERR {} BLOCK with nothing to read is not modelled by locksim (Redis would wait)",
                self.name().to_ascii_uppercase()
            )));
        }
        Ok(Reply::NullArray)
    }
}

fn entry_frames(entries: Vec<(StreamId, &Fields)>) -> Vec<Frame> {
    entries
        .into_iter()
        .map(|(id, fields)| entry_frame(id, fields))
        .collect()
}

/// Adds `consumer` to the group's consumers if it is new.
fn remember(group: &mut Group, consumer: &[u8]) {
    if !group.consumers.iter().any(|c| c == consumer) {
        group.consumers.push(consumer.to_vec());
    }
}

/// Delivers `entries` to `consumer`: the group's last delivered ID moves past them, and
/// each is pending for the consumer unless NOACK.
fn deliver(group: &mut Group, consumer: &[u8], entries: &[(StreamId, Fields)], noack: bool) {
    remember(group, consumer);
    for (id, _) in entries {
        group.last_delivered = *id;
        if !noack {
            group.pending.insert(*id, consumer.to_vec());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_read_strictly() {
        assert_eq!(parse_id(b"5-3", 0), Ok(StreamId { ms: 5, seq: 3 }));
        assert_eq!(parse_id(b"5", 7), Ok(StreamId { ms: 5, seq: 7 }));
        assert_eq!(parse_id(b"+5", 0), Err(invalid_id()));
        assert_eq!(parse_id(b"5-x", 0), Err(invalid_id()));
    }
}
