//! Runs every conformance scenario on the in-memory backend and on Azure /
//! Azurite (see the crate docs of `unified_tables_tests` for when Azure runs).

use unified_tables_tests::scenarios::*;
use unified_tables_tests::{azure_env, for_each_scenario, memory_env};

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

for_each_scenario!(memory_tests);
for_each_scenario!(azure_tests);
