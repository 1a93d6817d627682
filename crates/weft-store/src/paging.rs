//! Paging, written once for both backends and every paged read: a page of a
//! log (the run event log, a session's transcript) after a sequence number,
//! a newest-first list of records, and how `after` and `limit` become SQL
//! parameters.

/// A log read in pages by sequence number, and how to tell an empty page
/// from an owner that does not exist.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Log {
    /// One page: `$1` the owner's id, `$2` the sequence number to read after,
    /// `$3` the most rows.
    pub(crate) page: &'static str,
    /// A row when the owner exists: `$1` the owner's id.
    pub(crate) owner: &'static str,
}

/// A run's event log.
pub(crate) const RUN_EVENTS: Log = Log {
    page: "SELECT body FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    owner: "SELECT 1 FROM runs WHERE run_id = $1",
};

/// A session's transcript.
pub(crate) const TRANSCRIPT: Log = Log {
    page: "SELECT seq, run_id, at, message FROM transcript WHERE session_id = $1 AND seq > $2 \
           ORDER BY seq LIMIT $3",
    owner: "SELECT 1 FROM sessions WHERE session_id = $1",
};

/// `after` as a parameter; a number past the largest one has nothing after it.
pub(crate) fn after(after: u64) -> i64 {
    i64::try_from(after).unwrap_or(i64::MAX)
}

/// A limit as a parameter; none means every row.
pub(crate) fn limit(limit: Option<u32>) -> i64 {
    limit.map_or(i64::MAX, i64::from)
}

/// A newest-first list query: `SELECT columns FROM table`, its conditions,
/// and the limit as the last parameter.
#[derive(Debug)]
pub(crate) struct ListQuery {
    sql: String,
    params: usize,
}

impl ListQuery {
    /// Every row of `table`, as `columns`.
    pub(crate) fn new(columns: &str, table: &str) -> Self {
        Self {
            sql: format!("SELECT {columns} FROM {table} WHERE 1 = 1"),
            params: 0,
        }
    }

    /// Only rows meeting `condition`, which takes no parameter.
    pub(crate) fn and(mut self, condition: &str) -> Self {
        self.sql.push_str(" AND ");
        self.sql.push_str(condition);
        self
    }

    /// Only rows whose `column` equals the next parameter.
    pub(crate) fn and_eq(mut self, column: &str) -> Self {
        self.params += 1;
        self.sql
            .push_str(&format!(" AND {column} = ${}", self.params));
        self
    }

    /// Only rows whose `column` is one of the next `count` parameters.
    pub(crate) fn and_in(mut self, column: &str, count: usize) -> Self {
        let marks: Vec<String> = (1..=count)
            .map(|i| format!("${}", self.params + i))
            .collect();
        self.params += count;
        self.sql
            .push_str(&format!(" AND {column} IN ({})", marks.join(", ")));
        self
    }

    /// Only rows whose labels hold the next parameter's key with the value
    /// after it; `extract` is the backend's expression for a label's value
    /// with `{key}` where the key's parameter goes.
    pub(crate) fn and_label(mut self, extract: &str) -> Self {
        let key = format!("${}", self.params + 1);
        self.params += 2;
        self.sql.push_str(&format!(
            " AND {} = ${}",
            extract.replace("{key}", &key),
            self.params
        ));
        self
    }

    /// Only rows whose labels hold the fixed key `key` with the value of the
    /// next parameter. The key is written into the SQL, so the expression is
    /// the one an index is built on (the tenant label's); `key` is a name
    /// of this crate's, never a caller's string.
    pub(crate) fn and_label_key(mut self, extract: &str, key: &'static str) -> Self {
        debug_assert!(
            key.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        );
        self.params += 1;
        self.sql.push_str(&format!(
            " AND {} = ${}",
            extract.replace("{key}", &format!("'{key}'")),
            self.params
        ));
        self
    }

    /// Only rows created at the next parameter's instant or later.
    pub(crate) fn and_since(mut self) -> Self {
        self.params += 1;
        self.sql
            .push_str(&format!(" AND created_at >= ${}", self.params));
        self
    }

    /// Only rows older than a cursor, newest first: the next two parameters
    /// are the cursor's creation time and id.
    pub(crate) fn and_before(mut self, id_column: &str) -> Self {
        let (at, id) = (self.params + 1, self.params + 2);
        self.params += 2;
        self.sql.push_str(&format!(
            " AND (created_at < ${at} OR (created_at = ${at} AND {id_column} < ${id}))"
        ));
        self
    }

    /// The SQL, newest first (ties broken by `id_column`), limited by the
    /// parameter after the others.
    pub(crate) fn newest_first(self, id_column: &str) -> String {
        format!(
            "{} ORDER BY created_at DESC, {id_column} DESC LIMIT ${}",
            self.sql,
            self.params + 1
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_queries_number_their_parameters_in_order() {
        let sql = ListQuery::new("a, b", "runs")
            .and_eq("session_id")
            .and_in("status", 2)
            .newest_first("run_id");
        assert_eq!(
            sql,
            "SELECT a, b FROM runs WHERE 1 = 1 AND session_id = $1 AND status IN ($2, $3) \
             ORDER BY created_at DESC, run_id DESC LIMIT $4"
        );
        let sql = ListQuery::new("a", "runs")
            .and_label("x({key})")
            .and_before("run_id")
            .newest_first("run_id");
        assert_eq!(
            sql,
            "SELECT a FROM runs WHERE 1 = 1 AND x($1) = $2 \
             AND (created_at < $3 OR (created_at = $3 AND run_id < $4)) \
             ORDER BY created_at DESC, run_id DESC LIMIT $5"
        );
        let sql = ListQuery::new("a", "sessions")
            .and("ended_at IS NULL")
            .newest_first("session_id");
        assert_eq!(
            sql,
            "SELECT a FROM sessions WHERE 1 = 1 AND ended_at IS NULL \
             ORDER BY created_at DESC, session_id DESC LIMIT $1"
        );
    }

    #[test]
    fn after_and_limit_saturate() {
        assert_eq!(after(u64::MAX), i64::MAX);
        assert_eq!(after(7), 7);
        assert_eq!(limit(None), i64::MAX);
        assert_eq!(limit(Some(3)), 3);
    }
}
