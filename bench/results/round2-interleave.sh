#!/usr/bin/env bash
# round2-interleave.sh OUTPREFIX COUNT DIR N "BENCH1 BENCH2 ..." BIN1 BIN2 ...: runs of round2-cpubench.py, interleaved between the binaries (before, after) so that both see the same load;
# writes OUTPREFIX-<basename of BIN>.txt
set -e
out=$1 count=$2 dir=$3 n=$4 benches=$5; shift 5
for i in $(seq "$count"); do
  for b in $benches; do
    for bin in "$@"; do
      "$(dirname "$0")"/round2-cpubench.py "$bin" "$b" "$n" "$dir" >> "$out-$(basename "$bin" .test).txt"
    done
  done
done
