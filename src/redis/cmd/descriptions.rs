//! Reading redis-server 7.0.15's own command descriptions (its RESP3 replies to `COMMAND
//! INFO` and `COMMAND DOCS`, kept in a file): the entries, what ACL checks need of them, and
//! RESP3 turned into RESP2. A leaf: COMMAND, the connection and ACL read it without reading
//! each other.

/// redis-server 7.0.15's RESP3 replies to `COMMAND INFO` and then `COMMAND DOCS`, each
/// asked for every command of the tables.
pub(super) const DESCRIPTIONS: &[u8] = include_bytes!("redis-7.0-commands.resp3");

/// The name a COMMAND INFO entry describes (its first element).
pub(super) fn entry_name(entry: &[u8]) -> Option<&[u8]> {
    let (start, end) = *children(entry, 0)?.first()?;
    bulk_text(&entry[start..end])
}

/// What ACL checks read of the Redis 7.0 command `name` (lower-case), if Redis has one: its
/// categories (`@write`…) and its keys' positions (COMMAND INFO's first key, last key and
/// step: 0 for none, a negative last counted from the end).
pub(crate) fn acl_facts(name: &[u8]) -> Option<(Vec<&'static [u8]>, [i64; 3])> {
    const FIRST_KEY: usize = 3;
    let entry = children(DESCRIPTIONS, 0)?
        .into_iter()
        .map(|(start, end)| &DESCRIPTIONS[start..end])
        .find(|entry| entry_name(entry) == Some(name))?;
    let fields = children(entry, 0)?;
    let number = |at: usize| {
        fields
            .get(at)
            .and_then(|(start, _)| header(entry, *start))
            .map(|h| h.1)
    };
    let keys = [number(FIRST_KEY)?, number(FIRST_KEY + 1)?, number(FIRST_KEY + 2)?];
    Some((acl_categories(entry), keys))
}

/// The ACL categories of a COMMAND INFO entry (its seventh element), as `@name` words.
pub(super) fn acl_categories(entry: &[u8]) -> Vec<&[u8]> {
    const CATEGORIES: usize = 6;
    let Some((start, _)) = children(entry, 0).and_then(|c| c.get(CATEGORIES).copied()) else {
        return vec![];
    };
    children(entry, start)
        .unwrap_or_default()
        .into_iter()
        .map(|(s, e)| &entry[s..e])
        .map(|simple| simple.strip_suffix(b"\r\n").unwrap_or(simple))
        .map(|simple| simple.strip_prefix(b"+").unwrap_or(simple))
        .collect()
}

/// The text of a bulk string element (`$n\r\ntext\r\n`).
pub(super) fn bulk_text(element: &[u8]) -> Option<&[u8]> {
    let (kind, _, body) = header(element, 0)?;
    (kind == b'$').then(|| &element[body..element.len().saturating_sub(2)])
}

/// An element's header line at `start`: its type byte, its number (a length, a count or an
/// integer; 0 when it has none), and where the line ends.
fn header(bytes: &[u8], start: usize) -> Option<(u8, i64, usize)> {
    let kind = *bytes.get(start)?;
    let line_end = start + bytes[start..].windows(2).position(|w| w == b"\r\n")?;
    let number = std::str::from_utf8(&bytes[start + 1..line_end])
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0);
    Some((kind, number, line_end + 2))
}

/// Where the RESP3 element that starts at `start` ends.
pub fn element_end(bytes: &[u8], start: usize) -> Option<usize> {
    let (kind, number, body) = header(bytes, start)?;
    match kind {
        b'$' | b'=' | b'!' if number >= 0 => {
            let end = body + usize::try_from(number).ok()? + 2;
            (end <= bytes.len()).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let mut end = body;
            for _ in 0..aggregate_len(kind, number) {
                end = element_end(bytes, end)?;
            }
            Some(end)
        }
        _ => Some(body),
    }
}

/// How many elements an aggregate header counts: a map's pairs count twice.
fn aggregate_len(kind: u8, number: i64) -> usize {
    let count = usize::try_from(number).unwrap_or(0);
    if matches!(kind, b'%' | b'|') {
        count * 2
    } else {
        count
    }
}

/// The spans of the elements of the aggregate that starts at `start` (a map's keys and
/// values in turn).
pub(super) fn children(bytes: &[u8], start: usize) -> Option<Vec<(usize, usize)>> {
    let (kind, number, mut at) = header(bytes, start)?;
    if !matches!(kind, b'*' | b'~' | b'>' | b'%' | b'|') {
        return None;
    }
    let mut spans = Vec::new();
    for _ in 0..aggregate_len(kind, number) {
        let end = element_end(bytes, at)?;
        spans.push((at, end));
        at = end;
    }
    Some(spans)
}

/// RESP3 bytes rewritten as Redis writes the same reply in RESP2: maps and sets become
/// arrays (a map's keys and values in turn), `_` becomes `$-1`, doubles bulk strings and
/// booleans integers.
pub fn resp3_to_resp2(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some((kind, number, body)) = header(bytes, at) {
        let line = &bytes[at + 1..body - 2];
        match kind {
            b'%' => out.extend(format!("*{}\r\n", number * 2).as_bytes()),
            b'~' => out.extend(format!("*{number}\r\n").as_bytes()),
            b'_' => out.extend(b"$-1\r\n"),
            b',' => {
                out.extend(format!("${}\r\n{}\r\n", line.len(), String::from_utf8_lossy(line)).as_bytes())
            }
            b'#' => out.extend(if line == b"t" { b":1\r\n" } else { b":0\r\n" }),
            b'$' if number >= 0 => {
                let end = body + number as usize + 2;
                out.extend(&bytes[at..end.min(bytes.len())]);
                at = end;
                continue;
            }
            _ => out.extend(&bytes[at..body]),
        }
        at = body;
    }
    out
}
