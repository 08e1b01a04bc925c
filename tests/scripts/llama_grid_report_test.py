#!/usr/bin/env python3
"""scripts/llama-grid.py's tables, from output folders made here: one folder alone
(--report-only) and a cell pooled over two (--pool), whose verdict differs from either run's.

Usage: llama_grid_report_test.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

from script_check import check, finish, script as script_path

script = script_path("llama-grid.py")


def write_cell(folder, policies):
    """policies: {name: (mean TTFT, hit rate, p99 in the JSON, TTFTs of the route records)}."""
    os.makedirs(folder)
    rows, records = [], []
    for name, (mean, hit, p99, ttfts) in policies.items():
        run = {"mean_ttft_ms": mean, "hit_rate": hit, "p50_ttft_ms": mean, "p99_ttft_ms": p99}
        rows.append(dict(run, policy=name, runs=[run]))
        records += [{"kind": "route", "policy": name, "ttft_ms": t} for t in ttfts]
        records.append({"kind": "serve", "node": "node-0", "prefill_ms": 1.0})
    with open(os.path.join(folder, "r1s2.json"), "w") as f:
        json.dump(rows, f)
    with open(os.path.join(folder, "r1s2.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


def verdict(*args):
    out = subprocess.run([sys.executable, script, "--rates", "1", "--seeds", "2", *args],
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.startswith("| 1 req/s | 2 | ")
            and "×" in line]


with tempfile.TemporaryDirectory() as tmp:
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    # TTFTs 0..100 split over the two folders: pooled, hearsay's p99 is 99, paper's 198.
    write_cell(a, {"hearsay": (100, 0.50, 50, range(0, 51)),
                   "paper": (110, 0.50, 100, range(0, 102, 2)),
                   "least-loaded": (200, 0.30, 150, range(0, 153, 3))})
    write_cell(b, {"hearsay": (120, 0.46, 50, range(51, 101)),
                   "paper": (100, 0.50, 100, range(102, 202, 2)),
                   "least-loaded": (200, 0.30, 150, range(153, 303, 3))})

    alone = verdict("--report-only", "--out", a)
    check(alone == ["| 1 req/s | 2 | 0.909 × | 0.50 × | 1.000 × |"], f"folder a alone: {alone}")
    # Pooled: hearsay's mean (100 + 120) / 2 against paper's (110 + 100) / 2, hit rate 0.48
    # against 0.50, p99 over both folders' records.
    pooled = verdict("--pool", f"{a},{b}")
    check(pooled == ["| 1 req/s | 2 | 1.048 × (missed) | 0.50 × | 0.960 × |"], f"pooled: {pooled}")
    missing = subprocess.run([sys.executable, script, "--rates", "1", "--seeds", "3", "--pool", a],
                             capture_output=True, text=True)
    check(missing.returncode != 0 and "no results" in missing.stderr,
          f"a cell no folder holds is an error: {missing.returncode} {missing.stderr!r}")

finish()
