//! Normalization and the keys of user text.
