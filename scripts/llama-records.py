#!/usr/bin/env python3
"""Where the time goes in a llama.cpp cell: reads the decision records `llama-grid.py` writes.

Usage: llama-records.py FILE [FILE...]      (FILE = DIR/rRsS.jsonl of llama-grid.py)

Prints two tables.

Per policy and round, the requests split by what the entry node's view held when it routed
them: "held" if some member's view held at least 64 tokens of the prompt (the upper bound of its
landmark gap), "cold" otherwise. For each part: requests, mean TTFT, and the mean queue wait and
prefill time at the server that answered (its serve record), with the part's computed tokens per
request. A policy that follows the holders as closely as another but answers its cold prompts
more slowly loses its time in the prefills, not in its choices.

Prefill speed against concurrency, over every file and policy: each prefill of at least 200
computed tokens, binned by how many other prefills of the same run overlapped it on average (the
servers of `hearsay demo --engine llama` share the host's cores), with the median ms per computed
token. Prefill intervals are placed from the entry node's arrival time, the attempt's offset and
the queue wait, so they are approximate by a forward's trip (under a millisecond on loopback).
"""
import collections
import json
import statistics
import sys

HELD_TOKENS = 64
MIN_COMPUTED = 200
BINS = ((0.05, "none"), (0.75, "under 0.75"), (1.5, "about 1"), (float("inf"), "1.5 or more"))


def load(path):
    """{(policy, round): [(route, serve or None)]}, each run's routes in arrival order."""
    routes = collections.defaultdict(list)
    serves = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            run = (r.get("run", r.get("policy", "")), r.get("round", 1))
            if r["kind"] == "route":
                routes[run].append(r)
            elif r["kind"] == "serve" and not r["bounced"]:
                serves[(run, r["entry"], r["request"])] = r
    return {run: [(r, serves.get((run, r["entry"], r["request"])))
                  for r in sorted(rs, key=lambda r: r["arrived_ms"])]
            for run, rs in routes.items()}


def held(route):
    first = route["attempts"][0]
    views = [c["cached_tokens_max"] for c in first["candidates"] if c["usable"] or c["self"]]
    return max(views, default=0) >= HELD_TOKENS


def split_table(runs):
    print("| run | part | requests | mean TTFT ms | queue ms | prefill ms | computed tokens |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for (policy, rnd), pairs in sorted(runs.items()):
        for part, want in (("held", True), ("cold", False)):
            rows = [(r, s) for r, s in pairs if held(r) == want and s and r["ttft_ms"] >= 0]
            if not rows:
                continue
            mean = lambda f: statistics.mean(f(r, s) for r, s in rows)
            print(f"| {policy} {rnd} | {part} | {len(rows)} | {mean(lambda r, s: r['ttft_ms']):.0f} "
                  f"| {mean(lambda r, s: s['queued_ms']):.0f} "
                  f"| {mean(lambda r, s: s['prefill_ms']):.0f} "
                  f"| {mean(lambda r, s: s['prompt_tokens'] - s['cached_tokens']):.0f} |")


def intervals(pairs):
    out = []
    for r, s in pairs:
        if not s or s["prefill_ms"] <= 0:
            continue
        start = r["arrived_ms"] + r["attempts"][-1]["at_ms"] + s["queued_ms"]
        out.append((start, start + s["prefill_ms"], s["prompt_tokens"] - s["cached_tokens"]))
    return out


def concurrency_table(all_runs):
    bins = collections.defaultdict(list)
    for runs in all_runs:
        for pairs in runs.values():
            iv = intervals(pairs)
            for i, (a, b, computed) in enumerate(iv):
                if computed < MIN_COMPUTED:
                    continue
                others = sum(max(0.0, min(b, y) - max(a, x))
                             for j, (x, y, _) in enumerate(iv) if j != i) / (b - a)
                label = next(name for bound, name in BINS if others < bound)
                bins[label].append((b - a) / computed)
    print("| other prefills at once | prefills | ms per computed token (median) | vs none |")
    print("|---|---:|---:|---:|")
    alone = statistics.median(bins["none"]) if bins["none"] else float("nan")
    for _, name in BINS:
        if bins[name]:
            m = statistics.median(bins[name])
            print(f"| {name} | {len(bins[name])} | {m:.3f} | {m / alone:.2f} × |")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    all_runs = []
    for path in sys.argv[1:]:
        runs = load(path)
        all_runs.append(runs)
        print(f"\n{path}\n")
        split_table(runs)
    print()
    concurrency_table(all_runs)


if __name__ == "__main__":
    main()
