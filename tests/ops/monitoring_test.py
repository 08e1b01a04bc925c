#!/usr/bin/env python3
"""The monitoring kit and the Kubernetes manifests, checked against a real node.

- Every metric the Grafana dashboard (docs/monitoring/grafana-dashboard.json) and the alert
  rules (docs/monitoring/alerts.yml) name is served by a node's GET /metrics, and documented in
  docs/reference.md; every metric a node serves is documented there too; every field of GET
  /status and GET /cluster is documented there.
- The dashboard is valid Grafana JSON (panels with PromQL targets, a legend and a unit each); the
  rules are valid Prometheus rule groups (alert, expr, annotations.summary).
- docs/deploy/kubernetes/*.yaml parse as Kubernetes objects: the StatefulSet runs hearsay beside
  an engine, seeds through the headless service that publishes unready pods, and mounts the key
  from the Secret.
Usage: monitoring_test.py HEARSAY_BINARY SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

binary, source = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def metric_names(text):
    return set(re.findall(r"\bhearsay_[a-z0-9_]+\b", text))


def get(address, path):
    with urllib.request.urlopen(f"http://{address}{path}", timeout=10) as r:
        return r.read().decode()


# A node, with one 404 so that hearsay_http_errors_total has a series.
with tempfile.TemporaryDirectory() as tmp:
    out = open(os.path.join(tmp, "out"), "w+")
    node = subprocess.Popen([binary, "node", "--insecure", "--http", "127.0.0.1:0", "--gossip",
                             "127.0.0.1:0", "--log-level", "error"], stdout=out,
                            stderr=subprocess.DEVNULL)
    try:
        address = None
        for _ in range(400):
            out.seek(0)
            m = re.search(r"^listening http=(\S+)", out.read(), re.M)
            if m:
                address = m.group(1)
                break
            if node.poll() is not None:
                break
            time.sleep(0.05)
        if address is None:
            sys.exit("FAIL: the node did not start")
        try:
            get(address, "/no-such-path")
        except urllib.error.HTTPError:
            pass
        served = set(re.findall(r"^(hearsay_[a-z0-9_]+)", get(address, "/metrics"), re.M))
        status = json.loads(get(address, "/status"))
        cluster = json.loads(get(address, "/cluster"))
    finally:
        node.terminate()
        node.wait(timeout=30)

# Histograms serve _bucket/_sum/_count; documentation names the family.
families = {re.sub(r"_(bucket|sum|count)$", "", n) for n in served}

dashboard = json.load(open(os.path.join(source, "docs/monitoring/grafana-dashboard.json")))
rules = yaml.safe_load(open(os.path.join(source, "docs/monitoring/alerts.yml")))
reference = open(os.path.join(source, "docs/reference.md")).read()

named = set()
panels = [p for p in dashboard["panels"] if p["type"] != "row"]
check(len(panels) >= 10, f"the dashboard has {len(panels)} panels")
for p in panels:
    check(p.get("title") and p.get("description"), f"panel {p.get('id')} without title/description")
    check(p["fieldConfig"]["defaults"].get("unit"), f"panel {p['title']!r} without a unit")
    check(p["targets"], f"panel {p['title']!r} without targets")
    for t in p["targets"]:
        check(t.get("legendFormat"), f"panel {p['title']!r}: a target without a legend")
        named |= metric_names(t["expr"])
alerts = [r for g in rules["groups"] for r in g["rules"]]
check(len(alerts) >= 8, f"{len(alerts)} alert rules")
for r in alerts:
    check(r.get("alert") and r.get("expr") and r.get("annotations", {}).get("summary"),
          f"rule {r.get('alert')} lacks alert/expr/summary")
    named |= metric_names(str(r["expr"]))
for n in sorted(named):
    check(n in served, f"{n} is named by the dashboard or the alerts but not served by a node")
for n in sorted(families):
    check(f"`{n}`" in reference, f"{n} is served but not documented in docs/reference.md")


def fields(obj, prefix=""):
    """Every field path of a JSON value: a.b, a[].c."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            path = f"{prefix}.{k}" if prefix else k
            # Maps keyed by node id are documented as one entry.
            if prefix.endswith(("served_by", "served_for_peers")):
                continue
            out.add(path)
            out |= fields(v, path)
    elif isinstance(obj, list) and obj:
        out |= fields(obj[0], prefix + "[]")
    return out


for path in sorted(fields(status)):
    check(f"`{path}`" in reference, f"/status field {path} not documented in docs/reference.md")
for path in sorted(fields(cluster)):
    check(f"`{path}`" in reference, f"/cluster field {path} not documented in docs/reference.md")

# The Kubernetes manifests.
kdir = os.path.join(source, "docs/deploy/kubernetes")
objects = []
for f in sorted(os.listdir(kdir)):
    if f.endswith(".yaml"):
        for doc in yaml.safe_load_all(open(os.path.join(kdir, f))):
            check(doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"),
                  f"{f}: an object without apiVersion/kind/metadata.name")
            objects.append(doc)
by_kind = {}
for o in objects:
    by_kind.setdefault(o["kind"], []).append(o)
for kind in ("StatefulSet", "Service", "Secret", "ConfigMap"):
    check(kind in by_kind, f"no {kind} in docs/deploy/kubernetes")
if not failures:
    sts = by_kind["StatefulSet"][0]
    spec = sts["spec"]["template"]["spec"]
    names = [c["name"] for c in spec["containers"]]
    check("hearsay" in names and len(names) >= 2, f"containers {names}: hearsay beside an engine")
    headless = [s for s in by_kind["Service"] if s["spec"].get("clusterIP") == "None"]
    check(len(headless) == 1 and headless[0]["spec"].get("publishNotReadyAddresses") is True,
          "one headless service publishing unready pods (the seeds)")
    check(sts["spec"]["serviceName"] == headless[0]["metadata"]["name"], "serviceName")
    config = by_kind["ConfigMap"][0]["data"]["node.toml"]
    check(f'{headless[0]["metadata"]["name"]}:7946' in config, "join names the headless service")
    secret_name = by_kind["Secret"][0]["metadata"]["name"]
    check(any(v.get("secret", {}).get("secretName") == secret_name for v in spec["volumes"]),
          "the key comes from the Secret")
    engine = [c for c in spec["containers"] if c["name"] != "hearsay"][0]
    args = " ".join(engine.get("args", []))
    check("--enable-prefix-caching" in args and "enable_kv_cache_events" in args,
          "the engine runs with prefix caching and KV events")
    hs = [c for c in spec["containers"] if c["name"] == "hearsay"][0]
    check(hs["readinessProbe"]["httpGet"]["path"] == "/health", "readiness on /health")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"ok: {len(named)} metrics named by the kit, {len(served)} served, "
      f"{len(objects)} Kubernetes objects")
