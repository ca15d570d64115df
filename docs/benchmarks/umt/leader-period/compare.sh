#!/bin/bash
# alternate: current build vs build with leader period 5 ms (binary copies)
A="--tasks=240 --compute-iters=4142966 --block=mix --block-us=4000 --io-bytes=1048576 --file=/var/tmp/umtx/s.dat --file-bytes=268435456"
for i in 1 2 3 4 5; do
  for b in base lp2; do
    LD_LIBRARY_PATH=/tmp/$b STRATA_MONITOR=ebpf STRATA_COVER_PRIORITY=idle+suspend /tmp/incg.sh /tmp/$b/strata-umt-synthetic $A 2>/dev/null | tail -1 | python3 -c "import sys,json; l=sys.stdin.read(); d=json.loads(l.split(' ',1)[1]); t=d['thread_cpu_s']; w=d['wall_s']*2; print('$b %.4f tu=%.2f%% os=%.2f%% leader=%.2f%% scans=%d'%(d['wall_s'],100*d['task_utilization'],100*d['oversubscribed_share'],100*t['leader']/w,d['leader_scans']))"
  done
done | sort
