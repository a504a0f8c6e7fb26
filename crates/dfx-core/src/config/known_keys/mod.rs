//! The keys a perf-config may use: one table per dialect ([`tables`]), each row a
//! [`KeySpec`] (name, type, bound, default, consumer), and the check that refuses any other
//! key with the closest known names. The tables: case keys and `server_params` /
//! `judge_server_params` ([`case`]), sweep entries ([`entry`]: upstream's runner keys, the
//! flags dfx-perf reads, its load keys, the stability runner's keys) and the other runners
//! ([`runners`]: native duplex, diffusion, contract, `capacity`). An entry key may also be
//! a flag of the `vllm bench serve --omni` version the project tracks (a list extracted
//! from its argparse, `assets/vllm_bench_serve_flags.txt`) or of upstream's diffusion
//! benchmark script (diffusion entries, `assets/diffusion_benchmark_flags.txt`): those
//! stay generated groups. A key that argparse (`allow_abbrev`) would read as a longer flag
//! is refused with the flag it would become.

pub mod case;
mod check;
pub mod entry;
pub mod runners;
mod spec;

use std::sync::LazyLock;

#[cfg(test)]
use check::as_flag;
pub(crate) use check::{EntryKind, check_entry_keys, check_keys};
pub use spec::{Bound, EXTERNAL_DIFFUSION, EXTERNAL_VLLM, KeySpec, KeyType, UPSTREAM_ONLY};

/// Entry keys that are never bench flags: the names of [`entry::RUNNER`] (`docs/config.md`
/// ("Exclude set")).
pub const EXCLUDED_KEYS: &[&str] = &spec::names::<{ entry::RUNNER.len() }>(entry::RUNNER);

/// The entry keys of a [`crate::load::LoadSpec`], for the benches that refuse them: the
/// names of [`entry::LOAD_SHAPE`].
pub(crate) const LOAD_KEYS: &[&str] =
    &spec::names::<{ entry::LOAD_SHAPE.len() }>(entry::LOAD_SHAPE);

/// A generated group of keys: the long options of a bench's flag list file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagGroup {
    /// `vllm bench serve --omni`'s long options ([`vllm_bench_flags`]), written with `_`
    /// or `-`.
    VllmBench,
    /// The diffusion benchmark script's long options ([`diffusion_flags`]), kebab-case.
    Diffusion,
}

impl FlagGroup {
    /// The group's flags, without `--`.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            FlagGroup::VllmBench => vllm_bench_flags(),
            FlagGroup::Diffusion => diffusion_flags(),
        }
    }
}

/// One dialect's key table: where its keys go, its rows (in parts, each a table of
/// [`case`], [`entry`] or [`runners`]) and the flag group it also accepts.
#[derive(Debug, Clone, Copy)]
pub struct KeyTable {
    /// The place, as the reference titles it (`case`, `entry (omni dialect)`, …).
    pub place: &'static str,
    /// Where the keys are written.
    pub what: &'static str,
    /// The rows, part by part.
    pub parts: &'static [&'static [KeySpec]],
    /// The flags this place also accepts.
    pub flags: Option<FlagGroup>,
}

impl KeyTable {
    /// Every row, in order.
    pub fn rows(&self) -> impl Iterator<Item = &'static KeySpec> {
        self.parts.iter().flat_map(|p| p.iter())
    }
}

/// Every key table, in the order of the generated reference (`docs/reference/config-keys.md`).
pub fn tables() -> [KeyTable; 9] {
    let table = |place, what, parts, flags| KeyTable {
        place,
        what,
        parts,
        flags,
    };
    [
        table(
            "case",
            "The keys of a case (one element of the file's list)",
            &[case::CASE],
            None,
        ),
        table(
            "server_params",
            "The server of a case",
            &[case::SERVER_PARAMS],
            None,
        ),
        table(
            "judge_server_params",
            "The case's OmniInteract judge server",
            &[case::JUDGE],
            None,
        ),
        table(
            "entry (omni dialect)",
            "A `benchmark_params` element: upstream's runner keys (the exclude set, never \
             passed to a bench as flags), the bench flags dfx-perf reads itself, dfx-perf's \
             load keys and newer flags",
            &[
                entry::RUNNER,
                entry::READ_FLAGS,
                entry::LOAD_SHAPE,
                entry::NEWER_FLAGS,
            ],
            Some(FlagGroup::VllmBench),
        ),
        table(
            "stability entry",
            "A soak entry (`duration_sec`): these, besides the omni entry's keys (a \
             diffusion soak: the diffusion entry's) except those of sweep steps: the load \
             shapes, `repeats` and `capacity` are errors, `baseline` and `num_prompts` \
             warnings (not read)",
            &[entry::STABILITY],
            None,
        ),
        table(
            "native-duplex entry",
            "An entry of a case with `\"benchmark_runner\": \"native-duplex\"`",
            &[runners::NATIVE_DUPLEX],
            None,
        ),
        table(
            "diffusion entry",
            "An entry of the diffusion dialect (kebab-case keys): these and the omni \
             entry's runner keys (the exclude set)",
            &[runners::DIFFUSION],
            Some(FlagGroup::Diffusion),
        ),
        table(
            "contract entry",
            "An entry of a case with `\"benchmark_runner\": \"contract\"`",
            &[runners::CONTRACT],
            None,
        ),
        table(
            "capacity",
            "The object of an omni entry's `capacity` key",
            &[runners::CAPACITY],
            None,
        ),
    ]
}

/// The long options (without `--`) of a flag list file: one a line, `#` comments.
fn read_flags(text: &'static str) -> Vec<&'static str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("--"))
        .collect()
}

/// `vllm bench serve --omni` 0.30's long options, without `--`.
pub fn vllm_bench_flags() -> &'static [&'static str] {
    static FLAGS: LazyLock<Vec<&'static str>> =
        LazyLock::new(|| read_flags(include_str!("../../../assets/vllm_bench_serve_flags.txt")));
    &FLAGS
}

/// Upstream's diffusion benchmark script's long options, without `--`.
pub fn diffusion_flags() -> &'static [&'static str] {
    static FLAGS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
        read_flags(include_str!(
            "../../../assets/diffusion_benchmark_flags.txt"
        ))
    });
    &FLAGS
}

#[cfg(test)]
mod tests;
