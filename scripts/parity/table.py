"""The parity table of a scripts/parity-matrix.sh run: per trial and key metric, the median
over the rounds of each bench's value, native / vllm, and `!` beyond the tolerance.

    python3 scripts/parity/table.py RUNS_DIR [--tolerance PCT] [--wide]

--wide: one row per trial, each cell `native / vllm (ratio)` (BENCHMARKS.md's form).

RUNS_DIR holds <trial>/r<round>-<native|vllm>/**/result.json (the matrix's layout).
Standard library only.
"""

import json
import statistics
import sys
from pathlib import Path

# (result key, label): the key metrics of issue #38 item 3, then the counts that show the
# two runs sent the same work.
METRICS = [
    ("median_audio_ttfp_ms", "median TTFP ms"),
    ("mean_audio_ttfp_ms", "mean TTFP ms"),
    ("median_e2el_ms", "median E2EL ms"),
    ("median_audio_rtf", "median RTF"),
    ("median_audio_duration_s", "median audio s"),
    ("audio_throughput", "audio throughput"),
    ("median_ttft_ms", "median TTFT ms"),
    ("median_tpot_ms", "median TPOT ms"),
    ("median_itl_ms", "median ITL ms"),
    ("total_input_tokens", "input tokens"),
    ("completed", "completed"),
]


def results(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run_dir.rglob("result.json"))]


def value(doc: dict, key: str):
    v = doc.get(key)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def main() -> int:
    args = sys.argv[1:]
    tolerance = 3.0
    wide = "--wide" in args
    if wide:
        args.remove("--wide")
    if "--tolerance" in args:
        i = args.index("--tolerance")
        tolerance = float(args[i + 1])
        del args[i : i + 2]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    runs = Path(args[0])
    if not runs.is_dir():
        print(f"table.py: {runs} is not a folder", file=sys.stderr)
        return 2
    rows = []
    for trial in sorted(p for p in runs.iterdir() if p.is_dir()):
        docs = {"native": [], "vllm": []}
        for run in sorted(p for p in trial.iterdir() if p.is_dir()):
            bench = run.name.split("-", 1)[-1]
            if bench in docs:
                docs[bench].extend(results(run))
        cells = {}
        for key, label in METRICS:
            vals = {b: [v for d in ds if (v := value(d, key)) is not None] for b, ds in docs.items()}
            if not vals["native"] or not vals["vllm"]:
                continue
            n, v = statistics.median(vals["native"]), statistics.median(vals["vllm"])
            if n == 0 and v == 0:
                continue
            ratio = n / v if v else float("inf")
            far = abs(ratio - 1) * 100 > tolerance and key != "completed"
            cells[label] = (n, v, ratio, far, f"{len(vals['native'])}/{len(vals['vllm'])}")
        rows.append((trial.name, cells))
    marked = sum(c[3] for _, cells in rows for c in cells.values())
    if wide:
        labels = [label for _, label in METRICS if any(label in c for _, c in rows)]
        print("| trial | " + " | ".join(labels) + " |")
        print("|---" * (len(labels) + 1) + "|")
        for name, cells in rows:
            out = []
            for label in labels:
                if label not in cells:
                    out.append("—")
                    continue
                n, v, ratio, far, _ = cells[label]
                out.append(f"{n:.4g} / {v:.4g} ({ratio:.3f}{' !' if far else ''})")
            print(f"| {name} | " + " | ".join(out) + " |")
    else:
        print("| trial | metric | native | vllm | native / vllm | rounds |")
        print("|---|---|---|---|---|---|")
        for name, cells in rows:
            for label, (n, v, ratio, far, rounds) in cells.items():
                mark = " !" if far else ""
                print(f"| {name} | {label} | {n:.4g} | {v:.4g} | {ratio:.3f}{mark} | {rounds} |")
    print(f"\n{marked} metric(s) beyond ±{tolerance:g} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
