//! Runs a sequence of operations on a store and on the model and compares
//! every outcome.

use std::collections::BTreeMap;

use unified_tables::{Concurrency, ETag, Outcome, Store};

use super::model::{self, Model};
use super::ops::{Op, Tag, BLOB_THRESHOLD};
use super::outcome::{difference, expect_kind, ok, short, short_debug, Kind};
use super::{Spec, Subject, FILE_TYPE, K};
use crate::Env;

/// The blob offload options of the differential stores: a low threshold, so
/// values are offloaded at test-friendly sizes.
pub fn blob_options() -> unified_tables::BlobOptions {
    crate::blob_options()
        .with_threshold_bytes(BLOB_THRESHOLD)
        .expect("a threshold within range")
}

/// A store of `T` in the environment's table, with the low offload threshold.
pub fn store<T: Subject>(env: &Env) -> Store<T> {
    let blobs = env.blobs.clone().expect("the test environments have a blob backend");
    env.tables
        .clone()
        .with_blobs(blobs, blob_options())
        .store_in::<T>(&env.table)
}

/// Runs `ops` on a fresh store of `T` in `env` and on a fresh model.
/// Returns the first difference, naming the operation.
pub async fn run<T: Subject>(env: &Env, ops: &[Op]) -> Result<(), String> {
    run_on(env, store::<T>(env), false, ops).await
}

/// [`run`] through a store with a read cache: every value and error must be
/// the same as without one (the round trips are the cache's own, asserted
/// by the cache scenarios).
pub async fn run_cached<T: Subject>(env: &Env, ops: &[Op]) -> Result<(), String> {
    let store = store::<T>(env);
    let blobs = env.blobs.clone().expect("the test environments have a blob backend");
    let cached = env
        .cached(unified_tables::ReadCache::default())
        .with_blobs(blobs, blob_options())
        .store_in::<T>(store.table());
    run_on(env, cached, true, ops).await
}

async fn run_on<T: Subject>(env: &Env, store: Store<T>, cached: bool, ops: &[Op]) -> Result<(), String> {
    let mut run = Run::<T> {
        env,
        store,
        cached,
        model: Model::default(),
        etags: BTreeMap::new(),
    };
    for (i, op) in ops.iter().enumerate() {
        run.apply(op)
            .await
            .map_err(|e| format!("{} ({:?}), operation {i} {}: {e}", T::NAME, env.kind, short(op)))?;
    }
    Ok(())
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

struct Run<'a, T> {
    env: &'a Env,
    store: Store<T>,
    /// Whether the store reads through a cache (its round trips are not the README's).
    cached: bool,
    model: Model,
    /// Every ETag seen, by key, with the model version it belongs to.
    etags: BTreeMap<K, Vec<(u64, ETag)>>,
}

impl<T: Subject> Run<'_, T> {
    fn requests(&self) -> u64 {
        self.env.counts().entity_requests()
    }

    /// Asserts the round trips of the last operation.
    fn cost(&self, want: u64, what: &str) -> Result<(), String> {
        if self.cached {
            return Ok(());
        }
        let got = self.requests();
        ensure!(got == want, "{what}: {got} requests, the README states {want}");
        Ok(())
    }

    /// Whether the stored value at `key` is small enough to have no
    /// continuation rows (an absent key counts as small).
    fn small(&self, key: K) -> bool {
        self.model.get(key).is_none_or(|(s, _)| s.large_bytes() < 500_000)
    }

    /// Records the ETag of the current version of `key`.
    fn saw(&mut self, key: K, etag: Option<&ETag>) -> Result<(), String> {
        let version = self
            .model
            .version(key)
            .ok_or("an ETag for a key the model does not hold")?;
        let etag = etag.ok_or_else(|| format!("{key:?}: an entity without an ETag"))?;
        let seen = self.etags.entry(key).or_default();
        if let Some((v, _)) = seen.iter().find(|(v, e)| e == etag && *v != version) {
            return Err(format!(
                "{key:?}: the ETag {etag:?} of version {version} was already seen for version {v}"
            ));
        }
        seen.push((version, etag.clone()));
        Ok(())
    }

    /// The ETag of the stored version of `key`, reading it when not yet seen.
    async fn fresh(&mut self, key: K) -> Result<ETag, String> {
        let version = self.model.version(key).ok_or("no stored version")?;
        if let Some((_, e)) = self.etags.get(&key).and_then(|s| s.iter().find(|(v, _)| *v == version)) {
            return Ok(e.clone());
        }
        let got = ok(self.store.get((key.0, key.1)).await)?.ok_or("the stored row was not found")?;
        self.same(key, &got).await?;
        Ok(got.etag().cloned().expect("checked by same"))
    }

    /// An ETag of `key` other than the stored version's, if one was seen.
    fn stale(&self, key: K) -> Option<ETag> {
        let current = self.model.version(key);
        self.etags
            .get(&key)?
            .iter()
            .rev()
            .find(|(v, _)| Some(*v) != current)
            .map(|(_, e)| e.clone())
    }

    /// Checks an entity against the model's value at `key`, its file by its
    /// bytes, and records its ETag.
    async fn same(&mut self, key: K, got: &T) -> Result<(), String> {
        let (spec, _) = self
            .model
            .get(key)
            .ok_or_else(|| format!("{key:?} returned, the model has no row"))?;
        let spec = spec.clone();
        let mut got = got.clone();
        let etag = got.etag_mut().take();
        let file = got.take_file();
        let mut want = T::build(key, &spec);
        want.take_file();
        if got != want {
            return Err(format!(
                "{key:?}: the value differs from the model's, {}",
                difference(&format!("{got:?}"), &format!("{want:?}"))
            ));
        }
        match (spec.file, file) {
            (None, None) => {}
            (Some(f), Some(content)) => {
                ensure!(
                    content.len() == Some(f.len as u64) && content.content_type() == Some(FILE_TYPE),
                    "{key:?}: file of {:?} bytes ({:?}), want {} bytes",
                    content.len(),
                    content.content_type(),
                    f.len
                );
                let bytes = content
                    .read_all()
                    .await
                    .map_err(|e| format!("{key:?}: reading the file: {e}"))?;
                ensure!(bytes == f.bytes(), "{key:?}: the file's bytes differ");
            }
            (want, got) => return Err(format!("{key:?}: file {:?}, want {want:?}", got.map(|c| c.len()))),
        }
        self.saw(key, etag.as_ref())
    }

    /// Checks a list of entities against the model's rows, in order.
    async fn same_list(&mut self, got: &[T], want: &[(K, Spec)]) -> Result<(), String> {
        let keys: Vec<(String, String)> = got.iter().map(|e| (e.key().partition_key, e.key().row_key)).collect();
        let want_keys: Vec<(String, String)> = want.iter().map(|(k, _)| (k.0.into(), k.1.into())).collect();
        ensure!(keys == want_keys, "rows {keys:?}, the model has {want_keys:?}");
        for (entity, (key, _)) in got.iter().zip(want) {
            self.same(*key, entity).await?;
        }
        Ok(())
    }

    /// Checks a successful single write and moves the model to `spec`.
    fn wrote(&mut self, key: K, spec: Spec, entity: &T, returned: &ETag) -> Result<(), String> {
        ensure!(
            entity.etag() == Some(returned),
            "{key:?}: the entity's ETag {:?} is not the returned {returned:?}",
            entity.etag()
        );
        self.model.put(key, spec);
        self.saw(key, Some(returned))
    }

    async fn apply(&mut self, op: &Op) -> Result<(), String> {
        let store = self.store.clone();
        match op {
            Op::Create(key, spec) => {
                let spec = T::stored(spec.clone());
                let mut e = T::build(*key, &spec);
                self.env.reset_counts();
                let got = store.create(&mut e).await;
                if self.model.has(*key) {
                    expect_kind(&got, Kind::AlreadyExists)?;
                } else {
                    let etag = ok(got)?;
                    self.cost(1, "create")?;
                    self.wrote(*key, spec, &e, &etag)?;
                }
            }
            Op::Get(key) => {
                let small = self.small(*key);
                self.env.reset_counts();
                let got = ok(store.get((key.0, key.1)).await)?;
                if !T::LARGE || small {
                    self.cost(1, "get")?;
                }
                match got {
                    Some(e) => self.same(*key, &e).await?,
                    None => ensure!(!self.model.has(*key), "{key:?}: not found, the model has it"),
                }
            }
            Op::Exists(key) => {
                self.env.reset_counts();
                let got = ok(store.exists((key.0, key.1)).await)?;
                self.cost(1, "exists")?;
                ensure!(got == self.model.has(*key), "exists: {got}");
            }
            Op::Upsert(key, spec) => {
                let spec = T::stored(spec.clone());
                let mut e = T::build(*key, &spec);
                let small = self.small(*key) && spec.large_bytes() < 500_000;
                self.env.reset_counts();
                let etag = ok(store.upsert(&mut e).await)?;
                match T::LARGE {
                    false => self.cost(1, "upsert")?,
                    true if small => self.cost(2, "upsert of a type with large values (a read, then the write)")?,
                    true => {}
                }
                self.wrote(*key, spec, &e, &etag)?;
            }
            Op::Update(key, spec) | Op::UpdateStale(key, spec) | Op::UpdateLastWriterWins(key, spec) => {
                let spec = T::stored(spec.clone());
                let mut e = T::build(*key, &spec);
                let present = self.model.has(*key);
                let (etag, want) = match op {
                    Op::Update(..) if present => (Some(self.fresh(*key).await?), None),
                    Op::Update(..) | Op::UpdateStale(..) => match self.stale(*key) {
                        Some(stale) if present => (Some(stale), Some(Kind::Conflict)),
                        Some(stale) => (Some(stale), Some(Kind::NotFound)),
                        None if present => return Ok(()), // no earlier version seen yet
                        None => (None, Some(Kind::MissingETag)),
                    },
                    _ => (self.stale(*key), (!present).then_some(Kind::NotFound)),
                };
                *e.etag_mut() = etag;
                let small = self.small(*key) && spec.large_bytes() < 500_000;
                self.env.reset_counts();
                let got = match op {
                    Op::UpdateLastWriterWins(..) => store.update_with(&mut e, Concurrency::LastWriterWins).await,
                    _ => store.update(&mut e).await,
                };
                match want {
                    Some(want) => {
                        if want == Kind::MissingETag {
                            self.cost(0, "a refused update")?;
                        }
                        expect_kind(&got, want)?;
                    }
                    None => {
                        let etag = ok(got)?;
                        match T::LARGE {
                            false => self.cost(1, "update")?,
                            true if small => {
                                self.cost(2, "update of a type with large values (a read, then the write)")?
                            }
                            true => {}
                        }
                        self.wrote(*key, spec, &e, &etag)?;
                    }
                }
            }
            Op::UpdateWithoutETag(key, spec) => {
                let mut e = T::build(*key, &T::stored(spec.clone()));
                self.env.reset_counts();
                let got = store.update(&mut e).await;
                expect_kind(&got, Kind::MissingETag)?;
                self.cost(0, "an update without an ETag is refused before sending")?;
            }
            Op::Delete(key) => {
                let small = self.small(*key);
                let present = self.model.has(*key);
                self.env.reset_counts();
                let got = ok(store.delete((key.0, key.1)).await)?;
                ensure!(got == present, "delete returned {got}");
                match T::LARGE {
                    false => self.cost(1, "delete")?,
                    true if small && present => {
                        self.cost(2, "delete of a type with large values (a read, then the write)")?
                    }
                    true => {}
                }
                self.model.remove(*key);
            }
            Op::DeleteEntity(key, tag) => {
                let present = self.model.has(*key);
                let (etag, want) = match (present, tag) {
                    (true, Tag::Fresh) => (Some(self.fresh(*key).await?), None),
                    (true, _) => match self.stale(*key) {
                        Some(stale) => (Some(stale), Some(Kind::Conflict)),
                        None => return Ok(()),
                    },
                    (false, _) => match self.stale(*key) {
                        Some(stale) => (Some(stale), Some(Kind::NotFound)),
                        None => (None, Some(Kind::MissingETag)),
                    },
                };
                let mut e = match self.model.get(*key) {
                    Some((spec, _)) => T::build(*key, spec),
                    None => T::build(*key, &Spec::default()),
                };
                *e.etag_mut() = etag;
                self.env.reset_counts();
                let got = store.delete_entity(&e).await;
                match want {
                    Some(want) => expect_kind(&got, want)?,
                    None => {
                        ok(got)?;
                        if !T::LARGE {
                            self.cost(1, "delete_entity")?;
                        }
                        self.model.remove(*key);
                    }
                }
            }
            Op::Patch(key, patch, tag) => {
                let present = self.model.has(*key);
                let etag = match (present, tag) {
                    (_, Tag::Without) => None,
                    (true, Tag::Fresh) => Some(self.fresh(*key).await?),
                    (true, Tag::Stale) => match self.stale(*key) {
                        Some(stale) => Some(stale),
                        None => return Ok(()),
                    },
                    (false, _) => self.stale(*key),
                };
                let conditional_on_stale = present && *tag == Tag::Stale;
                self.env.reset_counts();
                let got = store.patch((key.0, key.1), T::patch(patch, etag)).await;
                self.cost(1, "patch")?;
                if !present {
                    expect_kind(&got, Kind::NotFound)?;
                } else if conditional_on_stale {
                    expect_kind(&got, Kind::Conflict)?;
                } else {
                    let etag = ok(got)?;
                    let (spec, _) = self.model.get(*key).expect("present");
                    let spec = model::patched(spec, patch);
                    self.model.put(*key, spec);
                    self.saw(*key, Some(&etag))?;
                }
            }
            Op::Mutate(key, delta) => {
                self.env.reset_counts();
                let got = store.mutate((key.0, key.1), |e| e.bump(*delta)).await;
                match self.model.get(*key) {
                    None => expect_kind(&got, Kind::NotFound)?,
                    Some((spec, _)) => {
                        let spec = model::bumped(spec, *delta);
                        let e = ok(got)?;
                        let requests = self.requests();
                        ensure!(
                            self.cached || requests >= 2,
                            "mutate: {requests} requests, the README states 2+"
                        );
                        self.model.put(*key, spec);
                        self.same(*key, &e).await?;
                    }
                }
            }
            Op::Transition(key) => {
                let got = ok(store
                    .try_transition((key.0, key.1), |e| e.unflagged(), |e| e.flag_it())
                    .await)?;
                match (self.model.get(*key).cloned(), got) {
                    (None, Outcome::NotFound) => {}
                    (Some((spec, _)), Outcome::PreconditionFailed(current)) if spec.flag => {
                        self.same(*key, &current).await?;
                    }
                    (Some((spec, _)), Outcome::Updated(e)) if !spec.flag => {
                        self.model.put(*key, model::flagged(&spec));
                        self.same(*key, &e).await?;
                    }
                    (want, got) => {
                        return Err(format!(
                            "try_transition returned {}, the model holds {}",
                            short_debug(&got),
                            short_debug(&want)
                        ))
                    }
                }
            }
            Op::GetOrCreate(key, spec) => {
                let spec = T::stored(spec.clone());
                let got = ok(store.get_or_create((key.0, key.1), || T::build(*key, &spec)).await)?;
                if !self.model.has(*key) {
                    self.model.put(*key, spec);
                }
                self.same(*key, &got).await?;
            }
            Op::MutateOrCreate(key, spec, delta) => {
                let spec = T::stored(spec.clone());
                let got = store
                    .mutate_or_create((key.0, key.1), || T::build(*key, &spec), |e| e.bump(*delta))
                    .await;
                let base = self.model.get(*key).map_or(spec, |(s, _)| s.clone());
                self.model.put(*key, model::bumped(&base, *delta));
                let e = ok(got)?;
                self.same(*key, &e).await?;
            }
            Op::CreateBatch(pk, rows) | Op::UpsertBatch(pk, rows) => {
                let rows: Vec<(K, Spec)> = rows.iter().map(|(rk, s)| (K(pk, rk), T::stored(s.clone()))).collect();
                let entities: Vec<T> = rows.iter().map(|(k, s)| T::build(*k, s)).collect();
                let create = matches!(op, Op::CreateBatch(..));
                let mut distinct = std::collections::BTreeSet::new();
                let repeated = !rows.iter().all(|(k, _)| distinct.insert(*k));
                let clash = rows.iter().find(|(k, _)| self.model.has(*k)).map(|(k, _)| k.1);
                self.env.reset_counts();
                let got = match create {
                    true => store.create_batch(&entities).await,
                    false => store.upsert_batch(&entities).await,
                };
                match (create, repeated, clash) {
                    (_, true, _) => {
                        expect_kind(&got, Kind::InvalidKey)?;
                        self.cost(0, "a batch with a repeated key is refused before sending")?;
                    }
                    (true, false, Some(rk)) => {
                        let want = Kind::BatchFailed(0, rk.to_owned(), Box::new(Kind::AlreadyExists));
                        expect_kind(&got, want)?;
                    }
                    _ => {
                        let n = ok(got)?;
                        ensure!(n == rows.len(), "the batch wrote {n} of {}", rows.len());
                        if !T::LARGE {
                            self.cost(1, "a batch of fewer than 100 rows in one partition")?;
                        }
                        for (k, s) in rows {
                            self.model.put(k, s);
                        }
                    }
                }
            }
            Op::DeletePartition(pk) => {
                self.env.reset_counts();
                let got = ok(store.delete_partition(pk).await)?;
                let want = self.model.clear_partition(pk);
                ensure!(got == want, "delete_partition deleted {got}, the model had {want}");
                if !T::LARGE {
                    self.cost(
                        1 + u64::from(want > 0),
                        "delete_partition (one page read, one transaction)",
                    )?;
                }
            }
            Op::Query(pk, filter) => {
                let small = self.model.partition(pk, None).iter().all(|(k, _)| self.small(*k));
                self.env.reset_counts();
                let got = ok(store.query(T::options(pk, *filter)).await)?;
                if !T::LARGE || small {
                    self.cost(1, "a query of fewer than 1000 rows")?;
                }
                let want = self.model.partition(pk, *filter);
                self.same_list(&got, &want).await?;
            }
            Op::Page(pk, size, filter) => {
                let mut options = T::options(pk, *filter).take(*size);
                let mut all = Vec::new();
                for _ in 0..50 {
                    self.env.reset_counts();
                    let page = ok(store.page(options.clone()).await)?;
                    if !T::LARGE && !self.cached {
                        // One request a page on every service (`Env::counts` counts only
                        // the queries started on Cosmos, and a page after a cursor starts none).
                        let got = self.env.counter.counts().entity_requests();
                        ensure!(got == 1, "page: {got} requests, the README states 1");
                    }
                    ensure!(
                        page.items.len() <= *size,
                        "a page of {} items, asked for {size}",
                        page.items.len()
                    );
                    all.extend(page.items);
                    match page.cursor {
                        Some(next) => options = options.after(next),
                        None => break,
                    }
                }
                let want = self.model.partition(pk, *filter);
                if !self.env.sorts_results() {
                    // Pages hold the service's order there: every row once, in any order.
                    all.sort_by_key(|e| {
                        let key = e.key();
                        (key.partition_key, key.row_key)
                    });
                }
                self.same_list(&all, &want).await?;
            }
            Op::Count(pk, filter) => {
                self.env.reset_counts();
                let got = ok(store.count(T::options(pk, *filter)).await)?;
                self.cost(1, "a count of fewer than 1000 rows")?;
                let want = self.model.partition(pk, *filter).len() as u64;
                ensure!(got == want, "count {got}, the model has {want}");
            }
        }
        Ok(())
    }
}
