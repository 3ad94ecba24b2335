//! Compile-fail tests: each case under `tests/ui/` is one misuse of the
//! derives, with the message the user sees in the `.stderr` beside it.
//! Bless with `TRYBUILD=overwrite cargo test -p unified-tables-ui-tests`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
    t.pass("tests/pass/*.rs");
}
