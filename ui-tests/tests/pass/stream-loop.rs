//! Streams (of a query, an index lookup, an index build and a converge)
//! polled in place in a crate that imports nothing from `futures`.

use unified_tables::{BuildIndexOptions, ConvergeOptions, Error, QueryOptions, Store, TableEntity};

#[derive(TableEntity)]
struct Message {
    #[table(partition_key)]
    room: String,
    #[table(row_key)]
    id: String,
    text: String,
    #[index]
    author: String,
}

async fn show(messages: Store<Message>) -> Result<usize, Error> {
    let mut seen = 0;
    let mut s = messages.stream(QueryOptions::partition("room-1"));
    while let Some(r) = s.next().await {
        let message = r?;
        seen += message.text.len();
    }
    let mut s = messages.stream(QueryOptions::all().take(10));
    while let Some(message) = s.try_next().await? {
        seen += message.id.len();
    }
    let mut s = messages.index(Message::BY_AUTHOR).find("room-1", "ann").stream();
    while let Some(message) = s.try_next().await? {
        seen += message.author.len();
    }
    let mut steps = messages.build_index(Message::BY_AUTHOR, BuildIndexOptions::default());
    while let Some(step) = steps.try_next().await? {
        seen += step.rows as usize;
    }
    let mut steps = messages.converge(ConvergeOptions::default());
    while let Some(step) = steps.next().await {
        seen += step?.checked as usize;
    }
    Ok(seen)
}

fn assert_unpin_send<S: Unpin + Send>(_: &S) {}

fn main() {
    let _ = show;
    let store = unified_tables::Tables::memory().store::<Message>();
    assert_unpin_send(&store.stream(QueryOptions::partition("p")));
    assert_unpin_send(&store.index(Message::BY_AUTHOR).find("p", "ann").stream());
    assert_unpin_send(&store.build_index(Message::BY_AUTHOR, BuildIndexOptions::default()));
    assert_unpin_send(&store.converge(ConvergeOptions::default()));
}
