#!/usr/bin/env python3
"""Instructions by function of a cachegrind file, inlined code folded into its function
(cg_annotate 3.19 lists file:function pairs, so one function's inlined library code is
spread over dozens of lines and two builds' source paths differ).

    scripts/cg-by-function.py A.cg [B.cg] [--per N] [--top K]

One file: its functions by instructions. Two: B - A per function, largest change first
(e.g. two builds' `*.marginal.cg` from scripts/cachegrind-peer.sh). `--per N` divides
every figure (N: the marginal requests, for instructions per request).
"""

import argparse
import re
from collections import defaultdict

# Rust legacy symbols keep a hash suffix in some tools' output; two builds differ there.
HASH = re.compile(r"::h[0-9a-f]{16}$")


def by_function(path):
    totals = defaultdict(int)
    fn = None
    with open(path) as f:
        for line in f:
            if line.startswith("fn="):
                fn = HASH.sub("", line[3:].strip())
            elif line[:1].isdigit() or line[:1] == "-":
                if fn is not None:
                    parts = line.split()
                    if len(parts) >= 2:
                        totals[fn] += int(parts[1])
    return totals


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--per", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    if len(args.files) > 2:
        ap.error("one or two files")
    a = by_function(args.files[0])
    if len(args.files) == 1:
        rows = sorted(a.items(), key=lambda kv: -abs(kv[1]))
        print(f"{sum(a.values()) / args.per:12.0f}  total")
        for fn, v in rows[: args.top]:
            print(f"{v / args.per:12.0f}  {fn}")
        return
    b = by_function(args.files[1])
    diff = {fn: b.get(fn, 0) - a.get(fn, 0) for fn in set(a) | set(b)}
    total_a, total_b = sum(a.values()), sum(b.values())
    print(f"{total_a / args.per:12.0f} {total_b / args.per:12.0f} {(total_b - total_a) / args.per:+10.0f}  total")
    for fn, d in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[: args.top]:
        print(f"{a.get(fn, 0) / args.per:12.0f} {b.get(fn, 0) / args.per:12.0f} {d / args.per:+10.0f}  {fn}")


if __name__ == "__main__":
    main()
