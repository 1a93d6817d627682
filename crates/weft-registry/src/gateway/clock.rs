//! Wall-clock time as RFC 3339 text, for registration timestamps.

use chrono::{DateTime, SecondsFormat, Utc};

/// Now, as RFC 3339 UTC.
pub(super) fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(i64::try_from(now.as_millis()).unwrap_or(i64::MAX))
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
fn rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::rfc3339(1_709_210_096_789),
            "2024-02-29T12:34:56.789Z"
        );
    }
}
