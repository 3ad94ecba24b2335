use unified_tables::{TableEntity, TableEnum, TableRecord};

#[derive(TableEnum, Debug, Clone, Copy, PartialEq)]
enum Status {
    Open,
    Closed,
}

#[derive(TableRecord)]
struct Address {
    city: String,
}

#[derive(TableEntity)]
struct Ticket {
    #[table(partition_key)]
    queue: String,
    #[table(row_key)]
    number: String,
    status: Status,
    priority: i32,
    owner: Option<String>,
    active: bool,
    #[table(flatten)]
    address: Address,
    #[protected("admin")]
    limit: i64,
}

fn main() {
    let f = Ticket::filter(|c| {
        (c.status.eq(Status::Open) & c.priority.ge(3) & c.active.is_true()) | !c.address.city.eq("Lviv")
    });
    let text = f.into_filter().unwrap().to_odata();
    assert!(text.contains("Status eq 'Open'"), "{text}");
    let partial = Ticket::filter(|c| c.owner.eq("bob") & c.queue.eq("q"));
    assert!(partial.into_filter().is_ok());
    let _u = Ticket::update()
        .priority(2)
        .owner("alice")
        .address(|a| a.city("Kyiv"))
        .authorize(|role: &str| role == "admin")
        .limit(5);
    let _ = Ticket { queue: String::new(), number: String::new(), status: Status::Open, priority: 0, owner: None, active: false, address: Address { city: String::new() }, limit: 0 };
}
