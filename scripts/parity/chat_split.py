"""Where each bench's chat TTFT goes: per request, the client's TTFT against the
simulator's own stamp (stage 0 `vllm_ttft_ms`: from the request's arrival in the server to
its first text write), split into the first wave (requests 0..c-1) and the rest.

    python3 scripts/parity/chat_split.py RUNS_DIR/<trial> CAPTURE_DIR [--concurrency C]

RUNS_DIR/<trial> holds r<round>-native/**/records.jsonl (scripts/parity-matrix.sh);
CAPTURE_DIR the vllm captures of the same trial (scripts/parity/vllm-capture.sh,
"chat" rows). client − server is the client's own share: connection, request write, the
response's way back and the stamping. Standard library only.
"""

import json
import statistics
import sys
from pathlib import Path


def native(trial: Path) -> list[dict]:
    runs = []
    for p in sorted(trial.glob("r*-native/**/records.jsonl")):
        rows = {}
        for line in p.read_text().splitlines():
            r = json.loads(line)
            if r.get("warmup") or not r.get("ok"):
                continue
            srv = ((r.get("stage_metrics") or {}).get("0") or {}).get("vllm_ttft_ms")
            if r.get("ttft_s") and srv is not None:
                rows[r["index"]] = (r["ttft_s"] * 1e3, srv)
        runs.append(rows)
    return runs


def vllm(captures: Path) -> tuple[list[dict], list[float]]:
    runs, lag = [], []
    for p in sorted(captures.glob("cap-*.json")):
        d = json.loads(p.read_text())
        rows = {}
        for rid, _start, ttft, _ttfp, _lat, ok, srv, _itl in d.get("chat", []):
            if ok and ttft and srv is not None:
                rows[int(str(rid).rsplit("-", 1)[-1])] = (ttft * 1e3, srv)
        if rows:
            runs.append(rows)
            lag += d.get("loop_lag_ms", [])
    return runs, lag


def line(name: str, part: str, runs: list[dict], keep) -> str:
    pairs = [r[i] for r in runs for i in r if keep(i)]
    if not pairs:
        return f"| {part} | {name} | — | — | — | — |"
    c = [a for a, _ in pairs]
    s = [b for _, b in pairs]
    d = [a - b for a, b in pairs]
    return (
        f"| {part} | {name} ({len(runs)} runs, {len(pairs)} requests) | {statistics.median(c):.1f} | "
        f"{statistics.median(s):.1f} | {statistics.median(d):.2f} | {statistics.mean(d):.2f} |"
    )


def main() -> None:
    args = sys.argv[1:]
    c = 16
    if "--concurrency" in args:
        i = args.index("--concurrency")
        c = int(args[i + 1])
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    nat = native(Path(args[0]))
    vl, lag = vllm(Path(args[1]))
    print("| requests | bench | client TTFT median ms | server TTFT median ms | client − server median ms | mean ms |")
    print("|---|---|---|---|---|---|")
    for part, keep in (("first wave", lambda i: i < c), ("later", lambda i: i >= c), ("all", lambda i: True)):
        print(line("native", part, nat, keep))
        print(line("vllm", part, vl, keep))
    if lag:
        lag.sort()
        n = len(lag)
        print(
            f"\nvllm's event loop, a 5 ms sleep woke late by: p50 {lag[n // 2]:.2f} ms, p90 "
            f"{lag[int(n * 0.9)]:.2f}, p99 {lag[int(n * 0.99)]:.2f}, max {lag[-1]:.2f} ({n} samples)"
        )


if __name__ == "__main__":
    main()
