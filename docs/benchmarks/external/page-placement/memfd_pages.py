import os, mmap, time, statistics, subprocess, sys
SIZE=128<<20
def reader(path):
    fd=os.open(path,os.O_RDONLY); buf=bytearray(1<<20); mv=memoryview(buf)
    t=time.perf_counter(); off=0
    while off<SIZE:
        n=os.preadv(fd,[mv],off); off+=n
    dt=time.perf_counter()-t; os.close(fd); return dt
# memfd filled via mmap
mfd=os.memfd_create("t", 0); os.ftruncate(mfd,SIZE)
m=mmap.mmap(mfd,SIZE); 
pat=bytes(range(256))*4096
for off in range(0,SIZE,len(pat)): m[off:off+len(pat)]=pat
# memfd filled via write
wfd=os.memfd_create("w", 0)
for off in range(0,SIZE,len(pat)): os.pwrite(wfd,pat,off)
res={'memfd-mmap':[], 'memfd-write':[], 'shm-file':[]}
for r in range(7):
    p="/dev/shm/memfdtest.bin"
    with open(p,"wb") as f:
        for off in range(0,SIZE,len(pat)): f.write(pat)
    res['shm-file'].append(reader(p)); os.unlink(p)
    res['memfd-mmap'].append(reader(f"/proc/self/fd/{mfd}"))
    res['memfd-write'].append(reader(f"/proc/self/fd/{wfd}"))
for k,v in res.items(): print(k, "%.2f ms"%(1e3*statistics.median(v)))
# memfd fallocated then filled via mmap
ffd=os.memfd_create("f", 0); os.posix_fallocate(ffd,0,SIZE)
fm=mmap.mmap(ffd,SIZE)
for off in range(0,SIZE,len(pat)): fm[off:off+len(pat)]=pat
v=[reader(f"/proc/self/fd/{ffd}") for _ in range(7)]
print("memfd-fallocate-mmap %.2f ms"%(1e3*statistics.median(v)))
# memfd filled via mmap with MADV_POPULATE_WRITE first
pfd=os.memfd_create("p", 0); os.ftruncate(pfd,SIZE)
pm=mmap.mmap(pfd,SIZE); pm.madvise(23)  # MADV_POPULATE_WRITE
for off in range(0,SIZE,len(pat)): pm[off:off+len(pat)]=pat
v=[reader(f"/proc/self/fd/{pfd}") for _ in range(7)]
print("memfd-populate-mmap %.2f ms"%(1e3*statistics.median(v)))
