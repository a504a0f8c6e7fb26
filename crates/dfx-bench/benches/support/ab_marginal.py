#!/usr/bin/env python3
"""A/B of the marginal CPU per request of vllm_peer's child modes (BENCHMARKS.md).

Each arm is LABEL:BINARY:native|floor, BINARY a build of the vllm_peer bench target (keep
builds apart with CARGO_TARGET_DIR). Per pair every arm runs `--run-<mode>` at N1 and at N2
requests under `perf stat`, one arm after the other, so slow phases of the machine hit
every arm; the marginal cost is (task-clock(N2) - task-clock(N1)) / (N2 - N1), and the
median over the pairs is printed with context switches and page faults per request.

    sleep 100000 | BINARY --serve-raw > /tmp/raw.url &      # the raw server (prints its URL)
    python3 ab_marginal.py --url "$(cat /tmp/raw.url)" base:A:native lto:B:native floor:A:floor

Environment-free: every knob is a flag (--kind r=50 | c=1, --conn pooled | fresh, --n1,
--n2, --warmups, --pairs). Every run is bounded by --timeout seconds.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

EVENTS = ["task-clock", "context-switches", "page-faults"]


def run(binary, mode, n, a, scratch):
    """perf-stat figures of one child run of `n` requests."""
    out = os.path.join(scratch, "run")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    stat = os.path.join(scratch, "perf.stat")
    cmd = ["perf", "stat", "-x,", "-e", ",".join(EVENTS), "-o", stat, binary,
           f"--run-{mode}", out, a.url, a.kind, str(n), str(a.warmups), a.conn]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, timeout=a.timeout)
    figures = {}
    with open(stat) as f:
        for line in f:
            fields = line.split(",")
            if line.startswith("#") or len(fields) < 3:
                continue
            figures[fields[2]] = float(fields[0])
    return figures


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True, help="the raw server's base URL")
    p.add_argument("--kind", default="r=50", help="c=N (closed loop) or r=RATE (open loop)")
    p.add_argument("--conn", default="pooled", choices=["pooled", "fresh"])
    p.add_argument("--n1", type=int, default=200)
    p.add_argument("--n2", type=int, default=600)
    p.add_argument("--warmups", type=int, default=8)
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("arms", nargs="+", help="LABEL:BINARY:native|floor")
    a = p.parse_args()
    arms = [arm.split(":") for arm in a.arms]
    per = {label: [] for label, _, _ in arms}
    dn = a.n2 - a.n1
    with tempfile.TemporaryDirectory() as scratch:
        for pair in range(a.pairs):
            for label, binary, mode in arms:
                lo = run(binary, mode, a.n1, a, scratch)
                hi = run(binary, mode, a.n2, a, scratch)
                per[label].append([(hi[e] - lo[e]) / dn for e in EVENTS])
                print(label, pair, " ".join(f"{x:.4f}" for x in per[label][-1]), flush=True)
    for label, rows in per.items():
        med = [statistics.median(r[i] for r in rows) for i in range(len(EVENTS))]
        print(f"{label}: median ms/req {med[0]:.4f}  switches/req {med[1]:.2f}  "
              f"faults/req {med[2]:.2f}")


if __name__ == "__main__":
    main()
