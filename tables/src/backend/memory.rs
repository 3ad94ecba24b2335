//! The embedded in-memory backend.

use async_trait::async_trait;

use super::{Backend, Continuation, Page, QueryRequest, WriteOp, WriteOutcome};
use crate::error::{Error, Result};
use crate::value::Row;

/// An embedded backend that answers as the service does.
#[derive(Debug, Default)]
pub struct MemoryBackend {}

impl MemoryBackend {
    /// An empty backend.
    pub fn new() -> MemoryBackend {
        MemoryBackend::default()
    }
}

#[async_trait]
impl Backend for MemoryBackend {
    async fn create_table(&self, _table: &str) -> Result<()> {
        Err(Error::Config("todo".into()))
    }
    async fn delete_table(&self, _table: &str) -> Result<()> {
        Err(Error::Config("todo".into()))
    }
    async fn get(&self, _table: &str, _pk: &str, _rk: &str) -> Result<Option<Row>> {
        Err(Error::Config("todo".into()))
    }
    async fn execute(&self, _table: &str, _op: WriteOp) -> Result<WriteOutcome> {
        Err(Error::Config("todo".into()))
    }
    async fn transaction(&self, _table: &str, _ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        Err(Error::Config("todo".into()))
    }
    async fn query(&self, _table: &str, _r: &QueryRequest, _c: Option<&Continuation>) -> Result<Page> {
        Err(Error::Config("todo".into()))
    }
}
