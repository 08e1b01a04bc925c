#!/usr/bin/env python3
"""scripts/llama-records.py's tables, from a records file made here: held and cold requests per
run, and prefill speed binned by the prefills that ran beside each.

Usage: llama_records_test.py SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

from script_check import check, finish, script as script_path

script = script_path("llama-records.py")


def route(run, request, arrived, held_tokens, ttft):
    views = [{"node": "node-0", "self": True, "usable": True, "cached_tokens_max": 0},
             {"node": "node-1", "self": False, "usable": True, "cached_tokens_max": held_tokens},
             # An excluded member's view does not count.
             {"node": "node-2", "self": False, "usable": False, "cached_tokens_max": 4096}]
    return {"kind": "route", "run": run, "round": 1, "entry": "node-0", "request": request,
            "arrived_ms": arrived, "ttft_ms": ttft,
            "attempts": [{"at_ms": 0.0, "candidates": views}]}


def serve(run, request, queued, prefill, prompt, cached, bounced=False):
    return {"kind": "serve", "run": run, "round": 1, "entry": "node-0", "request": request,
            "bounced": bounced, "queued_ms": queued, "prefill_ms": prefill,
            "prompt_tokens": prompt, "cached_tokens": cached}


# hearsay: request 1 cold, prefilling over [0, 120) ms; request 2 held, [60, 110), so each ran
# beside the other (for 50 of 120 ms and all of its 50 ms); request 3 cold and alone.
records = [
    route("hearsay", 1, 0.0, 0, 120.0), serve("hearsay", 1, 0.0, 120.0, 400, 0),
    route("hearsay", 2, 50.0, 128, 60.0), serve("hearsay", 2, 10.0, 50.0, 400, 200),
    # The bounce is not the serve that answered.
    serve("hearsay", 2, 0.0, 0.0, 400, 0, bounced=True),
    route("hearsay", 3, 1000.0, 32, 80.0), serve("hearsay", 3, 0.0, 80.0, 400, 0),
    # Another run with the same request ids: its serves stay its own.
    route("paper", 1, 0.0, 0, 500.0), serve("paper", 1, 100.0, 400.0, 1000, 0),
]

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "r1s2.jsonl")
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    out = subprocess.run([sys.executable, script, path], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    for row in ("| hearsay 1 | held | 1 | 60 | 10 | 50 | 200 |",
                "| hearsay 1 | cold | 2 | 100 | 0 | 100 | 400 |",
                "| paper 1 | cold | 1 | 500 | 100 | 400 | 1000 |",
                "| none | 2 | 0.300 | 1.00 × |",
                "| under 0.75 | 1 | 0.300 | 1.00 × |",
                "| about 1 | 1 | 0.250 | 0.83 × |"):
        check(row in out, f"missing row {row!r} in:\n" + "\n".join(out))
    check(not any(line.startswith("| 1.5 or more") for line in out), "an empty bin is printed")

    usage = subprocess.run([sys.executable, script], capture_output=True, text=True)
    check(usage.returncode != 0 and "Usage" in usage.stderr, "no file is a usage error")

finish()
