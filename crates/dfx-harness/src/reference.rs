//! The book's generated reference pages (`docs/reference/`): rendered from the code that
//! defines what they list (the clap definitions, dfx-core's key tables, metric registry
//! and failure classes), so a page cannot drift from the binary. A test
//! (`crates/dfx-harness/tests/reference_pages.rs`, and `tests/suite_cli/reference_page.rs`
//! for the `dfx-perf` commands) renders them again and fails when a committed page differs.

use std::fmt::Write as _;

use clap::{Arg, Command, CommandFactory};
use dfx_core::config::known_keys;
use dfx_core::metrics::{self, Direction, Metric};
use dfx_core::verdict::FailureClass;

use crate::cli::SuiteArgs;
use crate::exit::SuiteExit;

/// The first line of every generated page: what wrote it and how to rewrite it.
const GENERATED: &str = "<!-- Generated from the code by dfx_harness::reference; do not edit. \
Rewrite: DFX_BLESS=1 cargo test -p dfx-harness --test reference_pages (dfx-perf-cli.md: \
DFX_BLESS=1 cargo test --test suite_cli reference_page). -->";

/// The pages dfx-harness can render alone, as (file name under `docs/reference/`, text).
/// `dfx-perf-cli.md` needs the root binary's command ([`cli_page`]).
pub fn pages() -> Vec<(&'static str, String)> {
    vec![
        ("suite-flags.md", suite_flags_page()),
        ("config-keys.md", config_keys_page()),
        ("metrics.md", metrics_page()),
        ("failure-classes.md", failure_classes_page()),
        ("exit-status.md", exit_status_page()),
    ]
}

/// `suite-flags.md`: every flag of the suite (`cargo test --test perf -- --help`).
pub fn suite_flags_page() -> String {
    let intro = "Every flag of the suite (`cargo test --release --test perf -- FLAGS`, \
`dfx-perf run FLAGS`), from its clap definition: dfx-perf's own flags, then libtest's. \
A flag's environment variable sets it when the flag is absent. What each one does in \
practice: [the guide](../guide/flags.md).";
    cli_page("Suite flags", intro, &SuiteArgs::command())
}

/// A page listing every visible flag and positional argument of `cmd` and, in sections,
/// of each of its visible subcommands (recursively).
pub fn cli_page(title: &str, intro: &str, cmd: &Command) -> String {
    let mut out = format!("{GENERATED}\n\n# {title}\n\n{intro}\n");
    write_command(&mut out, cmd, &[]);
    out
}

fn write_command(out: &mut String, cmd: &Command, path: &[&str]) {
    let args: Vec<&Arg> = cmd.get_arguments().filter(|a| visible(a)).collect();
    let full: Vec<&str> = path.iter().copied().chain([cmd.get_name()]).collect();
    if !path.is_empty() {
        let _ = write!(
            out,
            "\n{} `{}`\n\n",
            "#".repeat(path.len() + 1),
            full.join(" ")
        );
        if let Some(about) = cmd.get_about() {
            let _ = writeln!(out, "{}", one_line(&about.to_string()));
        }
    }
    if !args.is_empty() {
        out.push_str("\n| argument | environment | default | meaning |\n|---|---|---|---|\n");
        for a in args {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                cell(&spelling(a)),
                a.get_env()
                    .map(|e| format!("`{}`", e.to_string_lossy()))
                    .unwrap_or_else(|| "—".into()),
                default(a),
                cell(&help(a)),
            );
        }
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_command(out, sub, &full);
    }
}

fn visible(a: &Arg) -> bool {
    !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version")
}

/// `--flag <VALUE>` / `-q, --quiet` / `<NAME>` as the help prints it.
fn spelling(a: &Arg) -> String {
    let values = a
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", a.get_id().as_str().to_uppercase()));
    let takes = a.get_action().takes_values();
    let mut s = match (a.get_short(), a.get_long()) {
        (_, None) => values.clone(),
        (Some(c), Some(l)) => format!("-{c}, --{l}"),
        (None, Some(l)) => format!("--{l}"),
    };
    if a.get_long().is_some() && takes {
        s = format!("{s} {values}");
    }
    format!("`{s}`")
}

fn default(a: &Arg) -> String {
    let vals: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if vals.is_empty() || !a.get_action().takes_values() {
        "—".into()
    } else {
        format!("`{}`", vals.join(","))
    }
}

fn help(a: &Arg) -> String {
    let text = a.get_long_help().or(a.get_help()).map(|h| h.to_string());
    let mut s = text.unwrap_or_default();
    let possible: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !possible.is_empty() && a.get_action().takes_values() {
        let _ = write!(s, " (values: {})", possible.join(", "));
    }
    s
}

/// `text` in one table cell: lines joined, pipes escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `config-keys.md`: every key a perf-config may use, one table per dialect, with type,
/// bound, default and consumer.
pub fn config_keys_page() -> String {
    let mut out = format!(
        "{GENERATED}\n\n# Config keys\n\nEvery key a perf-config may use, from dfx-core's key \
tables (`dfx_core::config::known_keys::tables`), one per place: its type, the values the \
plan accepts (written from the constants the checks read), its default and who reads it. \
Any other name is a config error with the closest known names; a value outside its bounds \
is a config error naming the file, test, entry index and key. A config file (or a `$ref` \
file) is a regular file of at most {} MiB. The keys' meaning: [the config \
design](../config.md), [bad input](../guide/bad-input.md).\n",
        dfx_core::bounds::MAX_CONFIG_BYTES / (1024 * 1024)
    );
    for t in known_keys::tables() {
        let _ = write!(out, "\n## {}\n\n{}.\n\n", t.place, cell(t.what));
        out.push_str("| key | type | accepted | default | consumer |\n|---|---|---|---|---|\n");
        for k in t.rows() {
            let bound = k.bound.map_or_else(|| "—".to_string(), |b| cell(&b.text()));
            let _ = writeln!(
                out,
                "| `{}` | {} | {bound} | {} | {} |",
                k.name,
                k.ty,
                cell(k.default),
                cell(k.consumer)
            );
        }
        if let Some(group) = t.flags {
            let _ = writeln!(out, "\n{}", flag_line(group));
        }
    }
    out
}

/// The one line standing for a flag group's rows.
fn flag_line(group: known_keys::FlagGroup) -> String {
    let n = group.flags().len();
    match group {
        known_keys::FlagGroup::VllmBench => format!(
            "Also any of the {n} long options of the tracked `vllm bench serve --omni` \
(`crates/dfx-core/assets/vllm_bench_serve_flags.txt`), written with `_` or `-`: type \
passed to vllm bench as `--flag`, no bound, vllm bench's default, consumer {} (the native \
bench refuses those that change what is measured and that it does not implement).",
            known_keys::EXTERNAL_VLLM
        ),
        known_keys::FlagGroup::Diffusion => format!(
            "Also any of the {n} long options of upstream's diffusion benchmark script \
(`crates/dfx-core/assets/diffusion_benchmark_flags.txt`), kebab-case, and the omni \
entry's runner keys (the exclude set): type passed to the script as `--flag`, consumer {}.",
            known_keys::EXTERNAL_DIFFUSION
        ),
    }
}

/// `metrics.md`: every metric of the registry with unit and direction.
pub fn metrics_page() -> String {
    let mut out = format!(
        "{GENERATED}\n\n# Metrics\n\nThe metric registry (`crates/dfx-core/src/metrics/table.rs`): \
every result key dfx-perf names in thresholds, summaries, reports and the history. A \
threshold on a lower-is-better metric is a ceiling, on a higher-is-better one a floor; \
informational keys cannot be thresholds. How each is measured: \
[the benches' design](../bench.md).\n\n## Exact keys\n"
    );
    table(
        &mut out,
        metrics::exact_entries(),
        metrics::exact_definition,
    );
    out.push_str(
        "\n## Families\n\nNamed with a statistic prefix: `mean_`, `median_`, `std_` or a \
percentile `p<N>_` (`median_audio_ttfp_ms`, `p99_e2el_ms`).\n",
    );
    table(
        &mut out,
        metrics::family_entries(),
        metrics::family_definition,
    );
    out
}

fn table(out: &mut String, entries: &[Metric], definition: fn(&str) -> Option<&'static str>) {
    out.push_str("\n| key | unit | direction | label | definition |\n|---|---|---|---|---|\n");
    for m in entries {
        let direction = match m.direction {
            Some(Direction::HigherIsBetter) => "higher is better",
            Some(Direction::LowerIsBetter) => "lower is better",
            None => "informational",
        };
        let unit = if m.unit.is_empty() { "—" } else { m.unit };
        let def = cell(definition(m.name).unwrap_or("—"));
        let _ = writeln!(
            out,
            "| `{}` | {unit} | {direction} | {} | {def} |",
            m.name, m.label
        );
    }
}

/// `failure-classes.md`: every failure class, most causal first.
pub fn failure_classes_page() -> String {
    let mut out = format!(
        "{GENERATED}\n\n# Failure classes\n\nEvery failed trial has one `failure_class` \
(`dfx_core::verdict::FailureClass`) in `verdict.json`, `summary.json`, `junit.xml` and \
the terminal's last lines; when several apply, the one listed first here wins. Where to \
look for each: [why a trial failed](../guide/recipes.md#why-did-a-trial-fail).\n\n\
| class | meaning |\n|---|---|\n"
    );
    for c in FailureClass::ALL {
        let _ = writeln!(out, "| `{}` | {} |", c.as_str(), c.meaning());
    }
    out
}

/// `exit-status.md`: the suite's statuses ([`SuiteExit`]) and those of the other
/// `dfx-perf` commands.
pub fn exit_status_page() -> String {
    let mut out = format!(
        "{GENERATED}\n\n# Exit statuses\n\n## Exit status of the suite\n\nFrom \
`dfx_harness::exit::SuiteExit`, the table the suite exits by; `dfx-perf run` exits with \
the same statuses.\n\n| status | meaning |\n|---|---|\n"
    );
    for s in SuiteExit::ALL {
        let _ = writeln!(out, "| {} | {} |", s.code(), cell(s.meaning()));
    }
    out.push_str(
        "\n## The other dfx-perf commands\n\n0 on success; 1 on errors and refusals; 2 on \
bad usage or an unknown deploy name; 3 when `compare --fail-on-regression` or `history \
check --fail-on-regression` finds a regression; 101 when `merge` merged a run with a \
failed trial, an interrupted or a missing shard. Output to a pipe that closes early \
(`dfx-perf deploy | head -1`) is dropped quietly, as ripgrep does: no panic message, and \
the command still does its work and exits with its own status (0 for a successful \
`deploy`); any other stdout write error exits with 1.\n",
    );
    out
}
