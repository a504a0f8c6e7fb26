#!/usr/bin/env bash
# Measures the simulator with the suite's own native bench against the H20 calibration
# table (BENCHMARKS.md, "Simulator") and prints measured vs target (figures for BENCHMARKS.md).
#
#   scripts/calibrate-sim.sh            # real time (about 2 minutes)
#   scripts/calibrate-sim.sh --sim-speed 4
#
# Extra arguments go to the suite. Needs python3 for the table.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${DFX_CALIBRATION_DIR:-target/dfx-perf/calibration}"
cargo test --release --test perf -- \
    --server sim --bench native \
    --test-config-file perf-configs/calibration/sim_h20.json \
    --results-dir "$out" "$@" >&2
run="$(readlink -f "$out/latest")"
python3 - "$run" <<'PY'
import json, pathlib, sys
run = pathlib.Path(sys.argv[1])
speed = json.loads((run / "run.json").read_text()).get("sim_speed") or 1.0
# H20-3e, vllm-omni, 20 prompts per point (published sweep): (RTF, TTFP ms)
targets = {
    "voice_clone": {1: (0.15, 165), 4: (0.28, 412), 8: (0.49, 1701), 32: (0.77, 3772)},
    "voice_design": {1: (0.083, 53), 4: (0.113, 154), 8: (0.21, 872), 32: (0.378, 1989)},
}
print(f"run: {run.name}  (sim speed {speed}; TTFP and throughput scaled back to simulated time)")
worst = 0.0
for task, points in targets.items():
    print(f"\n{task}\n| c | median RTF (H20, error) | median TTFP ms (H20, error) | audio-s/s | completed |")
    print("|---|---|---|---|---|")
    for c, (rtf_t, ttfp_t) in points.items():
        name = f"sim_calibration_{task}__{task}__c{c}"
        doc = json.loads((run / "trials" / name / "result.json").read_text())
        rtf = doc["median_audio_rtf"]
        ttfp = doc["median_audio_ttfp_ms"] * speed
        thr = doc["audio_throughput"] / speed
        e_rtf, e_ttfp = rtf / rtf_t - 1, ttfp / ttfp_t - 1
        worst = max(worst, abs(e_rtf), abs(e_ttfp))
        print(f"| {c} | {rtf:.3f} ({rtf_t}, {e_rtf:+.0%}) | {ttfp:.0f} ({ttfp_t}, {e_ttfp:+.0%}) "
              f"| {thr:.1f} | {doc['completed']}/{doc['num_prompts']} |")
print(f"\nworst relative error: {worst:.0%} (target: within 25 %)")
PY
