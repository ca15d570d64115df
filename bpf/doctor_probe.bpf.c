// SPDX-License-Identifier: GPL-2.0
// `strata doctor`'s BPF probe: counts sched_switch events so the doctor can
// prove that a CO-RE program loads, attaches to the scheduler and runs — the
// same path the blocking monitor takes.
//
// User space may set `target_tgid` before load (it lives in .rodata, so the
// verifier sees it as a constant and prunes the unused branch); 0 counts
// every switch. The count lives in .bss, read through the skeleton's mmap.
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile __u32 target_tgid = 0;

__u64 switch_count = 0;

// tp_btf hands over typed task_struct pointers, so prev->tgid is a direct,
// CO-RE-relocated load instead of a bpf_probe_read.
SEC("tp_btf/sched_switch")
int BPF_PROG(count_sched_switch, bool preempt, struct task_struct* prev, struct task_struct* next) {
    if (target_tgid != 0 && prev->tgid != (int)target_tgid && next->tgid != (int)target_tgid) return 0;
    __sync_fetch_and_add(&switch_count, 1);
    return 0;
}

// tp_btf programs need a GPL-compatible licence.
char LICENSE[] SEC("license") = "GPL";
