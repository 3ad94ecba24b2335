//! The example service, end to end over HTTP on loopback: each scenario
//! starts the service on `127.0.0.1:0` over its own tables and talks to it
//! with cookie-keeping clients, on the in-memory backend and on Azure /
//! Azurite (when `UNIFIED_TABLES_TEST_CONNECTION` is set; required, not
//! skipped, under `CI=true` or `UNIFIED_TABLES_REQUIRE_AZURE=1`, as for the
//! conformance suite).

#[path = "../../service/lib.rs"]
mod service;

mod accounts;
mod failures;
mod harness;
mod isolation;
mod notes;
mod paging;

/// Every scenario: `module::name`, each an `async fn(&harness::Server)`.
macro_rules! for_each_scenario {
    ($m:ident) => {
        $m! {
            accounts::signing_up_and_in_opens_a_session,
            accounts::bad_sign_ups_and_logins_are_refused_with_reasons,
            accounts::repeated_failures_lock_the_account,
            accounts::a_lockout_ends_when_its_time_is_up,
            accounts::logout_deletes_the_session_on_the_server,
            accounts::a_password_change_signs_out_every_other_session,
            accounts::only_admins_grant_roles,
            accounts::sessions_live_in_the_table_for_every_instance,
            notes::routes_need_a_signed_in_user,
            notes::etags_guard_every_write,
            notes::a_write_overtaken_after_its_check_still_gets_412,
            notes::duplicates_missing_notes_and_bad_input_say_what_is_wrong,
            notes::publishing_needs_the_publisher_role,
            paging::pages_follow_the_cursor_to_the_end,
            paging::a_tampered_or_foreign_cursor_is_refused,
            isolation::a_user_never_reads_or_changes_another_users_notes,
            failures::storage_failures_are_json_answers,
        }
    };
}

macro_rules! memory_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let server = crate::harness::Server::memory().await;
                    crate::$module::$name(&server).await;
                }
            )*
        }
    };
}

macro_rules! azure_tests {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod azure {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(server) = crate::harness::Server::azure(stringify!($name)).await else { return };
                    crate::$module::$name(&server).await;
                }
            )*
        }
    };
}

for_each_scenario!(memory_tests);
for_each_scenario!(azure_tests);
