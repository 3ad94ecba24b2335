//! A tower-sessions `SessionStore` over a table.
