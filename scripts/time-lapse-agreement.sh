#!/usr/bin/env bash
# Time-lapse agreement (issue 38): run the shipped matrix (or a filtered part) against the
# simulator in real time and time-lapsed by K, then compare every trial's key figures with
# `dfx-perf compare` (A = real time, B = speed K; the ratio per trial and metric).
#
# Usage:
#   scripts/time-lapse-agreement.sh [-k K] [--out DIR] [--real RUN_DIR] [-- SUITE_FLAGS...]
#
#   -k K           the speed of side B (default 10, the README's main job)
#   --out DIR      results folder for both runs (default target/time-lapse/<time>)
#   --real RUN     reuse a real-time run folder as side A instead of running one (about
#                  18 min for the whole matrix in release)
#   SUITE_FLAGS    passed to both suite runs (`cargo test --release --test perf -- …`),
#                  e.g. a trial filter `test_qwen3_tts_base::`
#
# The figures and how they were read are in BENCHMARKS.md ("Time-lapse agreement").
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
k=10 out="" real=""
suite=()

die() { echo "time-lapse-agreement.sh: $*" >&2; exit 2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    -k) k="${2:?-k needs a speed}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --real) real="${2:?--real needs a run folder}"; shift 2 ;;
    --) shift; suite=("$@"); break ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown option $1 (suite flags go after --)" ;;
  esac
done
[[ "$k" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "-k must be a positive number, got '$k'"
out="${out:-$root/target/time-lapse/$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$out"

suite_run() {
  # A failed trial still leaves its figures; the comparison below reads them all.
  (cd "$root" && cargo test --release --locked --test perf -- --server sim \
      --results-dir "$1" "${@:2}" "${suite[@]}") || true
}

if [[ -z "$real" ]]; then
  suite_run "$out/real-time"
  real="$out/real-time/latest"
fi
suite_run "$out/x$k" --sim-speed "$k"

cd "$root"
cargo run --release --locked -q --bin dfx-perf -- compare --allow-different-hardware \
  --tolerance 10% --out "$out/compare" "$real" "$out/x$k/latest"
echo "time-lapse-agreement.sh: table in $out/compare/compare.md"
