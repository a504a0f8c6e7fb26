#!/usr/bin/env bash
# `vllm` for scripts/parity-matrix.sh (DFX_VLLM_BIN=scripts/parity/vllm-capture.sh) that
# runs vllm bench unchanged through crates/dfx-bench/benches/support/vllm_capture.py and
# keeps each request's own stamps: one capture file per invocation in DFX_CAPTURE_DIR
# (default target/parity-captures), read by scripts/parity/chat_split.py. The venv's
# python: DFX_VLLM_PYTHON, else /work/vllm-venv/bin/python. DFX_PEER_LOOP_PROBE=0 turns
# the event-loop lag probe off.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="${DFX_VLLM_PYTHON:-/work/vllm-venv/bin/python}"
[[ -x "$py" ]] || { echo "vllm-capture.sh: no python at $py (set DFX_VLLM_PYTHON)" >&2; exit 2; }
dir="${DFX_CAPTURE_DIR:-$root/target/parity-captures}"
mkdir -p "$dir"
export DFX_PEER_OUT="$dir/cap-$(date +%s%N).json" DFX_PEER_LOOP_PROBE="${DFX_PEER_LOOP_PROBE:-1}"
exec "$py" "$root/crates/dfx-bench/benches/support/vllm_capture.py" "$@"
