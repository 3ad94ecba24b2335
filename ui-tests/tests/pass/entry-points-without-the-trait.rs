//! Every entry point the derive gives a type is called from a module that
//! does not import `TableEntity`: none falls to another trait's method of
//! the same name (`Iterator::filter`: "`Order` is not an iterator").

mod model {
    #[derive(unified_tables::TableEntity, Debug, Clone, PartialEq)]
    pub struct Order {
        #[table(partition_key)]
        pub customer: String,
        #[table(row_key)]
        pub number: String,
        pub total: f64,
        #[index]
        pub status: String,
        #[table(etag)]
        pub etag: Option<unified_tables::ETag>,
    }

    /// Its own inherent items kept beside the trait's, by `no_inherent`.
    #[derive(unified_tables::TableEntity)]
    #[table(no_inherent)]
    pub struct Ticket {
        #[table(partition_key)]
        pub board: String,
        #[table(row_key)]
        pub id: String,
    }

    impl Ticket {
        pub fn key(&self) -> &str {
            &self.id
        }

        pub fn filter(&self, board: &str) -> bool {
            self.board == board
        }
    }
}

mod app {
    use super::model::{Order, Ticket};
    use unified_tables::{QueryOptions, Tables};

    pub fn use_every_entry_point() -> unified_tables::Result<()> {
        let order = Order {
            customer: "c1".into(),
            number: "0001".into(),
            total: 9.5,
            status: "open".into(),
            etag: None,
        };
        let table: &str = Order::SCHEMA.table;
        let big = Order::filter(|c| c.total.gt(100.0) & c.status.eq("open"));
        let only_totals = QueryOptions::partition("c1").select(Order::projection(|c| [c.total.col()]));
        let columns = Order::columns();
        let paid = Order::update().status("paid").total(0.0);
        let row = order.to_row(&Default::default())?;
        let key: unified_tables::Key = order.key();
        let back: Order = Order::from_row(row)?;
        let store = Tables::memory().store::<Order>();
        let _lookup = Order::find_by_status(&store, "c1", "open");
        let _ = (table, big, only_totals, columns.total.col(), paid, key, back, Order::BY_STATUS);

        let ticket = Ticket { board: "b".into(), id: "7".into() };
        let own: &str = ticket.key();
        let mine: bool = ticket.filter("b");
        let _ = (own, mine, <Ticket as unified_tables::TableEntity>::filter(|c| c.id.eq("7")));
        Ok(())
    }
}

fn main() {
    app::use_every_entry_point().unwrap();
}
