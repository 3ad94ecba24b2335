//! The scenarios, by area. Each is `pub async fn(&Env)` and panics on failure.

pub mod admin;
pub mod admin_fsck;
pub mod batch;
pub mod cache;
pub mod cache_checker;
pub mod concurrency;
pub mod conditional_blobs;
pub mod connect;
pub mod converge;
pub mod crud;
pub mod dotnet_rows;
pub mod exactly_once;
pub mod filters;
pub mod hostile_rows;
pub mod identity;
pub mod identity_auth;
pub mod identity_races;
pub mod identity_unique;
pub mod index_applier;
pub mod index_global;
pub mod index_import;
pub mod index_import_model;
pub mod index_limits;
pub mod index_partition_delete;
pub mod index_projections;
pub mod index_tools;
pub mod index_values;
pub mod indexes;
pub mod interleavings;
pub mod keys;
pub mod large;
pub mod large_aliases;
pub mod large_blobs;
pub mod large_checks;
pub mod large_edges;
pub mod large_reads;
pub mod large_streams;
pub mod large_text;
pub mod limits;
pub mod locks;
pub mod logs;
pub mod ordering;
pub mod patch;
pub mod plain_readers;
pub mod projections;
pub mod protect;
pub mod query;
pub mod racing_reads;
pub mod read_ahead;
pub mod reservations;
pub mod sealed_cursors;
pub mod sessions;
pub mod soft_delete;
pub mod telemetry;
pub mod telemetry_export;
pub mod transactions;
pub mod unconditional;
pub mod union;
pub mod union_rows;
pub mod unique_outcomes;
pub mod unsent_resends;
pub mod values;
pub mod wildcard_etags;

/// Every scenario's name, for the runner macro.
#[macro_export]
macro_rules! for_each_scenario {
    ($m:ident) => {
        $m! {
            admin::export_then_import_round_trips_every_field_form_and_tier,
            admin::a_damaged_export_is_refused_before_anything_is_written,
            admin::an_import_rides_out_a_throttled_and_a_lost_answer,
            admin_fsck::fsck_finds_each_kind_of_planted_damage_and_repairs_only_what_is_safe,
            admin_fsck::fsck_of_one_partition_reads_only_it,
            admin_fsck::fsck_repair_keeps_a_blob_written_during_the_scan,
            converge::converge_rewrites_old_rows_and_a_dry_run_changes_nothing,
            converge::converge_loses_no_concurrent_update,
            converge::converge_rides_out_a_throttled_rewrite,
            telemetry::a_get_of_a_large_entity_shows_each_request_in_its_operation,
            telemetry::a_write_settled_by_a_read_back_tells_its_verdict,
            telemetry::a_read_served_by_the_cache_tells_so,
            telemetry::a_refused_write_is_an_error_type_on_its_operation,
            telemetry::a_stream_and_an_index_lookup_are_one_operation_each,
            telemetry::a_file_read_and_the_jobs_are_operations_each,
            telemetry::a_miss_is_no_error_on_any_span,
            telemetry_export::operations_export_to_opentelemetry_with_the_database_attributes,
            crud::create_then_get_returns_the_entity_with_its_etag,
            crud::create_of_an_existing_key_is_already_exists,
            crud::update_is_conditional_on_the_etag_read,
            crud::update_without_an_etag_is_refused_before_sending,
            crud::update_modes_spell_out_last_writer_wins,
            crud::update_of_a_missing_entity_is_not_found,
            crud::upsert_keeps_a_caller_created_stamp,
            crud::delete_is_idempotent_and_delete_entity_is_conditional,
            crud::every_write_changes_the_etag_and_raises_the_timestamp,
            crud::composite_ids_are_normalized_and_restored,
            crud::partition_arguments_of_id_keyed_types_are_normalized,
            crud::aliases_are_read_when_the_canonical_column_is_absent,
            crud::tables_are_created_on_first_use_and_tolerate_racing_creators,
            crud::request_counts_are_at_their_minimum,
            keys::keys_with_quotes_and_unicode_address_the_right_row,
            keys::refused_key_characters_are_refused_before_sending,
            keys::the_service_refuses_bad_keys_sent_raw,
            limits::an_oversized_cell_is_refused_and_nothing_is_stored,
            limits::the_service_refuses_an_oversized_property_sent_raw,
            limits::an_entity_over_one_mebibyte_is_refused,
            limits::too_many_properties_are_refused,
            limits::an_out_of_range_value_is_refused_before_sending,
            query::a_cursor_outside_page_is_refused,
            query::rows_come_back_in_key_order,
            query::a_partition_query_reads_only_that_partition,
            query::paging_follows_continuations_across_1000_row_pages,
            query::select_returns_only_the_named_properties,
            query::count_reads_keys_only,
            query::row_key_prefix_reads_the_canonical_range,
            query::pages_carry_a_cursor_bound_to_their_query,
            query::streams_read_page_by_page,
            query::bounded_counts_and_any,
            query::select_reads_only_the_named_fields,
            transactions::a_transaction_applies_all_operations,
            transactions::a_failing_operation_rolls_back_the_whole_transaction,
            transactions::a_duplicate_row_in_a_transaction_is_refused,
            transactions::a_stale_etag_fails_the_transaction,
            transactions::more_than_100_operations_are_refused,
            transactions::operations_on_two_partitions,
            transactions::keys_with_quotes_work_in_transactions,
            values::every_value_type_round_trips,
            values::int64_and_double_keep_their_type,
            values::large_json_goes_to_a_gzip_cell_and_back,
            values::a_missing_enum_column_reads_as_the_zero_variant,
            concurrency::concurrent_mutates_lose_no_update,
            concurrency::a_forced_race_re_applies_the_intent_to_the_fresh_version,
            concurrency::racing_transitions_have_one_winner,
            concurrency::try_mutate_reports_expected_branches_as_values,
            concurrency::a_mutate_that_always_loses_stops_at_its_time_budget,
            concurrency::get_or_create_converges_on_the_winner,
            concurrency::mutate_or_create_applies_the_delta_on_insert_and_update,
            concurrency::a_rejected_write_is_classified_by_re_reading,
            concurrency::lost_answers_are_reported_as_unknown_outcomes,
            concurrency::composite_ids_work_with_the_outcome_verbs,
            unsent_resends::a_resend_refused_before_it_is_sent_after_a_timeout_is_an_unknown_outcome,
            exactly_once::a_create_whose_answer_is_lost_is_applied_once,
            exactly_once::upserts_and_replaces_whose_answers_are_lost_are_applied_once,
            exactly_once::a_conditional_update_whose_answer_is_lost_succeeds_with_the_stored_etag,
            exactly_once::a_delete_whose_answer_is_lost_is_done,
            exactly_once::mutate_increments_a_counter_exactly_once_under_lost_answers,
            exactly_once::the_outcome_verbs_apply_once_under_lost_answers,
            exactly_once::a_batch_whose_answer_is_lost_is_settled_by_one_row,
            exactly_once::large_values_whose_answers_are_lost_are_applied_once,
            exactly_once::a_write_that_did_not_land_is_sent_again_only_when_that_is_proven,
            exactly_once::a_late_write_is_never_applied_twice_and_never_reported_as_not_applied,
            exactly_once::a_read_back_that_fails_is_tried_again_never_the_write,
            exactly_once::a_row_at_the_property_limit_stays_writable_without_a_token,
            exactly_once::a_write_that_cannot_be_read_back_is_an_unknown_outcome,
            exactly_once::the_write_token_is_a_system_cell_no_reader_sees,
            exactly_once::a_conditional_write_whose_row_moved_on_is_never_applied_again,
            interleavings::every_write_is_settled_exactly_once_against_every_interleaving,
            batch::create_batch_packs_transactions_of_100,
            batch::create_batch_refuses_a_repeated_key_before_writing,
            batch::a_failed_transaction_keeps_earlier_ones_and_names_the_entity,
            batch::upsert_batch_replaces_and_inserts,
            batch::delete_partition_deletes_in_transactions,
            batch::create_batch_respects_the_request_size_budget,
            batch::line_separators_survive_a_batch,
            protect::protected_fields_refuse_unauthorised_changes,
            filters::typed_filters_match_what_they_say,
            filters::adversarial_strings_match_exactly_the_rows_they_name,
            filters::a_missing_property_never_matches,
            filters::raw_filters_are_sent_as_written,
            patch::patch_writes_only_the_named_columns,
            patch::concurrent_patches_of_different_columns_both_land,
            patch::protected_fields_need_an_authorised_builder,
            patch::a_wildcard_or_empty_etag_is_refused,
            logs::append_logs_read_newest_first,
            logs::versioned_streams_answer_each_read_in_one_bounded_call,
            large::every_tier_boundary_round_trips,
            large::many_values_that_each_fit_move_to_split_form,
            large::replacing_and_deleting_remove_the_old_parts,
            large::damage_is_detected_on_read,
            large::values_that_cannot_be_stored_are_refused_before_anything_is_written,
            large::a_foreign_row_at_a_continuation_key_fails_the_write,
            large::files_are_blobs_read_lazily,
            large::racing_writers_and_readers_never_mix_versions,
            racing_reads::readers_racing_a_replace_of_text_rows_see_one_version,
            racing_reads::readers_racing_a_replace_of_gzip_rows_see_one_version,
            racing_reads::readers_racing_a_replace_of_binary_rows_see_one_version,
            racing_reads::readers_racing_a_replace_of_a_blob_see_one_version,
            racing_reads::readers_racing_a_value_that_grows_and_shrinks_see_one_version,
            racing_reads::a_read_retried_onto_a_fresher_row_keeps_that_rows_version,
            large::released_blobs_are_cleaned_after_the_grace_and_orphans_swept,
            large::leftover_continuation_rows_are_never_returned_and_are_reclaimed,
            large::a_reader_is_spooled_once,
            large::projections_of_large_values_read_them_whole,
            large::batches_pack_whole_entities_into_transactions,
            large_blobs::blob_requests_of_offloaded_values_are_at_their_minimum,
            large_blobs::blob_requests_of_files_are_at_their_minimum,
            large_blobs::a_blob_upload_that_fails_writes_nothing_to_the_table,
            large_blobs::a_failed_blob_release_does_not_fail_the_write,
            large_streams::large_values_download_as_streams_and_upload_without_a_copy,
            large_streams::a_download_cut_midway_fails_the_read_and_leaves_nothing_behind,
            large_text::mixed_text_in_large_bodies_reads_back_unchanged,
            large_text::mostly_non_ascii_values_are_planned_on_their_escaped_size,
            large_text::a_transaction_is_measured_on_its_escaped_body,
            large_aliases::aliases_read_large_values_in_every_form_and_writes_move_them,
            large_aliases::an_aliased_json_value_reads_from_a_gzip_cell,
            large_edges::a_point_read_never_returns_a_continuation_row,
            large_edges::deleting_a_continuation_key_leaves_the_entity_whole,
            large_edges::a_split_value_without_its_manifest_is_integrity,
            large_edges::shrinking_an_entity_with_a_missing_continuation_row_succeeds,
            large_edges::the_sweep_keeps_blobs_referenced_by_another_type_on_the_table,
            large_edges::a_damaged_file_reference_is_integrity_not_a_panic,
            large_edges::writing_back_a_released_file_does_not_store_a_dangling_reference,
            large_edges::an_entity_with_a_damaged_part_count_stays_deletable,
            large_edges::a_reference_cell_that_is_not_text_is_integrity,
            large_edges::a_blob_name_over_the_service_limit_is_refused_before_writing,
            large_edges::a_large_value_under_an_unsplit_field_fails_the_read,
            plain_readers::a_plain_field_reads_a_value_split_on_the_main_row,
            plain_readers::a_plain_field_refuses_a_value_on_continuation_rows_or_an_incomplete_group,
            plain_readers::a_plain_reader_writing_a_split_value_back_follows_the_oversized_cell_policy,
            plain_readers::a_manifest_that_lies_about_its_chunks_is_damage,
            large_checks::a_file_whose_blob_changed_is_integrity_on_every_read,
            large_checks::a_gzip_value_past_the_read_bound_is_refused_on_write,
            hostile_rows::foreign_cells_are_typed_errors_naming_the_column,
            hostile_rows::a_utf16_value_with_an_odd_length_is_integrity,
            hostile_rows::a_gzip_value_that_unpacks_without_bound_is_integrity,
            hostile_rows::stored_text_that_is_not_utf8_is_integrity,
            hostile_rows::a_file_reference_that_is_not_text_is_a_decode_error,
            cache::cached_reads_make_no_requests_and_each_write_leaves_what_it_says,
            cache::whole_partition_lists_are_cached_and_every_write_in_the_partition_drops_them,
            cache::a_read_in_flight_while_a_write_completes_keeps_nothing,
            cache::overlapping_writes_leave_nothing_cached,
            cache::a_failed_or_cancelled_write_drops_the_entity_and_a_refused_one_drops_nothing,
            cache::delete_partition_evicts_every_listed_row_also_when_it_fails,
            cache::composite_ids_share_one_entry_and_stores_of_a_table_share_entries,
            cache::a_disabled_type_is_never_served_but_its_writes_evict,
            cache::absolute_entries_expire_and_sliding_entries_live_while_read,
            cache::large_values_are_cached_assembled_and_a_gone_file_drops_the_entry,
            cache::a_type_that_is_not_clone_is_never_cached,
            cache::a_handle_reads_every_write_at_once_unless_given_a_cache,
            cache_checker::concurrent_readers_never_see_a_version_older_than_a_returned_write,
            union::union_every_variant_round_trips,
            union::union_marker_rows_commit_with_their_items_or_not_at_all,
            union::union_merge_columns_with_and_without_an_etag,
            union::union_unknown_tokens_fail_or_reach_the_catch_all,
            union::union_legacy_tokens_are_read_and_rewritten_canonical,
            union_rows::union_batches_of_250_mixed_items_take_3_transactions,
            union_rows::union_pages_through_a_mixed_partition,
            union_rows::union_rows_are_readable_by_the_payload_type,
            union_rows::union_reads_the_rows_dotnet_writes,
            locks::contending_holders_never_overlap,
            locks::a_held_lock_is_renewed_past_its_ttl,
            locks::a_holder_that_stops_renewing_loses_the_lock_after_the_ttl,
            locks::a_break_hands_the_lock_over,
            locks::the_fencing_token_rejects_a_stale_holders_write,
            locks::dropping_a_guard_releases_the_lock,
            locks::lock_arguments_are_refused_before_sending,
            conditional_blobs::conditional_blob_writes_refuse_exactly_what_the_service_refuses,
            conditional_blobs::conditional_blob_reads_revalidate_a_cached_copy,
            conditional_blobs::writes_to_a_leased_blob_and_to_the_values_container_are_refused,
            ordering::out_of_order_and_repeated_deliveries_keep_the_newest,
            ordering::missing_entities_and_empty_tokens,
            ordering::an_older_change_that_loses_the_race_is_dropped_on_the_re_read,
            ordering::a_newer_change_that_loses_the_race_is_applied_on_the_re_read,
            ordering::a_newer_change_that_loses_every_attempt_is_a_conflict,
            ordering::concurrent_deliveries_keep_the_highest_token,
            soft_delete::soft_deleted_rows_are_left_out_of_every_read_and_query,
            soft_delete::page_cursors_are_bound_to_their_view,
            soft_delete::rows_without_the_stamp_cell_are_hidden_until_marked,
            soft_delete::the_exclusion_holds_where_the_service_never_matches_a_missing_property,
            soft_delete::a_write_that_read_before_a_soft_delete_does_not_bring_the_row_back,
            soft_delete::the_exclusion_counts_against_the_filter_budget,
            soft_delete::get_or_create_of_a_soft_deleted_key_is_already_exists_and_changes_nothing,
            dotnet_rows::append_logs_of_both_key_formats_read_in_time_order,
            dotnet_rows::an_id_keyed_log_reads_dotnet_appends,
            dotnet_rows::json_cells_read_members_in_any_letter_case,
            dotnet_rows::a_dotnet_entity_row_reads_cell_for_cell,
            dotnet_rows::every_cell_form_reads_or_fails_naming_the_cell,
            dotnet_rows::rows_of_this_crate_have_the_formats_the_readme_states,
            connect::the_request_id_survives_the_errors_that_wrap_a_service_answer,
            projections::typed_projections_read_only_the_chosen_fields,
            projections::typed_projections_of_large_values_and_files_read_rows_whole,
            projections::a_stream_polled_in_place_filters_and_projects,
            projections::a_scope_chosen_at_run_time_reads_what_it_names,
            unconditional::replace_overwrites_an_entity_without_an_etag_field,
            unconditional::compare_and_swap_verbs_work_without_an_etag_field,
            sessions::a_session_record_round_trips_and_save_replaces_it,
            sessions::session_create_never_overwrites_an_existing_id,
            sessions::two_session_creates_racing_on_one_id_both_keep_their_data,
            sessions::an_expired_session_reads_as_absent,
            sessions::the_session_sweep_deletes_expired_records_and_nothing_else,
            sessions::the_session_sweep_spares_a_record_refreshed_while_it_runs,
            sessions::a_deleted_session_stays_deleted_when_a_later_save_comes,
            sessions::sessions_bypass_the_read_cache,
            sessions::large_session_data_is_stored_at_any_size_or_refused_by_name,
            sessions::session_errors_say_what_failed_and_never_hold_the_id,
            sessions::hostile_session_ids_never_reach_the_table,
            indexes::indexes_every_verb_keeps_a_local_index_right,
            indexes::indexes_soft_delete_keeps_index_rows_and_lookups_follow_the_view,
            indexes::indexes_a_unique_value_has_one_holder,
            indexes::indexes_racing_writers_on_one_unique_value_leave_one_holder,
            indexes::indexes_keys_under_the_reserved_prefix_are_refused,
            indexes::indexes_union_writes_keep_the_index_rows_of_the_table,
            indexes::indexes_an_import_writes_the_index_rows_it_is_given,
            indexes::indexes_lost_answers_settle_the_index_rows_once,
            index_values::index_lookups_of_every_value_type_sort_and_range,
            index_global::global_indexes_every_verb_keeps_them_after_the_applier,
            index_applier::index_intents_job_goes_on_past_a_failing_intent_and_names_it,
            index_applier::settle_indexes_returns_while_other_tasks_keep_writing,
            index_applier::an_applier_that_fails_logs_the_index_and_keys_never_the_value,
            index_global::global_lookups_drop_stale_hits_and_the_job_finishes_a_crashed_write,
            index_global::global_unique_racing_writers_on_one_value_leave_one_holder,
            index_global::global_unique_reservations_of_stalled_or_dead_writers_expire,
            reservations::a_unique_value_has_one_holder_against_every_interleaving,
            identity_unique::identity_a_registration_keeps_its_email_through_a_timeout_a_double_submit_and_a_repair,
            index_tools::index_tools_find_drift_and_repair_what_is_safe,
            index_tools::index_tools_build_an_index_over_existing_rows,
            index_tools::index_tools_drop_an_index_no_longer_declared,
            index_partition_delete::partition_delete_keeps_every_write_made_between_its_requests,
            index_partition_delete::partition_delete_leaves_an_entity_changed_since_it_was_listed,
            index_import::import_refuses_a_taken_unique_global_value,
            index_import::import_replacing_over_drifted_index_rows_succeeds_and_resumes,
            index_import::fsck_repair_leaves_a_registration_in_flight,
            index_import_model::import_keeps_every_write_made_between_its_requests,
            index_projections::index_projections_copy_every_cell_of_each_field,
            index_limits::index_limits_a_value_too_long_for_a_key_is_refused_by_index_and_field,
            index_limits::index_limits_a_projection_past_a_row_or_a_transaction_is_refused_by_index,
            identity::identity_registration_normalizes_names_and_finds_users,
            identity::identity_user_names_and_emails_are_unique,
            identity::identity_keys_of_hostile_user_text_are_valid,
            identity::identity_claims_tokens_and_the_two_factor_flag,
            identity::identity_deleting_a_user_removes_what_was_theirs,
            identity_races::identity_racing_registrations_of_one_name_make_one_user,
            identity_races::identity_a_registration_that_stops_between_steps_blocks_no_email_for_good,
            identity_races::identity_a_stalled_registration_overtaken_on_its_email_stores_no_user,
            identity_races::identity_concurrent_failed_logins_count_every_attempt,
            identity_auth::identity_sign_in_counts_failures_and_locks_out,
            identity_auth::identity_a_password_change_ends_older_sessions,
            identity_auth::identity_roles_grant_permissions_and_missing_roles_stay_quiet,
            identity_auth::identity_external_logins_are_created_never_taken_over,
            identity_auth::identity_user_rows_are_never_served_from_the_cache,
            read_ahead::a_stream_asks_for_the_next_page_before_it_yields_the_first_entity,
            read_ahead::bounded_reads_fetch_no_page_their_limit_makes_needless,
            large_reads::continuation_rows_are_read_with_the_main_row_when_the_handle_saw_them,
            large_reads::a_value_over_more_rows_than_point_reads_cover_takes_one_range_query,
            large_reads::a_read_whose_continuation_rows_are_in_flight_never_mixes_versions,
            large_reads::damaged_gzip_is_integrity_while_it_streams,
            large_reads::text_cut_inside_characters_reads_back_on_every_path,
            wildcard_etags::a_wildcard_or_empty_etag_is_refused_by_every_conditional_verb,
            wildcard_etags::a_wildcard_or_empty_etag_is_refused_by_the_conditional_blob_verbs,
            wildcard_etags::the_backends_answer_if_match_star_as_any_version,
            unique_outcomes::a_unique_violation_has_its_own_error_kind,
            unique_outcomes::outcome_verbs_return_a_unique_violation_as_a_value,
            sealed_cursors::sealed_cursors_show_nothing_of_the_query_and_resume_as_unsealed_ones,
            sealed_cursors::sealed_cursors_are_refused_under_another_key_altered_or_mixed_with_unsealed,
            sealed_cursors::sealed_cursors_seal_union_pages,
        }
    };
}
