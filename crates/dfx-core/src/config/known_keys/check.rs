//! The known-name check: a key not in its place's table (nor, for an entry, a flag of the
//! bench that reads it) is refused with the closest known names, or with the flag argparse
//! would read an abbreviated key as.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::entry::{LOAD_SHAPE, NEWER_FLAGS, RUNNER, STABILITY};
use super::runners::{DIFFUSION, NATIVE_DUPLEX};
use super::spec::KeySpec;
use super::{diffusion_flags, vllm_bench_flags};
use crate::diag::{Ctx, Errs};
use crate::suggest;

/// A key as the flag it renders to: `_` → `-` (upstream's rule for both benches).
pub(super) fn as_flag(key: &str) -> String {
    key.replace('_', "-")
}

/// Which set of keys an entry is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    /// Omni dialect and stability entries: `vllm bench serve` flags and runner keys.
    Omni,
    /// Diffusion dialect: the diffusion script's flags.
    Diffusion,
    /// The native-duplex runner's entries.
    NativeDuplex,
    /// Stability entries written for a diffusion server (kebab-case keys): the
    /// stability runner's keys, the diffusion script's flags and the omni ones.
    DiffusionSoak,
}

/// The flags a diffusion soak entry may name: the diffusion script's, then `vllm bench
/// serve`'s.
fn soak_flags() -> &'static [&'static str] {
    static FLAGS: LazyLock<Vec<&'static str>> =
        LazyLock::new(|| [diffusion_flags(), vllm_bench_flags()].concat());
    &FLAGS
}

impl EntryKind {
    /// The flags of the bench that reads this kind's entries upstream.
    fn flags(self) -> &'static [&'static str] {
        match self {
            EntryKind::Omni => vllm_bench_flags(),
            EntryKind::Diffusion => diffusion_flags(),
            EntryKind::NativeDuplex => &[],
            EntryKind::DiffusionSoak => soak_flags(),
        }
    }

    /// The program that reads this kind's entries upstream, for messages.
    fn program(self) -> &'static str {
        match self {
            EntryKind::Omni => "vllm bench serve",
            EntryKind::Diffusion => "the diffusion benchmark script",
            EntryKind::NativeDuplex => "the native-duplex runner",
            EntryKind::DiffusionSoak => "the diffusion stability runner",
        }
    }

    /// The table parts of the runner's and dfx-perf's own keys of this kind (besides the
    /// bench's flags), in the order the suggestions list them.
    fn parts(self) -> &'static [&'static [KeySpec]] {
        match self {
            EntryKind::Omni => &[RUNNER, LOAD_SHAPE, STABILITY, NEWER_FLAGS],
            EntryKind::Diffusion => &[RUNNER, DIFFUSION],
            EntryKind::NativeDuplex => &[NATIVE_DUPLEX],
            EntryKind::DiffusionSoak => &[RUNNER, DIFFUSION, STABILITY],
        }
    }

    /// The names of [`Self::parts`].
    pub(super) fn own_keys(self) -> impl Iterator<Item = &'static str> {
        self.parts().iter().flat_map(|t| t.iter().map(|k| k.name))
    }

    /// A flag as configs of this kind write it: kebab-case for diffusion entries,
    /// snake_case otherwise.
    fn spelled(self, flag: &str) -> String {
        match self {
            EntryKind::Diffusion | EntryKind::DiffusionSoak => flag.to_string(),
            _ => flag.replace('-', "_"),
        }
    }

    /// Every name an entry of this kind may use, as configs write it.
    fn names(self) -> Vec<String> {
        let flags = self.flags().iter().map(|f| self.spelled(f));
        self.own_keys().map(str::to_string).chain(flags).collect()
    }

    /// Whether `key` (written with `_` or `-`) is one of this kind's keys.
    pub(super) fn knows(self, key: &str) -> bool {
        let flag = as_flag(key);
        self.own_keys().any(|k| as_flag(k) == flag) || self.flags().contains(&flag.as_str())
    }
}

/// Pushes an error for every key of `obj` that `kind` does not know, naming the closest
/// known keys, or the flag argparse would read an abbreviated key as.
pub(crate) fn check_entry_keys(
    ctx: &Ctx<'_>,
    obj: &Map<String, Value>,
    kind: EntryKind,
    errs: &mut Errs,
) {
    let mut names: Option<Vec<String>> = None;
    for key in obj.keys().filter(|k| !kind.knows(k)) {
        let names = names.get_or_insert_with(|| kind.names());
        let flag = as_flag(key);
        let longer: Vec<&&str> = kind
            .flags()
            .iter()
            .filter(|f| f.starts_with(&flag))
            .collect();
        let (problem, accepted) = match longer.as_slice() {
            [one] => (
                format!(
                    "`{key}` would be read by {} as `--{one}` (argparse abbreviation); \
                     write the full key",
                    kind.program()
                ),
                kind.spelled(one),
            ),
            [_, _, ..] => (
                format!(
                    "`{key}` is an ambiguous abbreviation for {}",
                    kind.program()
                ),
                longer
                    .iter()
                    .map(|f| format!("--{f}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            [] => (
                "unknown entry key".to_string(),
                suggest::hint(
                    key,
                    names.iter().map(String::as_str),
                    "a key listed in docs/config.md (\"Keys\")",
                ),
            ),
        };
        errs.push(ctx.err(key, problem, &accepted));
    }
}

/// Pushes an error for every key of `obj` not in the table `known` ("unknown `what`
/// key"), at `prefix.<key>` (or `<key>` when `prefix` is empty), with the closest known
/// keys.
pub(crate) fn check_keys(
    ctx: &Ctx<'_>,
    (prefix, what): (&str, &str),
    obj: &Map<String, Value>,
    known: &[KeySpec],
    errs: &mut Errs,
) {
    let names: Vec<&str> = known.iter().map(|k| k.name).collect();
    for key in obj.keys().filter(|k| !names.contains(&k.as_str())) {
        let at = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        errs.push(ctx.err(
            &at,
            format!("unknown {what} key"),
            &suggest::hint(key, names.iter().copied(), &names.join(", ")),
        ));
    }
}
