//! CPU time spent, for benchmarks that report what a unit of work costs:
//! this process's (`getrusage`) and a Redis server's (`INFO cpu`).

use std::time::Duration;

/// User plus system CPU time this process has used so far (every thread).
pub fn process() -> Duration {
    // SAFETY: `getrusage` writes only into the zeroed struct we pass it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to an owned `rusage`; RUSAGE_SELF is always valid.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A Redis server's CPU time so far (`used_cpu_user` + `used_cpu_sys` of
/// `INFO cpu`), read from the reply's text.
pub fn redis_from_info(info: &str) -> Option<Duration> {
    let field = |name: &str| -> Option<f64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?
            .trim()
            .parse()
            .ok()
    };
    let secs = field("used_cpu_user")? + field("used_cpu_sys")?;
    Duration::try_from_secs_f64(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_redis_cpu_from_info() {
        let info = "# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\n\
                    used_cpu_sys_children:9.0\r\nused_cpu_user_children:9.0\r\n";
        assert_eq!(redis_from_info(info), Some(Duration::from_millis(3750)));
        assert_eq!(redis_from_info("# CPU\r\nused_cpu_sys:x\r\n"), None);
        assert_eq!(redis_from_info(""), None);
    }

    #[test]
    fn process_cpu_grows_with_work() {
        let before = process();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(process() > before, "{x}");
    }
}
