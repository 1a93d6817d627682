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
    let at = chrono::DateTime::parse_from_rfc3339(text).ok()?;
    u64::try_from(at.timestamp_millis())
        .ok()
        .map(Timestamp::from_millis)
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
