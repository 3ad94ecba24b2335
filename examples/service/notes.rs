//! The protected resource: notes, each owned by the user who wrote it.
//!
//! A note lives in its owner's partition (PartitionKey = the user's id), so
//! every read and write is addressed inside the signed-in user's partition:
//! another user's note is never found, listed or written, whatever id or
//! cursor a request carries.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use unified_tables::{Cursor, DateTime, ETag, QueryOptions, Store, TableEntity};

use super::app::AppState;
use super::error::{bad_body, bad_query, ApiError};
use super::headers::{etag_header, if_match, none_match_hits, Precondition};
use super::user::CurrentUser;

/// One note. `published` may only be changed by users holding the
/// `publisher` role: the store refuses any other change of it.
#[derive(TableEntity, Debug, Clone)]
#[table(name = "Notes")]
pub struct Note {
    #[table(partition_key)]
    pub owner: String,
    #[table(row_key)]
    pub id: String,
    pub title: String,
    pub body: String,
    #[protected("publisher")]
    pub published: bool,
    #[table(created_at)]
    pub created_at: Option<DateTime>,
    #[table(updated_at)]
    pub updated_at: Option<DateTime>,
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// The page size of `GET /notes` when `limit` is not given, and its bound.
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;

/// A note as the API shows it.
#[derive(Serialize)]
pub struct NoteView {
    id: String,
    title: String,
    body: String,
    published: bool,
    created_at: Option<String>,
    updated_at: Option<String>,
    etag: Option<String>,
}

impl From<Note> for NoteView {
    fn from(n: Note) -> NoteView {
        NoteView {
            id: n.id,
            title: n.title,
            body: n.body,
            published: n.published,
            created_at: n.created_at.map(|t| t.to_string()),
            updated_at: n.updated_at.map(|t| t.to_string()),
            etag: n.etag.map(|e| e.as_str().to_owned()),
        }
    }
}

/// The body of `POST /notes`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewNote {
    /// The note's id; a time-ordered one (newest first) when absent.
    id: Option<String>,
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    published: bool,
}

/// The body of `PUT /notes/{id}`: the new title and body; `published`
/// when absent stays as stored.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoteChange {
    title: String,
    #[serde(default)]
    body: String,
    published: Option<bool>,
}

/// The query of `GET /notes`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    limit: Option<usize>,
    cursor: Option<String>,
}

/// A page of `GET /notes`.
#[derive(Serialize)]
pub struct NotePage {
    items: Vec<NoteView>,
    /// Send it back as `cursor` (with the same `limit`) for the next page;
    /// `null` on the last page.
    next_cursor: Option<String>,
}

/// `note "id"`, for messages.
fn named(id: &str) -> String {
    format!("note {id:?}")
}

/// The store as the user may write it: protected fields change only with a role they hold.
fn notes_for(state: &AppState, user: &CurrentUser) -> Store<Note> {
    let roles = user.roles.clone();
    state.notes.with_authorizer(move |role: &str| roles.contains(role))
}

/// Refuses a new note that sets a protected field to anything but its
/// default unless the user holds one of its roles. (The store checks
/// changes of stored rows; a new row has nothing stored to compare with.)
fn check_new(user: &CurrentUser, note: &NewNote) -> Result<(), ApiError> {
    if !note.published {
        return Ok(());
    }
    let column = Note::SCHEMA
        .protected_columns()
        .find(|c| c.field == "published")
        .expect("`published` is a protected field of Note");
    if column.protected.iter().any(|role| user.roles.contains(*role)) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden_field",
        format!(
            "creating a note with `published: true` needs the role {}, which you do not have; create it unpublished",
            column.protected.join(", ")
        ),
    ))
}

/// A 200 or 201 answer carrying the note and its `ETag`.
fn with_etag(status: StatusCode, note: Note) -> Result<Response, ApiError> {
    let etag = note
        .etag
        .clone()
        .ok_or_else(|| ApiError::internal("reading the note's version", "no ETag"))?;
    Ok((status, [etag_header(&etag)?], Json(NoteView::from(note))).into_response())
}

/// The `Location` of a note: its id with everything but unreserved characters percent-escaped.
fn location(id: &str) -> Result<HeaderValue, ApiError> {
    let mut path = String::from("/notes/");
    for byte in id.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => path.push(byte as char),
            _ => path.push_str(&format!("%{byte:02X}")),
        }
    }
    HeaderValue::from_str(&path).map_err(|e| ApiError::internal("rendering the note's location", e))
}

/// `POST /notes`: creates a note; `409` if the id is taken.
pub async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    body: Result<Json<NewNote>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(new) = body.map_err(bad_body)?;
    check_new(&user, &new)?;
    let id = match new.id.clone() {
        Some(id) if id.trim().is_empty() => {
            return Err(ApiError::bad_request(
                "invalid_id",
                "`id` is empty: give a note id, or leave it out to get one",
            ))
        }
        Some(id) => id,
        None => unified_tables::keys::reverse_ticked_now(),
    };
    let mut note = Note {
        owner: user.id.clone(),
        id: id.clone(),
        title: new.title,
        body: new.body,
        published: new.published,
        created_at: None,
        updated_at: None,
        etag: None,
    };
    state
        .notes
        .create(&mut note)
        .await
        .map_err(|e| ApiError::storage(&named(&id), e))?;
    let mut response = with_etag(StatusCode::CREATED, note)?;
    response.headers_mut().insert(header::LOCATION, location(&id)?);
    Ok(response)
}

/// `GET /notes/{id}`: the note and its `ETag`; `304` when `If-None-Match` names it.
pub async fn read(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let note = state
        .notes
        .get((user.id.as_str(), id.as_str()))
        .await
        .map_err(|e| ApiError::storage(&named(&id), e))?
        .ok_or_else(|| ApiError::storage(&named(&id), not_found(&state, &user, &id)))?;
    if let Some(etag) = &note.etag {
        if none_match_hits(&headers, etag) {
            return Ok((StatusCode::NOT_MODIFIED, [etag_header(etag)?]).into_response());
        }
    }
    with_etag(StatusCode::OK, note)
}

fn not_found(state: &AppState, user: &CurrentUser, id: &str) -> unified_tables::Error {
    unified_tables::Error::NotFound {
        table: state.notes.table().to_owned(),
        partition_key: user.id.clone(),
        row_key: id.to_owned(),
        request_id: None,
    }
}

/// `PUT /notes/{id}`: replaces title and body (and `published`, when
/// given) on condition of `If-Match`: `412` when the note changed since that
/// version, `404` when it does not exist, `428` without `If-Match`.
pub async fn replace(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Json<NoteChange>, JsonRejection>,
) -> Result<Response, ApiError> {
    let precondition = if_match(&headers)?;
    let Json(change) = body.map_err(bad_body)?;
    let notes = notes_for(&state, &user);
    let what = named(&id);
    let key = (user.id.as_str(), id.as_str());
    let apply = |note: &mut Note| {
        note.title = change.title.clone();
        note.body = change.body.clone();
        if let Some(p) = change.published {
            note.published = p;
        }
    };
    let note = match precondition {
        // Overwrite whatever is stored, never losing a concurrent writer's race silently.
        Precondition::Any => notes
            .mutate(key, apply)
            .await
            .map_err(|e| ApiError::storage(&what, e))?,
        Precondition::Version(wanted) => {
            let mut note = notes
                .get(key)
                .await
                .map_err(|e| ApiError::storage(&what, e))?
                .ok_or_else(|| ApiError::storage(&what, not_found(&state, &user, &id)))?;
            // The write below is conditional on the version the client names,
            // so a change made since that version is never overwritten.
            note.etag = Some(wanted);
            apply(&mut note);
            notes.update(&mut note).await.map_err(|e| ApiError::storage(&what, e))?;
            note
        }
    };
    with_etag(StatusCode::OK, note)
}

/// `DELETE /notes/{id}`: on condition of `If-Match`, as `PUT`.
pub async fn remove(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let precondition = if_match(&headers)?;
    let what = named(&id);
    match precondition {
        Precondition::Any => {
            let existed = state
                .notes
                .delete((user.id.as_str(), id.as_str()))
                .await
                .map_err(|e| ApiError::storage(&what, e))?;
            if !existed {
                return Err(ApiError::storage(&what, not_found(&state, &user, &id)));
            }
        }
        Precondition::Version(etag) => {
            let note = Note {
                owner: user.id.clone(),
                id: id.clone(),
                title: String::new(),
                body: String::new(),
                published: false,
                created_at: None,
                updated_at: None,
                etag: Some(etag),
            };
            state
                .notes
                .delete_entity(&note)
                .await
                .map_err(|e| ApiError::storage(&what, e))?;
        }
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /notes?limit=&cursor=`: the user's notes in id order, a page at a time.
pub async fn list(
    State(state): State<AppState>,
    user: CurrentUser,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<NotePage>, ApiError> {
    let Query(query) = query.map_err(bad_query)?;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(
            "invalid_limit",
            format!("`limit` must be between 1 and {MAX_LIMIT}; {limit} was given"),
        ));
    }
    let mut options = QueryOptions::partition(user.id.clone()).take(limit);
    if let Some(cursor) = &query.cursor {
        let cursor: Cursor = cursor.parse().map_err(|e| ApiError::storage("the notes listing", e))?;
        options = options.after(cursor);
    }
    let page = state
        .notes
        .page(options)
        .await
        .map_err(|e| ApiError::storage("the notes listing", e))?;
    Ok(Json(NotePage {
        items: page.items.into_iter().map(NoteView::from).collect(),
        next_cursor: page.cursor.map(|c| c.to_string()),
    }))
}
