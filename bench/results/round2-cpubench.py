#!/usr/bin/env python3
"""round2-cpubench.py BINARY BENCH N [DIR]: CPU time (user+sys of the process and its
threads) per iteration of one benchmark, by difference of a run of 3N and a
run of N iterations, so setup cancels out. Prints a Go benchmark line with
the wall ns/op of the 3N run and cpu-ns/op, for benchstat."""
import os, re, resource, subprocess, sys
binary, bench, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
cwd = sys.argv[4] if len(sys.argv) > 4 else None
def run(iters):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([binary, '-test.run', '^$', '-test.bench', bench, '-test.benchtime', f'{iters}x', '-test.benchmem'],
                         capture_output=True, text=True, cwd=cwd, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [l for l in out.splitlines() if l.startswith('Benchmark')]
    assert len(lines) == 1, out
    return cpu, lines[0]
c1, _ = run(n)
c3, line = run(3 * n)
per = (c3 - c1) / (2 * n) * 1e9
print(f'{line}\t{per:.0f} cpu-ns/op')
