//! The example service's modules and its router. `main.rs` runs it; the
//! end-to-end tests in `examples/tests/service/` start it on loopback.
//!
//! | route | what it does |
//! |---|---|
//! | `POST /signup` | registers a user |
//! | `POST /login`, `POST /logout` | opens and ends a session |
//! | `GET /me`, `PUT /me/password` | the signed-in user; a password change |
//! | `PUT`/`DELETE /users/{user_name}/roles/{role}` | grants or takes a role (admins) |
//! | `POST /notes`, `GET /notes` | creates a note; lists the user's notes a page at a time |
//! | `GET`/`PUT`/`DELETE /notes/{id}` | one note, with `ETag` / `If-Match` |

pub mod accounts;
pub mod app;
pub mod error;
pub mod headers;
pub mod notes;
pub mod user;

pub use app::{app, serve, Config};
