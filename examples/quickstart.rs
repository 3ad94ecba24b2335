//! Define an entity, create it, read it, lose an optimistic race, query.
//!
//! ```text
//! cargo run --example quickstart                                   # in memory
//! cargo run --example quickstart -- "UseDevelopmentStorage=true"   # Azurite
//! UNIFIED_TABLES_CONNECTION="DefaultEndpointsProtocol=https;AccountName=..;AccountKey=..;EndpointSuffix=core.windows.net" \
//!     cargo run --example quickstart                               # Azure
//! ```

use unified_tables::{DateTime, ETag, Error, QueryOptions, TableEntity, TableEnum, TableRecord};
use unified_tables_examples::tables_from_env;

#[derive(TableEnum, Debug, Clone, Copy, PartialEq)]
enum Tier {
    Free,
    Pro,
}

#[derive(TableRecord, Debug, Clone, PartialEq)]
struct Address {
    city: String,
    zip: Option<String>,
}

#[derive(TableEntity, Debug, Clone)]
#[table(name = "QuickstartCustomers")]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    name: String,
    tier: Tier,
    visits: u32,
    tags: Vec<String>, // one JSON cell: Tags__Json
    #[table(flatten)]
    address: Address, // Address_City, Address_Zip
    #[table(created_at)]
    created_at: Option<DateTime>,
    #[table(etag)]
    etag: Option<ETag>,
}

fn customer(region: &str, email: &str, name: &str, city: &str) -> Customer {
    Customer {
        region: region.into(),
        email: email.into(),
        name: name.into(),
        tier: Tier::Free,
        visits: 0,
        tags: vec!["new".into()],
        address: Address {
            city: city.into(),
            zip: None,
        },
        created_at: None,
        etag: None,
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (db, backend) = tables_from_env()?;
    println!("quickstart on {backend}");
    let customers = db.store::<Customer>();
    customers.ensure_created().await?;

    // Start from a clean slate so the example can run again against the same account.
    for email in ["alice@example.com", "bob@example.com", "carol@example.com"] {
        customers.delete(("eu", email)).await?;
    }

    // Create.
    let mut alice = customer("eu", "alice@example.com", "Alice", "Lviv");
    customers.create(&mut alice).await?;
    println!(
        "created {} (ETag {})",
        alice.email,
        alice.etag.as_ref().map(ETag::as_str).unwrap_or("-")
    );
    customers
        .create(&mut customer("eu", "bob@example.com", "Bob", "Kyiv"))
        .await?;
    customers
        .create(&mut customer("eu", "carol@example.com", "Carol", "Odesa"))
        .await?;

    // A duplicate key is refused.
    match customers
        .create(&mut customer("eu", "alice@example.com", "Impostor", "-"))
        .await
    {
        Err(Error::AlreadyExists { .. }) => println!("a second create of alice: AlreadyExists"),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }

    // Read it back, with its ETag.
    let mut first = customers
        .get(("eu", "alice@example.com"))
        .await?
        .expect("alice was stored");
    println!(
        "read {} from {}: tier {:?}, tags {:?}",
        first.name, first.address.city, first.tier, first.tags
    );

    // Two writers start from the same version; the second loses the optimistic race.
    let mut second = first.clone();
    first.tier = Tier::Pro;
    customers.update(&mut first).await?;
    println!("writer 1 upgraded alice to {:?}", first.tier);
    second.visits += 1;
    match customers.update(&mut second).await {
        Err(Error::Conflict { .. }) => println!("writer 2 got Conflict: it must re-read and re-apply its change"),
        other => panic!("expected Conflict, got {other:?}"),
    }
    let mut fresh = customers.get(("eu", "alice@example.com")).await?.expect("still there");
    fresh.visits += 1;
    customers.update(&mut fresh).await?;
    println!(
        "writer 2 re-applied on the fresh version: tier {:?}, visits {}",
        fresh.tier, fresh.visits
    );

    // Query the partition, in RowKey order.
    let everyone = customers.query(QueryOptions::partition("eu")).await?;
    for c in &everyone {
        println!(
            "  {:<20} {:<6} {:<5} visits={}",
            c.email,
            c.name,
            format!("{:?}", c.tier),
            c.visits
        );
    }
    let count = customers.count(QueryOptions::partition("eu")).await?;
    println!("{count} customers in partition eu");
    assert_eq!(count, 3);
    Ok(())
}
