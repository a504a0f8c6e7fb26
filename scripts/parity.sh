#!/usr/bin/env bash
# Parity check: run ONE sweep step with the native bench and with `vllm bench serve --omni`
# against the same server, then print their metrics side by side with ratios
# (native / vllm). See crates/dfx-bench/EXTERNAL.md.
#
# Usage:
#   scripts/parity.sh [--out DIR] [--tolerance PCT] [--strict] TRIAL [SUITE_FLAGS...]
#   scripts/parity.sh --compare NATIVE_RESULT.json VLLM_RESULT.json [--tolerance PCT] [--all]
#
# TRIAL is one exact trial name (`<test_name>::<suffix>::<step>`, see `--list`).
# SUITE_FLAGS go to both suite runs unchanged; pass `--server-url http://127.0.0.1:PORT`
# so both benches hit the same live server (otherwise each run starts its own).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="" tolerance=10 strict=()

die() { echo "parity.sh: $*" >&2; exit 2; }

compare() {
  (cd "$root" && cargo run --release -q -p dfx-bench --example parity -- "$@")
}

if [[ "${1:-}" == "--compare" ]]; then
  shift
  [[ $# -ge 2 ]] || die "--compare needs NATIVE_RESULT.json VLLM_RESULT.json"
  compare "$@"
  exit $?
fi

while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --tolerance) tolerance="${2:?--tolerance needs a percentage}"; shift 2 ;;
    --strict) strict=(--strict); shift ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) die "unknown option $1 (suite flags go after TRIAL)" ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || die "missing TRIAL (an exact trial name; see the suite's --list)"
trial="$1"; shift
out="${out:-$root/target/parity/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"

case " $* " in
  *" --server-url "*|*" --server-url="*) ;;
  *) echo "parity.sh: note: no --server-url given; each bench run starts its own server," \
          "so this compares the same configuration, not the same live server" >&2 ;;
esac

# vllm bench opens a new TCP connection per request (force_close in its aiohttp
# connector), so the native run uses fresh connections too, unless told otherwise.
native_conn=(--connection fresh)
case " $* " in
  *" --connection "*|*" --connection="*) native_conn=() ;;
esac

statuses=()
for bench in native vllm; do
  echo "== $bench: $trial" >&2
  status=0
  extra=()
  [[ "$bench" == native ]] && extra=("${native_conn[@]}")
  (cd "$root" && cargo test --release --test perf -- \
      --exact "$trial" --bench "$bench" --results-dir "$out/$bench" "${extra[@]}" "$@") || status=$?
  statuses+=("$bench=$status")
done

# The trial's folder name is the sanitised trial name; pick its result.json in each run.
find_result() {
  local dir="$1" found
  mapfile -t found < <(find "$dir" -name result.json -type f | sort)
  [[ ${#found[@]} -eq 1 ]] || die "expected exactly one result.json under $dir, found ${#found[@]}" \
    "(suite statuses: ${statuses[*]})"
  echo "${found[0]}"
}
native_result="$(find_result "$out/native")"
vllm_result="$(find_result "$out/vllm")"
echo "suite exit statuses: ${statuses[*]}" >&2
compare --tolerance "$tolerance" "${strict[@]}" "$native_result" "$vllm_result"
