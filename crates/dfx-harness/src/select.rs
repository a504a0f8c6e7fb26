//! What happens to each plan trial before anything starts: which bench runs it, or why
//! it cannot run (unsupported entry, server executable missing, no bench supports it),
//! which server group it belongs to, and its results folder name.

use std::collections::HashSet;
use std::sync::Arc;

use dfx_core::bench::Bench;
use dfx_core::config::DIFFUSION_UNSUPPORTED;
use dfx_core::config::{ConfigError, ConfigErrors};
use dfx_core::fsutil::sanitize_component;
use dfx_core::plan::{Dialect, Plan, Trial};
use dfx_core::server::ServerLauncher;

/// One candidate bench: `native`, `vllm`, `fake` or `diffusion`, or why it does not exist
/// here.
pub(crate) struct BenchSlot {
    pub label: &'static str,
    pub bench: Result<Box<dyn Bench + Send>, String>,
}

/// No bench `--bench` allows can run an entry: each one's reason, `label: why`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no bench can run this entry ({})", reasons.join("; "))]
pub(crate) struct NoBench {
    /// `native: backend x not implemented`, …
    pub(crate) reasons: Vec<String>,
}

/// The benches `--bench` allows, in order of preference.
pub(crate) struct BenchSet {
    pub slots: Vec<BenchSlot>,
}

impl BenchSet {
    /// The first bench that supports `trial`'s entry, or every reason why none does.
    pub(crate) fn choose(&self, trial: &Trial) -> Result<usize, NoBench> {
        let mut reasons = Vec::new();
        for (i, slot) in self.slots.iter().enumerate() {
            match &slot.bench {
                Ok(bench) => match bench.supports(&trial.entry) {
                    Ok(()) => return Ok(i),
                    Err(u) => reasons.push(format!("{}: {u}", slot.label)),
                },
                Err(why) => reasons.push(format!("{}: {why}", slot.label)),
            }
        }
        Err(NoBench { reasons })
    }

    /// The bench of a slot chosen by [`BenchSet::choose`].
    pub(crate) fn get(&self, slot: usize) -> Option<&(dyn Bench + Send)> {
        self.slots.get(slot)?.bench.as_ref().ok().map(|b| &**b)
    }

    /// Whether a slot with this label exists.
    pub(crate) fn has(&self, label: &str) -> bool {
        self.slots.iter().any(|s| s.label == label)
    }

    /// The label of a slot (`native`, `vllm`, `fake`, `diffusion`).
    pub(crate) fn label(&self, slot: usize) -> &'static str {
        self.slots.get(slot).map_or("?", |s| s.label)
    }
}

/// Whether a trial can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Disposition {
    /// Runs with the bench in this slot of the [`BenchSet`].
    Run { slot: usize },
    /// Cannot run: ignored on a plain run, failed under `--assert-baseline`.
    Skip { reason: String },
}

/// A plan trial with everything decided before the run.
pub(crate) struct PlannedTrial {
    /// The plan's trial, copied once here and shared from then on (the closing's
    /// [`crate::finish::TrialRef`], the runner, the bench context).
    pub trial: Arc<Trial>,
    pub disposition: Disposition,
    /// 1-based number of the run of consecutive trials sharing one server
    /// configuration (trials with the same number can share a live server).
    pub server_group: usize,
    /// Folder name under `trials/` (sanitised, unique).
    pub dir_name: String,
}

/// Runs each chosen bench's [`Bench::preflight`] once per entry of the `selected` trials
/// that will run, before any server starts. Each failure becomes a config error naming the
/// file, the test, the entry and `dataset_path`.
pub(crate) fn preflight(
    planned: &[PlannedTrial],
    selected: &[usize],
    benches: &BenchSet,
) -> Result<(), ConfigErrors> {
    let mut seen = HashSet::new();
    let mut errors = Vec::new();
    for &i in selected {
        let p = &planned[i];
        let Disposition::Run { slot } = p.disposition else {
            continue;
        };
        let Some(bench) = benches.get(slot) else {
            continue;
        };
        if !seen.insert((slot, std::sync::Arc::as_ptr(&p.trial.entry))) {
            continue;
        }
        if let Err(why) = bench.preflight(&p.trial) {
            let src = &p.trial.source;
            let mut e =
                ConfigError::in_file(&src.file, format!("{} bench: {why}", benches.label(slot)));
            e.test_name = Some(p.trial.test_name.clone());
            e.entry_index = Some(src.raw_entry_index);
            e.key = Some(why.key().to_string());
            errors.push(e);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ConfigErrors(errors))
    }
}

/// The server group of every trial, in plan order: 1-based numbers of the runs of
/// consecutive trials sharing one server configuration (the suite starts one server per
/// group).
pub fn server_groups(trials: &[Trial]) -> Vec<usize> {
    let mut group = 0;
    let mut previous: Option<&Trial> = None;
    trials
        .iter()
        .map(|trial| {
            if previous.is_none_or(|p| *p.server != *trial.server) {
                group += 1;
            }
            previous = Some(trial);
            group
        })
        .collect()
}

/// Decides every trial of the plan, in plan order.
pub(crate) fn plan_trials(
    plan: &Plan,
    launcher: &dyn ServerLauncher,
    benches: &BenchSet,
) -> Vec<PlannedTrial> {
    let mut used = HashSet::new();
    let groups = server_groups(&plan.trials);
    let mut out = Vec::with_capacity(plan.trials.len());
    for (trial, &group) in plan.trials.iter().zip(&groups) {
        out.push(PlannedTrial {
            trial: Arc::new(trial.clone()),
            disposition: decide(trial, launcher, benches),
            server_group: group,
            dir_name: unique_dir_name(&trial.name, &mut used),
        });
    }
    out
}

fn decide(trial: &Trial, launcher: &dyn ServerLauncher, benches: &BenchSet) -> Disposition {
    let mut reasons = Vec::new();
    if let Some(why) = &trial.unsupported {
        reasons.push(format!("unsupported: {why}"));
    }
    if let Err(u) = launcher.availability(&trial.server) {
        reasons.push(format!("server unavailable: {u}"));
    }
    let chosen = benches.choose(trial);
    match chosen {
        Ok(slot) if reasons.is_empty() => Disposition::Run { slot },
        Ok(_) => Disposition::Skip {
            reason: reasons.join("; "),
        },
        Err(why) => {
            if trial.entry.dialect == Dialect::Diffusion && !benches.has("diffusion") {
                reasons.push(format!("unsupported: {DIFFUSION_UNSUPPORTED}"));
            } else if trial.unsupported.is_none() {
                reasons.push(why.to_string());
            }
            Disposition::Skip {
                reason: reasons.join("; "),
            }
        }
    }
}

fn unique_dir_name(name: &str, used: &mut HashSet<String>) -> String {
    let base = sanitize_component(name);
    let mut candidate = base.clone();
    let mut n = 2;
    while !used.insert(candidate.clone()) {
        candidate = format!("{base}-{n}");
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;
    use dfx_testkit::fake::bench::FakeBench;
    use dfx_testkit::fake::server::FakeLauncher;
    use dfx_testkit::trials::{StubBench, UnavailableLauncher, concurrency_trial, spec};
    use std::sync::Arc;

    type Slot = (&'static str, Result<Box<dyn Bench + Send>, String>);

    fn set(slots: Vec<Slot>) -> BenchSet {
        BenchSet {
            slots: slots
                .into_iter()
                .map(|(label, bench)| BenchSlot { label, bench })
                .collect(),
        }
    }

    #[test]
    fn auto_prefers_native_then_vllm_then_gives_both_reasons() {
        let t = concurrency_trial("t", "s", 1, 2);
        let both = set(vec![
            (
                "native",
                Ok(Box::new(StubBench::refusing(
                    "backend openai-chat-omni not implemented",
                ))),
            ),
            ("vllm", Ok(Box::new(StubBench::accepting()))),
        ]);
        assert_eq!(both.choose(&t), Ok(1));
        let native_ok = set(vec![
            ("native", Ok(Box::new(StubBench::accepting()))),
            ("vllm", Err("`vllm` not found on PATH".into())),
        ]);
        assert_eq!(native_ok.choose(&t), Ok(0));
        let none = set(vec![
            (
                "native",
                Ok(Box::new(StubBench::refusing("backend x not implemented"))),
            ),
            ("vllm", Err("`vllm` not found on PATH".into())),
        ]);
        let why = none.choose(&t).unwrap_err().to_string();
        assert_eq!(
            why,
            "no bench can run this entry (native: backend x not implemented; vllm: `vllm` not found on PATH)"
        );
    }

    #[test]
    fn dispositions_groups_and_dir_names() {
        let mut a1 = concurrency_trial("t", "s", 1, 2);
        let mut a2 = concurrency_trial("t", "s", 2, 2);
        let mut b = concurrency_trial("t", "u", 1, 2);
        b.server = Arc::new(spec("B"));
        b.unsupported = Some("diffusion dialect".into());
        // Two names that sanitise to the same folder.
        a1.name = "t::a b::c1".into();
        a2.name = "t::a_b::c1".into();
        let a3 = concurrency_trial("t", "s", 4, 2);
        let plan = Plan {
            trials: vec![a1, a2, b, a3],
            warnings: vec![],
            hardware_labels: vec![],
        };
        let benches = set(vec![("fake", Ok(Box::new(FakeBench::default())))]);
        let planned = plan_trials(&plan, &FakeLauncher::new(), &benches);
        let groups: Vec<_> = planned.iter().map(|p| p.server_group).collect();
        assert_eq!(groups, [1, 1, 2, 3]);
        assert_eq!(planned[0].dir_name, "t__a_b__c1");
        assert_eq!(planned[1].dir_name, "t__a_b__c1-2");
        assert_eq!(planned[0].disposition, Disposition::Run { slot: 0 });
        assert_eq!(
            planned[2].disposition,
            Disposition::Skip {
                reason: "unsupported: diffusion dialect".into()
            }
        );
    }

    #[test]
    fn missing_server_executable_is_a_skip_reason() {
        let plan = Plan {
            trials: vec![concurrency_trial("t", "s", 1, 2)],
            warnings: vec![],
            hardware_labels: vec![],
        };
        let benches = set(vec![("fake", Ok(Box::new(FakeBench::default())))]);
        let launcher = UnavailableLauncher {
            name: "vllm-omni".into(),
            reason: dfx_core::server::Unavailable::NotFound {
                program: "vllm-omni".into(),
                hint: "put vllm-omni on PATH".into(),
            },
        };
        let planned = plan_trials(&plan, &launcher, &benches);
        assert_eq!(
            planned[0].disposition,
            Disposition::Skip {
                reason: "server unavailable: vllm-omni not found: put vllm-omni on PATH".into()
            }
        );
    }
}
