//! Runs every blob conformance scenario on the in-memory blob backend and on
//! Azure / Azurite (see `unified_tables_tests::blob_scenarios` for when Azure
//! runs), each scenario in a container of its own.

use unified_tables::backend::memory::MemoryBlobBackend;
use unified_tables_tests::blob_scenarios::{self, azure_blob_backend, unique_container};
use unified_tables_tests::for_each_blob_scenario;

macro_rules! blob_tests {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let backend = MemoryBlobBackend::new();
                    blob_scenarios::$name(&backend, &unique_container(stringify!($name))).await;
                }
            )*
        }

        mod azure {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(backend) = azure_blob_backend().await else { return };
                    blob_scenarios::$name(&backend, &unique_container(stringify!($name))).await;
                }
            )*
        }
    };
}

for_each_blob_scenario!(blob_tests);
