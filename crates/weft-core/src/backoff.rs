//! How long to wait before trying again: one exponential backoff for every
//! retry and reconnection in weft (provider requests, store operations,
//! registry connections, MCP server restarts). It only computes delays
//! (backon's exponential schedule); the caller sleeps, on its own clock.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// An exponential backoff: `first` before the first retry, doubled for each
/// further one up to `max`. With jitter, each delay is drawn from the upper
/// half of its step (`[d/2, d)`), so retries of many clients spread out and
/// no delay exceeds `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffPolicy {
    /// The delay before the first retry.
    pub first: Duration,
    /// The longest delay.
    pub max: Duration,
    /// Whether delays are drawn at random from the upper half of each step.
    pub jitter: bool,
}

impl BackoffPolicy {
    /// A backoff from `first` to `max`, without jitter.
    pub const fn new(first: Duration, max: Duration) -> Self {
        Self {
            first,
            max,
            jitter: false,
        }
    }

    /// The same backoff with jitter.
    pub const fn jittered(mut self) -> Self {
        self.jitter = true;
        self
    }

    /// The delay before retry number `attempt` (0-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let mut delays = self.start();
        for _ in 0..attempt.min(64) {
            delays.next_delay();
        }
        delays.next_delay()
    }

    /// The delays of a sequence of retries, from the first.
    pub fn start(&self) -> Backoff {
        Backoff {
            policy: *self,
            delays: self.builder().build(),
        }
    }

    fn builder(&self) -> ExponentialBuilder {
        let (first, max) = if self.jitter {
            // Jitter adds up to the delay itself: halve both ends so a
            // delay lands in [d/2, d).
            (self.first / 2, self.max / 2)
        } else {
            (self.first, self.max)
        };
        let builder = ExponentialBuilder::new()
            .with_factor(2.0)
            .with_min_delay(first)
            .with_max_delay(max)
            .without_max_times();
        if self.jitter {
            builder.with_jitter()
        } else {
            builder
        }
    }
}

/// The delays of one sequence of retries; [`reset`](Self::reset) after a
/// success starts again from the first.
#[derive(Debug)]
pub struct Backoff {
    policy: BackoffPolicy,
    delays: ExponentialBackoff,
}

impl Backoff {
    /// The delay before the next retry, in whole microseconds (the
    /// schedule is computed in `f32`: 40 ms, not 39.999999 ms).
    pub fn next_delay(&mut self) -> Duration {
        let d = self.delays.next().unwrap_or(self.policy.max);
        let micros = (d.as_secs_f64() * 1e6).round();
        Duration::from_micros(micros as u64).min(self.policy.max)
    }

    /// Starts again from the first delay (after a success).
    pub fn reset(&mut self) {
        self.delays = self.policy.builder().build();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn ms(d: Duration) -> u128 {
        assert_eq!(d.as_micros() % 1_000, 0, "{d:?} is not whole milliseconds");
        d.as_millis()
    }

    #[test]
    fn delays_double_up_to_the_ceiling_and_start_again_after_a_reset() {
        let policy = BackoffPolicy::new(20 * MS, 100 * MS);
        let mut b = policy.start();
        let got: Vec<u128> = (0..5).map(|_| ms(b.next_delay())).collect();
        assert_eq!(got, [20, 40, 80, 100, 100]);
        b.reset();
        assert_eq!(ms(b.next_delay()), 20);
        assert_eq!(ms(policy.delay(0)), 20);
        assert_eq!(ms(policy.delay(2)), 80);
        assert_eq!(ms(policy.delay(1_000)), 100);
    }

    #[test]
    fn jittered_delays_stay_in_the_upper_half_of_their_step_and_under_the_ceiling() {
        let policy = BackoffPolicy::new(500 * MS, 8_000 * MS).jittered();
        for _ in 0..200 {
            for (attempt, step) in [(0, 500u32), (1, 1_000), (3, 4_000), (4, 8_000), (9, 8_000)] {
                let d = policy.delay(attempt);
                let step = step * MS;
                assert!(d >= step / 2 && d <= step, "attempt {attempt}: {d:?}");
            }
        }
    }
}
