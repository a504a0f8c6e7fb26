//! One row of a key table: a key's name, type, bound, default and consumer.

use std::fmt;

use crate::bounds::{MAX_RATE, MIN_RATE};

/// The JSON type(s) a key accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// A JSON integer.
    Integer,
    /// An integer or a list of integers (a sweep).
    IntegerList,
    /// A JSON number.
    Number,
    /// A number or a list of numbers (a sweep).
    NumberList,
    /// A string.
    String,
    /// A list of strings.
    StringList,
    /// `true` or `false`.
    Bool,
    /// An object.
    Object,
    /// A list of objects.
    ObjectList,
    /// Any JSON value (read by upstream's runner, or truthiness only).
    AnyJson,
    /// A bench flag's value, passed on as `--flag value`.
    BenchFlag,
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyType::Integer => "integer",
            KeyType::IntegerList => "integer or list of integers",
            KeyType::Number => "number",
            KeyType::NumberList => "number or list of numbers",
            KeyType::String => "string",
            KeyType::StringList => "list of strings",
            KeyType::Bool => "boolean",
            KeyType::Object => "object",
            KeyType::ObjectList => "list of objects",
            KeyType::AnyJson => "any JSON",
            KeyType::BenchFlag => "bench flag value",
        })
    }
}

/// The values a key accepts, from the constants of [`crate::bounds`] (or the runner's own).
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    /// An integer from `min` to `max`; the check reads `max` from the row.
    Integer {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// A number from `min` to `max` (in `unit`); the check reads both from the row.
    Number {
        /// Smallest accepted value.
        min: f64,
        /// Largest accepted value.
        max: f64,
        /// Its unit, as the reference prints it (`s`; empty for a plain number).
        unit: &'static str,
    },
    /// A number more than 0 and at most `max` (in `unit`); the check reads `max` from
    /// the row.
    Positive {
        /// Largest accepted value.
        max: f64,
        /// Its unit, as the reference prints it (`s`, `ms`).
        unit: &'static str,
    },
    /// A rule with several parts (a check over several keys or a structure), written from
    /// the same constants its check uses.
    Rule(fn() -> String),
}

impl Bound {
    /// The bound as the generated reference prints it.
    pub fn text(&self) -> String {
        match *self {
            Bound::Integer { min, max: u64::MAX } => format!("{min} – 2^64 − 1"),
            Bound::Integer { min, max } => format!("{min} – {max}"),
            Bound::Number { min, max, unit: "" } => format!("{min} – {max}"),
            Bound::Number { min, max, unit } => format!("{min} – {max} {unit}"),
            Bound::Positive { max, unit } => format!("more than 0, at most {max} {unit}"),
            Bound::Rule(text) => text(),
        }
    }
}

/// The open-loop rate bound, as the rate rows print it.
pub(super) fn rate_text() -> String {
    format!("{MIN_RATE} – {MAX_RATE} req/s")
}

/// One key of a dialect's table.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// The key as configs write it.
    pub name: &'static str,
    /// The JSON type(s) accepted.
    pub ty: KeyType,
    /// The values accepted, when the loader bounds them.
    pub bound: Option<Bound>,
    /// What applies when the key is absent.
    pub default: &'static str,
    /// Who reads the value.
    pub consumer: &'static str,
}

impl KeySpec {
    /// A row without a bound.
    pub(crate) const fn new(
        name: &'static str,
        ty: KeyType,
        default: &'static str,
        consumer: &'static str,
    ) -> Self {
        KeySpec {
            name,
            ty,
            bound: None,
            default,
            consumer,
        }
    }

    /// The row with `bound`.
    pub(crate) const fn bounded(mut self, bound: Bound) -> Self {
        self.bound = Some(bound);
        self
    }

    /// The largest value of an [`Bound::Integer`] row (a compile error on another row
    /// when evaluated in a `const` block, as every check does).
    pub(crate) const fn int_max(&self) -> u64 {
        match self.bound {
            Some(Bound::Integer { max, .. }) => max,
            _ => panic!("not an integer-bounded key"),
        }
    }

    /// The smallest value of an [`Bound::Integer`] row (a compile error on another row in
    /// a `const` block).
    pub(crate) const fn int_min(&self) -> u64 {
        match self.bound {
            Some(Bound::Integer { min, .. }) => min,
            _ => panic!("not an integer-bounded key"),
        }
    }

    /// `(min, max)` of a [`Bound::Number`] row (a compile error on another row in a
    /// `const` block).
    pub(crate) const fn num_range(&self) -> (f64, f64) {
        match self.bound {
            Some(Bound::Number { min, max, .. }) => (min, max),
            _ => panic!("not a number-bounded key"),
        }
    }

    /// The largest value of a [`Bound::Positive`] row (a compile error on another row in
    /// a `const` block).
    pub(crate) const fn positive_max(&self) -> f64 {
        match self.bound {
            Some(Bound::Positive { max, .. }) => max,
            _ => panic!("not a positive-bounded key"),
        }
    }
}

/// The names of `rows`, in order, as a fixed-size array (`N` = `rows.len()`), so that a
/// name list can be a `const` derived from its table.
pub(crate) const fn names<const N: usize>(rows: &[KeySpec]) -> [&'static str; N] {
    assert!(rows.len() == N, "N must be the number of rows");
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = rows[i].name;
        i += 1;
    }
    out
}

/// Who reads a key that dfx-perf accepts and never reads: upstream's runner does. The
/// key-table test exempts these rows from "some code reads this key".
pub const UPSTREAM_ONLY: &str = "upstream's runner only (accepted; dfx-perf does not read it)";

/// Who reads a bench flag: the external bench, which passes it on.
pub const EXTERNAL_VLLM: &str = "external bench (`--bench vllm`) as `--flag`";

/// Who reads a diffusion key dfx-perf does not read: the diffusion script, as a flag.
pub const EXTERNAL_DIFFUSION: &str = "diffusion script (`--diffusion-script`) as `--flag`";
