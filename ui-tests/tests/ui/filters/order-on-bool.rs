use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Device {
    #[table(partition_key)]
    site: String,
    #[table(row_key)]
    serial: String,
    online: bool,
}

fn main() {
    let _ = Device::filter(|c| c.online.ge(true));
}
