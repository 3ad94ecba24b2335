//! The handle's background applier: the intents of its own writes, applied
//! by a bounded number of tasks, and [`Store::settle_indexes`] waiting for
//! the intents handed over before it was called.
//!
//! Each committed write with global indexes hands its intents over as one
//! job with a ticket (in the order written). At most
//! [`APPLIERS_IN_FLIGHT`] tasks per handle take jobs from the queue, oldest
//! first, and end when it is empty; a job is only the keys of its intents,
//! so a queue that grows behind a burst of writes stays small. Settling
//! waits until every ticket issued before it was called is done, helping
//! with the oldest of those jobs meanwhile: writes made after it never keep
//! it waiting.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;
use tracing::instrument::WithSubscriber;

use super::applier::value_free;
use crate::backend::race::{race_backoff, RACE_ATTEMPTS};
use crate::index::rows::RowKeys;
use crate::index::IndexDef;
use crate::store::Store;

/// The most background tasks a handle runs to apply its writes' intents;
/// further intents wait in its queue, oldest applied first.
pub(crate) const APPLIERS_IN_FLIGHT: usize = 8;

/// The intents a handle's background tasks are applying, and those waiting for a task.
#[derive(Default)]
pub(crate) struct Applying {
    state: Mutex<Queue>,
    /// Woken whenever a ticket is done.
    done: Notify,
}

impl fmt::Debug for Applying {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = self.lock();
        f.debug_struct("Applying")
            .field("queued", &q.jobs.len())
            .field("workers", &q.workers)
            .field("issued", &q.issued)
            .field("done_below", &q.done_below)
            .finish()
    }
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Tasks taking jobs now.
    workers: usize,
    /// Tickets handed out.
    issued: u64,
    /// Every ticket below this one is done.
    done_below: u64,
    /// Tickets done above `done_below`.
    done_above: BTreeSet<u64>,
}

/// What one job applies.
enum Work {
    /// The intents of one write: (PartitionKey, RowKey) of each.
    Intents(Vec<RowKeys>),
    /// Every intent a partition delete left in one partition.
    Partition(String),
}

/// One write's intents, with the ticket it is done under (on drop: applied,
/// failed or abandoned with its task, the intents stay for the operator's job).
struct Job {
    ticket: Ticket,
    store: Store<()>,
    defs: &'static [IndexDef],
    work: Work,
    /// The writer's subscriber: the job's events go where the write's went.
    dispatch: tracing::Dispatch,
}

struct Ticket {
    number: u64,
    applying: Weak<Applying>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(applying) = self.applying.upgrade() {
            applying.finish(self.number);
        }
    }
}

/// A task taking jobs: counted out when it finds the queue empty, or when
/// its runtime drops it.
struct Worker {
    applying: Arc<Applying>,
    counted: bool,
}

impl Worker {
    /// The oldest job, or `None` (and the task counted out, under the same
    /// lock a new job is queued under) when there is none.
    fn next(&mut self) -> Option<Job> {
        let mut q = self.applying.lock();
        let job = q.jobs.pop_front();
        if job.is_none() {
            q.workers -= 1;
            self.counted = false;
        }
        job
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.counted {
            self.applying.lock().workers -= 1;
        }
    }
}

impl Applying {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn finish(&self, number: u64) {
        {
            let mut q = self.lock();
            if number == q.done_below {
                let mut below = number + 1;
                while q.done_above.remove(&below) {
                    below += 1;
                }
                q.done_below = below;
            } else {
                q.done_above.insert(number);
            }
        }
        self.done.notify_waiters();
    }

    /// Queues a job, and starts a task for it while fewer than
    /// [`APPLIERS_IN_FLIGHT`] run.
    fn hand_over(self: &Arc<Self>, store: Store<()>, defs: &'static [IndexDef], work: Work) {
        let start = {
            let mut q = self.lock();
            let number = q.issued;
            q.issued += 1;
            q.jobs.push_back(Job {
                ticket: Ticket {
                    number,
                    applying: Arc::downgrade(self),
                },
                store,
                defs,
                work,
                dispatch: tracing::dispatcher::get_default(Clone::clone),
            });
            let start = q.workers < APPLIERS_IN_FLIGHT;
            q.workers += usize::from(start);
            start
        };
        if start {
            let mut worker = Worker {
                applying: Arc::clone(self),
                counted: true,
            };
            tokio::spawn(async move {
                while let Some(job) = worker.next() {
                    job.run().await;
                }
            });
        }
    }

    /// Waits until every job handed over before the call is done, applying
    /// the oldest of them itself while they wait for a task.
    async fn settled(self: &Arc<Self>) {
        let target = self.lock().issued;
        loop {
            let done = self.done.notified();
            let job = {
                let mut q = self.lock();
                if q.done_below >= target {
                    return;
                }
                match q.jobs.front() {
                    Some(j) if j.ticket.number < target => q.jobs.pop_front(),
                    _ => None,
                }
            };
            match job {
                Some(job) => job.run().await,
                None => done.await,
            }
        }
    }
}

impl Job {
    async fn run(self) {
        let dispatch = self.dispatch.clone();
        self.apply().with_subscriber(dispatch).await;
    }

    async fn apply(self) {
        let store = &self.store;
        match &self.work {
            Work::Intents(intents) => {
                for (pk, rk) in intents {
                    // A failure (the service busy or unreachable) is tried again a few times,
                    // then left for the operator's job.
                    for attempt in 1..=RACE_ATTEMPTS {
                        let applied = match store.shared.backend.get(&store.table, pk, rk).await {
                            Ok(Some(intent)) => store.apply_intent_named(self.defs, &intent).await.map(|_| ()),
                            Ok(None) => Ok(()),
                            Err(e) => Err((None, e)),
                        };
                        match applied {
                            Ok(()) => break,
                            Err((index, e)) if attempt == RACE_ATTEMPTS => {
                                tracing::warn!(
                                    table = %store.table,
                                    index = index.unwrap_or_default(),
                                    error_kind = ?e.kind(),
                                    error = %value_free(&e),
                                    "an intent was left for the next run of Store::apply_index_intents"
                                )
                            }
                            Err(_) => tokio::time::sleep(race_backoff(attempt)).await,
                        }
                    }
                }
            }
            Work::Partition(partition) => match store.apply_intents_in(self.defs, Some(partition)).await {
                Ok(out) if out.failed.is_empty() => {}
                Ok(out) => tracing::warn!(
                    table = %store.table,
                    failed = out.failed.len(),
                    "intents a partition delete left were left for the next run of Store::apply_index_intents"
                ),
                Err(e) => {
                    tracing::debug!(table = %store.table, error_kind = ?e.kind(), error = %value_free(&e), "intents were left for the next run of the applier")
                }
            },
        }
        drop(self.ticket);
    }
}

impl<T> Store<T> {
    /// Hands the intents of a committed write to the handle's background applier.
    pub(crate) fn intents_written(&self, plan: &super::maintain::IndexPlan) {
        if plan.intents.is_empty() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let store: Store<()> = Store::new(self.shared.clone(), self.table.clone());
        let work = Work::Intents(plan.intents.clone());
        self.shared.applying.hand_over(store, plan.defs, work);
    }

    /// Hands the intents a partition delete left in `partition` to the background applier.
    pub(crate) fn partition_intents_written(&self, defs: &'static [IndexDef], partition: &str) {
        if !crate::index::any_global(defs) || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let store: Store<()> = Store::new(self.shared.clone(), self.table.clone());
        let work = Work::Partition(partition.to_owned());
        self.shared.applying.hand_over(store, defs, work);
    }

    /// Waits until the background applier applied what it was given before the call.
    pub(crate) async fn applied(&self) {
        self.shared.applying.settled().await;
    }
}

#[cfg(test)]
mod tests {
    use super::APPLIERS_IN_FLIGHT;
    use crate::tables::Tables;
    use crate::TableEntity; // the trait and its derive, re-exported together only at the root

    #[derive(TableEntity, Clone)]
    struct Ticket {
        #[table(partition_key)]
        pk: String,
        #[table(row_key)]
        rk: String,
        #[index(global)]
        status: String,
    }

    #[tokio::test]
    async fn a_burst_of_writes_runs_a_bounded_number_of_appliers_and_settles() {
        let tickets = Tables::memory().store::<Ticket>();
        let runtime = tokio::runtime::Handle::current();
        let before = runtime.metrics().num_alive_tasks();
        let mut most = 0;
        for i in 0..200 {
            let mut t = Ticket {
                pk: format!("p{}", i % 7),
                rk: format!("{i:03}"),
                status: ["open", "closed"][i % 2].into(),
            };
            tickets.create(&mut t).await.unwrap();
            most = most.max(runtime.metrics().num_alive_tasks() - before);
        }
        assert!(
            most <= APPLIERS_IN_FLIGHT,
            "{most} tasks applied intents at once, above {APPLIERS_IN_FLIGHT}"
        );
        tickets.settle_indexes().await;
        assert_eq!(Ticket::find_by_status(&tickets, "open").await.unwrap().len(), 100);
        assert_eq!(Ticket::find_by_status(&tickets, "closed").await.unwrap().len(), 100);
    }
}
