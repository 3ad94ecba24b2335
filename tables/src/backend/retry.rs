//! How transient failures are retried and how long a request may take: the
//! [`RetryPolicy`] of the Azure backends and of the stores' writes, chosen by the user.

use std::time::Duration;

use rand::Rng as _;

use crate::error::{Error, Result};

/// How the Azure backends retry a transient failure of one service request
/// (408, 429, 500, 502, 503, 504, a connection that failed or timed out), how long
/// a request may take, and how the stores retry and settle their writes.
///
/// Reads, blob requests and table management are retried by the HTTP layer.
/// An entity write is repeated there only when it never left (the
/// connection could not be made): the store retries it with this policy on
/// every backend (memory and decorators included, see
/// [`Tables::with_retry`](crate::Tables::with_retry)) and its write token. A
/// write refused as not processed (503 `ServerBusy`, 429) is sent again after
/// the backoff, or after the wait the service asked for when that is longer
/// (Cosmos DB's `x-ms-retry-after-ms`; every retry of a read waits at least
/// as long too, and a wait that would start past the retry budget or reach
/// the deadline is not made: the error, with [`Error::retry_after`], is
/// returned); one whose answer was lost or is a 5xx that does not say "not
/// processed" (500 `OperationTimedOut`, ...) is settled by reading its row
/// back: applied, the call succeeds; not applied, it is sent again while the
/// attempts and the retry budget allow. The attempts count every failed
/// request of the write, its read-backs included; a write whose read-back
/// cannot be made within them is [`Error::OutcomeUnknown`].
///
/// The default is the behaviour of [`Tables::connect`](crate::Tables::connect):
/// 4 attempts (one and three retries), backoff from 100 ms doubling up to 1 s
/// with jitter, no retry started more than 4 s after the first attempt, no
/// overall deadline, 35 s per attempt and 2.5 s to open a connection. A
/// refusal (400, 404, 409, 412, ...) is never retried (a 404, 409 or 412 to
/// a write sent again after a lost answer is settled by a read-back).
///
/// Build one with [`RetryPolicy::builder`]; every value is checked by
/// [`RetryPolicyBuilder::build`], and a bad one is an [`Error::Config`]
/// naming the option.
///
/// ```
/// use std::time::Duration;
/// use unified_tables::RetryPolicy;
///
/// let policy = RetryPolicy::builder()
///     .attempts(6)
///     .backoff(Duration::from_millis(200), Duration::from_secs(2))
///     .deadline(Duration::from_secs(10))   // a request and its retries, at most 10 s
///     .request_timeout(Duration::from_secs(5))
///     .build()?;
/// assert_eq!(policy.attempts(), 6);
///
/// let err = RetryPolicy::builder().attempts(0).build().unwrap_err();
/// assert!(err.to_string().contains("attempts"), "{err}");
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    retry_budget: Duration,
    deadline: Option<Duration>,
    request_timeout: Duration,
    connect_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            retry_budget: Duration::from_secs(4),
            deadline: None,
            request_timeout: Duration::from_secs(35),
            connect_timeout: Duration::from_millis(2500),
        }
    }
}

impl RetryPolicy {
    /// A builder starting from the default policy.
    pub fn builder() -> RetryPolicyBuilder {
        RetryPolicyBuilder {
            policy: RetryPolicy::default(),
        }
    }

    /// No retries: every request is tried once (the timeouts stay the default).
    pub fn no_retries() -> RetryPolicy {
        RetryPolicy {
            attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// How many times a request is tried in all (1: no retry).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The pause before the first retry (doubled for each further one).
    pub fn initial_backoff(&self) -> Duration {
        self.initial_backoff
    }

    /// The longest pause between two attempts.
    pub fn max_backoff(&self) -> Duration {
        self.max_backoff
    }

    /// No retry starts once this much time has passed since the first attempt.
    pub fn retry_budget(&self) -> Duration {
        self.retry_budget
    }

    /// The hard limit on one request and its retries, if any: when it passes,
    /// the attempt in flight is abandoned and the request fails.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// How long one attempt may take, from connecting to the last byte of the answer.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// How long opening a connection may take.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The pause before retry number `retry` (1-based): exponential with
    /// "equal jitter", uniformly between half and all of
    /// `initial_backoff * 2^(retry-1)`, capped at `max_backoff`.
    pub(crate) fn delay(&self, retry: u32) -> Duration {
        let exp = self
            .initial_backoff
            .saturating_mul(1u32 << retry.saturating_sub(1).min(16))
            .min(self.max_backoff);
        let half = exp / 2;
        let jitter = rand::thread_rng().gen_range(0..=half.as_millis() as u64);
        (half + Duration::from_millis(jitter)).min(self.max_backoff)
    }

    /// After `attempts_made` attempts that failed transiently, `elapsed` since
    /// the first: the pause before the next one, or `None` to give up (no
    /// attempt left, the retry budget spent, or the pause would reach the deadline).
    pub(crate) fn next_delay(&self, attempts_made: u32, elapsed: Duration) -> Option<Duration> {
        if attempts_made >= self.attempts || elapsed >= self.retry_budget {
            return None;
        }
        let delay = self.delay(attempts_made);
        match self.deadline {
            Some(deadline) if elapsed + delay >= deadline => None,
            _ => Some(delay),
        }
    }

    /// After `attempts_made` attempts, the last of which failed with
    /// `error`, `elapsed` since the first: the pause before the next one, or
    /// `None` to give up. The pause is the backoff of [`next_delay`](Self::next_delay),
    /// and at least the wait the service asked for ([`Error::retry_after`],
    /// e.g. Cosmos DB's `x-ms-retry-after-ms`). A wait that would start the
    /// next attempt past the retry budget, or reach the deadline, gives up:
    /// the error, with the wait it names, goes to the caller.
    pub(crate) fn pause_after(&self, error: &Error, attempts_made: u32, elapsed: Duration) -> Option<Duration> {
        let backoff = self.next_delay(attempts_made, elapsed)?;
        let Some(asked) = error.retry_after().filter(|asked| *asked > backoff) else {
            return Some(backoff);
        };
        let resumes = elapsed.saturating_add(asked);
        let past_budget = resumes > self.retry_budget;
        let past_deadline = self.deadline.is_some_and(|deadline| resumes >= deadline);
        (!past_budget && !past_deadline).then_some(asked)
    }
}

/// Builds a [`RetryPolicy`]; see there for the defaults.
#[derive(Debug, Clone)]
pub struct RetryPolicyBuilder {
    policy: RetryPolicy,
}

impl RetryPolicyBuilder {
    /// How many times a request is tried in all, at least 1 (1: no retry; default 4).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.policy.attempts = attempts;
        self
    }

    /// The pause before the first retry and the longest pause (default 100 ms
    /// and 1 s). Each retry doubles the pause, with jitter.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.policy.initial_backoff = initial;
        self.policy.max_backoff = max;
        self
    }

    /// No retry starts once this much time has passed since the first attempt (default 4 s).
    pub fn retry_budget(mut self, budget: Duration) -> Self {
        self.policy.retry_budget = budget;
        self
    }

    /// A hard limit on one request and its retries (default: none). When it
    /// passes, the attempt in flight is abandoned and the request fails with
    /// [`Error::Transport`] (kind [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable));
    /// the store settles a write cut short this way by reading its row back.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.policy.deadline = Some(deadline);
        self
    }

    /// No overall deadline (the default).
    pub fn no_deadline(mut self) -> Self {
        self.policy.deadline = None;
        self
    }

    /// How long one attempt may take, from connecting to the last byte of
    /// the answer (default 35 s; the service gives up on its side at 30 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.policy.request_timeout = timeout;
        self
    }

    /// How long opening a connection may take (default 2.5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.policy.connect_timeout = timeout;
        self
    }

    /// Checks the values and returns the policy. A bad value is
    /// [`Error::Config`] naming the option and what it must be.
    pub fn build(self) -> Result<RetryPolicy> {
        let p = self.policy;
        let refuse = |option: &str, rule: &str, got: String| {
            Err(Error::config(format!("retry policy: `{option}` {rule}, got {got}")))
        };
        if p.attempts == 0 {
            return refuse("attempts", "must be at least 1 (1 means no retry)", "0".into());
        }
        if p.attempts > 100 {
            return refuse("attempts", "must be at most 100", p.attempts.to_string());
        }
        if p.initial_backoff > p.max_backoff {
            return refuse(
                "backoff",
                "needs an initial pause no longer than the longest",
                format!("{:?} and {:?}", p.initial_backoff, p.max_backoff),
            );
        }
        if p.max_backoff > Duration::from_secs(600) {
            return refuse(
                "backoff",
                "must pause at most 10 minutes",
                format!("{:?}", p.max_backoff),
            );
        }
        if p.request_timeout.is_zero() {
            return refuse("request_timeout", "must be longer than zero", "0s".into());
        }
        if p.connect_timeout.is_zero() {
            return refuse("connect_timeout", "must be longer than zero", "0s".into());
        }
        if p.connect_timeout > p.request_timeout {
            return refuse(
                "connect_timeout",
                "must not be longer than `request_timeout` (connecting is part of the request)",
                format!(
                    "{:?} with a request timeout of {:?}",
                    p.connect_timeout, p.request_timeout
                ),
            );
        }
        if p.deadline.is_some_and(|d| d.is_zero()) {
            return refuse("deadline", "must be longer than zero", "0s".into());
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_documented_policy_and_validates() {
        let p = RetryPolicy::builder().build().unwrap();
        assert_eq!(p, RetryPolicy::default());
        assert_eq!(p.attempts(), 4);
        assert_eq!(p.initial_backoff(), Duration::from_millis(100));
        assert_eq!(p.max_backoff(), Duration::from_secs(1));
        assert_eq!(p.retry_budget(), Duration::from_secs(4));
        assert_eq!(p.deadline(), None);
        assert_eq!(p.request_timeout(), Duration::from_secs(35));
        assert_eq!(p.connect_timeout(), Duration::from_millis(2500));
        assert_eq!(RetryPolicy::no_retries().attempts(), 1);
    }

    #[test]
    fn bad_values_are_refused_naming_the_option() {
        let ms = Duration::from_millis;
        let cases = [
            (RetryPolicy::builder().attempts(0), "`attempts`"),
            (RetryPolicy::builder().attempts(101), "`attempts`"),
            (RetryPolicy::builder().backoff(ms(500), ms(100)), "`backoff`"),
            (
                RetryPolicy::builder().backoff(ms(1), Duration::from_secs(3600)),
                "`backoff`",
            ),
            (
                RetryPolicy::builder().request_timeout(Duration::ZERO),
                "`request_timeout`",
            ),
            (
                RetryPolicy::builder().connect_timeout(Duration::ZERO),
                "`connect_timeout`",
            ),
            (
                RetryPolicy::builder().request_timeout(ms(100)).connect_timeout(ms(200)),
                "`connect_timeout`",
            ),
            (RetryPolicy::builder().deadline(Duration::ZERO), "`deadline`"),
        ];
        for (builder, option) in cases {
            let err = builder.build().unwrap_err();
            assert!(matches!(err, Error::Config { .. }), "{err:?}");
            assert!(err.to_string().contains(option), "{option}: {err}");
            assert!(err.is_refusal());
        }
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let p = RetryPolicy::default();
        for _ in 0..50 {
            let d1 = p.delay(1);
            assert!(
                d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100),
                "{d1:?}"
            );
            let d3 = p.delay(3);
            assert!(
                d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400),
                "{d3:?}"
            );
            assert!(p.delay(20) <= p.max_backoff());
        }
    }

    #[test]
    fn retries_stop_at_the_attempts_the_budget_or_the_deadline() {
        let p = RetryPolicy::builder().attempts(3).build().unwrap();
        assert!(p.next_delay(1, Duration::ZERO).is_some());
        assert!(p.next_delay(2, Duration::ZERO).is_some());
        assert_eq!(p.next_delay(3, Duration::ZERO), None, "three attempts in all");
        assert_eq!(
            p.next_delay(1, Duration::from_secs(4)),
            None,
            "the retry budget is spent"
        );
        let p = RetryPolicy::builder()
            .backoff(Duration::from_millis(400), Duration::from_millis(400))
            .deadline(Duration::from_secs(1))
            .build()
            .unwrap();
        assert!(p.next_delay(1, Duration::ZERO).is_some());
        assert_eq!(
            p.next_delay(1, Duration::from_millis(800)),
            None,
            "a pause of at least 200 ms would reach the deadline"
        );
    }

    #[test]
    fn a_pause_is_at_least_the_wait_the_service_asked_for_within_the_budget() {
        let ms = Duration::from_millis;
        let p = RetryPolicy::builder().backoff(ms(10), ms(20)).build().unwrap();
        let throttled = || Error::service(429, "TooManyRequests", "Request rate is large.");
        // No wait asked: the backoff.
        let pause = p.pause_after(&throttled(), 1, Duration::ZERO).unwrap();
        assert!(pause <= ms(20), "{pause:?}");
        // A wait longer than the backoff is kept.
        let asked = throttled().with_retry_after(ms(300));
        assert_eq!(p.pause_after(&asked, 1, Duration::ZERO), Some(ms(300)));
        // A wait shorter than the backoff leaves the backoff.
        let short = throttled().with_retry_after(ms(1));
        let pause = p.pause_after(&short, 1, Duration::ZERO).unwrap();
        assert!(pause >= ms(5), "{pause:?}");
        // No attempt left: no pause, whatever was asked.
        assert_eq!(p.pause_after(&asked, 4, Duration::ZERO), None);
        // A wait that would start the retry past the budget gives up.
        assert_eq!(p.pause_after(&asked, 1, ms(3800)), None);
        // A wait that would reach the deadline gives up.
        let p = RetryPolicy::builder()
            .backoff(ms(10), ms(20))
            .deadline(ms(250))
            .build()
            .unwrap();
        assert_eq!(p.pause_after(&asked, 1, Duration::ZERO), None);
        assert!(p.pause_after(&throttled(), 1, Duration::ZERO).is_some());
    }
}
