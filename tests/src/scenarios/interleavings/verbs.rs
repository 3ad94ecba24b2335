//! Every write verb of the matrix: how its rows start, how it is called,
//! and what it does as one sequential step of the model.

use unified_tables::backend::faulty::FaultTarget;
use unified_tables::{ETag, Error, ErrorKind, Outcome, Tables, UnionWrite, Value};

use super::model::{cells, Cells, Model, Said, Step};
use crate::model::{Customer, Document};
use crate::noise;
use crate::scenarios::union::OrderEvent;

/// A verb under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Create,
    Upsert,
    Replace,
    Update,
    Patch,
    PatchIf,
    Delete,
    DeleteEntity,
    Mutate,
    TryMutate,
    TryTransition,
    MutateOrCreate,
    GetOrCreate,
    CreateBatch,
    UpsertBatch,
    UnionInsert,
    UnionUpsert,
    UnionMerge,
    UnionDelete,
    UnionInsertBatch,
    LargeCreate,
    LargeUpdate,
    LargeDelete,
}

/// The rows a batch writes; other verbs write `r0`.
const BATCH: [&str; 3] = ["r0", "r1", "r2"];

/// Characters of a large value's body: past one row, so the entity takes a
/// continuation row and every write of it is a transaction.
const LARGE_BODY: usize = 600_000;

/// What a case's start left for the call: the entity or version it read.
#[derive(Debug, Default)]
pub struct Prepared {
    customer: Option<Customer>,
    document: Option<Document>,
    etag: Option<ETag>,
}

fn customer_cells(name: &str, visits: i64) -> Cells {
    cells([("Name", Value::String(name.into())), ("Visits", Value::Int64(visits))])
}

fn marker_cells(n: &str) -> Cells {
    cells([("_N", Value::String(n.into()))])
}

fn title_cells(title: &str) -> Cells {
    cells([("Title", Value::String(title.into()))])
}

fn cancelled_cells() -> Cells {
    cells([("_TypeName", Value::String("Cancelled".into()))])
}

/// The tracked cells of a customer a call returned.
fn returned(c: &Customer) -> Cells {
    customer_cells(&c.name, i64::from(c.visits))
}

/// What a call's error says, as the model says it.
fn said_of(e: &Error) -> Said {
    match e.kind() {
        ErrorKind::OutcomeUnknown => Said::Unknown,
        ErrorKind::NotFound => Said::NotFound,
        ErrorKind::AlreadyExists => Said::AlreadyExists,
        ErrorKind::PreconditionFailed => Said::Conflict,
        other => Said::Failed(other),
    }
}

fn outcome(o: Outcome<Customer>) -> Said {
    match o {
        Outcome::Updated(c) => Said::Ok(Some(returned(&c))),
        Outcome::NotFound => Said::NotFound,
        Outcome::PreconditionFailed(c) => Said::Unmet(returned(&c)),
        Outcome::Conflicted => Said::Conflict,
        Outcome::UniqueViolation { .. } => Said::Failed(ErrorKind::UniqueViolation),
    }
}

fn document(pk: &str, title: &str) -> Document {
    let mut d = Document::new(pk, "r0");
    d.title = title.into();
    d.body = noise(LARGE_BODY, 11);
    d
}

impl Verb {
    /// Every verb.
    pub const ALL: [Verb; 23] = [
        Verb::Create,
        Verb::Upsert,
        Verb::Replace,
        Verb::Update,
        Verb::Patch,
        Verb::PatchIf,
        Verb::Delete,
        Verb::DeleteEntity,
        Verb::Mutate,
        Verb::TryMutate,
        Verb::TryTransition,
        Verb::MutateOrCreate,
        Verb::GetOrCreate,
        Verb::CreateBatch,
        Verb::UpsertBatch,
        Verb::UnionInsert,
        Verb::UnionUpsert,
        Verb::UnionMerge,
        Verb::UnionDelete,
        Verb::UnionInsertBatch,
        Verb::LargeCreate,
        Verb::LargeUpdate,
        Verb::LargeDelete,
    ];

    /// The verb's name in the printed matrix.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Upsert => "upsert",
            Verb::Replace => "replace",
            Verb::Update => "update (ETag)",
            Verb::Patch => "patch",
            Verb::PatchIf => "patch (ETag)",
            Verb::Delete => "delete",
            Verb::DeleteEntity => "delete_entity (ETag)",
            Verb::Mutate => "mutate",
            Verb::TryMutate => "try_mutate",
            Verb::TryTransition => "try_transition",
            Verb::MutateOrCreate => "mutate_or_create",
            Verb::GetOrCreate => "get_or_create",
            Verb::CreateBatch => "create_batch",
            Verb::UpsertBatch => "upsert_batch",
            Verb::UnionInsert => "union insert",
            Verb::UnionUpsert => "union upsert",
            Verb::UnionMerge => "union merge_columns",
            Verb::UnionDelete => "union delete",
            Verb::UnionInsertBatch => "union insert_batch",
            Verb::LargeCreate => "large create",
            Verb::LargeUpdate => "large update (ETag)",
            Verb::LargeDelete => "large delete",
        }
    }

    /// Which request of the verb the fault lands on.
    pub fn target(self) -> FaultTarget {
        match self {
            Verb::CreateBatch
            | Verb::UpsertBatch
            | Verb::UnionInsertBatch
            | Verb::LargeCreate
            | Verb::LargeUpdate
            | Verb::LargeDelete => FaultTarget::Transaction,
            _ => FaultTarget::Write,
        }
    }

    /// The row keys the verb writes.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Verb::CreateBatch | Verb::UpsertBatch | Verb::UnionInsertBatch => &BATCH,
            _ => &BATCH[..1],
        }
    }

    /// The rows as the case begins.
    pub fn start(self) -> Model {
        match self {
            Verb::Create
            | Verb::MutateOrCreate
            | Verb::GetOrCreate
            | Verb::CreateBatch
            | Verb::UnionInsert
            | Verb::UnionInsertBatch
            | Verb::LargeCreate => Model::default(),
            Verb::UpsertBatch => Model::of(BATCH.map(|k| (k, customer_cells("before", 0)))),
            Verb::UnionUpsert | Verb::UnionMerge | Verb::UnionDelete => Model::of([("r0", marker_cells("before"))]),
            Verb::LargeUpdate | Verb::LargeDelete => Model::of([("r0", title_cells("before"))]),
            _ => Model::of([("r0", customer_cells("before", 0))]),
        }
    }

    /// Writes the start's rows through `tables` (no faults) and reads what the call needs.
    pub async fn seed(self, tables: &Tables, table: &str, pk: &str) -> Prepared {
        let store = tables.store_in::<Customer>(table);
        let union = tables.union_store::<OrderEvent>(table);
        let documents = tables.store_in::<Document>(table);
        let mut prepared = Prepared::default();
        match self {
            Verb::UpsertBatch => {
                let before: Vec<Customer> = BATCH.iter().map(|k| Customer::new(pk, k, "before")).collect();
                store.create_batch(&before).await.unwrap();
            }
            Verb::UnionUpsert | Verb::UnionMerge | Verb::UnionDelete => {
                let marker = UnionWrite::marker((pk, "r0")).column("_N", Value::String("before".into()));
                union.insert_batch([marker]).await.unwrap();
            }
            Verb::LargeUpdate | Verb::LargeDelete => {
                let mut d = document(pk, "before");
                documents.create(&mut d).await.unwrap();
                prepared.document = Some(d);
            }
            _ if self.start().contains("r0") => {
                let mut c = Customer::new(pk, "r0", "before");
                let etag = store.create(&mut c).await.unwrap();
                prepared.customer = Some(c);
                prepared.etag = Some(etag);
            }
            _ => {}
        }
        prepared
    }

    /// Calls the verb through `tables`: what it said, and the version it
    /// reported (when it reports one).
    pub async fn run(self, tables: &Tables, table: &str, pk: &str, prepared: Prepared) -> (Said, Option<ETag>) {
        let store = tables.store_in::<Customer>(table);
        let union = tables.union_store::<OrderEvent>(table);
        let documents = tables.store_in::<Document>(table);
        let key = (pk, "r0");
        let ours = || Customer::new(pk, "r0", "ours");
        let versioned = |r: Result<ETag, Error>| match r {
            Ok(etag) => (Said::Ok(None), Some(etag)),
            Err(e) => (said_of(&e), None),
        };
        let plain = |r: Result<(), Error>| match r {
            Ok(()) => (Said::Ok(None), None),
            Err(e) => (said_of(&e), None),
        };
        let entity = |r: Result<Customer, Error>| match r {
            Ok(c) => {
                let etag = c.etag.clone().unwrap_or_else(|| ETag::new(""));
                (Said::Ok(Some(returned(&c))), Some(etag))
            }
            Err(e) => (said_of(&e), None),
        };
        let outcome_of = |r: Result<Outcome<Customer>, Error>| match r {
            Ok(o) => {
                let etag = match &o {
                    Outcome::Updated(c) => Some(c.etag.clone().unwrap_or_else(|| ETag::new(""))),
                    _ => None,
                };
                (outcome(o), etag)
            }
            Err(e) => (said_of(&e), None),
        };
        match self {
            Verb::Create => versioned(store.create(&mut ours()).await),
            Verb::Upsert => versioned(store.upsert(&mut ours()).await),
            Verb::Replace => versioned(store.replace(&mut ours()).await),
            Verb::Update => {
                let mut c = prepared.customer.expect("the row read");
                c.name = "ours".into();
                versioned(store.update(&mut c).await)
            }
            Verb::Patch => versioned(store.patch(key, Customer::update().name("ours")).await),
            Verb::PatchIf => {
                let etag = prepared.etag.expect("the version read");
                versioned(store.patch(key, Customer::update().name("ours").with_etag(etag)).await)
            }
            Verb::Delete => plain(store.delete(key).await.map(drop)),
            Verb::DeleteEntity => plain(store.delete_entity(&prepared.customer.expect("the row read")).await),
            Verb::Mutate => entity(store.mutate(key, |c| c.visits += 1).await),
            Verb::TryMutate => outcome_of(store.try_mutate(key, |c| c.visits += 1).await),
            Verb::TryTransition => outcome_of(store.try_transition(key, |c| c.visits == 0, |c| c.visits = 5).await),
            Verb::MutateOrCreate => entity(store.mutate_or_create(key, ours, |c| c.visits += 1).await),
            Verb::GetOrCreate => entity(store.get_or_create(key, ours).await),
            Verb::CreateBatch => {
                let rows: Vec<Customer> = BATCH.iter().map(|k| Customer::new(pk, k, "ours")).collect();
                plain(store.create_batch(&rows).await.map(drop))
            }
            Verb::UpsertBatch => {
                let rows: Vec<Customer> = BATCH.iter().map(|k| Customer::new(pk, k, "ours")).collect();
                plain(store.upsert_batch(&rows).await.map(drop))
            }
            Verb::UnionInsert => versioned(union.insert(key, &OrderEvent::Cancelled).await),
            Verb::UnionUpsert => versioned(union.upsert(key, &OrderEvent::Cancelled).await),
            Verb::UnionMerge => {
                let r = union.merge_columns(key, [("_N", Value::String("ours".into()))]).await;
                versioned(r)
            }
            Verb::UnionDelete => plain(union.delete(key).await.map(drop)),
            Verb::UnionInsertBatch => {
                let markers = BATCH
                    .iter()
                    .map(|k| UnionWrite::marker((pk, *k)).column("_N", Value::String("ours".into())));
                plain(union.insert_batch(markers).await.map(drop))
            }
            Verb::LargeCreate => versioned(documents.create(&mut document(pk, "ours")).await),
            Verb::LargeUpdate => {
                let mut d = prepared.document.expect("the document written");
                d.title = "ours".into();
                versioned(documents.update(&mut d).await)
            }
            Verb::LargeDelete => plain(documents.delete(key).await.map(drop)),
        }
    }
}

/// `Err(what the service says)` when the row is missing or moved from version 0.
fn at_start(m: &Model) -> Result<(), Said> {
    match m.version("r0") {
        None => Err(Said::NotFound),
        Some(0) => Ok(()),
        Some(_) => Err(Said::Conflict),
    }
}

/// Applies `change` to the customer in `r0`, writing it whole.
fn mutate(m: &mut Model, change: impl FnOnce(&mut Cells)) -> Said {
    let Some(mut c) = m.cells("r0").cloned() else {
        return Said::NotFound;
    };
    change(&mut c);
    m.put("r0", c.clone());
    Said::Ok(Some(c))
}

fn visits(c: &Cells) -> i64 {
    match c.get("Visits") {
        Some(Value::Int64(n)) => *n,
        _ => 0,
    }
}

fn add_visit(c: &mut Cells) {
    let n = visits(c) + 1;
    c.insert("Visits", Value::Int64(n));
}

impl Step for Verb {
    fn apply(&self, m: &mut Model) -> Said {
        let ok = Said::Ok(None);
        match self {
            Verb::Create if m.contains("r0") => Said::AlreadyExists,
            Verb::Create | Verb::Upsert => {
                m.put("r0", customer_cells("ours", 0));
                ok
            }
            Verb::Replace | Verb::Patch | Verb::UnionMerge if !m.contains("r0") => Said::NotFound,
            Verb::Replace => {
                m.put("r0", customer_cells("ours", 0));
                ok
            }
            Verb::Update | Verb::PatchIf | Verb::DeleteEntity | Verb::LargeUpdate => match at_start(m) {
                Err(said) => said,
                Ok(()) => {
                    match self {
                        Verb::Update => m.put("r0", customer_cells("ours", 0)),
                        Verb::PatchIf => m.merge("r0", [("Name", Value::String("ours".into()))]),
                        Verb::LargeUpdate => m.put("r0", title_cells("ours")),
                        _ => m.remove("r0"),
                    }
                    ok
                }
            },
            Verb::Patch => {
                m.merge("r0", [("Name", Value::String("ours".into()))]);
                ok
            }
            Verb::Delete | Verb::UnionDelete | Verb::LargeDelete => {
                m.remove("r0");
                ok
            }
            Verb::Mutate | Verb::TryMutate => mutate(m, add_visit),
            Verb::TryTransition => match m.cells("r0") {
                Some(c) if visits(c) != 0 => Said::Unmet(c.clone()),
                _ => mutate(m, |c| {
                    c.insert("Visits", Value::Int64(5));
                }),
            },
            Verb::MutateOrCreate if !m.contains("r0") => {
                let c = customer_cells("ours", 1);
                m.put("r0", c.clone());
                Said::Ok(Some(c))
            }
            Verb::MutateOrCreate => mutate(m, add_visit),
            Verb::GetOrCreate => match m.cells("r0") {
                Some(c) => Said::Ok(Some(c.clone())),
                None => {
                    m.put("r0", customer_cells("ours", 0));
                    Said::Ok(Some(customer_cells("ours", 0)))
                }
            },
            Verb::CreateBatch | Verb::UnionInsertBatch if BATCH.iter().any(|k| m.contains(k)) => Said::AlreadyExists,
            Verb::CreateBatch | Verb::UpsertBatch => {
                for k in BATCH {
                    m.put(k, customer_cells("ours", 0));
                }
                ok
            }
            Verb::UnionInsertBatch => {
                for k in BATCH {
                    m.put(k, marker_cells("ours"));
                }
                ok
            }
            Verb::UnionInsert | Verb::LargeCreate if m.contains("r0") => Said::AlreadyExists,
            Verb::UnionInsert | Verb::UnionUpsert => {
                m.put("r0", cancelled_cells());
                ok
            }
            Verb::UnionMerge => {
                m.merge("r0", [("_N", Value::String("ours".into()))]);
                ok
            }
            Verb::LargeCreate => {
                m.put("r0", title_cells("ours"));
                ok
            }
        }
    }

    fn deletes(&self) -> bool {
        matches!(
            self,
            Verb::Delete | Verb::DeleteEntity | Verb::UnionDelete | Verb::LargeDelete
        )
    }

    fn reports_whole_version(&self) -> bool {
        matches!(
            self,
            Verb::Create
                | Verb::Upsert
                | Verb::Replace
                | Verb::Update
                | Verb::Mutate
                | Verb::TryMutate
                | Verb::TryTransition
                | Verb::MutateOrCreate
                | Verb::GetOrCreate
                | Verb::UnionInsert
                | Verb::UnionUpsert
                | Verb::LargeCreate
                | Verb::LargeUpdate
        )
    }
}
