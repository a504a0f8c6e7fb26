#!/usr/bin/env bash
# Parity matrix (issue #38 item 3): the native bench and `vllm bench serve --omni` 0.30 on
# ONE live real-time simulator, same configs, prompts, seed and warmups, runs alternating
# (round 1 native first, round 2 vllm first, ...), then the table of every key metric's
# median, native against vllm (scripts/parity/table.py). BENCHMARKS.md ("Parity with vllm
# bench") shows a run.
#
# Usage:
#   scripts/parity-matrix.sh [--rounds N] [--out DIR] [--only tts|omni] [--filter GLOB]
#   (--filter: a shell pattern matched against whole trial names, e.g. '*::c4')
#
# Needs vllm bench: vllm 0.30.0 + vllm-omni 0.30.0 in a venv (BENCHMARKS.md, "The native
# bench beside vllm bench"), found through DFX_VLLM_BIN, else /work/vllm-venv/bin/vllm,
# else `vllm` on PATH; and a tokenizer folder in DFX_TOKENIZER (make_tokenizer.py), which
# both benches use to count input tokens. Without either it says so and exits 2.
# PARITY_PROFILE=release builds and runs release binaries (default: the dev profile).
# Per-request evidence: DFX_VLLM_BIN=scripts/parity/vllm-capture.sh keeps vllm's own
# stamps per request; scripts/parity/chat_split.py splits each chat TTFT into the
# simulator's share and the client's.
# DFX_SIM_LOG=info,dfx_sim::omni::engine=trace keeps the simulator's step trace in
# OUT/sim-*.log; scripts/parity/chat_modes.py tells each chat run's mode from it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds=3 out="" only="" filter=""
die() { echo "parity-matrix.sh: $*" >&2; exit 2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="${2:?--rounds needs a number}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --only) only="${2:?--only needs tts or omni}"; shift 2 ;;
    --filter) filter="${2:?--filter needs a pattern of trial names}"; shift 2 ;;
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer, got '$rounds'"
case "$only" in ""|tts|omni) ;; *) die "--only takes tts or omni, got '$only'" ;; esac

vllm="${DFX_VLLM_BIN:-}"
if [[ -z "$vllm" ]]; then
  if [[ -x /work/vllm-venv/bin/vllm ]]; then vllm=/work/vllm-venv/bin/vllm
  else vllm="$(command -v vllm || true)"; fi
fi
[[ -n "$vllm" && -x "$vllm" ]] || die "needs vllm bench: install vllm==0.30.0 vllm-omni==0.30.0 in a venv \
(BENCHMARKS.md) and set DFX_VLLM_BIN=<venv>/bin/vllm"
[[ -n "${DFX_TOKENIZER:-}" && -d "$DFX_TOKENIZER" ]] || die "needs DFX_TOKENIZER: a tokenizer folder \
(python crates/dfx-bench/benches/support/make_tokenizer.py DIR)"

profile=(); sub=debug
if [[ "${PARITY_PROFILE:-}" == release ]]; then profile=(--release); sub=release; fi
out="${out:-$root/target/parity-matrix/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
cd "$root"
cargo build -q "${profile[@]}" --bin dfx-perf-sim
perf="$(cargo test -q "${profile[@]}" --test perf --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "perf" and m.get("executable"):
        print(m["executable"])')"
[[ -x "$perf" ]] || die "could not build the perf test binary"
target="${CARGO_TARGET_DIR:-$root/target}"
sim="$target/$sub/dfx-perf-sim"

sim_pid=""
stop_sim() { if [[ -n "$sim_pid" ]]; then kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; sim_pid=""; fi; }
trap stop_sim EXIT INT TERM

# One real-time simulator per config, on a free loopback port.
start_sim() {
  local model="$1" port; shift
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  "$sim" serve "$model" --omni "$@" --host 127.0.0.1 --port "$port" >"$out/sim-$port.log" 2>&1 &
  sim_pid=$!
  for _ in $(seq 1 300); do
    if python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=1)" 2>/dev/null; then
      url="http://127.0.0.1:$port"; return 0
    fi
    kill -0 "$sim_pid" 2>/dev/null || die "the simulator exited (see $out/sim-$port.log)"
    sleep 0.2
  done
  die "the simulator did not answer on port $port within 60 s"
}

run_config() {
  local config="$1" model="$2" trials r b order
  shift 2
  start_sim "$model" "$@"
  echo "== $config against $model at $url (real time)" >&2
  mapfile -t trials < <("$perf" --list --test-config-file "$config" 2>/dev/null | sed -n 's/: test$//p')
  for t in "${trials[@]}"; do
    # shellcheck disable=SC2053 # the filter is a pattern
    [[ -z "$filter" || "$t" == $filter ]] || continue
    for r in $(seq 1 "$rounds"); do
      if (( r % 2 )); then order=(native vllm); else order=(vllm native); fi
      for b in "${order[@]}"; do
        local dir="$out/runs/${t//[:\/]/_}/r$r-$b" extra=()
        mkdir -p "$(dirname "$dir")"
        [[ "$b" == native ]] && extra=(--connection fresh)
        echo "-- $t round $r: $b" >&2
        "$perf" --exact "$t" --test-config-file "$config" --bench "$b" --server-url "$url" \
          --vllm-bin "$vllm" --tokenizer "$DFX_TOKENIZER" --results-dir "$dir" "${extra[@]}" \
          >"$dir.log" 2>&1 || echo "   (suite exit $?; see $dir.log)" >&2
      done
    done
  done
  stop_sim
}

[[ "$only" == omni ]] || run_config scripts/parity/tts_voice_design.json Qwen/Qwen3-TTS-12Hz-1.7B-CustomVoice
[[ "$only" == tts ]] || run_config scripts/parity/omni_chat.json Qwen/Qwen3-Omni-30B-A3B-Instruct --async-chunk
python3 scripts/parity/table.py "$out/runs" | tee "$out/table.md"
