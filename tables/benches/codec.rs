//! Row codec benchmark: the derive-generated `to_row` + `from_row` against
//! hand-written code producing the very same `Row`, and against the generic
//! route (serde_json::Value, flattened into columns and back). The entity and
//! the three routes live in `support/codec_routes.rs`, shared with the
//! `figures` example.
//!
//! `cargo bench -p unified-tables --bench codec` runs the criterion groups,
//! then a plain `Instant` loop over the three routes that prints the ratios.
//! Under `cargo test` (no `--bench` argument) each criterion bench runs once
//! and the long loop is skipped.

#[path = "support/codec_routes.rs"]
mod codec_routes;
#[path = "support/row_layouts.rs"]
mod row_layouts;

use std::hint::black_box;

use codec_routes::{
    check_routes_agree, derive_round_trip, generic_from_row, generic_round_trip, generic_to_row, hand_from_row,
    hand_round_trip, hand_to_row, sample, time_round_trips, Order, ITERATIONS, ROUNDS, ROUTES,
};
use criterion::{BenchmarkId, Criterion};
use unified_tables::EncodeOptions;

fn criterion_groups(c: &mut Criterion, o: &Order) {
    let opts = EncodeOptions::default();
    let derived = o.to_row(&opts).expect("encodes");
    let generic = generic_to_row(o);

    let mut g = c.benchmark_group("to_row");
    g.bench_function(BenchmarkId::new("encode", "derive"), |b| {
        b.iter(|| black_box(o).to_row(&opts).expect("encodes"))
    });
    g.bench_function(BenchmarkId::new("encode", "hand-written"), |b| {
        b.iter(|| hand_to_row(black_box(o)).expect("encodes"))
    });
    g.bench_function(BenchmarkId::new("encode", "generic serde"), |b| {
        b.iter(|| generic_to_row(black_box(o)))
    });
    g.finish();

    let mut g = c.benchmark_group("from_row");
    g.bench_function(BenchmarkId::new("decode", "derive"), |b| {
        b.iter_batched(
            || derived.clone(),
            |row| Order::from_row(row).expect("decodes"),
            criterion::BatchSize::SmallInput,
        )
    });
    g.bench_function(BenchmarkId::new("decode", "hand-written"), |b| {
        b.iter_batched(
            || derived.clone(),
            |row| hand_from_row(row).expect("decodes"),
            criterion::BatchSize::SmallInput,
        )
    });
    g.bench_function(BenchmarkId::new("decode", "generic serde"), |b| {
        b.iter_batched(|| generic.clone(), generic_from_row, criterion::BatchSize::SmallInput)
    });
    g.finish();

    let mut g = c.benchmark_group("round_trip");
    g.bench_function(BenchmarkId::new("to_row+from_row", "derive"), |b| {
        b.iter(|| derive_round_trip(black_box(o), &opts))
    });
    g.bench_function(BenchmarkId::new("to_row+from_row", "hand-written"), |b| {
        b.iter(|| hand_round_trip(black_box(o)))
    });
    g.bench_function(BenchmarkId::new("to_row+from_row", "generic serde"), |b| {
        b.iter(|| generic_round_trip(black_box(o)))
    });
    g.finish();
}

fn manual_timing(o: &Order) {
    let timing = time_round_trips(o);
    let vs_hand = timing.derive() / timing.hand_written();
    let vs_generic = timing.derive() / timing.generic();
    println!();
    println!(
        "manual timing: to_row + from_row, {ITERATIONS} iterations, best of {ROUNDS} interleaved rounds ({} columns)",
        o.to_row(&EncodeOptions::default())
            .map(|r| r.properties.len())
            .unwrap_or_default()
    );
    for (name, t) in ROUTES.iter().zip(&timing.ns) {
        println!("  {name:<16} {t:>9.1} ns/round trip");
    }
    println!(
        "  derive / hand-written = {vs_hand:.2}x (target <= 1.05x) {}",
        if vs_hand <= 1.05 { "MET" } else { "MISSED" }
    );
    println!(
        "  derive / generic serde = {vs_generic:.2} (target < 1.0) {}",
        if vs_generic < 1.0 { "MET" } else { "MISSED" }
    );
}

/// The row layouts measured on the derive's pattern (build 14 cells, take them back).
fn layout_timing() {
    let ns = row_layouts::time_layouts();
    println!();
    println!("row layouts: build 14 cells in field order, take each back by name");
    for (name, t) in row_layouts::LAYOUTS.iter().zip(ns) {
        println!("  {name:<22} {t:>7.1} ns ({:.2}x BTreeMap)", t / ns[0]);
    }
}

fn main() {
    let order = sample();
    check_routes_agree(&order);
    let mut c = Criterion::default().configure_from_args();
    criterion_groups(&mut c, &order);
    c.final_summary();
    // `cargo bench` passes `--bench`; `cargo test` does not, and runs each bench once.
    if std::env::args().any(|a| a == "--bench") {
        manual_timing(&order);
        layout_timing();
    }
}
