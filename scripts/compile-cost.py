#!/usr/bin/env python3
"""Compiles the objects of the named targets one at a time, without ccache, and prints the CPU
seconds (user + sys) each took and their sum: the cost a machine with a cold cache pays for them.

Usage: scripts/compile-cost.py BUILD_DIR TARGET...
  e.g. scripts/compile-cost.py build/release hearsay_route_test hearsay_net_test

It runs the compile commands of BUILD_DIR/compile_commands.json (every preset writes one) whose
object lies in a TARGET's folder, so nothing else is built: no library, no link. The objects are
written where the build puts them. CPU seconds, not wall time, so the figure holds on a loaded
machine (run it under `nice`). docs/architecture.md#build-cost has the figures.
"""
import json
import os
import resource
import subprocess
import sys


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    build_dir, targets = sys.argv[1], sys.argv[2:]
    commands = json.load(open(os.path.join(build_dir, 'compile_commands.json')))
    env = dict(os.environ, CCACHE_DISABLE='1')
    total_cpu, total_objects, failed = 0.0, 0, 0
    for target in targets:
        chosen = [c for c in commands if f'/{target}.dir/' in c['command']]
        if not chosen:
            print(f'compile-cost: no object of {target} in {build_dir}', file=sys.stderr)
            failed += 1
        cpu = 0.0
        for c in chosen:
            before = cpu_seconds()
            p = subprocess.run(c['command'], shell=True, cwd=c['directory'], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            took = cpu_seconds() - before
            cpu += took
            name = os.path.relpath(c['file'], build_dir) if 'Unity' in c['file'] else \
                os.path.basename(c['file'])
            print(f'{took:8.2f}  {name}{"  FAILED" if p.returncode else ""}', flush=True)
            if p.returncode:
                failed += 1
                print(p.stderr[-4000:], file=sys.stderr)
        print(f'{cpu:8.2f}  {target}: {len(chosen)} objects', flush=True)
        total_cpu += cpu
        total_objects += len(chosen)
    print(f'{total_cpu:8.2f}  total: {total_objects} objects, CPU seconds (user + sys)')
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
