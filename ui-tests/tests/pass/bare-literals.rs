//! Bare literals take the column's own type, at every width, in the update
//! builder's setters (optional fields and flattened records included) and in
//! every comparison of the typed filter columns.

use unified_tables::{DateTime, TableEntity, TableRecord};

#[derive(TableRecord)]
struct Limits {
    low: u16,
    high: Option<u32>,
}

#[derive(TableEntity)]
#[table(name = "Numbers")]
struct Numbers {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    a: i8,
    b: i16,
    c: i32,
    d: i64,
    e: u8,
    f: u16,
    g: u32,
    h: u64,
    i: isize,
    j: usize,
    x: f32,
    y: f64,
    maybe_i8: Option<i8>,
    maybe_u32: Option<u32>,
    maybe_u64: Option<u64>,
    maybe_f32: Option<f32>,
    name: String,
    nick: Option<String>,
    at: DateTime,
    #[table(flatten)]
    limits: Limits,
}

fn main() {
    let _ = Numbers::update()
        .a(-1)
        .b(2)
        .c(3)
        .d(4)
        .e(5)
        .f(6)
        .g(7)
        .h(8)
        .i(9)
        .j(10)
        .x(1.5)
        .y(2.5)
        .maybe_i8(-3)
        .maybe_u32(4)
        .maybe_u64(5)
        .maybe_f32(0.5)
        .name("a literal")
        .name(String::from("an owned string"))
        .name(&String::from("a borrowed string"))
        .nick("an optional string")
        .at(std::time::SystemTime::UNIX_EPOCH)
        .limits(|l| l.low(1).high(2));

    let every = Numbers::filter(|c| {
        c.a.ge(-1)
            & c.b.lt(2)
            & c.c.le(3)
            & c.d.gt(4)
            & c.e.ge(5)
            & c.f.ge(6)
            & c.g.ge(7)
            & c.h.eq(8)
            & c.h.ne(9)
            & c.i.ge(9)
            & c.j.ge(10)
            & c.x.ge(1.5)
            & c.y.lt(2.5)
            & c.name.eq("a literal")
            & c.limits.low.ge(1)
    });
    let text = every.into_filter().unwrap().to_odata();
    assert!(text.contains("G ge 7L") && text.contains("H eq 8L") && text.contains("A ge -1"), "{text}");
    let optional = Numbers::filter(|c| {
        c.maybe_i8.eq(-3) & c.maybe_u32.eq(4) & c.maybe_u64.eq(5) & c.maybe_f32.eq(0.5) & c.nick.eq("n") & c.limits.high.eq(2)
    });
    assert!(optional.into_filter().is_ok());
}
