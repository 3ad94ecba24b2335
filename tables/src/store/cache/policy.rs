//! What the read cache keeps and for how long: the policy, globally and per
//! entity type, and the memory bound. Validated when the cache is built.

use std::any::TypeId;
use std::collections::HashMap;
use std::time::Duration;

use crate::error::{Error, Result};

/// How long the read cache keeps an entity or a partition list.
///
/// Set when the [`ReadCache`](super::ReadCache) is built, for every entity
/// type ([`ReadCacheBuilder::policy`]) and per type
/// ([`ReadCacheBuilder::policy_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachePolicy {
    /// Nothing of the type is served from or kept in the cache. Its writes
    /// still evict what other stores of the same table cached.
    Disabled,
    /// An entry lives while it is read at least once per this long.
    Sliding(Duration),
    /// An entry lives this long after it was cached, however often it is read:
    /// the bound on how stale a read can be when another process writes.
    Absolute(Duration),
}

impl CachePolicy {
    /// The longest time to live a policy may name (one year).
    pub const MAX_TTL: Duration = Duration::from_secs(365 * 24 * 3600);

    /// Whether the policy keeps anything.
    pub fn is_enabled(&self) -> bool {
        !matches!(self, CachePolicy::Disabled)
    }

    /// The time to live, if the policy keeps anything.
    pub fn ttl(&self) -> Option<Duration> {
        match *self {
            CachePolicy::Disabled => None,
            CachePolicy::Sliding(ttl) | CachePolicy::Absolute(ttl) => Some(ttl),
        }
    }

    pub(crate) fn check(&self, option: &str) -> Result<()> {
        match self.ttl() {
            Some(ttl) if ttl.is_zero() => Err(Error::config(format!(
                "{option}: a cache time to live must be longer than zero (use CachePolicy::Disabled to turn caching off)"
            ))),
            Some(ttl) if ttl > CachePolicy::MAX_TTL => Err(Error::config(format!(
                "{option}: a cache time to live is at most one year, not {ttl:?}"
            ))),
            _ => Ok(()),
        }
    }
}

impl Default for CachePolicy {
    /// [`CachePolicy::Sliding`] of five minutes: right for one process that is
    /// the only writer of its tables (see the README for several processes).
    fn default() -> Self {
        CachePolicy::Sliding(Duration::from_secs(300))
    }
}

/// The settings a [`ReadCache`](super::ReadCache) is built from.
///
/// ```
/// use std::time::Duration;
/// use unified_tables::{CachePolicy, ReadCache};
/// # #[derive(unified_tables::TableEntity)] struct ChatMessage { #[table(partition_key)] room: String, #[table(row_key)] id: String }
/// let cache = ReadCache::builder()
///     .policy(CachePolicy::Absolute(Duration::from_secs(30)))   // bound cross-process staleness
///     .policy_for::<ChatMessage>(CachePolicy::Disabled)         // huge partitions: don't cache
///     .max_bytes(32 * 1024 * 1024)
///     .build()?;
/// # let _ = cache;
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ReadCacheBuilder {
    pub(crate) policy: CachePolicy,
    pub(crate) per_type: HashMap<TypeId, (CachePolicy, &'static str)>,
    pub(crate) max_bytes: u64,
}

impl Default for ReadCacheBuilder {
    fn default() -> Self {
        ReadCacheBuilder {
            policy: CachePolicy::default(),
            per_type: HashMap::new(),
            max_bytes: ReadCacheBuilder::DEFAULT_MAX_BYTES,
        }
    }
}

impl ReadCacheBuilder {
    /// The default memory bound: 64 MiB of cached rows.
    pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;

    /// The policy of every entity type without a policy of its own
    /// (default: [`CachePolicy::default`]).
    pub fn policy(mut self, policy: CachePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The policy of entity type `T`, overriding [`ReadCacheBuilder::policy`].
    pub fn policy_for<T: 'static>(mut self, policy: CachePolicy) -> Self {
        self.per_type
            .insert(TypeId::of::<T>(), (policy, std::any::type_name::<T>()));
        self
    }

    /// The most memory cached entries may take, in bytes of their stored cells
    /// (a large value counts by its size). The least recently used entries go
    /// first when it is reached. Default 64 MiB.
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Builds the cache; a policy with a zero or over-long time to live, or a
    /// zero memory bound, is [`Error::Config`] naming the option.
    pub fn build(self) -> Result<super::ReadCache> {
        self.policy.check("ReadCacheBuilder::policy")?;
        for (policy, name) in self.per_type.values() {
            policy.check(&format!("ReadCacheBuilder::policy_for::<{name}>"))?;
        }
        if self.max_bytes == 0 {
            return Err(Error::config(
                "ReadCacheBuilder::max_bytes: the memory bound must be above zero (use CachePolicy::Disabled to turn caching off)",
            ));
        }
        Ok(super::ReadCache::from_builder(self))
    }

    /// The policy for the type with this id.
    pub(crate) fn policy_of(&self, type_id: TypeId) -> CachePolicy {
        self.per_type.get(&type_id).map_or(self.policy, |(p, _)| *p)
    }
}
