//! Writers racing for one row: how many times a write that lost to another
//! writer is tried again, the pause before each try, and which rejections
//! say another writer got there first. Reads that find a row changing under
//! them pause the same way.

use std::time::Duration;

use rand::Rng;

use crate::error::ErrorKind;

/// Attempts of a write that reads first and loses races to other writers.
pub(crate) const RACE_ATTEMPTS: u32 = 5;

/// The first pause's ceiling after a lost race.
const BACKOFF_BASE: Duration = Duration::from_millis(4);
/// The longest pause after a lost race.
const BACKOFF_CAP: Duration = Duration::from_millis(100);

/// The pause before retry `attempt` after a lost race: capped exponential
/// backoff with full jitter, uniform in 0 to `min(100 ms, 4 ms × 2^(attempt − 1))`,
/// so writers that lost one race spread out instead of meeting again (the
/// AWS Architecture Blog's "Exponential Backoff and Jitter").
pub(crate) fn race_backoff(attempt: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1 << attempt.saturating_sub(1).min(16))
        .min(BACKOFF_CAP);
    ceiling.mul_f64(rand::thread_rng().gen_range(0.0..=1.0))
}

/// Whether a write's rejection says another writer got there first (the row
/// appeared, vanished, or changed version since it was read).
pub(crate) fn lost_race(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::NotFound | ErrorKind::AlreadyExists | ErrorKind::PreconditionFailed
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_after_lost_races_grow_to_a_cap_with_full_jitter() {
        for attempt in 1..=30 {
            let ceiling = BACKOFF_BASE.saturating_mul(1 << (attempt - 1).min(16)).min(BACKOFF_CAP);
            let pauses: Vec<Duration> = (0..200).map(|_| race_backoff(attempt)).collect();
            assert!(pauses.iter().all(|p| *p <= ceiling), "attempt {attempt}");
            // Full jitter: the pauses spread over the whole range below the ceiling.
            assert!(pauses.iter().any(|p| *p < ceiling / 4), "attempt {attempt}");
            assert!(pauses.iter().any(|p| *p > ceiling / 2), "attempt {attempt}");
        }
        assert_eq!(
            BACKOFF_BASE.saturating_mul(1 << 16).min(BACKOFF_CAP),
            BACKOFF_CAP,
            "capped"
        );
    }
}
