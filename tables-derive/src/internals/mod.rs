//! Parsing and checking, before any code is generated.

pub(crate) mod ast;
pub(crate) mod attr;
pub(crate) mod attr_keys;
pub(crate) mod case;
pub(crate) mod check;
pub(crate) mod ctxt;
pub(crate) mod docs;
pub(crate) mod index;
pub(crate) mod names;
pub(crate) mod symbol;
pub(crate) mod ty;
pub(crate) mod union;
