//! Runs every conformance scenario on the in-memory backend (under both
//! service profiles) and on Azure /
//! Azurite (see the crate docs of `unified_tables_tests` for when Azure runs).

use unified_tables_tests::scenarios::*;
use unified_tables_tests::{azure_env, cosmos_env, for_each_scenario, memory_env, pooled_azure_env, pooled_memory_env};

macro_rules! memory_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let env = memory_env(stringify!($name));
                    $module::$name(&env).await;
                }
            )*
        }
    };
}

macro_rules! azure_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod azure {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(env) = azure_env(stringify!($name)).await else { return };
                    $module::$name(&env).await;
                }
            )*
        }
    };
}

// The same scenarios on a handle over a pool of accounts: every partition
// routed to one account, table-wide queries merged across them.
macro_rules! pooled_memory_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod pooled_memory {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let env = pooled_memory_env(stringify!($name));
                    $module::$name(&env).await;
                }
            )*
        }
    };
}

macro_rules! pooled_azure_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod pooled_azure {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(env) = pooled_azure_env(stringify!($name)).await else { return };
                    $module::$name(&env).await;
                }
            )*
        }
    };
}

// The same scenarios on the in-memory backend under the Cosmos DB for Table
// profile: rows in no order, pages cut at random, that service's limits.
macro_rules! cosmos_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod cosmos {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let env = cosmos_env(stringify!($name));
                    $module::$name(&env).await;
                }
            )*
        }
    };
}

for_each_scenario!(memory_tests);
for_each_scenario!(cosmos_tests);
for_each_scenario!(azure_tests);
for_each_scenario!(pooled_memory_tests);
for_each_scenario!(pooled_azure_tests);
