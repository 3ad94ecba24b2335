//! The limits of the service profile written to, checked on every operation
//! the write pipeline (`Store::commit`) sends, before anything is sent: on
//! Cosmos DB for Table, a RowKey of at most 255 bytes and none of the
//! property names that service keeps for itself. Table Storage's own limits
//! are checked where the rows are made.

use crate::backend::WriteOp;
use crate::error::{Error, Result};
use crate::layout::INDEX_OF;
use crate::service::ServiceProfile;
use crate::value::Value;

/// Refuses an operation `profile`'s service would refuse for its keys or
/// property names, naming the index when the row is an index row (its keys
/// are made of the indexed values).
pub(crate) fn check_profile_limits(profile: ServiceProfile, ops: &[WriteOp]) -> Result<()> {
    if profile == ServiceProfile::TableStorage {
        return Ok(());
    }
    for op in ops {
        let checked = match op.row() {
            Some(row) => profile.check_row(row).map_err(|e| match e {
                // A reserved name: say which row holds it.
                Error::Config { message, .. } => Error::InvalidValue {
                    column: row
                        .properties
                        .keys()
                        .find(|name| profile.check_property_name(name).is_err())
                        .map(|name| name.to_string())
                        .unwrap_or_default(),
                    reason: format!(
                        "{message}; the row is PartitionKey `{}`, RowKey `{}`; nothing was written",
                        crate::service::shown(&row.partition_key),
                        crate::service::shown(&row.row_key)
                    ),
                },
                other => other,
            }),
            None => {
                let (partition_key, row_key) = op.keys();
                profile
                    .validate_key(crate::error::KeyKind::PartitionKey, partition_key)
                    .and_then(|()| profile.validate_key(crate::error::KeyKind::RowKey, row_key))
            }
        };
        let index = op.row().and_then(|r| r.get(INDEX_OF)).and_then(Value::as_str);
        match (checked, index) {
            (Ok(()), _) => {}
            (Err(Error::InvalidKey { which, reason, .. }), Some(index)) => {
                return Err(Error::InvalidValue {
                    column: index.to_owned(),
                    reason: format!(
                        "the value is too long for the index `{index}` on {profile}: its row's {which} would break the service's rule ({reason}); shorten the value or index a shorter field; nothing was written"
                    ),
                })
            }
            (Err(e), _) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Row;

    #[test]
    fn a_cosmos_write_is_refused_for_a_long_row_key_or_a_reserved_name() {
        let long = WriteOp::Insert(Row::new("p", "r".repeat(256)));
        let named = WriteOp::Insert(Row::new("p", "r").with("id", Value::Int32(1)));
        let fine = WriteOp::Insert(Row::new("p", "r".repeat(255)).with("Id", Value::Int32(1)));
        let cosmos = ServiceProfile::CosmosTable;
        assert!(matches!(
            check_profile_limits(cosmos, std::slice::from_ref(&long)),
            Err(Error::InvalidKey { .. })
        ));
        let err = check_profile_limits(cosmos, std::slice::from_ref(&named)).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidValue { column, .. } if column == "id"),
            "{err}"
        );
        assert!(
            err.to_string().contains("`id`") && err.to_string().contains("RowKey `r`"),
            "{err}"
        );
        assert!(check_profile_limits(cosmos, &[fine]).is_ok());
        assert!(check_profile_limits(ServiceProfile::TableStorage, &[long, named]).is_ok());
        let index_row =
            WriteOp::Insert(Row::new("p", "v".repeat(300)).with(INDEX_OF, Value::String("by_email".into())));
        let err = check_profile_limits(cosmos, &[index_row]).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidValue { column, .. } if column == "by_email"),
            "{err}"
        );
    }
}
