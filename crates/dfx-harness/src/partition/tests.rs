use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dfx_core::config::{LoadOptions, load_plan};
use dfx_core::plan::Plan;

use super::*;
use crate::select::{BenchSet, BenchSlot, plan_trials};
use dfx_testkit::fake::bench::FakeBench;
use dfx_testkit::fake::server::FakeLauncher;
use dfx_testkit::trials::{concurrency_trial, spec};

fn planned(plan: &Plan) -> Vec<PlannedTrial> {
    let benches = BenchSet {
        slots: vec![BenchSlot {
            label: "fake",
            bench: Ok(Box::new(FakeBench::default())),
        }],
    };
    plan_trials(plan, &FakeLauncher::new(), &benches)
}

/// The shipped perf-configs, loaded as the suite loads them.
fn shipped_plan() -> Plan {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("perf-configs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    load_plan(&LoadOptions {
        files,
        hardware: "H100".into(),
        deploy_dir: root.join("deploy"),
        baselines_dir: root.join("baselines"),
        mark: None,
    })
    .unwrap_or_else(|e| panic!("{e}"))
}

fn part(method: Method, shard: u32, total: u32) -> Partition {
    Partition {
        method,
        shard,
        total,
    }
}

#[test]
fn the_spellings_and_their_errors() {
    let p: Partition = "count:2/3".parse().unwrap();
    assert_eq!(p, part(Method::Count, 2, 3));
    assert_eq!(p.to_string(), "count:2/3");
    assert_eq!(" hash:1/1 ".parse(), Ok(part(Method::Hash, 1, 1)));
    let bad = |s: &str| s.parse::<Partition>().unwrap_err();
    assert_eq!(bad("count"), PartitionError::Syntax);
    assert_eq!(bad("count:2"), PartitionError::Syntax);
    assert_eq!(bad("slice:1/2"), PartitionError::Method("slice".into()));
    assert_eq!(bad("count:a/2"), PartitionError::Number("a".into()));
    assert_eq!(bad("count:1/-2"), PartitionError::Number("-2".into()));
    assert_eq!(
        bad("count:0/2"),
        PartitionError::Shard { shard: 0, total: 2 }
    );
    assert_eq!(
        bad("count:3/2"),
        PartitionError::Shard { shard: 3, total: 2 }
    );
    assert_eq!(bad("hash:1/0"), PartitionError::Total(0));
    assert_eq!(bad("hash:1/1025"), PartitionError::Total(1025));
    assert!("hash:1024/1024".parse::<Partition>().is_ok());
}

#[test]
fn count_deals_selected_groups_round_robin() {
    let mut trials = Vec::new();
    for (g, model) in ["A", "B", "C"].iter().enumerate() {
        for c in [1, 2] {
            let mut t = concurrency_trial(&format!("t{g}"), "s", c, 2);
            t.server = Arc::new(spec(model));
            trials.push(t);
        }
    }
    let plan = Plan {
        trials,
        warnings: vec![],
        hardware_labels: vec![],
    };
    let planned = planned(&plan);
    let all: Vec<usize> = (0..planned.len()).collect();
    let one = apply(Some(&part(Method::Count, 1, 2)), &planned, &all);
    assert_eq!(one.selected, [0, 1, 4, 5]);
    let two = apply(Some(&part(Method::Count, 2, 2)), &planned, &all);
    assert_eq!(two.selected, [2, 3]);
    let rec = two.record.unwrap();
    assert_eq!((rec.server_groups, rec.server_groups_in_shard), (3, 1));
    // A filter that drops group A deals B and C afresh.
    let one = apply(Some(&part(Method::Count, 1, 2)), &planned, &[2, 3, 4, 5]);
    assert_eq!(one.selected, [2, 3]);
    assert!(!one.in_shard[0] && one.in_shard[2] && !one.in_shard[4]);
    // No partition: everything.
    assert_eq!(apply(None, &planned, &all).selected, all);
}

/// The property of issue #15 item 7 on the shipped plan: for N = 1..=6 and both methods,
/// the shards' union is the whole plan, each trial is in exactly one shard, and no
/// server group is split across shards. Hash shards are the same when recomputed.
#[test]
fn shards_of_the_shipped_plan_cover_it_once_without_splitting_a_group() {
    let plan = shipped_plan();
    let planned = planned(&plan);
    let all: Vec<usize> = (0..planned.len()).collect();
    let groups = planned.last().unwrap().server_group;
    assert!(groups >= 3, "the shipped plan has {groups} server groups");
    for method in [Method::Count, Method::Hash] {
        for total in 1..=6 {
            let mut owner: Vec<Option<u32>> = vec![None; planned.len()];
            let mut group_shard: BTreeMap<usize, u32> = BTreeMap::new();
            for shard in 1..=total {
                let p = part(method, shard, total);
                let s = apply(Some(&p), &planned, &all);
                assert_eq!(s, apply(Some(&p), &planned, &all), "{p}: not stable");
                for &i in &s.selected {
                    assert_eq!(owner[i], None, "{p}: {} twice", planned[i].trial.name);
                    owner[i] = Some(shard);
                    let g = planned[i].server_group;
                    let prev = group_shard.insert(g, shard);
                    assert!(prev.is_none_or(|x| x == shard), "{p}: group {g} split");
                }
                let rec = s.record.unwrap();
                assert_eq!(rec.server_groups, groups);
                if method == Method::Count {
                    let want = (groups + (total - shard) as usize) / total as usize;
                    assert_eq!(rec.server_groups_in_shard, want, "{p}");
                }
            }
            let missing: Vec<&str> = owner
                .iter()
                .zip(&planned)
                .filter(|(o, _)| o.is_none())
                .map(|(_, t)| t.trial.name.as_str())
                .collect();
            assert!(
                missing.is_empty(),
                "{method:?} N={total}: not run: {missing:?}"
            );
        }
    }
}

#[test]
fn the_hash_identity_ignores_paths_and_the_filter() {
    let mut a = concurrency_trial("t", "s", 1, 2);
    let mut b = a.clone();
    let deploy = |source: &str| dfx_core::server::ResolvedDeploy {
        name: "qwen3_tts".into(),
        source: source.into(),
        contents: "x: 1".into(),
        edited: false,
    };
    Arc::make_mut(&mut a.server).deploy = Some(deploy("/runner-1/deploy/qwen3_tts.yaml"));
    Arc::make_mut(&mut b.server).deploy = Some(deploy("/runner-2/deploy/qwen3_tts.yaml"));
    assert_eq!(group_identity(&a), group_identity(&b));
    b.test_name = "u".into();
    assert_ne!(group_identity(&a), group_identity(&b));
}

#[test]
fn deal_gives_each_shard_what_the_suite_runs_for_it() {
    let plan = shipped_plan();
    let planned = planned(&plan);
    let selected: Vec<usize> = (0..planned.len()).step_by(2).collect();
    for method in [Method::Count, Method::Hash] {
        for total in [1, 2, 3] {
            let dealt = deal(method, total, &plan.trials, &selected);
            assert_eq!(dealt.len(), total as usize);
            for k in 1..=total {
                let suite = apply(Some(&part(method, k, total)), &planned, &selected);
                assert_eq!(
                    dealt[k as usize - 1],
                    suite.selected,
                    "{method:?} {k}/{total}"
                );
            }
        }
    }
    let groups = server_groups(&plan.trials);
    let suite_groups: Vec<usize> = planned.iter().map(|t| t.server_group).collect();
    assert_eq!(groups, suite_groups);
}
