//! A query page read straight into entities (the derive's page reader,
//! used where the backend answers the service's body) gives exactly what
//! the row path gives, entities or error, on well-formed, odd and hostile
//! bodies alike.

use async_trait::async_trait;
use proptest::prelude::*;
use unified_tables::backend::{Backend, Page, PageAnswer, PageBody, PageToken, QueryRequest, WriteOp, WriteOutcome};
use unified_tables::{DateTime, ETag, Error, QueryOptions, Row, TableEntity, TableEnum, Tables};

#[derive(TableEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Tier {
    #[default]
    Free,
    Pro,
}

/// Every plain kind of cell, with the system fields.
#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Plain {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    name: String,
    count: i32,
    big: i64,
    unsigned: u64,
    ratio: f64,
    flag: bool,
    when: Option<DateTime>,
    maybe: Option<String>,
    tier: Tier,
    #[table(skip)]
    scratch: u8,
    #[table(etag)]
    etag: Option<ETag>,
    #[table(timestamp)]
    ts: Option<DateTime>,
}

/// No system fields: the ETag is checked, not kept.
#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Bare {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    name: String,
    big: i64,
}

/// A backend that answers every query with one body: as the service's
/// body (read straight into entities where the type can) or as its rows.
#[derive(Debug)]
struct Answers {
    body: Vec<u8>,
    as_body: bool,
}

#[async_trait]
impl Backend for Answers {
    async fn create_table(&self, _: &str) -> unified_tables::Result<()> {
        Ok(())
    }
    async fn delete_table(&self, _: &str) -> unified_tables::Result<()> {
        Ok(())
    }
    async fn get(&self, _: &str, _: &str, _: &str) -> unified_tables::Result<Option<Row>> {
        Ok(None)
    }
    async fn execute(&self, _: &str, _: WriteOp) -> unified_tables::Result<WriteOutcome> {
        Err(Error::config("queries only"))
    }
    async fn transaction(&self, _: &str, _: Vec<WriteOp>) -> unified_tables::Result<Vec<WriteOutcome>> {
        Err(Error::config("queries only"))
    }
    async fn query(&self, _: &str, _: &QueryRequest, _: Option<&PageToken>) -> unified_tables::Result<Page> {
        PageBody::new(self.body.clone(), None).into_page()
    }
    async fn query_body(
        &self,
        table: &str,
        request: &QueryRequest,
        token: Option<&PageToken>,
    ) -> unified_tables::Result<PageAnswer> {
        if self.as_body {
            Ok(PageAnswer::Body(PageBody::new(self.body.clone(), None)))
        } else {
            self.query(table, request, token).await.map(PageAnswer::Rows)
        }
    }
}

/// The query's result through each route, as text (a NaN is not equal to itself).
fn both<T: TableEntity + std::fmt::Debug>(body: &[u8]) -> (String, String) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let read = |as_body| {
        let backend = Answers {
            body: body.to_vec(),
            as_body,
        };
        let store = Tables::with_backend(backend).without_cache().store_in::<T>("Direct");
        format!("{:?}", runtime.block_on(store.query(QueryOptions::all())))
    };
    (read(true), read(false))
}

fn page(rows: &[String]) -> Vec<u8> {
    format!(r#"{{"odata.metadata":"m","value":[{}]}}"#, rows.join(",")).into_bytes()
}

fn assert_same(body: &[u8]) {
    let text = String::from_utf8_lossy(body);
    let (direct, rows) = both::<Plain>(body);
    assert!(!direct.contains("valid table name"), "{direct}");
    assert_eq!(direct, rows, "Plain, body {text}");
    let (direct, rows) = both::<Bare>(body);
    assert_eq!(direct, rows, "Bare, body {text}");
}

const FULL: &str = r#"{"odata.type":"a.T","odata.id":"http://x/T(PartitionKey='p',RowKey='a')","odata.etag":"W/\"datetime'2024-05-01T10%3A00%3A00.1234567Z'\"","odata.editLink":"T(PartitionKey='p',RowKey='a')","PartitionKey":"p","RowKey":"a","Timestamp@odata.type":"Edm.DateTime","Timestamp":"2024-05-01T10:00:00.1234567Z","Name":"t\u00e9\"x","Count":3,"Big@odata.type":"Edm.Int64","Big":"-9223372036854775808","Unsigned@odata.type":"Edm.Int64","Unsigned":"-1","Ratio":1.5,"Flag":true,"When@odata.type":"Edm.DateTime","When":"2024-02-29T23:59:59Z","Maybe":null,"Tier":"Pro"}"#;

#[test]
fn a_full_page_reads_the_same_entities() {
    let body = page(&[FULL.to_owned(), FULL.replace("\"a\"", "\"b\"").replace("'a'", "'b'")]);
    // The page is read straight into entities, not through rows.
    const { assert!(Plain::DECODES_PAGES && Bare::DECODES_PAGES) };
    assert_eq!(Plain::decode_page(&body).map(|e| e.len()), Some(2));
    assert_eq!(
        Bare::decode_page(&page(&[
            r#"{"PartitionKey":"p","RowKey":"r","Big@odata.type":"Edm.Int64","Big":"5"}"#.to_owned()
        ]))
        .map(|e| e.len()),
        Some(1)
    );
    let (direct, rows) = both::<Plain>(&body);
    assert!(direct.starts_with("Ok([Plain"), "{direct}");
    assert_eq!(direct, rows);
    assert_same(&body);
}

#[test]
fn edge_rows_read_the_same_way_or_fail_the_same_way() {
    let cases = [
        // Absent columns take their defaults; no ETag comes from the Timestamp.
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2024-05-01T10:00:01Z"}"#,
        // No keys at all.
        r#"{"Name":"x"}"#,
        // An annotation after its value, and one of a column the row lacks.
        r#"{"PartitionKey":"p","RowKey":"r","Big":"5","Big@odata.type":"Edm.Int64","Count@odata.type":"Edm.Int32"}"#,
        // The last annotation of a column wins.
        r#"{"PartitionKey":"p","RowKey":"r","Big@odata.type":"Edm.String","Big@odata.type":"Edm.Int64","Big":"5"}"#,
        // A column given twice.
        r#"{"PartitionKey":"p","RowKey":"r","Name":"a","Name":"b"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Count":"x","Count":2}"#,
        // Columns the types do not declare: another field, a JSON form, a continuation marker.
        r#"{"PartitionKey":"p","RowKey":"r","Other":1}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Name__Json":"\"x\""}"#,
        r#"{"PartitionKey":"p","RowKey":"r","_SplitOf":"q"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","name":"lower-case is another column"}"#,
        // Type mismatches, named by the row path.
        r#"{"PartitionKey":"p","RowKey":"r","Count":"seven"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Count":4294967296}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Big@odata.type":"Edm.Int64","Big":"1e3"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Big@odata.type":"Edm.Nope","Big":null}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Big@odata.type":7,"Big":"1"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Name":[1,{"a":2}]}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Flag":"yes"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Tier":"Gold"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Ratio@odata.type":"Edm.Double","Ratio":"NaN"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Ratio@odata.type":"Edm.Double","Ratio":"-Infinity"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Ratio":10}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Unsigned@odata.type":"Edm.Int64","Unsigned":"12"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","When":"2024-05-01T10:00:00Z"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","When@odata.type":"Edm.DateTime","When":"2024-02-30T10:00:00.0000000Z"}"#,
        // Keys, ETag and Timestamp that are not what the service sends.
        r#"{"PartitionKey":7,"RowKey":"r"}"#,
        r#"{"PartitionKey":"p","RowKey":null}"#,
        r#"{"PartitionKey":"p","RowKey":"r","odata.etag":5}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"soon"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2023-02-29T10:00:00.1234567Z"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":" 2024-05-01T10:00:00.1234567Z "}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2024-05-01T10:00:00.1234567+01:00"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2024-05-01T10:00:00.12345x7Z"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","Timestamp":"2024-05-01T10:00:00.1234567Z","Timestamp":"2024-05-01T10:00:00.1234567Z"}"#,
        // Members no reader needs.
        r#"{"PartitionKey":"p","RowKey":"r","odata.other":[1],"x@y":{},"odata.type@odata.type":1}"#,
        // A row that is not an object.
        r#"null"#,
        r#"[]"#,
    ];
    for case in cases {
        assert_same(&page(&[case.to_owned()]));
        // After a row the direct read takes, and before one.
        assert_same(&page(&[FULL.to_owned(), case.to_owned()]));
        assert_same(&page(&[case.to_owned(), FULL.to_owned()]));
    }
    for body in [
        &br#"{"value":[]}"#[..],
        br#"{"odata.metadata":"m"}"#,
        br#"{"value":[],"value":[]}"#,
        br#"{"value":{}}"#,
        br#"[1,2]"#,
        br#"{"value":[]} trailing"#,
        br#"{"value":[{"PartitionKey":"p""#,
        b"{\"value\":[{\"PartitionKey\":\"\xff\",\"RowKey\":\"r\"}]}",
    ] {
        assert_same(body);
    }
}

/// A member of a generated row: a name and a JSON value, often ill-matched.
fn member() -> impl Strategy<Value = String> {
    let names = prop::sample::select(vec![
        "PartitionKey",
        "RowKey",
        "Timestamp",
        "odata.etag",
        "odata.type",
        "Name",
        "Count",
        "Big",
        "Unsigned",
        "Ratio",
        "Flag",
        "When",
        "Maybe",
        "Tier",
        "Other",
        "Name@odata.type",
        "Count@odata.type",
        "Big@odata.type",
        "When@odata.type",
        "Ratio@odata.type",
        "Timestamp@odata.type",
        "Name__Json",
        "x@y",
    ]);
    let values = prop::sample::select(vec![
        r#""text""#,
        r#""t\u00e9\"x""#,
        r#""12""#,
        r#""-1""#,
        r#""NaN""#,
        r#""Pro""#,
        "7",
        "-3",
        "4294967296",
        "18446744073709551615",
        "1.5",
        "true",
        "null",
        "[1]",
        "{}",
        r#""Edm.Int64""#,
        r#""Edm.Int32""#,
        r#""Edm.Double""#,
        r#""Edm.DateTime""#,
        r#""Edm.String""#,
        r#""Edm.Boolean""#,
        r#""Edm.Nope""#,
        r#""2024-05-01T10:00:00.1234567Z""#,
        r#""2024-02-30T10:00:00.1234567Z""#,
        r#""2024-05-01T10:00:00Z""#,
    ]);
    (names, values).prop_map(|(n, v)| format!("\"{n}\":{v}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn any_generated_page_reads_the_same_way(
        rows in prop::collection::vec(prop::collection::vec(member(), 0..12), 0..4),
        keyed in any::<bool>(),
    ) {
        let rows: Vec<String> = rows
            .into_iter()
            .enumerate()
            .map(|(i, members)| {
                let mut all = Vec::new();
                if keyed {
                    all.push(format!(r#""PartitionKey":"p","RowKey":"r{i}""#));
                }
                all.extend(members);
                format!("{{{}}}", all.join(","))
            })
            .collect();
        assert_same(&page(&rows));
    }
}
