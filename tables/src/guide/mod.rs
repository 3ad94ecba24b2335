//! The guide: how to use the crate, chapter by chapter. Each chapter is a
//! module of documentation only (it holds no items), and its examples are
//! compiled and run as doc tests.
//!
//! | chapter | for |
//! |---|---|
//! | [`getting_started`] | a first type and store, in memory, then on Azurite and Azure |
//! | [`storage_format`] | what a row holds, cell by cell, for readers in other languages |
//! | [`secondary_indexes`] | a second way in: indexes declared on the derive, kept by every write, looked up by typed functions |
//! | [`dotnet`] | sharing tables with services that use the .NET library |
//! | [`testing`] | testing an application: the in-memory backend, injected faults, counted round trips |
//! | [`production`] | the read cache across processes, sweeping orphan blobs, retries, limits, backups |
//! | [`telemetry`] | spans, events and metrics: what each call cost and why it failed, and how to see it |
//! | [`scaling`] | the service's limits and throttling; partitions spread over a pool of accounts, and growing it |
//! | [`web`] | sessions and logins for an axum app (features `tower-sessions`, `axum-login`) |
//!
//! The reference is on the items themselves: the derives
//! ([`TableEntity`](derive@crate::TableEntity),
//! [`TableRecord`](derive@crate::TableRecord),
//! [`TableEnum`](derive@crate::TableEnum),
//! [`TableUnion`](derive@crate::TableUnion)) document every attribute, and
//! [`Store`](crate::Store) every operation.

#[doc = include_str!("../../docs/guide/getting_started.md")]
pub mod getting_started {}

#[doc = include_str!("../../docs/guide/storage_format.md")]
pub mod storage_format {}

#[doc = include_str!("../../docs/guide/secondary_indexes.md")]
pub mod secondary_indexes {}

#[doc = include_str!("../../docs/guide/dotnet.md")]
pub mod dotnet {}

#[doc = include_str!("../../docs/guide/testing.md")]
pub mod testing {}

#[doc = include_str!("../../docs/guide/production.md")]
pub mod production {}

#[doc = include_str!("../../docs/guide/scaling.md")]
pub mod scaling {}

#[doc = include_str!("../../docs/guide/telemetry.md")]
pub mod telemetry {}

#[doc = include_str!("../../docs/guide/cosmos.md")]
pub mod cosmos {}

// The chapter's examples use the web features' APIs: without the features
// it holds only a note, so nothing in it is compiled.
#[cfg_attr(feature = "tower-sessions", doc = include_str!("../../docs/guide/web.md"))]
#[cfg_attr(feature = "axum-login", doc = include_str!("../../docs/guide/web_logins.md"))]
#[cfg_attr(
    not(feature = "tower-sessions"),
    doc = "Sessions and logins for an axum app, kept in tables. This chapter documents the features \
           `tower-sessions` and `axum-login`: build the documentation with them (docs.rs does) to read it."
)]
pub mod web {}
