#!/bin/bash
# Side run: perf sched traces of fwi-paper and heat-paper (ebpf+idle), 2 runs each, analysed by bench/umt/trace_oversub.py.
set -u
cd "$(git rev-parse --show-toplevel)"
B=build/default/bin
out=${TMPDIR:-/tmp}/umt-eevdf-trace; mkdir -p $out; : > $out/lines.jsonl
fwi="$B/strata-umt-fwi --slices=16 --slice-kib=1024 --steps=12 --sweeps=$1 --io-freq=1 --direct=1 --latency-us=5000 --file=/var/tmp/strata-umt2-fwi.dat"
heat="$B/strata-umt-heat --blocks=8 --block-size=256 --iters=12 --sweeps=$2 --ckpt-every=2 --direct=1 --latency-us=6000 --file=/var/tmp/strata-umt2-heat.dat"
for rep in 1 2; do
  for name in fwi-paper heat-paper; do
    if [ $name = fwi-paper ]; then cmd=$fwi; else cmd=$heat; fi
    perf sched record -o $out/t.data -- env STRATA_MONITOR=ebpf STRATA_COVER_PRIORITY=idle $cmd > $out/run.txt 2>/dev/null
    res=$(grep UMT_RESULT $out/run.txt | cut -c12-)
    perf script -i $out/t.data -F comm,tid,cpu,time,event,trace > $out/t.txt 2>/dev/null
    tr=$(python3 bench/umt/trace_oversub.py $out/t.txt --label "$name #$rep")
    echo "{\"experiment\":\"$name\",\"repeat\":$rep,\"command\":\"perf sched record -- env STRATA_MONITOR=ebpf STRATA_COVER_PRIORITY=idle $cmd\",\"result\":$res,\"trace\":$tr}" >> $out/lines.jsonl
    rm -f $out/t.data $out/t.txt /var/tmp/strata-umt2-fwi.dat /var/tmp/strata-umt2-heat.dat
  done
done
echo done
