"""Which mode each chat run landed in, and why: per run of a parity trial, the first
wave's arrival spread at the simulator, which request came first (its audio frames), how
the thinker admitted that wave, the share of ITL gaps made by full and nearly full
batches, the server's own median ITL and TTFT (arrival to the step that made the first
token) and TTFP (arrival to the end of the code2wav step that decoded its first chunk;
"—" in a trace without code2wav ids) beside the bench's median ITL / TTFT / TTFP; then
each bench against the server of its own run (BENCHMARKS.md, "Parity with vllm bench",
chat c = 16).

    python3 scripts/parity/chat_modes.py OUT_DIR [--trial NAME] [--warmups W] [--prompts N]
        [--concurrency C]

OUT_DIR is a scripts/parity-matrix.sh output folder of ONE trial (--filter), run with
DFX_SIM_LOG=info,dfx_sim::omni::engine=trace so the simulator's log (OUT_DIR/sim-*.log)
holds its step trace ("omni arrival", "thinker step"; docs/simulator.md). Runs are
matched to the log in the script's order (round r: native first when r is odd), W + N
arrivals each (defaults 16 warmups + 48 prompts at c = 16, the chat c = 16 row).
Each request's tokens are the ends of the thinker steps from the one that admitted it
on (its text_tokens of them; 30, the parity config's, in a trace without the field).
Standard library only.
"""

import json
import re
import statistics
import sys
from pathlib import Path

FIELD = re.compile(r"(\w+)=(\[[^\]]*\]|\S+)")


def ids_of(text: str) -> list[int]:
    return [int(x) for x in text.strip("[]").split(",") if x.strip()]


def trace(log: Path):
    """Arrivals, thinker steps and each request's first decoded audio (virtual ms)."""
    arrivals, steps, first_audio = [], [], {}
    for line in log.read_text(errors="replace").splitlines():
        if "omni arrival" in line:
            f = dict(FIELD.findall(line))
            arrivals.append((int(f["id"]), float(f["at_ms"]), int(f.get("text_tokens", 30)),
                             f.get("audio_frames", "—")))
        elif "thinker step" in line:
            f = dict(FIELD.findall(line))
            ids = ids_of(f["admitted"])
            steps.append((float(f["at_ms"]), float(f["dur_ms"]), int(f["batch"]), ids,
                          f["contended"] == "true"))
        elif "code2wav step" in line:
            f = dict(FIELD.findall(line))
            for i in ids_of(f.get("ids", "[]")):
                first_audio.setdefault(i, float(f["at_ms"]) + float(f["dur_ms"]))
    return arrivals, steps, first_audio


def token_times(steps, tokens_of):
    """Each request's token times and the batch of the step that made each token: the
    ends of the steps from its admission on."""
    times, running = {}, {}
    for at, dur, batch, ids, _c in steps:
        for i in ids:
            running[i] = tokens_of.get(i, 0)
            times[i] = []
        end = at + dur
        for i in list(running):
            times[i].append((end, batch))
            running[i] -= 1
            if running[i] <= 0:
                del running[i]
    return times


def bench_metrics(run_dir: Path):
    for p in run_dir.glob("*/upstream/result_*.json"):
        d = json.loads(p.read_text())
        return d.get("median_itl_ms"), d.get("median_ttft_ms"), d.get("median_audio_ttfp_ms")
    return None, None, None


def main() -> None:
    args = sys.argv[1:]
    opt = {"--trial": None, "--warmups": "16", "--prompts": "48", "--concurrency": "16"}
    for k in list(opt):
        if k in args:
            i = args.index(k)
            opt[k] = args[i + 1]
            del args[i : i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    out = Path(args[0])
    w, n, c = int(opt["--warmups"]), int(opt["--prompts"]), int(opt["--concurrency"])
    logs = sorted(out.glob("sim-*.log"))
    trials = sorted((out / "runs").iterdir()) if (out / "runs").is_dir() else []
    trials = [t for t in trials if t.is_dir() and (opt["--trial"] is None or t.name == opt["--trial"])]
    if len(logs) != 1 or len(trials) != 1:
        sys.exit(f"chat_modes.py: want one sim-*.log and one trial in {out}, found {len(logs)} and {len(trials)}")
    arrivals, steps, first_audio = trace(logs[0])
    if not steps:
        sys.exit("chat_modes.py: no step trace in the log (run with DFX_SIM_LOG=info,dfx_sim::omni::engine=trace)")
    rounds = sorted({int(p.name[1:].split("-")[0]) for p in trials[0].glob("r*-*") if p.is_dir()})
    order = [f"r{r}-{b}" for r in rounds for b in (("native", "vllm") if r % 2 else ("vllm", "native"))]
    per_run = w + n
    if len(arrivals) != per_run * len(order):
        sys.exit(f"chat_modes.py: {len(arrivals)} arrivals in the log, want {per_run} × {len(order)} runs")
    tokens_of = {i: t for i, _, t, _ in arrivals}
    times = token_times(steps, tokens_of)
    ratios = {b: {"ITL": [], "TTFT": [], "TTFP": []} for b in ("native", "vllm")}
    print(f"| run | first wave spread ms | first arrival's audio frames | first wave admitted per step | gaps from batch {c} / {c - 1} / less, % "
          "| server median ITL ms | bench median ITL ms | server median TTFT ms | bench median TTFT ms "
          "| server median TTFP ms | bench median TTFP ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k, name in enumerate(order):
        run = arrivals[k * per_run : (k + 1) * per_run]
        measured = {i for i, _, _, _ in run[w:]}
        wave = run[w : w + c]
        spread = wave[-1][1] - wave[0][1]
        wave_ids = {i for i, _, _, _ in wave}
        admitted = [len([i for i in ids if i in wave_ids]) for _, _, _, ids, _ in steps]
        admitted = [a for a in admitted if a]
        gaps = [(b[0] - a[0], b[1]) for i in measured for a, b in zip(times.get(i, []), times.get(i, [])[1:])]
        itl = [g for g, _ in gaps]
        at = {i: a for i, a, _, _ in run[w:]}
        ttft = [times[i][0][0] - at[i] for i in measured if times.get(i)]
        ttfp = [first_audio[i] - at[i] for i in measured if i in first_audio]
        s_ttfp = statistics.median(ttfp) if ttfp else None
        share = lambda keep: 100.0 * len([1 for _, m in gaps if keep(m)]) / max(len(gaps), 1)
        b_itl, b_ttft, b_ttfp = bench_metrics(trials[0] / name)
        bench = name.split("-", 1)[1]
        if b_itl is not None and b_ttft is not None:
            ratios[bench]["ITL"].append(b_itl / statistics.median(itl))
            ratios[bench]["TTFT"].append(b_ttft / statistics.median(ttft))
        if b_ttfp is not None and s_ttfp:
            ratios[bench]["TTFP"].append(b_ttfp / s_ttfp)
        fmt = lambda v: "—" if v is None else f"{v:.2f}" if v < 100 else f"{v:.1f}"
        mix = f"{share(lambda m: m >= c):.1f} / {share(lambda m: m == c - 1):.1f} / {share(lambda m: m < c - 1):.1f}"
        print(f"| {name} | {spread:.1f} | {wave[0][3]} | {admitted} | {mix} | {statistics.median(itl):.2f} | {fmt(b_itl)} "
              f"| {statistics.median(ttft):.2f} | {fmt(b_ttft)} | {fmt(s_ttfp)} | {fmt(b_ttfp)} |")
    print()
    print("Each bench against the server of its own run (median over runs of bench ÷ server):")
    print()
    print("| metric | native ÷ server | vllm ÷ server | native ÷ vllm |")
    print("|---|---|---|---|")
    for m in ("ITL", "TTFT", "TTFP"):
        n, v = ratios["native"][m], ratios["vllm"][m]
        if n and v:
            a, b = statistics.median(n), statistics.median(v)
            print(f"| median {m} | {a:.3f} | {b:.3f} | {a / b:.3f} |")


if __name__ == "__main__":
    main()
