#!/usr/bin/env python3
"""hearsay against the other policies on llama.cpp: the grid of issue 22's goals.

Usage: llama-grid.py [--hearsay BIN] [--out DIR] [--rates 1,2] [--seeds 1,2,3] [--rounds 2]
                     [--policies hearsay,paper,least-loaded] [--report-only] [--pool DIR,DIR...]

Runs `hearsay demo --engine llama --json --rate R --seed S --policies P --rounds N --records
DIR/rRsS.jsonl` for every rate and seed (a cell), writing DIR/rRsS.json, then prints the table of
every policy's figures and the goals: hearsay's mean TTFT at most the best other policy's, its
p99 at most 1.1 x the lowest other p99, its hit rate at least 0.95 x the paper policy's.
A cell whose JSON already exists is not run again (delete it to rerun), so an interrupted grid
resumes where it stopped. Each cell runs its policies in mirrored rounds (hearsay, paper,
least-loaded, least-loaded, paper, hearsay for two rounds): about 6 minutes at 2 req/s and 12 at
1 req/s on the 2-core test machine, which should be otherwise idle.

--pool DIR,DIR,... runs nothing and prints the same tables with each cell pooled over the
folders that hold it (several grids or repeats of a cell): a policy's mean TTFT and hit rate are
the means of its runs' (every run has the same requests), its p50 and p99 are taken over the TTFTs
of all its runs as the decision records give them.
"""
import argparse
import json
import math
import os
import subprocess
import sys

GOAL_MEAN = 1.0
GOAL_P99 = 1.1
GOAL_HIT = 0.95


def cell_stem(args, rate, seed):
    """DIR/rRsS: the cell's files are this with .json, .jsonl (records) and .err."""
    return os.path.join(args.out, f"r{rate}s{seed}")


def has_result(stem):
    return os.path.exists(stem + ".json") and os.path.getsize(stem + ".json") > 0


def run_cell(args, rate, seed):
    stem = cell_stem(args, rate, seed)
    if has_result(stem):
        return
    cmd = [args.hearsay, "demo", "--engine", "llama", "--json", "--rate", str(rate), "--seed",
           str(seed), "--policies", args.policies, "--rounds", str(args.rounds), "--records",
           stem + ".jsonl"]
    print(f"cell rate {rate} seed {seed}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    with open(stem + ".json.part", "w") as out, open(stem + ".err", "w") as err:
        rc = subprocess.run(cmd, stdout=out, stderr=err).returncode
    if rc != 0:
        sys.exit(f"cell rate {rate} seed {seed} failed (exit {rc}): see {stem}.err")
    os.replace(stem + ".json.part", stem + ".json")


def load_cell(args, rate, seed):
    stem = cell_stem(args, rate, seed)
    if not has_result(stem):
        return None
    with open(stem + ".json") as f:
        return {p["policy"]: p for p in json.load(f)}


def percentile(values, q):
    """The q-th percentile, linear between the closest ranks (as the demo computes it)."""
    v = sorted(values)
    k = q / 100 * (len(v) - 1)
    i = int(k)
    return v[i] + (v[min(i + 1, len(v) - 1)] - v[i]) * (k - i)


def load_pooled(dirs, rate, seed):
    """The cell pooled over the folders that hold it, shaped as load_cell's answer, or None."""
    pooled = {}
    for out in dirs:
        stem = os.path.join(out, f"r{rate}s{seed}")
        if not has_result(stem):
            continue
        with open(stem + ".json") as f:
            for p in json.load(f):
                pooled.setdefault(p["policy"], {"runs": [], "ttfts": []})["runs"] += p["runs"]
        with open(stem + ".jsonl") as f:
            for line in f:
                r = json.loads(line)
                if r.get("kind") == "route" and r.get("policy") in pooled:
                    pooled[r["policy"]]["ttfts"].append(r["ttft_ms"])
    for p in pooled.values():
        runs, ttfts = p["runs"], p.pop("ttfts")
        p["mean_ttft_ms"] = sum(u["mean_ttft_ms"] for u in runs) / len(runs)
        p["hit_rate"] = sum(u["hit_rate"] for u in runs) / len(runs)
        p["p50_ttft_ms"] = percentile(ttfts, 50) if ttfts else float("nan")
        p["p99_ttft_ms"] = percentile(ttfts, 99) if ttfts else float("nan")
    return pooled or None


def report(args, cells):
    load = load_cell
    if args.pool:
        dirs = args.pool.split(",")
        load = lambda _, rate, seed: load_pooled(dirs, rate, seed)
    loaded = [(rate, seed, load(args, rate, seed)) for rate, seed in cells]
    if not any(d for _, _, d in loaded):
        sys.exit(f"no results in {args.pool or args.out} for rates {args.rates}, seeds {args.seeds}")
    print("| rate | seed | policy | mean TTFT ms | p50 | p99 | hit rate | runs' means (hit rates) |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    verdicts = []
    for rate, seed, d in loaded:
        if d is None:
            continue
        for i, name in enumerate(d):
            p = d[name]
            runs = ", ".join(f"{round(u['mean_ttft_ms'])} ({u['hit_rate']:.3f})" for u in p["runs"])
            head = f"| {rate} req/s | {seed} |" if i == 0 else "|  |  |"
            print(f"{head} {name} | {round(p['mean_ttft_ms']):,} | {round(p['p50_ttft_ms']):,} | "
                  f"{round(p['p99_ttft_ms']):,} | {p['hit_rate']:.3f} | {runs} |")
        others = [p for name, p in d.items() if name != "hearsay"]
        if "hearsay" not in d or not others:
            continue
        h = d["hearsay"]
        mean = h["mean_ttft_ms"] / min(p["mean_ttft_ms"] for p in others)
        p99 = h["p99_ttft_ms"] / min(p["p99_ttft_ms"] for p in others)
        hit = h["hit_rate"] / d["paper"]["hit_rate"] if "paper" in d else float("nan")
        verdicts.append((rate, seed, mean, p99, hit))
    if not verdicts:
        return
    print()
    print("| rate | seed | mean TTFT / best other | p99 / lowest other | hit rate / paper's |")
    print("|---|---|---:|---:|---:|")
    mark = lambda ok: "" if ok else " (missed)"
    for rate, seed, mean, p99, hit in verdicts:
        print(f"| {rate} req/s | {seed} | {mean:.3f} ×{mark(mean <= GOAL_MEAN)} | "
              f"{p99:.2f} ×{mark(p99 <= GOAL_P99)} | {hit:.3f} ×{mark(hit >= GOAL_HIT)} |")
    n = len(verdicts)
    geo = math.exp(sum(math.log(v[2]) for v in verdicts) / n)
    print()
    print(f"goals met in {n} cells: mean TTFT {sum(v[2] <= GOAL_MEAN for v in verdicts)}, "
          f"p99 {sum(v[3] <= GOAL_P99 for v in verdicts)}, "
          f"hit rate {sum(v[4] >= GOAL_HIT for v in verdicts)}; "
          f"geometric mean of mean TTFT / best other {geo:.3f} ×")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hearsay", default=os.path.join("build", "release", "hearsay"))
    ap.add_argument("--out", default=os.path.join("build", "llama-grid"))
    ap.add_argument("--rates", default="1,2")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--policies", default="hearsay,paper,least-loaded")
    ap.add_argument("--report-only", action="store_true", help="print the table of DIR only")
    ap.add_argument("--pool", default="", help="print each cell pooled over these folders")
    args = ap.parse_args()
    cells = [(int(r), int(s)) for r in args.rates.split(",") for s in args.seeds.split(",")]
    if not args.report_only and not args.pool:
        os.makedirs(args.out, exist_ok=True)
        for rate, seed in cells:
            run_cell(args, rate, seed)
    report(args, cells)


if __name__ == "__main__":
    main()
