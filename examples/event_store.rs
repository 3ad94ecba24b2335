//! An event-sourced bank account in one union table: each command appends
//! its events and an outbox flag in one transaction, the account is replayed
//! from the table, and a relay publishes pending events and flips the flag.
//!
//! ```text
//! cargo run -p unified-tables-examples --example event_store                                 # in memory
//! cargo run -p unified-tables-examples --example event_store -- "UseDevelopmentStorage=true" # Azurite
//! ```
//!
//! `cargo test -p unified-tables-examples` runs it too (in memory, and on Azurite when
//! `UNIFIED_TABLES_TEST_CONNECTION` is set).

use unified_tables::{
    Error, Row, TableRecord, TableUnion, Tables, UnionEntry, UnionQuery, UnionStore, UnionWrite, Value,
};
use unified_tables_examples::tables_from_env;

/// Money moved by a deposit or withdrawal: the columns `Amount` and `Reference`.
#[derive(TableRecord, Debug, Clone, PartialEq)]
struct Money {
    amount: i64,
    reference: String,
}

/// Everything that happens to an account. Each variant is a type of row in
/// the table, told apart by `_TypeName`.
#[derive(TableUnion, Debug, Clone, PartialEq)]
enum AccountEvent {
    Opened {
        owner: String,
    },
    Deposited(Money),
    // Renamed once; rows written under the old token still read.
    #[table(tag = "Withdrawn", also = ["MoneyWithdrawn"])]
    Withdrawn(Money),
    Closed,
    // Rows of event types this program does not know (a newer writer's).
    #[table(other)]
    Unknown(Row),
}

/// The outbox flag of one commit: a marker row beside its events.
const PUBLISHED: &str = "_Published";
const EVENT_COUNT: &str = "_Events";

/// The account, as its events say it is.
#[derive(Debug, Default, Clone, PartialEq)]
struct Account {
    owner: String,
    balance: i64,
    open: bool,
    /// How many events it has: the next event's number is `version + 1`.
    version: u32,
}

impl Account {
    fn apply(&mut self, event: &AccountEvent) {
        match event {
            AccountEvent::Opened { owner } => {
                self.owner = owner.clone();
                self.open = true;
            }
            AccountEvent::Deposited(m) => self.balance += m.amount,
            AccountEvent::Withdrawn(m) => self.balance -= m.amount,
            AccountEvent::Closed => self.open = false,
            AccountEvent::Unknown(_) => {}
        }
        self.version += 1;
    }
}

/// The event row of event number `n` (1-based): nine digits, so rows sort in order.
fn event_key(n: u32) -> String {
    format!("e{n:09}")
}

/// The outbox row of the commit whose first event is number `n`.
fn outbox_key(n: u32) -> String {
    format!("outbox{n:09}")
}

struct Accounts {
    events: UnionStore<AccountEvent>,
}

impl Accounts {
    /// Replays an account from its events (outbox rows hold no item and are skipped).
    async fn load(&self, id: &str) -> Result<Account, Error> {
        let mut account = Account::default();
        let events = self.events.query(UnionQuery::partition(id).row_key_prefix("e")).await?;
        for event in events.iter().filter_map(|e| e.item.as_ref()) {
            account.apply(event);
        }
        Ok(account)
    }

    /// Appends `new` after version `expected`, with an unpublished outbox
    /// flag, in one transaction: all of it is stored, or none of it. A writer
    /// that raced past `expected` makes the event keys exist already, and the
    /// whole commit fails.
    async fn commit(&self, id: &str, expected: u32, new: &[AccountEvent]) -> Result<(), Error> {
        let mut writes: Vec<UnionWrite<'_, AccountEvent>> = new
            .iter()
            .zip(expected + 1..)
            .map(|(event, n)| UnionWrite::item((id, event_key(n).as_str()), event))
            .collect();
        writes.push(
            UnionWrite::marker((id, outbox_key(expected + 1).as_str()))
                .column(PUBLISHED, Value::Bool(false))
                .column(EVENT_COUNT, Value::Int32(new.len() as i32)),
        );
        self.events.insert_batch(writes).await.map(|_| ())
    }

    /// Publishes every commit whose flag is still down, then raises it, on
    /// condition that nobody else raised it meanwhile. Returns the events published.
    async fn relay(&self, id: &str) -> Result<Vec<AccountEvent>, Error> {
        let pending: Vec<UnionEntry<AccountEvent>> = self
            .events
            .query(UnionQuery::partition(id).filter(|c| c.system::<bool>(PUBLISHED).eq(false)))
            .await?;
        let mut published = Vec::new();
        for flag in pending {
            let first: u32 = flag.key.row_key["outbox".len()..].parse().expect("an outbox key");
            let count = match flag.column(EVENT_COUNT) {
                Some(Value::Int32(n)) => *n as u32,
                other => panic!("an outbox row counts its events: {other:?}"),
            };
            for n in first..first + count {
                let entry = self
                    .events
                    .get((id, event_key(n).as_str()))
                    .await?
                    .expect("a committed event");
                published.extend(entry.item);
            }
            self.events
                .merge_columns_if(flag.key.clone(), [(PUBLISHED, Value::Bool(true))], &flag.etag)
                .await?;
        }
        Ok(published)
    }
}

/// The whole example, on any tables.
async fn run(db: Tables) -> Result<(), Error> {
    let accounts = Accounts {
        events: db.union_store::<AccountEvent>("ExampleAccountEvents"),
    };
    let id = format!("account-{}", unified_tables::keys::reverse_ticked_now());
    let money = |amount, reference: &str| Money {
        amount,
        reference: reference.into(),
    };

    // Open and fund the account: two commits, each one transaction with its outbox flag.
    accounts
        .commit(
            &id,
            0,
            &[
                AccountEvent::Opened { owner: "Olena".into() },
                AccountEvent::Deposited(money(100, "salary")),
            ],
        )
        .await?;
    let account = accounts.load(&id).await?;
    accounts
        .commit(&id, account.version, &[AccountEvent::Withdrawn(money(30, "rent"))])
        .await?;

    // Two writers decide on the same version; the second commit fails whole:
    // neither its event nor its outbox flag is stored.
    let stale = accounts.load(&id).await?;
    accounts
        .commit(&id, stale.version, &[AccountEvent::Deposited(money(5, "refund"))])
        .await?;
    match accounts
        .commit(&id, stale.version, &[AccountEvent::Withdrawn(money(70, "car"))])
        .await
    {
        Err(Error::BatchFailed { source, .. }) if matches!(*source, Error::AlreadyExists { .. }) => {
            println!(
                "a concurrent commit on version {} lost, and stored nothing",
                stale.version
            )
        }
        other => panic!("expected the stale commit to fail, got {other:?}"),
    }
    assert!(accounts
        .events
        .get((id.as_str(), outbox_key(stale.version + 1).as_str()))
        .await?
        .is_some_and(|flag| flag.column(EVENT_COUNT) == Some(&Value::Int32(1))));

    // Replayed from the table.
    let account = accounts.load(&id).await?;
    println!(
        "{} has {} after {} events",
        account.owner, account.balance, account.version
    );
    assert_eq!((account.balance, account.version, account.open), (75, 4, true));

    // The relay publishes each commit once.
    let published = accounts.relay(&id).await?;
    println!("published {} events", published.len());
    assert_eq!(published.len(), 4);
    assert!(accounts.relay(&id).await?.is_empty(), "every flag is up");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (db, backend) = tables_from_env()?;
    println!("event store on {backend}");
    run(db).await
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn runs_in_memory() {
        super::run(unified_tables::Tables::memory()).await.unwrap();
    }

    #[tokio::test]
    async fn runs_on_azure_when_configured() {
        if let Ok(connection) = std::env::var("UNIFIED_TABLES_TEST_CONNECTION") {
            let db = unified_tables::Tables::connect(&connection).unwrap();
            super::run(db).await.unwrap();
        }
    }
}
