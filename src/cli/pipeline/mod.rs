//! `dfx-perf pipeline buildkite`: a Buildkite pipeline (YAML on stdout) that runs the plan
//! as the GitHub nightly does: per hardware label, one job per `--partition count:K/N`
//! shard (dealt by the suite's own code, [`dfx_harness::partition::deal`]), each with a
//! timeout from [`dfx_harness::estimate`], then one merge job per label.

mod buildkite;

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use dfx_core::artefact::PartitionMethod;
use dfx_core::config::{LoadOptions, load_plan};

use super::Run;
use super::out::out;

/// Where the merge job's history lives unless `--history` says otherwise: a SQLite file in
/// the home of the Linux packages' `buildkite-agent` user, kept between builds.
pub const DEFAULT_HISTORY: &str = "/var/lib/buildkite-agent/dfx-history/history.sqlite";

/// Most shards per label.
const MAX_SHARDS: u32 = 64;

#[derive(Debug, clap::Args)]
pub struct PipelineArgs {
    #[command(subcommand)]
    pub target: Target,
}

/// The CI systems a pipeline can be generated for.
#[derive(Debug, clap::Subcommand)]
pub enum Target {
    /// A Buildkite pipeline: per label a group of shard steps and a merge step.
    Buildkite(BuildkiteArgs),
}

#[derive(Debug, clap::Args)]
pub struct BuildkiteArgs {
    /// A hardware label to run on (repeatable): built in, or named by a config or a
    /// `baselines/<LABEL>.json`, as the suite accepts it.
    #[arg(long, required = true, value_name = "LABEL")]
    pub hardware: Vec<String>,
    /// Shards per label (`--partition count:K/N`, whole server groups), 1 to 64.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_SHARDS)))]
    pub shards: u32,
    /// Config files, as the suite takes them (default: every perf-configs/*.json); passed
    /// on to the suite, so give them relative to the repository root.
    #[arg(long, value_name = "FILE")]
    pub test_config_file: Vec<PathBuf>,
    /// An agent tag `KEY=VALUE` of every step (repeatable; default `queue=gpu`). A
    /// `gpu=<LABEL>` tag is added unless one is given.
    #[arg(long, value_name = "KEY=VALUE")]
    pub agent: Vec<String>,
    /// The suite's trial filter (a substring of the trial names).
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// The merge step's DFX_HISTORY: a SQLite path on the agent or postgres://user@host/db.
    #[arg(long, value_name = "DB", default_value = DEFAULT_HISTORY)]
    pub history: String,
    /// The results folder on the agents, relative to the checkout.
    #[arg(long, value_name = "DIR", default_value = "dfx-results")]
    pub results_dir: PathBuf,
}

impl Run for PipelineArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        match self.target {
            Target::Buildkite(args) => args.run(),
        }
    }
}

impl Run for BuildkiteArgs {
    fn run(self) -> anyhow::Result<ExitCode> {
        let spec = self.spec()?;
        let command: Vec<String> = std::env::args().skip(1).collect();
        out!("{}", buildkite::render(&spec, &command.join(" "))?);
        Ok(ExitCode::SUCCESS)
    }
}

/// Everything the pipeline is rendered from, validated.
#[derive(Debug)]
pub(crate) struct Spec {
    pub labels: Vec<LabelPlan>,
    pub total: u32,
    pub config_files: Vec<String>,
    pub agents: Vec<(String, String)>,
    pub filter: Option<String>,
    pub history: String,
    pub results_dir: String,
}

/// One hardware label's shards.
#[derive(Debug)]
pub(crate) struct LabelPlan {
    pub label: String,
    /// Per shard `K` (index `K - 1`): its timeout in minutes.
    pub minutes: Vec<u32>,
}

impl BuildkiteArgs {
    fn spec(&self) -> anyhow::Result<Spec> {
        if let Some(f) = &self.filter {
            check_text("--filter", f)?;
            if f.is_empty() || f.starts_with('-') {
                bail!(
                    "--filter {f:?}: accepted: a non-empty substring of trial names not starting with `-`"
                );
            }
        }
        dfx_history::HistorySpec::parse(&self.history)
            .map_err(|e| anyhow!("--history {:?}: {e}", self.history))?;
        check_text("--history", &self.history)?;
        let results_dir = relative_dir(&self.results_dir)?;
        let agents = agents(&self.agent)?;
        let files = if self.test_config_file.is_empty() {
            LoadOptions::for_repo(Path::new(""), "").files
        } else {
            self.test_config_file.clone()
        };
        if files.is_empty() {
            bail!(
                "--test-config-file: no file given and no *.json in perf-configs/ (run from the repository root)"
            );
        }
        let mut labels: Vec<LabelPlan> = Vec::new();
        for label in &self.hardware {
            if labels.iter().any(|l| &l.label == label) {
                bail!("--hardware {label}: given twice");
            }
            labels.push(self.label_plan(label, &files)?);
        }
        let config_files = self
            .test_config_file
            .iter()
            .map(|f| {
                let s = f.to_string_lossy().into_owned();
                check_text("--test-config-file", &s).map(|()| s)
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Spec {
            labels,
            total: self.shards,
            config_files,
            agents,
            filter: self.filter.clone(),
            history: self.history.clone(),
            results_dir,
        })
    }

    /// Loads the plan for `label` as the suite does and times its shards.
    fn label_plan(&self, label: &str, files: &[PathBuf]) -> anyhow::Result<LabelPlan> {
        if !dfx_core::hardware::label_syntax_ok(label) {
            bail!(
                "--hardware {label:?}: accepted: {}",
                dfx_core::hardware::LABEL_SYNTAX
            );
        }
        let plan = load_plan(&LoadOptions {
            files: files.to_vec(),
            ..LoadOptions::for_repo(Path::new(""), label)
        })
        .map_err(|e| anyhow!("{e}nothing was generated"))?;
        dfx_core::hardware::check_label(label, &plan.hardware_labels)
            .map_err(|why| anyhow!("--hardware {label}: unknown hardware label; {why}"))?;
        let selected: Vec<usize> = (0..plan.trials.len())
            .filter(|&i| {
                self.filter
                    .as_ref()
                    .is_none_or(|f| plan.trials[i].name.contains(f.as_str()))
            })
            .collect();
        if selected.is_empty() {
            bail!(
                "--hardware {label}: no trial of the plan matches --filter {:?}",
                self.filter.as_deref().unwrap_or("")
            );
        }
        let groups = dfx_harness::partition::server_groups(&plan.trials);
        let dealt = dfx_harness::partition::deal(
            PartitionMethod::Count,
            self.shards,
            &plan.trials,
            &selected,
        );
        let mut all_groups: Vec<usize> = selected.iter().map(|&i| groups[i]).collect();
        all_groups.dedup();
        let mut minutes = Vec::with_capacity(dealt.len());
        for (k, shard) in dealt.iter().enumerate() {
            let mut in_shard: Vec<usize> = shard.iter().map(|&i| groups[i]).collect();
            in_shard.dedup();
            if in_shard.is_empty() {
                bail!(
                    "--shards {}: shard {} of {label} would be empty; accepted: at most {} (the server groups of the selection)",
                    self.shards,
                    k + 1,
                    all_groups.len()
                );
            }
            let trials = shard.iter().map(|&i| &plan.trials[i]);
            minutes.push(dfx_harness::estimate::shard_minutes(in_shard.len(), trials));
        }
        Ok(LabelPlan {
            label: label.to_string(),
            minutes,
        })
    }
}

/// Refuses control characters (a YAML or shell line break) in `value`.
fn check_text(flag: &str, value: &str) -> anyhow::Result<()> {
    if value.chars().any(char::is_control) {
        bail!("{flag} {value:?}: control characters are not accepted");
    }
    Ok(())
}

/// `--results-dir`: relative, plain components of letters, digits, `.`, `_`, `-` (the
/// artefact paths Buildkite keeps and the merge step finds again).
fn relative_dir(dir: &Path) -> anyhow::Result<String> {
    let s = dir.to_string_lossy();
    let plain = !s.is_empty()
        && dir.components().all(|c| matches!(c, Component::Normal(_)))
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
    if !plain {
        bail!(
            "--results-dir {s:?}: accepted: a relative path of letters, digits, `.`, `_`, `-` and `/` (e.g. dfx-results)"
        );
    }
    Ok(s.trim_end_matches('/').to_string())
}

/// `--agent KEY=VALUE` pairs; `queue=gpu` when none is given.
fn agents(given: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    if given.is_empty() {
        return Ok(vec![("queue".into(), "gpu".into())]);
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for a in given {
        check_text("--agent", a)?;
        let Some((k, v)) = a.split_once('=') else {
            bail!("--agent {a:?}: accepted: KEY=VALUE (e.g. queue=gpu)");
        };
        let key_ok = !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c));
        if !key_ok || v.is_empty() {
            bail!(
                "--agent {a:?}: accepted: KEY=VALUE, KEY of letters, digits, `_`, `-`, VALUE not empty"
            );
        }
        if out.iter().any(|(seen, _)| seen == k) {
            bail!("--agent {a:?}: the tag `{k}` is given twice");
        }
        out.push((k.into(), v.into()));
    }
    Ok(out)
}
