//! A container's moving blobs: the large values of a table's moving
//! partitions, and the blobs of the pool's other containers (locks with
//! their fencing counters, the user's conditional blobs) routed by name.
//! Each is copied whole, one at a time, into its new account, and removed
//! from its old one after the switch.
//!
//! A blob of any container but the values' is leased by the job before it
//! is copied, with a lease id that every run of the job shares, and stays
//! leased until it is removed: no holder of the old pool can take a moving
//! lock or write a moving blob meanwhile. One that another holder has
//! leased stops the job, naming it.

use std::cmp::Ordering;

use super::scan::{send, BlobScan, MovingBlobs};
use super::{Job, ReshardReport};
use crate::backend::blob::{BlobCondition, BlobItem, DeleteOptions, LeaseAction, LeaseDuration, PutOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::value::cmp_utf16;

/// Which blobs of a container move, and whether the job leases them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scope<'a> {
    pub(super) container: &'a str,
    /// Only names under this prefix (a table's, in the values' container).
    pub(super) prefix: &'a str,
    /// Whether each blob is leased before it is copied (anything but large values).
    pub(super) leased: bool,
}

fn same_blob(a: &BlobItem, b: &BlobItem) -> bool {
    a.properties.length == b.properties.length
        && a.properties.content_type == b.properties.content_type
        && a.properties.content_encoding == b.properties.content_encoding
}

/// Takes the job's lease on the moving blob `name` in old account `at`:
/// `false` when the blob is gone.
async fn take_lease(job: &Job, at: usize, scope: Scope<'_>, name: &str) -> Result<bool> {
    let action = LeaseAction::Acquire {
        duration: LeaseDuration::Infinite,
        proposed: Some(job.lease),
    };
    let account = &job.blobs[at];
    match send(&job.policy, true, || account.lease(scope.container, name, action)).await {
        Ok(_) => Ok(true),
        Err(e) if e.service_code().is_some_and(|(_, code)| code == "BlobNotFound") => Ok(false),
        Err(e) if e.kind() == ErrorKind::Busy => Err(Error::config(format!(
            "the blob {name:?} of container {:?} in account {:?} moves while the pool grows, and another holder \
             has leased it (a lock that is held, or a lease of the user's): wait until it is released (the \
             moving partitions are frozen, so a lock of the pool is given up within its time to live) or break \
             it, then run the job again ({e})",
            scope.container, job.names[at]
        ))),
        Err(e) => Err(e),
    }
}

/// Copies the blob `item` from old account `at` to account `to`, whole.
async fn copy_blob(job: &Job, at: usize, to: usize, scope: Scope<'_>, item: &BlobItem) -> Result<bool> {
    let source = &job.blobs[at];
    let read = send(&job.policy, true, || source.get(scope.container, &item.name, None)).await?;
    let Some((properties, bytes)) = read else {
        return Ok(false); // deleted meanwhile: nothing refers to it any more
    };
    let options = PutOptions {
        content_type: properties.content_type,
        content_encoding: properties.content_encoding,
        condition: BlobCondition::None,
        lease: None,
    };
    let target = &job.blobs[to];
    send(&job.policy, true, || {
        target.put(scope.container, &item.name, bytes.clone(), options.clone())
    })
    .await?;
    Ok(true)
}

/// Deletes the blob `item` of account `account` on its ETag (a blob
/// already gone is fine).
async fn delete_stale(job: &Job, account: usize, scope: Scope<'_>, item: &BlobItem) -> Result<()> {
    let options = DeleteOptions {
        condition: BlobCondition::IfMatch(item.properties.etag.clone()),
        lease: None,
    };
    let blobs = &job.blobs[account];
    match send(&job.policy, false, || {
        blobs.delete_with(scope.container, &item.name, options.clone())
    })
    .await
    {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Makes each new account's container hold the moving blobs of `scope` the
/// old accounts hold: the missing and different ones are copied, and with
/// `repair` (before the switch) the ones the old accounts no longer have
/// are deleted, so that the copy holds exactly theirs.
pub(super) async fn copy(job: &Job, scope: Scope<'_>, repair: bool, report: &mut ReshardReport) -> Result<()> {
    let old = job.growth.old;
    let added = &job.blobs[old..];
    for account in added {
        send(&job.policy, true, || account.create_container(scope.container)).await?;
    }
    let mut moving = MovingBlobs::new(
        &job.blobs[..old],
        scope.container,
        scope.prefix,
        &job.policy,
        job.growth,
    );
    let mut targets: Vec<BlobScan> = added
        .iter()
        .map(|a| BlobScan::new(a.as_ref(), scope.container, scope.prefix, &job.policy))
        .collect();
    while let Some((at, to, item)) = moving.next().await? {
        let t = to - old;
        if scope.leased && !take_lease(job, at, scope, &item.name).await? {
            continue;
        }
        // The copy's blobs before this one are blobs the sources no longer have.
        while let Some(there) = targets[t].peek().await? {
            if cmp_utf16(&there.name, &item.name) != Ordering::Less {
                break;
            }
            let extra = targets[t].next().await?.expect("peeked");
            if repair {
                delete_stale(job, to, scope, &extra).await?;
                report.blobs_repaired += 1;
            }
        }
        let copied = match targets[t].peek().await? {
            Some(there) if there.name == item.name => {
                let there = targets[t].next().await?.expect("peeked");
                same_blob(&there, &item)
            }
            _ => false,
        };
        if !copied && copy_blob(job, at, to, scope, &item).await? {
            report.blobs_copied += 1;
        }
    }
    for (t, target) in targets.iter_mut().enumerate().filter(|_| repair) {
        while let Some(extra) = target.next().await? {
            delete_stale(job, old + t, scope, &extra).await?;
            report.blobs_repaired += 1;
        }
    }
    Ok(())
}

/// Deletes the moved blobs of `scope` from their old accounts (a leased one
/// under the job's lease).
pub(super) async fn remove(job: &Job, scope: Scope<'_>, report: &mut ReshardReport) -> Result<()> {
    let old = &job.blobs[..job.growth.old];
    let mut moving = MovingBlobs::new(old, scope.container, scope.prefix, &job.policy, job.growth);
    while let Some((at, _, item)) = moving.next().await? {
        let account = &job.blobs[at];
        let under_lease = DeleteOptions {
            condition: BlobCondition::None,
            lease: scope.leased.then_some(job.lease),
        };
        let deleted = match send(&job.policy, true, || {
            account.delete_with(scope.container, &item.name, under_lease.clone())
        })
        .await
        {
            // Not leased (any more): the pool is switched, nothing of the old one may hold it.
            Err(e)
                if e.service_code()
                    .is_some_and(|(_, code)| code == "LeaseNotPresentWithBlobOperation") =>
            {
                send(&job.policy, true, || {
                    account.delete_with(scope.container, &item.name, DeleteOptions::default())
                })
                .await?
            }
            deleted => deleted?,
        };
        if deleted {
            report.blobs_removed += 1;
        }
    }
    Ok(())
}
