//! The options of the identity stores, checked when they are built.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::layout::IDENTITY_TABLE_SUFFIXES;

fn invalid(option: &str, reason: String) -> Error {
    Error::config(format!("{option}: {reason}"))
}

/// When failed logins lock a user out, and for how long.
///
/// After `max_failed_attempts` failed logins in a row the user is locked out
/// for `duration`: [`Identity::sign_in`](super::Identity::sign_in) answers
/// [`SignIn::LockedOut`](super::SignIn::LockedOut) without checking the password
/// until it ends, and the failed-attempt count starts again from zero. A
/// successful login sets the count back to zero.
///
/// ```
/// use std::time::Duration;
/// use unified_tables::web::identity::Lockout;
///
/// let lockout = Lockout::new(3, Duration::from_secs(15 * 60))?;
/// assert_eq!(lockout.max_failed_attempts(), 3);
///
/// // Checked when built, naming the option.
/// let err = Lockout::new(0, Duration::from_secs(60)).unwrap_err();
/// assert!(err.to_string().contains("Lockout::max_failed_attempts"), "{err}");
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lockout {
    max_failed_attempts: u32,
    duration: Duration,
}

impl Lockout {
    /// The most failed attempts a lockout may wait for: 1,000.
    pub const MAX_ATTEMPTS: u32 = 1_000;
    /// The shortest lockout: one second.
    pub const MIN_DURATION: Duration = Duration::from_secs(1);
    /// The longest lockout: 366 days.
    pub const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

    /// A lockout after `max_failed_attempts` failures (1 to 1,000) lasting
    /// `duration` (one second to 366 days); anything else is
    /// [`Error::Config`] naming the option.
    pub fn new(max_failed_attempts: u32, duration: Duration) -> Result<Lockout> {
        if !(1..=Self::MAX_ATTEMPTS).contains(&max_failed_attempts) {
            return Err(invalid(
                "Lockout::max_failed_attempts",
                format!("{max_failed_attempts} is not between 1 and {}", Self::MAX_ATTEMPTS),
            ));
        }
        if !(Self::MIN_DURATION..=Self::MAX_DURATION).contains(&duration) {
            return Err(invalid(
                "Lockout::duration",
                format!("{duration:?} is not between one second and 366 days"),
            ));
        }
        Ok(Lockout {
            max_failed_attempts,
            duration,
        })
    }

    /// Failed logins in a row that lock the user out.
    pub fn max_failed_attempts(&self) -> u32 {
        self.max_failed_attempts
    }

    /// How long a lockout lasts.
    pub fn duration(&self) -> Duration {
        self.duration
    }
}

impl Default for Lockout {
    /// Five failed attempts lock the user out for five minutes.
    fn default() -> Self {
        Lockout {
            max_failed_attempts: 5,
            duration: Duration::from_secs(300),
        }
    }
}

/// The options of [`Identity`](super::Identity): the lockout policy, the
/// tables' name prefix and the email reservation timeout.
///
/// ```
/// use std::time::Duration;
/// use unified_tables::web::identity::{IdentityOptions, Lockout};
///
/// let options = IdentityOptions::new()
///     .lockout(Lockout::new(3, Duration::from_secs(600))?)
///     .table_prefix("Shop")?;                    // tables ShopUsers, ShopRoles, …
/// assert_eq!(options.tables().users, "ShopUsers");
/// assert!(IdentityOptions::new().table_prefix("shop-1").is_err());
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityOptions {
    pub(super) lockout: Lockout,
    pub(super) table_prefix: String,
    pub(super) reservation_timeout: Duration,
}

impl IdentityOptions {
    /// The default table prefix: `Identity` (tables `IdentityUsers`, `IdentityRoles`, …).
    pub const DEFAULT_PREFIX: &'static str = "Identity";
    /// The default email reservation timeout: two minutes.
    pub const DEFAULT_RESERVATION_TIMEOUT: Duration = Duration::from_secs(120);
    /// The longest table prefix: 53 characters (table names have at most
    /// 63, and the longest suffix, `UserClaims`, has 10).
    pub const MAX_PREFIX_LEN: usize = 53;

    /// The defaults: [`Lockout::default`], prefix `Identity`, reservation timeout two minutes.
    pub fn new() -> IdentityOptions {
        IdentityOptions {
            lockout: Lockout::default(),
            table_prefix: Self::DEFAULT_PREFIX.to_owned(),
            reservation_timeout: Self::DEFAULT_RESERVATION_TIMEOUT,
        }
    }

    /// The lockout policy.
    pub fn lockout(mut self, lockout: Lockout) -> IdentityOptions {
        self.lockout = lockout;
        self
    }

    /// The prefix of the table names: 1 to 53 ASCII letters and digits,
    /// starting with a letter, or [`Error::Config`] naming
    /// `IdentityOptions::table_prefix`.
    pub fn table_prefix(mut self, prefix: impl Into<String>) -> Result<IdentityOptions> {
        let prefix = prefix.into();
        let ok = !prefix.is_empty()
            && prefix.len() <= Self::MAX_PREFIX_LEN
            && prefix.starts_with(|c: char| c.is_ascii_alphabetic())
            && prefix.chars().all(|c| c.is_ascii_alphanumeric());
        if !ok {
            return Err(invalid(
                "IdentityOptions::table_prefix",
                format!(
                    "`{prefix}` is not a table name prefix: use 1-{} ASCII letters and digits, starting with a letter",
                    Self::MAX_PREFIX_LEN
                ),
            ));
        }
        self.table_prefix = prefix;
        Ok(self)
    }

    /// How long an email reservation of a sign-up or email change that has
    /// not finished blocks the address (see the module documentation, "Unique
    /// email addresses"): one second to one hour, or [`Error::Config`] naming
    /// `IdentityOptions::reservation_timeout`. It must be well above the time
    /// one registration takes and the clock skew between your hosts.
    pub fn reservation_timeout(mut self, timeout: Duration) -> Result<IdentityOptions> {
        if !(Duration::from_secs(1)..=Duration::from_secs(3600)).contains(&timeout) {
            return Err(invalid(
                "IdentityOptions::reservation_timeout",
                format!("{timeout:?} is not between one second and one hour"),
            ));
        }
        self.reservation_timeout = timeout;
        Ok(self)
    }

    /// The lockout policy.
    pub fn lockout_policy(&self) -> Lockout {
        self.lockout
    }

    /// The email reservation timeout.
    pub fn reservation_timeout_value(&self) -> Duration {
        self.reservation_timeout
    }

    /// The names of the tables these options lead to.
    pub fn tables(&self) -> IdentityTables {
        let [users, roles, user_roles, role_claims, user_claims, logins, tokens] =
            IDENTITY_TABLE_SUFFIXES.map(|suffix| format!("{}{suffix}", self.table_prefix));
        IdentityTables {
            users,
            roles,
            user_roles,
            role_claims,
            user_claims,
            logins,
            tokens,
        }
    }
}

impl Default for IdentityOptions {
    fn default() -> Self {
        IdentityOptions::new()
    }
}

/// The table names of one [`Identity`](super::Identity).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdentityTables {
    /// Users, keyed by the hash of the normalized user name, and the rows
    /// of their unique email index (see the module documentation).
    pub users: String,
    /// Roles, keyed by the hash of the normalized role name.
    pub roles: String,
    /// User–role links, a partition per user.
    pub user_roles: String,
    /// Role claims (permissions among them), a partition per role.
    pub role_claims: String,
    /// User claims, a partition per user.
    pub user_claims: String,
    /// External logins, keyed by the hash of provider and provider key.
    pub logins: String,
    /// Tokens, a partition per user.
    pub tokens: String,
}
