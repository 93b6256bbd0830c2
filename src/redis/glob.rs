//! Redis's glob patterns (`stringmatchlen`), shared by KEYS, SCAN's MATCH, PSUBSCRIBE and
//! PUBSUB CHANNELS.

/// Redis's `stringmatchlen`: glob matching with `*`, `?`, `[...]` (`^` negates, `a-z`
/// ranges) and `\` escapes, byte for byte.
pub fn glob_match(pattern: &[u8], string: &[u8]) -> bool {
    if pattern == b"*" {
        return true;
    }
    glob(pattern, string, &mut false)
}

fn glob(pattern: &[u8], string: &[u8], skip_longer: &mut bool) -> bool {
    // The C code reads the NUL after the pattern; 0 stands for it.
    let at = |i: usize| pattern.get(i).copied().unwrap_or(0);
    let (mut p, mut s) = (0, 0);
    while p < pattern.len() && s < string.len() {
        match pattern[p] {
            b'*' => {
                while p < pattern.len() && at(p + 1) == b'*' {
                    p += 1;
                }
                if pattern.len() - p == 1 {
                    return true;
                }
                while s < string.len() {
                    if glob(&pattern[p + 1..], &string[s..], skip_longer) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s += 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => s += 1,
            b'[' => {
                p += 1;
                let negate = at(p) == b'^';
                if negate {
                    p += 1;
                }
                let mut matched = false;
                loop {
                    let left = pattern.len().saturating_sub(p);
                    if at(p) == b'\\' && left >= 2 {
                        p += 1;
                        matched |= at(p) == string[s];
                    } else if at(p) == b']' {
                        break;
                    } else if left == 0 {
                        p -= 1;
                        break;
                    } else if left >= 3 && at(p + 1) == b'-' {
                        let (low, high) = (at(p).min(at(p + 2)), at(p).max(at(p + 2)));
                        p += 2;
                        matched |= (low..=high).contains(&string[s]);
                    } else {
                        matched |= at(p) == string[s];
                    }
                    p += 1;
                }
                if matched == negate {
                    return false;
                }
                s += 1;
            }
            byte => {
                if byte == b'\\' && pattern.len() - p >= 2 {
                    p += 1;
                }
                if pattern[p] != string[s] {
                    return false;
                }
                s += 1;
            }
        }
        p += 1;
        if s == string.len() {
            while at(p) == b'*' {
                p += 1;
            }
            break;
        }
    }
    p >= pattern.len() && s == string.len()
}
