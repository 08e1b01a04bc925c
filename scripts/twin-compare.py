#!/usr/bin/env python3
"""Where the digital twin misses: per-request decision records of a real run and of its twin.

Usage: twin-compare.py DEMO_RECORDS POLICY SIM_RECORDS

DEMO_RECORDS is `hearsay demo --twin --records FILE` (every policy, each line tagged "run");
SIM_RECORDS is `--twin-records FILE` of the same demo (the twin's first run of every policy,
tagged alike), or the records of one `hearsay sim ... --records FILE` run for POLICY (the
command `hearsay demo --twin` prints, with --records added). Both issue the same requests: the k-th
request entering node i in the demo is the k-th entering n<i> in the simulator. The script pairs
them and splits each time to first token into the serving engine's queue wait, its prefill and
the rest (routing, network, HTTP, host), and prints the means of both sides, how often both
chose the same server, and how far apart their cache hits are where they did.
"""
import json
import sys
from collections import defaultdict


def load(path, run=None):
    routes, serves = defaultdict(list), {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("run", run) != run:
                continue
            entry = r["entry"].replace("node-", "n")
            if r["kind"] == "route":
                routes[entry].append(r)
            elif r["kind"] == "serve" and not r["bounced"]:
                serves[(entry, r["request"])] = r
    for e in routes:
        routes[e].sort(key=lambda r: (r["arrived_ms"], r["request"]))
    return routes, serves


def parts(route, serves):
    s = serves.get((route["entry"].replace("node-", "n"), route["request"]), {})
    queued = s.get("queued_ms", 0.0)
    prefill = s.get("prefill_ms", 0.0)
    return {
        "ttft": route["ttft_ms"],
        "queued": queued,
        "prefill": prefill,
        "rest": route["ttft_ms"] - queued - prefill,
        "cached": route["cached_tokens"],
        "prompt": route["prompt_tokens"],
        "local": route["served_by"].replace("node-", "n") == route["entry"].replace("node-", "n"),
        "server": route["served_by"].replace("node-", "n"),
    }


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    real_routes, real_serves = load(sys.argv[1], sys.argv[2])
    sim_routes, sim_serves = load(sys.argv[3], sys.argv[2])
    pairs = []
    for entry, reals in real_routes.items():
        sims = sim_routes.get(entry, [])
        for real, sim in zip(reals, sims):
            if real["prompt_tokens"] != sim["prompt_tokens"]:
                sys.exit(f"{entry}: request streams differ (prompt {real['prompt_tokens']} "
                         f"vs {sim['prompt_tokens']} tokens)")
            pairs.append((parts(real, real_serves), parts(sim, sim_serves)))
    if not pairs:
        sys.exit("no requests to compare")
    n = len(pairs)
    print(f"{n} requests paired")
    print(f"{'mean per request':<22}{'measured':>10}{'twin':>10}{'twin/measured':>15}")
    for key, label in [("ttft", "TTFT ms"), ("queued", "  engine queue ms"),
                       ("prefill", "  prefill ms"), ("rest", "  rest ms"),
                       ("cached", "cached tokens"), ("local", "served at entry")]:
        a = sum(float(p[0][key]) for p in pairs) / n
        b = sum(float(p[1][key]) for p in pairs) / n
        ratio = f"{b / a:15.3f}" if a else f"{'':>15}"
        print(f"{label:<22}{a:10.2f}{b:10.2f}{ratio}")
    prompt = sum(p[0]["prompt"] for p in pairs)
    print(f"{'hit rate':<22}{sum(p[0]['cached'] for p in pairs) / prompt:10.3f}"
          f"{sum(p[1]['cached'] for p in pairs) / prompt:10.3f}")
    same = sum(p[0]["server"] == p[1]["server"] for p in pairs) / n
    print(f"same server chosen: {same:.3f}")
    # The engine's cache alone: requests both sides sent to the same server.
    both = [p for p in pairs if p[0]["server"] == p[1]["server"]]
    if both:
        diff = [(p[1]["cached"] - p[0]["cached"]) / p[0]["prompt"] for p in both]
        print(f"same server, cached share of the prompt, twin - measured: mean "
              f"{sum(diff) / len(diff):+.3f}, {sum(abs(d) > 0.1 for d in diff)} of {len(both)} "
              f"apart by more than 0.1")
    # Prefill speed alone: requests that both sides served with the same cached tokens.
    alike = [p for p in pairs if p[0]["cached"] == p[1]["cached"] and p[0]["prefill"] > 0]
    if alike:
        ratio = sum(p[0]["prefill"] for p in alike) / sum(p[1]["prefill"] for p in alike)
        print(f"prefill of equal work, measured/twin: {ratio:.3f} over {len(alike)} requests")


if __name__ == "__main__":
    main()
