use unified_tables::{Guid, TableEntity};

#[derive(TableEntity)]
struct Device {
    #[table(partition_key)]
    site: String,
    #[table(row_key)]
    serial: String,
    owner: Guid,
}

fn main() {
    let _ = Device::filter(|c| c.owner.gt(Guid([0; 16])));
}
