#!/usr/bin/env bash
# After-release baseline recalibration: run the suite N times on this machine, recalibrate
# baselines/<hardware>.json from those runs (median across runs plus a margin), and show
# the diff for review. Nothing is committed.
#
# Usage:
#   scripts/recalibrate.sh [-n N] [--out DIR] [RECALIBRATE_FLAGS...] [-- SUITE_FLAGS...]
#
#   -n N                repeats of the suite (default 3; at least 3 gives a robust median)
#   --out DIR           results folder of the repeats, new or empty (default
#                       target/recalibrate/<time>)
#   RECALIBRATE_FLAGS   passed to `dfx-perf recalibrate`: --margin 25%, --margin-metric M=P,
#                       --metrics m1,m2, --tolerance 5%, --allow-loosen, --skip-failed,
#                       --write-config perf-configs/x.json, --baselines-dir DIR, --dry-run
#   SUITE_FLAGS         passed to every suite run (`cargo test --release --test perf -- …`),
#                       e.g. `--hardware H100 test_qwen3_tts_base` or `--server sim`
#
# Example (GPU runner, after a release):
#   scripts/recalibrate.sh -n 3 --margin 25% --write-config perf-configs/test_tts.json \
#       -- --hardware H100 test_qwen3_tts_base
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repeats=3
out=""
recal=()
suite=()

die() { echo "recalibrate.sh: $*" >&2; exit 2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) [[ $# -ge 2 ]] || die "-n needs a number"; repeats="$2"; shift 2 ;;
    --out) [[ $# -ge 2 ]] || die "--out needs a folder"; out="$2"; shift 2 ;;
    --) shift; suite=("$@"); break ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) recal+=("$1"); shift ;;
  esac
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || die "-n must be a positive number, got '$repeats'"
[[ -n "$out" ]] || out="$root/target/recalibrate/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
[[ -z "$(ls -A "$out")" ]] || die "$out is not empty: every run folder in it would be used"

cd "$root"
echo "== building"
cargo build --release -q --bin dfx-perf

for i in $(seq 1 "$repeats"); do
  echo "== suite run $i of $repeats -> $out"
  # A failing trial makes cargo exit non-zero; recalibrate then names it and refuses
  # (or leaves it unchanged with --skip-failed), so keep going.
  if ! cargo test --release -q --test perf -- --results-dir "$out" "${suite[@]}"; then
    echo "   (run $i had failing trials; see $out/latest/report.md)"
  fi
done
# one results folder for all repeats: the suite gives each run its own unique id
runs=()
for run in "$out"/*/; do
  run="${run%/}"
  [[ -L "$run" ]] && continue
  [[ -f "$run/summary.json" || -d "$run/trials" ]] && runs+=("$run")
done
[[ ${#runs[@]} -gt 0 ]] || die "no run folder was written under $out"

echo "== recalibrating from ${#runs[@]} run(s)"
target/release/dfx-perf recalibrate "${runs[@]}" "${recal[@]}"

echo "== changes (review, then commit)"
if git rev-parse --git-dir >/dev/null 2>&1; then
  git --no-pager diff --stat -- baselines/ perf-configs/
  git --no-pager diff -- baselines/ perf-configs/
else
  echo "(not a git checkout: see baselines/)"
fi
