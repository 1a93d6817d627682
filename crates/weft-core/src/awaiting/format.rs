//! The string formats an elicitation form may ask for (MCP allows `email`,
//! `uri`, `date` and `date-time`): a check of each, by the RFCs they name
//! (RFC 5321's mailbox, RFC 3986's absolute URI, RFC 3339's `full-date` and
//! `date-time`). A format not listed here is an annotation and not checked.

/// Whether `value` is of `format`; `None` when the format is not checked.
pub(super) fn matches(format: &str, value: &str) -> Option<bool> {
    Some(match format {
        "email" => email(value),
        "uri" => uri(value),
        "date" => date(value),
        "date-time" => date_time(value),
        _ => return None,
    })
}

/// `local@domain`: a non-empty local part and a domain of non-empty
/// dot-separated labels of letters, digits and hyphens (or an address
/// literal in brackets); no spaces or control characters.
fn email(value: &str) -> bool {
    let Some((local, domain)) = value.rsplit_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && local
            .chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && c != '@');
    let domain_ok = if let Some(literal) = domain.strip_prefix('[') {
        literal.ends_with(']') && literal.len() > 1
    } else {
        !domain.is_empty()
            && domain.split('.').all(|label| {
                !label.is_empty()
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label.chars().all(|c| c.is_alphanumeric() || c == '-')
            })
    };
    local_ok && domain_ok
}

/// An absolute URI: a scheme (a letter, then letters, digits, `+`, `-`,
/// `.`), a colon, then characters a URI may hold, with `%` escapes of two
/// hex digits.
fn uri(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once(':') else {
        return false;
    };
    let mut s = scheme.chars();
    let scheme_ok = s.next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return false;
    }
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = |j: usize| bytes.get(j).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(i + 1) && hex(i + 2)) {
                return false;
            }
            i += 3;
            continue;
        }
        let allowed = b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&b);
        if !allowed {
            return false;
        }
        i += 1;
    }
    true
}

/// `YYYY-MM-DD`, a day that exists (leap years counted).
fn date(value: &str) -> bool {
    let b = value.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (digits(&b[0..4]), digits(&b[5..7]), digits(&b[8..10]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// `full-date "T" HH:MM:SS[.frac] (Z | ±HH:MM)`.
fn date_time(value: &str) -> bool {
    let Some((day, time)) = value.split_once(['T', 't']) else {
        return false;
    };
    if !date(day) {
        return false;
    }
    let (clock, offset) = match time.find(['Z', 'z', '+', '-']) {
        Some(i) => time.split_at(i),
        None => return false,
    };
    let offset_ok = match offset {
        "Z" | "z" => true,
        _ => hh_mm(&offset.as_bytes()[1..], 23),
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((hms, frac)) => (hms, Some(frac)),
        None => (clock, None),
    };
    let b = hms.as_bytes();
    let hms_ok = b.len() == 8
        && hh_mm(&b[..5], 23)
        && b[5] == b':'
        && digits(&b[6..8]).is_some_and(|s| s <= 60);
    let frac_ok = frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()));
    offset_ok && hms_ok && frac_ok
}

/// `HH:MM` with the hour at most `max_hour`.
fn hh_mm(b: &[u8], max_hour: u32) -> bool {
    b.len() == 5
        && b[2] == b':'
        && digits(&b[..2]).is_some_and(|h| h <= max_hour)
        && digits(&b[3..5]).is_some_and(|m| m <= 59)
}

/// The number ASCII digits `b` spell, if they all are digits.
fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn each_format_takes_its_own_and_refuses_the_rest() {
        let cases = [
            ("email", "ada@example.com", true),
            ("email", "ada@localhost", true),
            ("email", "ada", false),
            ("email", "@example.com", false),
            ("email", "ada@", false),
            ("email", "a da@example.com", false),
            ("email", "ada@exa..mple", false),
            ("uri", "https://example.test/a?b=c#d", true),
            ("uri", "urn:isbn:0451450523", true),
            ("uri", "mailto:ada@example.com", true),
            ("uri", "example.test/a", false),
            ("uri", "1http://x", false),
            ("uri", "https://exa mple.test", false),
            ("uri", "https://x.test/%zz", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("date", "2024-13-01", false),
            ("date", "2024-1-01", false),
            ("date", "tomorrow", false),
            ("date-time", "2024-02-29T12:30:00Z", true),
            ("date-time", "2024-02-29t12:30:00.250+02:00", true),
            ("date-time", "2024-02-29T24:00:00Z", false),
            ("date-time", "2024-02-29T12:30:00", false),
            ("date-time", "2024-02-29 12:30:00Z", false),
            ("date-time", "2024-02-29T12:30Z", false),
            ("date-time", "2024-02-29T12:30:00.+01:00", false),
        ];
        for (format, value, ok) in cases {
            assert_eq!(matches(format, value), Some(ok), "{format} {value}");
        }
        assert_eq!(matches("color", "red"), None);
    }
}
