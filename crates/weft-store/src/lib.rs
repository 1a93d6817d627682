//! weft-store: durable run, session and memory stores (SQLite, PostgreSQL).
