//! Resident memory of this process, read from `/proc/self/status` (Linux).

/// Current resident set size in KiB (`VmRSS`), if the platform reports it.
pub fn current_kib() -> Option<u64> {
    field("VmRSS:")
}

/// Peak resident set size in KiB (`VmHWM`), if the platform reports it.
pub fn peak_kib() -> Option<u64> {
    field("VmHWM:")
}

/// Resets the peak to the current resident size (Linux `clear_refs` 5).
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn field(name: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(name))?;
    line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
