//! A small order service as a newcomer writes it from the docs: an entity
//! with the attributes a real one carries, a unique and a local index, a
//! lost race, `mutate`, a partial-update builder and a typed filter with
//! bare literals, paging with a cursor that travels as text, a batch, and
//! telemetry. Its code lives in a module whose only import is one `use`
//! line: the generated entry points (`Order::filter`, `Order::update`,
//! `Order::from_row`, the index lookups) need no trait in scope.
//!
//! ```text
//! cargo run -p unified-tables-examples --example orders                                  # in memory
//! cargo run -p unified-tables-examples --example orders -- "UseDevelopmentStorage=true"  # Azurite
//! ```

mod orders {
    use unified_tables::{DateTime, ETag, Error, ErrorKind, QueryOptions, Row, TableEnum, TableRecord, Tables};

    /// Where an order is in its life.
    #[derive(TableEnum, Debug, Clone, Copy, PartialEq)]
    pub enum Status {
        Open,
        Paid,
        Shipped,
    }

    /// Where an order goes, stored as `Ship_City` and `Ship_Zip`.
    #[derive(TableRecord, Debug, Clone, PartialEq)]
    pub struct Address {
        pub city: String,
        pub zip: Option<String>,
    }

    /// One order of a customer: the customer is the partition, the order id
    /// the row. Its number is unique in the customer's partition, and its
    /// status is indexed.
    #[derive(unified_tables::TableEntity, Debug, Clone)]
    #[table(name = "NewcomerOrders")]
    pub struct Order {
        #[table(partition_key)]
        pub customer: String,
        #[table(row_key)]
        pub id: String,
        #[unique]
        pub number: String,
        #[index]
        pub status: Status,
        #[alias("Sum")]
        pub total: f64,
        pub lines: Vec<String>,
        #[table(flatten, rename = "Ship")]
        pub ship_to: Address,
        #[table(split = "gzip")]
        pub notes: String,
        #[table(skip)]
        pub viewed: bool,
        #[table(created_at)]
        pub created_at: Option<DateTime>,
        #[table(updated_at)]
        pub updated_at: Option<DateTime>,
        #[table(etag)]
        pub etag: Option<ETag>,
    }

    fn order(customer: &str, id: &str, number: &str, total: f64) -> Order {
        Order {
            customer: customer.into(),
            id: id.into(),
            number: number.into(),
            status: Status::Open,
            total,
            lines: vec!["tea".into()],
            ship_to: Address {
                city: "Lviv".into(),
                zip: None,
            },
            notes: "leave at the door ".repeat(5_000),
            viewed: false,
            created_at: None,
            updated_at: None,
            etag: None,
        }
    }

    /// What a run found, for its test to check.
    #[derive(Debug, PartialEq)]
    pub struct Summary {
        pub paid_over_20: usize,
        pub pages: usize,
        pub listed: usize,
        pub open: usize,
        pub total_of_o1: f64,
    }

    /// The service's work on `db`, in the partition `customer`.
    pub async fn run(db: &Tables, customer: &str) -> Result<Summary, Error> {
        let orders = db.store::<Order>();
        orders.ensure_created().await?;
        orders.delete_partition(customer).await?;

        // Create, and a number another order already holds.
        orders.create(&mut order(customer, "o1", "N-1", 12.5)).await?;
        let refused = orders.create(&mut order(customer, "o2", "N-1", 7.0)).await;
        match refused {
            Err(e) if e.kind() == ErrorKind::UniqueViolation => println!("N-1 is taken: {e}"),
            other => panic!("a second holder of N-1 must be refused, not {other:?}"),
        }

        // A batch of ten more, in one transaction.
        let batch: Vec<Order> = (2..12)
            .map(|i| order(customer, &format!("o{i:02}"), &format!("N-{i}"), 10.0 * i as f64))
            .collect();
        orders.create_batch(&batch).await?;

        // Two writers read o1; the second loses the race and re-applies with `mutate`.
        let mut first = orders.get((customer, "o1")).await?.expect("o1");
        let mut second = first.clone();
        first.status = Status::Paid;
        orders.update(&mut first).await?;
        second.total += 1.0;
        assert!(matches!(orders.update(&mut second).await, Err(Error::Conflict { .. })));
        let o1 = orders.mutate((customer, "o1"), |o| o.total += 1.0).await?;

        // A partial update through the generated builder: one Merge, no read.
        orders
            .patch((customer, "o02"), Order::update().status(Status::Paid).total(25.0))
            .await?;

        // A typed filter with bare literals.
        let paid = Order::filter(|o| o.status.eq(Status::Paid) & o.total.gt(20.0));
        let paid_over_20 = orders.query(QueryOptions::partition(customer).filter(paid)).await?;

        // Pages of four, the cursor handed to a client as text and read back.
        let mut options = QueryOptions::partition(customer).take(4);
        let (mut pages, mut listed) = (0, 0);
        loop {
            let page = orders.page(options.clone()).await?;
            pages += 1;
            listed += page.items.len();
            let Some(cursor) = page.cursor else { break };
            let text = cursor.to_string();
            options = options.after(text.parse()?);
        }

        // The local index, and a row read as another program would hand it over.
        let open = Order::find_by_status(&orders, customer, Status::Open).await?;
        let mut held = Order::get_by_number(&orders, customer, "N-3").await?.expect("N-3");
        held.viewed = true;
        let row: Row = held.to_row(&Default::default())?;
        let again = Order::from_row(row)?;
        assert_eq!(
            (again.number.as_str(), again.viewed),
            ("N-3", false),
            "a skipped field is not stored"
        );

        Ok(Summary {
            paid_over_20: paid_over_20.len(),
            pages,
            listed,
            open: open.len(),
            total_of_o1: o1.total,
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), unified_tables::Error> {
    tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .init();
    let (db, backend) = unified_tables_examples::tables_from_env()?;
    println!("orders on {backend}");
    let summary = orders::run(&db, "customer-1").await?;
    println!("{summary:?}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::orders::{run, Summary};

    const EXPECTED: Summary = Summary {
        paid_over_20: 1,
        pages: 3,
        listed: 11,
        open: 9,
        total_of_o1: 13.5,
    };

    #[tokio::test]
    async fn runs_in_memory() {
        let db = unified_tables::Tables::memory();
        assert_eq!(run(&db, "customer-1").await.unwrap(), EXPECTED);
    }

    #[tokio::test]
    async fn runs_on_azurite() {
        let Some(connection) = std::env::var(unified_tables_tests::CONNECTION_VAR)
            .ok()
            .or_else(|| unified_tables_tests::connect::skip("orders example", "no Azurite connection is set"))
        else {
            return;
        };
        let db = unified_tables::Tables::connect(&connection).unwrap();
        assert_eq!(run(&db, "customer-azurite").await.unwrap(), EXPECTED);
    }
}
