//! `--since` values: an RFC 3339 time, or a duration back from now
//! (`90s`, `30m`, `24h`, `7d`).

use weft_core::Timestamp;

/// The moment `text` names, `now` being the current time.
pub fn parse_since(text: &str, now: Timestamp) -> Result<Timestamp, String> {
    let text = text.trim();
    if let Some(ms) = duration_ms(text) {
        return Ok(Timestamp::from_millis(now.as_millis().saturating_sub(ms)));
    }
    rfc3339(text).ok_or_else(|| {
        format!(
            "`{text}` is neither an RFC 3339 time (2026-11-23T10:00:00Z) nor a duration (90s, 30m, 24h, 7d)"
        )
    })
}

/// `<n><unit>` with unit `ms`, `s`, `m`, `h` or `d`, in milliseconds.
fn duration_ms(text: &str) -> Option<u64> {
    let digits = text.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = text.split_at(digits);
    let n: u64 = n.parse().ok()?;
    let scale = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`, as milliseconds since the epoch.
fn rfc3339(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let end = frac.find(|c: char| !c.is_ascii_digit())?;
        let digits = &frac[..end];
        if digits.is_empty() {
            return None;
        }
        let padded: String = digits.chars().chain("000".chars()).take(3).collect();
        millis = padded.parse().ok()?;
        rest = &frac[end..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (h, m) = rest[1..].split_once(':')?;
            if h.len() != 2 || m.len() != 2 {
                return None;
            }
            sign * (h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?)
        }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3_600 + min * 60 + sec - offset_min * 60;
    let ms = secs.checked_mul(1_000)?.checked_add(millis)?;
    u64::try_from(ms).ok().map(Timestamp::from_millis)
}

/// Days from 1970-01-01 to a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rfc3339_times_and_durations_back_from_now() {
        let now = Timestamp::from_millis(1_000_000_000);
        assert_eq!(
            parse_since("24h", now).unwrap(),
            Timestamp::from_millis(1_000_000_000 - 86_400_000)
        );
        assert_eq!(parse_since("90s", now).unwrap().as_millis(), 999_910_000);
        assert_eq!(
            parse_since("1970-01-01T00:00:01Z", now)
                .unwrap()
                .as_millis(),
            1_000
        );
        assert_eq!(
            parse_since("2026-11-23T10:00:00.25+01:00", now)
                .unwrap()
                .as_millis(),
            1_795_424_400_250
        );
        assert_eq!(
            parse_since("2000-03-01T00:00:00Z", now)
                .unwrap()
                .as_millis(),
            951_868_800_000
        );
        for bad in [
            "",
            "24",
            "3w",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-11-23T10:00:00",
        ] {
            assert!(parse_since(bad, now).is_err(), "{bad}");
        }
    }
}
