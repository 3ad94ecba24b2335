//! Options checked when they are built: a bad value is an
//! [`Error::Config`] from the constructor, naming the option, never a
//! failure at first use.

use std::time::Duration;

use crate::codec::OversizedCellPolicy;
use crate::error::{Error, Result};
use crate::service::{check_container_name, MAX_TRANSACTION_BYTES};

/// Where large values and files go when they leave the table. Built with
/// [`BlobOptions::new`] and its `with_*` methods, which check each value
/// when it is set.
#[derive(Debug, Clone)]
#[doc = include_str!("../docs/large_values.md")]
pub struct BlobOptions {
    /// The container (default [`layout::DEFAULT_CONTAINER`](crate::layout::DEFAULT_CONTAINER), `unified-tables-values`).
    pub(crate) container: String,
    /// Encoded size above which a large value goes to a blob (default 3,145,728 bytes).
    pub(crate) threshold_bytes: usize,
    /// How old a released blob must be before a replace or delete removes it.
    pub(crate) cleanup_grace: std::time::Duration,
}

fn invalid(option: &str, reason: String) -> Error {
    Error::config(format!("{option}: {reason}"))
}

impl BlobOptions {
    /// The default offload threshold: values over 3,145,728 encoded bytes go to a blob.
    pub const DEFAULT_THRESHOLD_BYTES: usize = 3_145_728;
    /// The default cleanup grace: 5 minutes.
    pub const DEFAULT_CLEANUP_GRACE: Duration = Duration::from_secs(300);

    /// The defaults: container `unified-tables-values`, threshold 3,145,728
    /// bytes, cleanup grace 5 minutes. The same as `BlobOptions::default()`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use unified_tables::BlobOptions;
    ///
    /// let options = BlobOptions::new()
    ///     .with_container("orders-values")?
    ///     .with_threshold_bytes(1 << 20)?
    ///     .with_cleanup_grace(Duration::from_secs(60));
    /// assert_eq!(options.container(), "orders-values");
    ///
    /// // A bad value is refused when the options are built, naming the option.
    /// let err = BlobOptions::new().with_container("Orders_Values").unwrap_err();
    /// assert!(err.to_string().contains("BlobOptions::container"), "{err}");
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    pub fn new() -> BlobOptions {
        BlobOptions {
            container: crate::layout::DEFAULT_CONTAINER.to_owned(),
            threshold_bytes: Self::DEFAULT_THRESHOLD_BYTES,
            cleanup_grace: Self::DEFAULT_CLEANUP_GRACE,
        }
    }

    /// The container large values and files go to. It must follow the blob
    /// service's container rules (3–63 lower-case letters, digits and single
    /// dashes, starting and ending with a letter or digit), or this is
    /// [`Error::Config`] naming `BlobOptions::container`. The container is
    /// the library's: do not put other blobs in it.
    pub fn with_container(mut self, name: impl Into<String>) -> Result<BlobOptions> {
        let name = name.into();
        if check_container_name(&name).is_err() {
            return Err(invalid(
                "BlobOptions::container",
                format!("`{name}` is not a container name: use 3-63 lower-case letters, digits and single dashes, starting and ending with a letter or digit"),
            ));
        }
        self.container = name;
        Ok(self)
    }

    /// The encoded size above which a `#[table(split)]` value goes to a blob
    /// instead of split cells and continuation rows. At most 4,194,304
    /// (4 MiB, one entity-group transaction): a larger value never fits the
    /// rows of one transaction and always goes to a blob, so a higher
    /// threshold could never be reached and is [`Error::Config`] naming
    /// `BlobOptions::threshold_bytes`. 0 sends every value that does not fit
    /// one cell to a blob.
    pub fn with_threshold_bytes(mut self, bytes: usize) -> Result<BlobOptions> {
        if bytes > MAX_TRANSACTION_BYTES {
            return Err(invalid(
                "BlobOptions::threshold_bytes",
                format!("{bytes} is above {MAX_TRANSACTION_BYTES} bytes (4 MiB): a value that large never fits the rows of one transaction and always goes to a blob; choose at most {MAX_TRANSACTION_BYTES}"),
            ));
        }
        self.threshold_bytes = bytes;
        Ok(self)
    }

    /// How old a released blob must be, on the blob service's clock, before
    /// a replace or delete removes it; younger ones are left to the orphan
    /// sweep. `Duration::ZERO` removes them at once (the clock has a
    /// one-second resolution).
    pub fn with_cleanup_grace(mut self, grace: Duration) -> BlobOptions {
        self.cleanup_grace = grace;
        self
    }

    /// The container.
    pub fn container(&self) -> &str {
        &self.container
    }

    /// The offload threshold, in encoded bytes.
    pub fn threshold_bytes(&self) -> usize {
        self.threshold_bytes
    }

    /// The cleanup grace.
    pub fn cleanup_grace(&self) -> Duration {
        self.cleanup_grace
    }
}

impl Default for BlobOptions {
    fn default() -> Self {
        BlobOptions::new()
    }
}

/// How many attempts [`Store::mutate`](crate::Store::mutate) and the other
/// compare-and-swap verbs make before they report a conflict: 1 to 1,000
/// (default 3). The pause before attempt `n + 1` is random, from 0 up to
/// `4 ms × 2^(n − 1)`, capped at 100 ms (capped exponential backoff with full
/// jitter), so 1,000 attempts pause at most about 100 s in total; and no
/// pause is taken that would end past
/// [`StoreOptions::mutate_budget`](crate::StoreOptions::mutate_budget)
/// (default 4 s) after the call began, whatever attempts are left.
///
/// ```
/// use unified_tables::{MutateAttempts, StoreOptions};
///
/// let options = StoreOptions { mutate_attempts: MutateAttempts::new(10)?, ..StoreOptions::default() };
/// assert_eq!(options.mutate_attempts.get(), 10);
/// assert!(MutateAttempts::new(0).unwrap_err().to_string().contains("StoreOptions::mutate_attempts"));
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MutateAttempts(u32);

impl MutateAttempts {
    /// The most attempts allowed.
    pub const MAX: u32 = 1_000;

    /// `attempts` attempts, or [`Error::Config`] naming
    /// `StoreOptions::mutate_attempts` when it is 0 or above 1,000.
    pub fn new(attempts: u32) -> Result<MutateAttempts> {
        match attempts {
            0 => Err(invalid(
                "StoreOptions::mutate_attempts",
                "0 attempts would never write: use at least 1".to_owned(),
            )),
            n if n > Self::MAX => Err(invalid(
                "StoreOptions::mutate_attempts",
                format!(
                    "{n} is above {}: use at most {} (and StoreOptions::mutate_budget to bound the time a call spends losing races)",
                    Self::MAX,
                    Self::MAX
                ),
            )),
            n => Ok(MutateAttempts(n)),
        }
    }

    /// The number of attempts.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for MutateAttempts {
    fn default() -> Self {
        MutateAttempts(3)
    }
}

impl TryFrom<u32> for MutateAttempts {
    type Error = Error;

    fn try_from(attempts: u32) -> Result<MutateAttempts> {
        MutateAttempts::new(attempts)
    }
}

/// When [`Store::sweep_forever`](crate::Store::sweep_forever) runs and what
/// it deletes: every `interval`, the orphan blobs last modified more than
/// `older_than` ago.
///
/// ```
/// use std::time::Duration;
/// use unified_tables::SweepSchedule;
///
/// let hourly = SweepSchedule::new(Duration::from_secs(3600), Duration::from_secs(3600))?;
/// assert_eq!(hourly.interval(), Duration::from_secs(3600));
/// let err = SweepSchedule::new(Duration::ZERO, Duration::from_secs(3600)).unwrap_err();
/// assert!(err.to_string().contains("interval"), "{err}");
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepSchedule {
    interval: Duration,
    older_than: Duration,
}

impl SweepSchedule {
    /// The shortest interval: the blob service's clock resolution.
    pub const MIN_INTERVAL: Duration = Duration::from_secs(1);
    /// The youngest orphan a scheduled sweep may delete.
    pub const MIN_AGE: Duration = Duration::from_secs(60);

    /// A sweep every `interval` (at least one second: a shorter one would
    /// list the container in a busy loop) of orphans older than
    /// `older_than` (at least one minute: the age must exceed the longest
    /// write, from blob upload to row commit, or a sweep deletes the blob of
    /// a write in flight; an hour is a safe choice). A value out of range is
    /// [`Error::Config`] naming it.
    pub fn new(interval: Duration, older_than: Duration) -> Result<SweepSchedule> {
        if interval < Self::MIN_INTERVAL {
            return Err(invalid(
                "SweepSchedule::interval",
                format!("{interval:?} is shorter than one second, the blob service's clock resolution; a sweep would list the container in a busy loop"),
            ));
        }
        if older_than < Self::MIN_AGE {
            return Err(invalid(
                "SweepSchedule::older_than",
                format!("{older_than:?} is younger than one minute: the age must exceed the longest write (blob upload to row commit), or the sweep deletes the blob of a write in flight; an hour is a safe choice"),
            ));
        }
        Ok(SweepSchedule { interval, older_than })
    }

    /// How often the sweep runs.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How old an orphan must be to be deleted.
    pub fn older_than(&self) -> Duration {
        self.older_than
    }
}

/// Options shared by the stores of one [`Tables`](crate::Tables).
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// What to do with a value too large for its cell (default: refuse).
    pub oversized_cells: OversizedCellPolicy,
    /// Let [`Concurrency::Auto`](crate::Concurrency::Auto) overwrite an entity that has no ETag
    /// (default `false`: refuse with [`Error::MissingETag`](crate::Error::MissingETag)).
    pub implicit_last_writer_wins: bool,
    /// Attempts of [`Store::mutate`](crate::Store::mutate) and the other compare-and-swap verbs
    /// before they report a conflict (default 3; 1 to 1,000, checked by
    /// [`MutateAttempts::new`](crate::MutateAttempts::new)).
    pub mutate_attempts: crate::MutateAttempts,
    /// The time one call of [`Store::mutate`](crate::Store::mutate) or another compare-and-swap
    /// verb may spend losing races before it reports a conflict, whatever
    /// attempts are left (default [`StoreOptions::DEFAULT_MUTATE_BUDGET`], 4 s).
    /// A pause that would end past it is not taken: the call re-reads once
    /// more to decide `NotFound` or a failed precondition, and reports
    /// [`Error::Conflict`](crate::Error::Conflict) (or [`Outcome::Conflicted`](crate::Outcome::Conflicted)). See
    /// [`Store::mutate`](crate::Store::mutate) for the pauses.
    pub mutate_budget: std::time::Duration,
    /// How long an unconfirmed reservation of a global unique index's value
    /// holds it (default 60 s): a writer that stops between reserving and
    /// writing blocks the value this long; a write is sent only while its
    /// reservations are younger than half of it (see
    /// [`guide::secondary_indexes`](crate::guide::secondary_indexes#keeping-them-right)).
    pub unique_reservation_timeout: std::time::Duration,
}

impl StoreOptions {
    /// The default [`StoreOptions::mutate_budget`]: 4 s.
    pub const DEFAULT_MUTATE_BUDGET: std::time::Duration = std::time::Duration::from_secs(4);
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            oversized_cells: OversizedCellPolicy::Refuse,
            implicit_last_writer_wins: false,
            mutate_attempts: crate::MutateAttempts::default(),
            mutate_budget: Self::DEFAULT_MUTATE_BUDGET,
            unique_reservation_timeout: std::time::Duration::from_secs(60),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_message(e: Error) -> String {
        assert!(matches!(e, Error::Config { .. }), "{e:?}");
        e.to_string()
    }

    #[test]
    fn blob_options_refuse_a_bad_container_naming_the_option() {
        for bad in [
            "",
            "ab",
            "Values",
            "my_values",
            "-values",
            "values-",
            "my--values",
            &"a".repeat(64),
        ] {
            let message = config_message(BlobOptions::new().with_container(bad).unwrap_err());
            assert!(message.contains("BlobOptions::container"), "{bad:?}: {message}");
        }
        for good in ["abc", "my-values-2", &"a".repeat(63)] {
            assert_eq!(BlobOptions::new().with_container(good).unwrap().container(), good);
        }
    }

    #[test]
    fn blob_options_refuse_a_threshold_no_value_can_reach() {
        let message = config_message(
            BlobOptions::new()
                .with_threshold_bytes(MAX_TRANSACTION_BYTES + 1)
                .unwrap_err(),
        );
        assert!(message.contains("BlobOptions::threshold_bytes"), "{message}");
        for good in [0, 100_000, MAX_TRANSACTION_BYTES] {
            assert_eq!(
                BlobOptions::new().with_threshold_bytes(good).unwrap().threshold_bytes(),
                good
            );
        }
        let defaults = BlobOptions::default();
        assert_eq!(
            (
                defaults.container(),
                defaults.threshold_bytes(),
                defaults.cleanup_grace()
            ),
            (crate::layout::DEFAULT_CONTAINER, 3_145_728, Duration::from_secs(300))
        );
    }

    #[test]
    fn mutate_attempts_are_between_one_and_a_thousand() {
        for bad in [0, 1_001, u32::MAX] {
            let message = config_message(MutateAttempts::new(bad).unwrap_err());
            assert!(message.contains("StoreOptions::mutate_attempts"), "{bad}: {message}");
        }
        assert_eq!(MutateAttempts::new(1).unwrap().get(), 1);
        assert_eq!(MutateAttempts::try_from(1_000).unwrap().get(), 1_000);
        assert_eq!(MutateAttempts::default().get(), 3);
    }

    #[test]
    fn a_sweep_schedule_refuses_a_busy_loop_and_a_young_age() {
        let hour = Duration::from_secs(3600);
        let message = config_message(SweepSchedule::new(Duration::from_millis(999), hour).unwrap_err());
        assert!(message.contains("interval"), "{message}");
        let message = config_message(SweepSchedule::new(hour, Duration::from_secs(59)).unwrap_err());
        assert!(message.contains("older_than"), "{message}");
        let ok = SweepSchedule::new(Duration::from_secs(1), Duration::from_secs(60)).unwrap();
        assert_eq!(
            (ok.interval(), ok.older_than()),
            (Duration::from_secs(1), Duration::from_secs(60))
        );
    }
}
