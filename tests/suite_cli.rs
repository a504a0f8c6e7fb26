//! Tests of the suite binary's command line, run as libtest-mimic trials (this target is
//! `harness = false` and parses argv with the suite's own CLI, like every root test
//! target, so `cargo test -- --assert-baseline <filter>` is accepted here too).
//!
//! Each check runs the REAL suite: either the literal `cargo test -- …` command from the
//! repository root (nested cargo; cargo releases its build lock while tests run), or the
//! `perf` test binary directly. They use the hidden fakes (`DFX_SERVER=fake`,
//! `DFX_BENCH=fake`) and the small configs in `tests/fixtures/suite_cli/`, so nothing
//! external is needed. A nested run sets `DFX_SUITE_CLI_NESTED=1`, which makes this target
//! run no checks (no recursion).

#[path = "suite_cli/capacity.rs"]
mod capacity;
#[path = "suite_cli/contract.rs"]
mod contract;
#[path = "suite_cli/dfx_perf_cli.rs"]
mod dfx_perf_cli;
#[path = "suite_cli/failure_classes.rs"]
mod failure_classes;
#[path = "suite_cli/goodput.rs"]
mod goodput;
#[path = "suite_cli/gpu_samples.rs"]
mod gpu_samples;
#[path = "suite_cli/history_e2e.rs"]
mod history_e2e;
#[path = "suite_cli/history_early.rs"]
mod history_early;
#[path = "suite_cli/history_noise.rs"]
mod history_noise;
#[path = "suite_cli/history_writers.rs"]
mod history_writers;
#[path = "suite_cli/hostile.rs"]
mod hostile;
#[path = "suite_cli/installed_run.rs"]
mod installed_run;
#[path = "suite_cli/integrity.rs"]
mod integrity;
#[path = "suite_cli/interrupt.rs"]
mod interrupt;
#[path = "suite_cli/judge.rs"]
mod judge;
#[path = "suite_cli/leftovers.rs"]
mod leftovers;
#[path = "suite_cli/load_shapes.rs"]
mod load_shapes;
#[path = "suite_cli/manifest.rs"]
mod manifest;
#[path = "suite_cli/native_duplex.rs"]
mod native_duplex;
#[path = "suite_cli/pipeline.rs"]
mod pipeline;
#[path = "suite_cli/quality.rs"]
mod quality;
#[path = "suite_cli/reference_page.rs"]
mod reference_page;
#[path = "suite_cli/release_archive.rs"]
mod release_archive;
#[path = "suite_cli/repeats.rs"]
mod repeats;
#[path = "suite_cli/schedule.rs"]
mod schedule;
#[path = "suite_cli/shard_merge.rs"]
mod shard_merge;
#[path = "suite_cli/sim_baseline.rs"]
mod sim_baseline;
#[path = "suite_cli/sim_e2e.rs"]
mod sim_e2e;
#[path = "suite_cli/stability.rs"]
mod stability;
#[path = "suite_cli/stalls.rs"]
mod stalls;
#[path = "suite_cli/strict.rs"]
mod strict;
#[path = "suite_cli/support.rs"]
mod support;

use std::path::PathBuf;
use std::process::ExitCode;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;
use support::{NESTED, cargo_test, check, fixture, perf, perf_in, run_dirs};

use schedule::Check;

fn main() -> ExitCode {
    let parsed = dfx_harness::cli::parse_env();
    let mut args = parsed.args.libtest.to_arguments();
    // Most checks wait on processes rather than compute: several at once (schedule.rs).
    args.test_threads = Some(schedule::threads(args.test_threads));
    if std::env::var_os(NESTED).is_some() {
        return libtest_mimic::run(&args, Vec::new()).exit_code();
    }
    // `cargo test --release -- --server sim` (or any other dfx-perf flag) means the user is
    // running the suite: these self-tests of the project stand aside instead of spending
    // minutes on nested builds. `cargo test --test suite_cli` runs them.
    let suite_flags: Vec<&str> = parsed
        .provenance
        .iter()
        .filter(|r| r.source != dfx_harness::cli::Source::Default)
        .map(|r| r.flag.as_str())
        .collect();
    let checks: Vec<(&str, Check)> = vec![
        (
            "literal_cargo_test_assert_baseline_runs_the_filtered_trials",
            literal_command_passes,
        ),
        (
            "literal_cargo_test_assert_baseline_fails_on_a_slowdown",
            literal_command_fails_on_slowdown,
        ),
        (
            "list_is_libtest_compatible_and_starts_nothing",
            list_is_libtest_compatible,
        ),
        (
            "list_verbose_shows_bench_thresholds_and_ignored_reasons",
            list_verbose_details,
        ),
        ("exact_selects_one_step", exact_selects_one_step),
        (
            "skip_and_filters_start_only_needed_servers",
            skip_starts_only_needed_servers,
        ),
        ("ignored_trials_and_the_ignored_flags", ignored_trials),
        (
            "a_run_of_only_ignored_trials_writes_nothing",
            only_ignored_writes_nothing,
        ),
        (
            "assert_baseline_fails_trials_that_cannot_run",
            assert_baseline_fails_unrunnable,
        ),
        (
            "config_errors_stop_everything_before_a_server_starts",
            config_errors_stop_everything,
        ),
        (
            "missing_result_writes_the_fallback_and_fails",
            fallback_when_no_result,
        ),
        (
            "breaches_are_warnings_without_assert_baseline",
            breaches_warn_without_assert,
        ),
        ("env_booleans_are_lenient", env_booleans_are_lenient),
        ("format_json_keeps_stdout_machine_readable", format_json),
        ("bad_flags_name_the_flag_and_the_accepted_values", bad_flags),
        (
            "hostile_test_names_stay_inside_the_results_folder",
            hostile_names,
        ),
        (
            "assert_baseline_with_nothing_selected_fails",
            assert_baseline_nothing_selected,
        ),
        (
            "sigint_during_a_trial_tears_down_servers_and_writes_the_summary",
            interrupt::sigint_during_the_second_trial,
        ),
        (
            "sigterm_during_the_first_trial_tears_down_servers_and_writes_the_summary",
            interrupt::sigterm_during_the_first_trial,
        ),
        (
            "sigterm_mid_step_sends_nothing_more_and_records_cuts_as_interrupted",
            interrupt::sigterm_mid_step_sends_nothing_more_and_records_cuts_as_interrupted,
        ),
        (
            "hostile_values_of_issue_12_are_config_errors_before_any_start",
            hostile::table_rows_are_config_errors,
        ),
        (
            "hostile_input_matrix_never_panics_hangs_or_leaves_a_process",
            hostile::mutation_matrix,
        ),
        (
            "interrupting_at_random_moments_always_records_the_interruption",
            interrupt::interrupted_at_random_moments,
        ),
        (
            "sigkill_mid_trial_leaves_no_server_behind",
            leftovers::sigkill_mid_trial_leaves_no_server_behind,
        ),
        (
            "the_next_run_stops_what_a_killed_run_left_behind",
            leftovers::the_next_run_stops_what_a_killed_run_left_behind,
        ),
        (
            "judge_server_is_started_used_and_stopped_with_the_main_server",
            judge::judge_server_is_started_used_and_stopped,
        ),
        (
            "contract_scenarios_pass_against_the_simulator",
            contract::contract_scenarios_pass_against_the_simulator,
        ),
        (
            "contract_fails_naming_the_scenario_under_a_broken_envelope",
            contract::contract_fails_naming_the_scenario_under_a_broken_envelope,
        ),
        (
            "contract_listing_names_the_runner_and_the_external_reason",
            contract::contract_listing_names_the_runner_and_the_external_reason,
        ),
        (
            "native_duplex_entries_pass_against_the_simulator",
            native_duplex::native_duplex_entries_pass_against_the_simulator,
        ),
        (
            "native_duplex_listing_names_the_bench_or_the_external_reason",
            native_duplex::native_duplex_listing_names_the_bench,
        ),
        (
            "native_duplex_slowdown_breaches_median_ttfp_under_assert_baseline",
            native_duplex::native_duplex_slowdown_breaches_median_ttfp,
        ),
        (
            "stability_soak_runs_batches_until_its_scaled_duration",
            stability::stability_soak_against_the_simulator,
        ),
        (
            "stability_soak_of_an_omni_entry_runs_vllm_bench_batches",
            stability::stability_soak_through_the_external_bench,
        ),
        (
            "stability_kebab_case_diffusion_soak_lists_and_is_ignored_with_its_reason",
            stability::kebab_case_diffusion_soak_lists_and_is_ignored_with_its_reason,
        ),
        (
            "a_mistyped_hardware_label_is_a_flag_error",
            strict::a_mistyped_hardware_label_is_a_flag_error,
        ),
        (
            "mistyped_keys_are_config_errors_with_the_closest_keys",
            strict::mistyped_keys_are_config_errors_with_the_closest_keys,
        ),
        (
            "goodput_slos_are_checked_and_measured_by_the_native_bench",
            strict::goodput_slos_are_checked_and_measured_by_the_native_bench,
        ),
        (
            "goodput_of_a_realtime_entry_counts_sessions_whose_every_turn_meets_the_slos",
            goodput::realtime_goodput_counts_sessions_whose_every_turn_meets_the_slos,
        ),
        (
            "require_thresholds_fails_unbaselined_trials_only",
            strict::require_thresholds_fails_unbaselined_trials_only,
        ),
        (
            "history_check_finds_a_slowdown_at_the_run_it_started",
            history_e2e::a_slowdown_from_the_fourth_run_is_found_there,
        ),
        (
            "history_check_suspects_a_far_shift_on_its_first_night_and_confirms_it_on_the_next",
            history_early::suspected_on_the_fourth_night_confirmed_on_the_fifth,
        ),
        (
            "history_noise_a_breach_inside_the_cells_history_noise_is_within_it",
            history_noise::a_breach_inside_the_cells_history_noise_is_within_it,
        ),
        (
            "history_noise_a_broken_store_is_a_warning_and_repeats_judge",
            history_noise::a_broken_store_is_a_warning_and_repeats_judge,
        ),
        (
            "history_add_by_eight_processes_at_once_stores_every_run_and_refuses_a_damaged_file",
            history_writers::concurrent_adds_then_a_damaged_file,
        ),
        (
            "gpu_samples_beside_the_simulator_with_a_fake_nvidia_smi",
            gpu_samples::gpu_samples_with_a_fake_nvidia_smi,
        ),
        (
            "load_shapes_ramp_passes_and_the_gate_trips_against_the_simulator",
            load_shapes::ramp_passes_and_the_gate_trips_against_the_simulator,
        ),
        (
            "no_nvidia_smi_means_no_gpu_keys_said_once",
            gpu_samples::no_nvidia_smi_no_gpu_keys_said_once,
        ),
        (
            "quality_capture_keeps_audio_and_runs_the_hook",
            quality::quality_capture_keeps_audio_and_runs_the_hook,
        ),
        (
            "quality_without_a_hook_is_said_not_evaluated",
            quality::without_a_hook_the_result_says_not_evaluated,
        ),
        (
            "quality_hook_is_stopped_when_the_suite_is_signalled_or_killed",
            quality::a_running_hook_is_stopped_when_the_suite_is_signalled_or_killed,
        ),
        (
            "capacity_search_against_the_simulator_finds_the_models_rate",
            capacity::capacity_search_finds_the_models_rate,
        ),
        (
            "repeats_give_a_spread_and_an_interval_around_the_median",
            repeats::repeats_give_a_spread_and_an_interval_around_the_median,
        ),
        (
            "partition_shards_merge_into_the_whole_run",
            shard_merge::shards_merge_into_the_whole_run,
        ),
        (
            "native_bench_against_the_simulator_end_to_end",
            sim_e2e::native_bench_against_the_simulator,
        ),
        (
            "overlong_names_are_config_errors_with_clipped_messages",
            integrity::overlong_names_are_config_errors_with_clipped_messages,
        ),
        (
            "a_fifo_or_dev_zero_baseline_store_is_refused_at_once",
            integrity::a_fifo_or_dev_zero_baseline_store_is_refused_at_once,
        ),
        (
            "the_simulator_survives_a_log_on_a_full_disk",
            integrity::the_simulator_survives_a_log_on_a_full_disk,
        ),
        (
            "failure_class_error500_is_server_errors",
            failure_classes::error500_is_server_errors,
        ),
        (
            "failure_class_exit_at_startup_is_server_start",
            failure_classes::exit_at_startup_is_server_start,
        ),
        (
            "failure_class_crash_at_inflight_is_server_exit",
            failure_classes::crash_at_inflight_is_server_exit,
        ),
        (
            "failure_class_stall_after_chunks_is_stalled",
            failure_classes::stall_after_chunks_is_stalled,
        ),
        (
            "failure_class_an_inline_threshold_breach_is_breach",
            failure_classes::an_inline_threshold_breach_is_breach,
        ),
        (
            "failure_class_a_bench_that_exits_is_client",
            failure_classes::a_bench_that_exits_is_client,
        ),
        (
            "stall_a_stalled_simulator_ends_the_step_early",
            stalls::stalled_simulator_ends_the_step_early,
        ),
        (
            "stall_a_trickling_server_fails_as_stalled",
            stalls::trickling_server_fails_as_stalled,
        ),
        (
            "stall_attach_to_a_trickling_health_fails_in_time",
            stalls::attach_to_a_trickling_health_fails_in_time,
        ),
        (
            "stall_never_ready_reports_the_wait",
            stalls::never_ready_reports_the_wait,
        ),
        (
            "crash_at_inflight_is_named_every_time",
            stalls::crash_is_named_every_time,
        ),
        (
            "dfx_perf_deploy_prints_a_path_for_the_shell",
            dfx_perf_cli::deploy_lookup_prints_a_path_for_the_shell,
        ),
        (
            "dfx_perf_output_to_a_closed_pipe_is_quiet",
            dfx_perf_cli::output_to_a_closed_pipe_is_quiet,
        ),
        (
            "dfx_perf_recalibrate_dry_run_says_why_it_is_empty",
            dfx_perf_cli::recalibrate_dry_run_says_why_it_is_empty,
        ),
        (
            "suite_help_names_the_cargo_command",
            dfx_perf_cli::suite_help_names_the_cargo_command,
        ),
        (
            "dfx_perf_run_list_equals_the_test_binary_list",
            installed_run::list_equals_the_test_binary_list,
        ),
        (
            "dfx_perf_run_sim_trial_from_another_folder_matches_the_test_binary",
            installed_run::sim_trial_from_another_folder_matches_the_test_binary,
        ),
        (
            "dfx_perf_run_names_a_missing_root_or_simulator",
            installed_run::a_missing_root_or_simulator_is_named,
        ),
        (
            "release_archive_unpacks_and_runs_the_suite",
            release_archive::archive_unpacks_and_runs_the_suite,
        ),
        (
            "release_workflow_parses_and_pins_what_ci_pins",
            release_archive::release_workflow_parses_and_pins_what_ci_pins,
        ),
        (
            "reference_page_dfx_perf_cli_is_current",
            reference_page::dfx_perf_cli_page_is_current,
        ),
        (
            "reference_page_readme_holds_the_literal_commands",
            reference_page::readme_holds_the_literal_commands,
        ),
        (
            "reference_page_readme_recipe_config_lists_and_runs",
            reference_page::readme_recipe_config_lists_and_runs,
        ),
        (
            "dfx_perf_pipeline_buildkite_files_are_current",
            pipeline::buildkite_pipeline_files_are_current,
        ),
        (
            "dfx_perf_pipeline_buildkite_follows_the_schema",
            pipeline::buildkite_pipeline_follows_the_schema,
        ),
        (
            "dfx_perf_pipeline_buildkite_refuses_bad_input",
            pipeline::buildkite_pipeline_refuses_bad_input,
        ),
        (
            "dfx_perf_pipeline_buildkite_timeouts_follow_the_plan",
            pipeline::buildkite_timeouts_follow_the_plan,
        ),
        (
            "shipped_sim_baselines_hold_then_catch_a_1_5x_slowdown",
            sim_baseline::shipped_sim_baselines_hold_then_catch_a_slowdown,
        ),
        (
            "shipped_sim_baselines_hold_for_omni_chat_then_catch_a_1_5x_slowdown",
            sim_baseline::shipped_sim_baselines_hold_for_omni_chat_then_catch_a_slowdown,
        ),
    ];
    let root_only: Vec<(&str, Check)> = vec![(
        "a_full_results_disk_fails_the_run_and_leaves_no_temp_file",
        integrity::a_full_results_disk_fails_the_run_and_leaves_no_temp_file,
    )];
    if !integrity::can_mount() {
        eprintln!("suite_cli: the full-disk check needs root (it mounts a small tmpfs): ignored");
    }
    let runnable: Vec<(&str, (Check, bool))> = checks
        .into_iter()
        .map(|(name, f)| (name, (f, true)))
        .chain(
            root_only
                .into_iter()
                .map(|(name, f)| (name, (f, integrity::can_mount()))),
        )
        .collect();
    let runnable = match schedule::order(runnable) {
        Ok(ordered) => ordered,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let trials = runnable
        .into_iter()
        .map(|(name, (f, runnable))| {
            let trial =
                Trial::test(name, move || schedule::run(name, f)).with_ignored_flag(!runnable);
            if suite_flags.is_empty() {
                trial
            } else {
                trial.with_ignored_flag(true)
            }
        })
        .collect();
    if !suite_flags.is_empty() {
        eprintln!(
            "suite_cli: self-tests of dfx-perf ignored because suite flags were given ({}); \
             run them with `cargo test --test suite_cli`",
            suite_flags.join(", ")
        );
    }
    libtest_mimic::run(&args, trials).exit_code()
}

pub const BASE_TRIALS: [&str; 3] = [
    "test_qwen3_tts_base::voice_clone_latency_seed-tts::c1",
    "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c2",
    "test_qwen3_tts_base::voice_clone_throughput_seed-tts::c4",
];
const CUSTOM_TRIAL: &str = "test_qwen3_tts_customvoice::default_voice_seed-tts-text::qps2.0";

fn passed(names: &[&str]) -> Vec<(String, String)> {
    names
        .iter()
        .map(|n| (n.to_string(), "passed".to_string()))
        .collect()
}

// ---------------------------------------------------------------- checks

fn literal_command_passes() -> Result<(), Failed> {
    let run = cargo_test(&["--assert-baseline", "test_qwen3_tts_base::"], &[])?;
    check(run.code() == Some(0), "expected exit status 0", &run)?;
    check(
        run.outcomes()? == passed(&BASE_TRIALS),
        "summary must hold exactly the filtered trials, passed",
        &run,
    )?;
    // Both root test targets accepted the suite flag.
    check(
        run.stdout().matches("test result: ok.").count() >= 2,
        "every root target must run",
        &run,
    )?;
    check(
        run.summary()?["filtered_out"] == 1,
        "one trial filtered out",
        &run,
    )
}

fn literal_command_fails_on_slowdown() -> Result<(), Failed> {
    let run = cargo_test(
        &["--assert-baseline", "test_qwen3_tts_base::"],
        &[("DFX_FAKE_SLOWDOWN", "2")],
    )?;
    check(run.code() == Some(101), "expected exit status 101", &run)?;
    let out = run.stdout();
    for line in [
        "median_audio_ttfp_ms 101 > 60 (+68.3 %)",
        "median_audio_ttfp_ms 202 > 150 (+34.7 %)",
        "audio_throughput 6.284 < 10 (-37.2 %)",
    ] {
        check(
            out.contains(line),
            &format!("missing breach line `{line}`"),
            &run,
        )?;
    }
    let outcomes = run.outcomes()?;
    check(
        outcomes.iter().all(|(_, o)| o == "failed") && outcomes.len() == 3,
        "all three trials failed and were summarised",
        &run,
    )
}

fn list_is_libtest_compatible() -> Result<(), Failed> {
    let run = perf(&fixture("tts_small.json"), &["--list"], &[])?;
    check(run.code() == Some(0), "exit 0", &run)?;
    let mut expected: Vec<String> = BASE_TRIALS.iter().map(|n| format!("{n}: test")).collect();
    expected.push(format!("{CUSTOM_TRIAL}: test"));
    let lines: Vec<String> = run.stdout().lines().map(String::from).collect();
    check(
        lines == expected,
        "`--list` must print exactly `<name>: test` lines in plan order",
        &run,
    )?;
    check(
        run_dirs(run.results.path()).is_empty(),
        "listing must not create a run folder",
        &run,
    )
}

fn list_verbose_details() -> Result<(), Failed> {
    let config = format!(
        "{},{}",
        fixture("tts_small.json"),
        fixture("diffusion.json")
    );
    let run = perf(&config, &["--list-verbose", "c1"], &[])?;
    check(run.code() == Some(0), "exit 0", &run)?;
    let out = run.stdout();
    for needle in [
        "test_qwen3_tts_base::voice_clone_latency_seed-tts::c1: test",
        "    bench      fake",
        "    threshold  median_audio_ttfp_ms <= 60 (inline)",
        "    ignored    unsupported: diffusion dialect",
    ] {
        check(out.contains(needle), &format!("missing `{needle}`"), &run)?;
    }
    check(
        !out.contains("::c2: test"),
        "the filter applies to the listing",
        &run,
    )?;
    let again = perf(&config, &["--list", "--verbose", "c1"], &[])?;
    check(
        again.stdout() == out,
        "`--list --verbose` is the same listing",
        &again,
    )?;
    check(
        run_dirs(run.results.path()).is_empty(),
        "listing creates nothing",
        &run,
    )
}

fn exact_selects_one_step() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--bench", "fake", "--exact", BASE_TRIALS[1]],
        &[],
    )?;
    check(run.code() == Some(0), "exit 0", &run)?;
    check(
        run.outcomes()? == passed(&[BASE_TRIALS[1]]),
        "exactly one trial",
        &run,
    )?;
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(run.run_dir()?.join("run.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let bench = serde_json::json!({"flag": "--bench", "value": "fake", "source": "cli"});
    check(
        info["flags"].as_array().is_some_and(|f| f.contains(&bench)),
        "`--bench fake` given on the command line is recorded as such in run.json",
        &run,
    )
}

fn skip_starts_only_needed_servers() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--skip", "test_qwen3_tts_base"],
        &[],
    )?;
    check(run.code() == Some(0), "exit 0", &run)?;
    check(
        run.outcomes()? == passed(&[CUSTOM_TRIAL]),
        "only the custom-voice trial",
        &run,
    )?;
    let servers: Vec<String> = std::fs::read_dir(run.run_dir()?.join("servers"))
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    check(
        servers == ["01-test_qwen3_tts_customvoice"],
        "one server start, for the selected trial",
        &run,
    )?;
    // Whole run: consecutive trials share one server.
    let run = perf(&fixture("tts_small.json"), &[], &[])?;
    let s = run.summary()?;
    let used: Vec<&str> = s["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["server"].as_str().unwrap_or(""))
        .collect();
    check(
        used == ["servers/01-test_qwen3_tts_base"; 3]
            .iter()
            .copied()
            .chain(["servers/02-test_qwen3_tts_customvoice"])
            .collect::<Vec<_>>(),
        "server reuse across consecutive trials",
        &run,
    )?;
    check(s["server_starts"] == 2, "two server starts", &run)
}

fn ignored_trials() -> Result<(), Failed> {
    let config = format!(
        "{},{}",
        fixture("tts_small.json"),
        fixture("diffusion.json")
    );
    let run = perf(&config, &[], &[])?;
    check(
        run.code() == Some(0),
        "ignored trials do not fail a plain run",
        &run,
    )?;
    let outcomes = run.outcomes()?;
    let ignored: Vec<_> = outcomes.iter().filter(|(_, o)| o == "ignored").collect();
    check(
        ignored.len() == 1 && ignored[0].0 == "test_image_gen::t2i::c1",
        "the diffusion trial is ignored",
        &run,
    )?;
    check(
        run.stderr()
            .contains("1 trial(s) ignored: unsupported: diffusion dialect"),
        "reason on stderr",
        &run,
    )?;
    let reason = &run.summary()?["trials"][4]["ignored_reason"];
    check(
        reason.as_str().is_some_and(|r| r.contains("diffusion")),
        "reason in summary.json",
        &run,
    )?;

    let only = perf(&config, &["--ignored"], &[])?;
    check(only.code() == Some(0), "exit 0", &only)?;
    let names: Vec<String> = only.outcomes()?.into_iter().map(|(n, _)| n).collect();
    check(
        names == ["test_image_gen::t2i::c1"],
        "--ignored selects only the ignored trial",
        &only,
    )?;
    check(
        only.stdout()
            .contains("ignored (unsupported: diffusion dialect"),
        "the reason shows when it is run",
        &only,
    )?;

    let all = perf(&config, &["--include-ignored"], &[])?;
    check(
        all.outcomes()?.len() == 5,
        "--include-ignored runs everything",
        &all,
    )
}

/// A filter that selects only ignored trials prints them with the reason and libtest's
/// summary line, but creates no run folder and leaves `latest` pointing at the last real
/// run.
fn only_ignored_writes_nothing() -> Result<(), Failed> {
    let config = format!(
        "{},{}",
        fixture("tts_small.json"),
        fixture("diffusion.json")
    );
    let real = perf(&config, &["--exact", BASE_TRIALS[0]], &[])?;
    check(real.code() == Some(0), "the real run passes", &real)?;
    let before = run_dirs(real.results.path());
    let latest = |p: &std::path::Path| std::fs::read_link(p.join("latest")).ok();
    let link = latest(real.results.path());
    check(
        before.len() == 1 && link.is_some(),
        "one run folder and `latest`",
        &real,
    )?;
    let out = perf_in(real.results.path(), &config, &["test_image_gen"])?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let both = format!("--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    let ok = out.status.code() == Some(0)
        && stderr.contains("1 trial(s) ignored: unsupported: diffusion dialect")
        && stdout.contains("test_image_gen::t2i::c1 ... ignored")
        && stdout.contains("0 passed; 0 failed; 1 ignored")
        && stderr.contains("no run folder was written");
    if !ok {
        return Err(format!("exit 0, the ignored trial and its reason printed\n{both}").into());
    }
    if run_dirs(real.results.path()) != before || latest(real.results.path()) != link {
        return Err(format!("the results folder changed\n{both}").into());
    }
    // Under --assert-baseline the same selection fails (and so does run).
    let strict = perf(&config, &["--assert-baseline", "test_image_gen"], &[])?;
    check(
        strict.code() == Some(101),
        "fails under --assert-baseline",
        &strict,
    )
}

fn assert_baseline_fails_unrunnable() -> Result<(), Failed> {
    let run = perf(&fixture("diffusion.json"), &["--assert-baseline"], &[])?;
    check(run.code() == Some(101), "exit 101", &run)?;
    check(
        run.stdout()
            .contains("--assert-baseline forbids ignoring it"),
        "says why",
        &run,
    )?;
    check(
        run.outcomes()? == [("test_image_gen::t2i::c1".to_string(), "failed".to_string())],
        "failed in summary",
        &run,
    )
}

fn config_errors_stop_everything() -> Result<(), Failed> {
    let config = format!(
        "{},{},{}",
        fixture("tts_small.json"),
        fixture("bad_sweep.json"),
        fixture("broken.json")
    );
    let run = perf(&config, &["--assert-baseline"], &[])?;
    check(run.code() == Some(2), "exit status 2", &run)?;
    let err = run.stderr();
    check(
        err.contains("bad_sweep.json") && err.contains("test_bad_sweep"),
        "names the file and test",
        &run,
    )?;
    check(
        err.contains("broken.json") && err.contains("line 4"),
        "invalid JSON with its line",
        &run,
    )?;
    check(
        err.contains("nothing was started"),
        "says nothing started",
        &run,
    )?;
    check(
        run_dirs(run.results.path()).is_empty(),
        "no run folder, no servers/",
        &run,
    )
}

fn fallback_when_no_result() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--exact", BASE_TRIALS[0]],
        &[("DFX_FAKE_NO_RESULT", "1")],
    )?;
    check(run.code() == Some(101), "exit 101", &run)?;
    check(
        run.stdout().contains("left no result (exit status 1)"),
        "names the bench exit status",
        &run,
    )?;
    check(
        run.stdout().contains("DFX_FAKE_NO_RESULT"),
        "shows the bench log tail",
        &run,
    )?;
    let result = run
        .run_dir()?
        .join("trials/test_qwen3_tts_base__voice_clone_latency_seed-tts__c1/result.json");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&result).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    check(
        doc["result_source"] == "template" && doc["completed"] == 0,
        "template fallback written",
        &run,
    )?;
    check(
        doc["baseline"]
            == serde_json::json!({
                "H100": {"median_audio_ttfp_ms": 60.0, "median_audio_rtf": 0.2},
                "A3": {"median_audio_ttfp_ms": 30.0}
            })
            && doc["thresholds"][0]["value"] == 60.0,
        "every hardware bucket narrowed to the step in the result (upstream's baseline), \
         the H100 thresholds beside it",
        &run,
    )?;
    check(
        run.outcomes()?[0].1 == "failed",
        "summary written after a failure",
        &run,
    )
}

fn breaches_warn_without_assert() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &[BASE_TRIALS[0]],
        &[("DFX_FAKE_SLOWDOWN", "2")],
    )?;
    check(
        run.code() == Some(0),
        "breaches alone do not fail without --assert-baseline",
        &run,
    )?;
    check(
        run.stderr()
            .contains("median_audio_ttfp_ms 101 > 60 (+68.3 %)"),
        "warning printed",
        &run,
    )?;
    let s = run.summary()?;
    check(
        s["trials"][0]["breaches"]
            .as_array()
            .is_some_and(|b| b.len() == 2),
        "breaches recorded",
        &run,
    )
}

fn env_booleans_are_lenient() -> Result<(), Failed> {
    let slow = ("DFX_FAKE_SLOWDOWN", "2");
    for (value, expected) in [
        ("yes", 101),
        ("ON", 101),
        ("1", 101),
        ("off", 0),
        ("0", 0),
        ("no", 0),
    ] {
        let run = perf(
            &fixture("tts_small.json"),
            &[BASE_TRIALS[0]],
            &[slow, ("DFX_ASSERT_BASELINE", value)],
        )?;
        check(
            run.code() == Some(expected),
            &format!("DFX_ASSERT_BASELINE={value}"),
            &run,
        )?;
    }
    let run = perf(
        &fixture("tts_small.json"),
        &[],
        &[("DFX_ASSERT_BASELINE", "maybe")],
    )?;
    check(
        run.code() == Some(2) && run.stderr().contains("--assert-baseline"),
        "nonsense is refused",
        &run,
    )?;
    let run = perf(
        &fixture("tts_small.json"),
        &["--list"],
        &[(
            "DFX_TEST_CONFIG_FILE",
            &format!(
                "{}:{}",
                fixture("tts_small.json"),
                fixture("diffusion.json")
            ),
        )],
    )?;
    check(
        run.stdout().lines().count() == 5,
        "colon separated config list from the environment",
        &run,
    )
}

fn format_json() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--format", "json", "test_qwen3_tts_base"],
        &[],
    )?;
    check(run.code() == Some(0), "exit 0", &run)?;
    let out = run.stdout();
    let bad: Vec<&str> = out
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).is_err())
        .collect();
    check(
        bad.is_empty(),
        &format!("non-JSON stdout lines: {bad:?}"),
        &run,
    )?;
    let ok = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "test" && v["event"] == "ok")
        .count();
    check(ok == 3, "three ok test events", &run)
}

fn bad_flags() -> Result<(), Failed> {
    let run = perf(&fixture("tts_small.json"), &["--server", "gpu"], &[])?;
    check(run.code() == Some(2), "exit 2", &run)?;
    let err = run.stderr();
    check(
        err.contains("--server") && err.contains("auto") && err.contains("sim"),
        "flag and accepted values",
        &run,
    )?;
    // libtest's boolean `--bench` is the load-generator choice here: it needs a value.
    let run = perf(&fixture("tts_small.json"), &["--bench"], &[])?;
    check(
        run.code() == Some(2)
            && run.stderr().contains("--bench")
            && run.stderr().contains("native"),
        "`--bench` without a value names the flag and the accepted values",
        &run,
    )?;
    let run = perf(
        &fixture("tts_small.json"),
        &["--sim-speed=-3", "--server", "sim"],
        &[],
    )?;
    check(
        run.code() == Some(2) && run.stderr().contains("--sim-speed"),
        "validated value",
        &run,
    )?;
    check(
        run_dirs(run.results.path()).is_empty(),
        "nothing created",
        &run,
    )
}

fn hostile_names() -> Result<(), Failed> {
    let run = perf(&fixture("evil_name.json"), &[], &[])?;
    check(run.code() == Some(0), "exit 0", &run)?;
    let run_dir = run.run_dir()?;
    let trials: Vec<PathBuf> = std::fs::read_dir(run_dir.join("trials"))
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .collect();
    check(
        trials.len() == 1 && trials[0].join("result.json").is_file(),
        "one trial folder",
        &run,
    )?;
    let escaped = run.results.path().parent().map(|p| p.join("escaped"));
    check(
        escaped.is_none_or(|p| !p.exists()),
        "nothing written outside",
        &run,
    )?;
    let servers = std::fs::read_dir(run_dir.join("servers"))
        .map_err(|e| e.to_string())?
        .count();
    check(servers == 1, "server folder inside the run folder", &run)
}

fn assert_baseline_nothing_selected() -> Result<(), Failed> {
    let run = perf(
        &fixture("tts_small.json"),
        &["--assert-baseline", "no_such_trial"],
        &[],
    )?;
    check(
        run.code() == Some(2),
        "a baseline run that selects nothing must not go green",
        &run,
    )?;
    check(run.stderr().contains("no trial selected"), "says so", &run)
}
