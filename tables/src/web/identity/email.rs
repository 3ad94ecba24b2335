//! Email reservations: unique addresses across partitions.
