//! Features built on the read path and the write pipeline, one file each:
//! soft deletion (`soft_delete.rs`), apply-if-newer (`ordering.rs`), append
//! logs and versioned streams (`logs.rs`), convergence of stored rows to
//! the type (`converge.rs`) and the sweep of orphan blobs (`sweep.rs`). The
//! larger ones have folders of their own beside this one: the read cache
//! (`store/cache/`), union stores (`store/union/`) and secondary indexes
//! (`store/index/`).

pub(super) mod converge;
pub(super) mod logs;
pub(super) mod ordering;
pub(super) mod soft_delete;
pub(super) mod sweep;
