// SPDX-License-Identifier: MIT
// The shared-objects workflows' work without strata, run either by threads of
// one process or by forked processes (issue 29): what the vehicle alone costs
// for the same work, the reference for strata's shm / threads ratio.
//
// Every task does what src/workflow/task_loop.cpp does per iteration: receive
// each input (wait under the producer's mutex), sum its words and check the
// sum, release it, then wait for a free slot of its own, fill it and publish
// it. A producer hands its buffer over as src/workflow/threads.cpp does: a
// mutex and two condition variables per producer, slots so it never
// overwrites data a consumer still reads. Both vehicles use the same
// MAP_SHARED region and the same process-shared, robust mutexes, so the
// vehicle is the only difference; --sync private and --memory private give
// the threads what threads.cpp has instead (process-private mutexes, buffers
// in private memory), to show what sharing costs.
//
//   cc -std=c17 -O3 -pthread proc_vs_threads.c -o proc_vs_threads
//
// -O3 as strata's src/workflow/checksum.cpp: at -O2 GCC 12 does not vectorize
// the fill and the sum, which then take about four times as long.
//   proc_vs_threads --as processes --shape scatter-gather --tasks 6 --size 10000000
//
// Prints one JSON line; exits 1 when the run fails (a checksum error, a task
// that died, a wait longer than --timeout-ms), 2 for a bad option.
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kMaxTasks = 64, kMaxEdges = 2 * kMaxTasks, kMaxSlots = 16 };
// How long a wait sleeps before it looks again whether the run failed.
static const int64_t kSliceNs = 100 * 1000 * 1000;
static const uint64_t kDigestStart = 0xcbf29ce484222325ULL;

typedef struct {
    uint64_t published;  // iteration + 1
    uint32_t pending;    // consumers still reading
    int64_t stamp_ns;
} Slot;

// One producer's handoff, as threads.cpp's ThreadOutbox.
typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t published;
    pthread_cond_t released;
    uint32_t consumers;
    Slot slots[kMaxSlots];
} Outbox;

// pthread_barrier_wait cannot time out; this one does, so a dead task fails the run.
typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    uint32_t parties, count, generation;
} Barrier;

typedef struct {
    uint64_t digest;  // over every iteration's word sum, as EdgeReport::digest
    uint64_t checksum_errors;
    double p50_ns;
} EdgeResult;

typedef struct {
    long voluntary, involuntary, minor_faults;
} Usage;

// The head of the MAP_SHARED region; the buffers follow it, page-aligned.
typedef struct {
    atomic_int failed;
    Barrier barrier;
    Outbox boxes[kMaxTasks];
    EdgeResult edges[kMaxEdges];
    Usage timed[kMaxTasks];  // each task's own, over the timed iterations
} Shared;

typedef struct {
    bool processes;
    bool private_sync;
    bool private_memory;
    int shape;  // index into kShapes
    int tasks;
    uint64_t size, iterations, warmup, timeout_ms;
    uint32_t slots;
    int die_task;  // --die: -1 for none
    uint64_t die_at;
} Options;

typedef struct Run Run;
struct Run {
    Options opt;
    int tasks, edges;
    int from[kMaxEdges], to[kMaxEdges];
    int inputs[kMaxTasks][kMaxTasks];  // edge indices, in edge order
    int input_count[kMaxTasks];
    bool has_output[kMaxTasks];
    size_t first_buffer[kMaxTasks];             // a producer's slots are buffers first_buffer..+slots
    size_t words, stride, mapped, data_mapped;  // data_mapped: the private buffers (--memory private)
    Shared* sh;
    unsigned char* data;
    pid_t pids[kMaxTasks];
    int children;
    int (*check_children)(Run*);
};

// One task's own results (private memory, as the workflow task's TaskOutcome).
typedef struct {
    uint64_t digest[kMaxTasks];
    uint64_t checksum_errors[kMaxTasks];
    double* latency_ns[kMaxTasks];
    uint64_t recorded;
} Outcome;

static const char* const kShapes[] = {"simple", "pipeline", "scatter-gather"};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// The data, as src/workflow/checksum.cpp writes and checks it.
static uint64_t seed_of(int task, uint64_t it) {
    uint64_t z = ((uint64_t)task << 40) ^ it ^ 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void fill(uint64_t* w, size_t n, int task, uint64_t it) {
    const uint64_t seed = seed_of(task, it);
    for (size_t i = 0; i < n; ++i) {
        w[i] = seed + i;
    }
}

static uint64_t word_sum(const uint64_t* w, size_t n) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
        sum += w[i];
    }
    return sum;
}

static uint64_t expected_sum(uint64_t n, int task, uint64_t it) {
    const uint64_t half = n % 2 == 0 ? (n / 2) * (n - 1) : n * ((n - 1) / 2);
    return n * seed_of(task, it) + half;
}

static uint64_t fold_digest(uint64_t digest, uint64_t sum) {
    return (digest ^ sum) * 0x100000001b3ULL;
}

// Wakes every wait so it sees the failure now rather than at its next slice.
static void wake_all(Run* r) {
    for (int t = 0; t < r->tasks; ++t) {
        pthread_cond_broadcast(&r->sh->boxes[t].published);
        pthread_cond_broadcast(&r->sh->boxes[t].released);
    }
    pthread_cond_broadcast(&r->sh->barrier.cond);
}

static void fail(Run* r, int task, const char* format, ...) {
    char text[256];
    va_list ap;
    va_start(ap, format);
    vsnprintf(text, sizeof text, format, ap);
    va_end(ap);
    if (task >= 0) {
        fprintf(stderr, "proc_vs_threads: task t%d: %s\n", task, text);
    } else {
        fprintf(stderr, "proc_vs_threads: %s\n", text);
    }
    atomic_store(&r->sh->failed, 1);
    wake_all(r);
}

// A lock or wait on `m` that returned `rc` (not 0): a robust mutex whose owner died is made consistent
// and given up, `m` is released where this thread holds it, and the run has failed. Returns -1.
static int lost(Run* r, pthread_mutex_t* m, int rc, bool held, int task, const char* what, const char* doing) {
    if (rc == EOWNERDEAD) {
        pthread_mutex_consistent(m);
        pthread_mutex_unlock(m);
        fail(r, task, "the lock of %s was held by a task that died", what);
        return -1;
    }
    if (held) {
        pthread_mutex_unlock(m);
    }
    fail(r, task, "%s %s: %s", doing, what, strerror(rc));
    return -1;
}

static int lock(Run* r, pthread_mutex_t* m, int task, const char* what) {
    const int rc = pthread_mutex_lock(m);
    return rc == 0 ? 0 : lost(r, m, rc, false, task, what, "locking");
}

// One slice of a wait, with the mutex held: 0 to check the condition again; -1
// (mutex released) when the run failed or `deadline` passed.
static int wait_slice(Run* r, pthread_mutex_t* m, pthread_cond_t* c, int64_t deadline, int task, const char* what) {
    if (atomic_load(&r->sh->failed)) {
        pthread_mutex_unlock(m);
        return -1;
    }
    const int64_t now = now_ns();
    if (now >= deadline) {
        pthread_mutex_unlock(m);
        fail(r, task, "waited more than --timeout-ms=%" PRIu64 " for %s", r->opt.timeout_ms, what);
        return -1;
    }
    const int64_t until = deadline - now < kSliceNs ? deadline : now + kSliceNs;
    const struct timespec ts = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
    const int rc = pthread_cond_timedwait(c, m, &ts);
    if (rc == 0 || rc == ETIMEDOUT) {
        return 0;
    }
    return lost(r, m, rc, true, task, what, "waiting for");
}

static int64_t deadline_of(const Run* r) {
    return now_ns() + (int64_t)r->opt.timeout_ms * 1000000;
}

static int barrier_wait(Run* r, int task, int64_t deadline, const char* what) {
    Barrier* b = &r->sh->barrier;
    if (lock(r, &b->mutex, task, what) != 0) {
        return -1;
    }
    const uint32_t generation = b->generation;
    if (++b->count == b->parties) {
        b->count = 0;
        ++b->generation;
        pthread_mutex_unlock(&b->mutex);
        pthread_cond_broadcast(&b->cond);
        return 0;
    }
    while (b->generation == generation) {
        if (wait_slice(r, &b->mutex, &b->cond, deadline, task, what) != 0) {
            return -1;
        }
        // The parent of processes looks for a child that died between two slices.
        if (task < 0 && r->check_children != NULL && r->check_children(r) != 0) {
            pthread_mutex_unlock(&b->mutex);
            return -1;
        }
    }
    pthread_mutex_unlock(&b->mutex);
    return 0;
}

static uint64_t* buffer_of(const Run* r, int producer, uint64_t it) {
    return (uint64_t*)(r->data + (r->first_buffer[producer] + it % r->opt.slots) * r->stride);
}

// --die: ends this task with SIGKILL while it holds a lock the others need.
static void die_holding_a_lock(Run* r, int t) {
    const int box = r->has_output[t] ? t : r->from[r->inputs[t][0]];
    pthread_mutex_lock(&r->sh->boxes[box].mutex);
    raise(SIGKILL);
}

static int receive_all(Run* r, int t, uint64_t it, bool record, Outcome* o) {
    for (int i = 0; i < r->input_count[t]; ++i) {
        const int p = r->from[r->inputs[t][i]];
        Outbox* box = &r->sh->boxes[p];
        Slot* slot = &box->slots[it % r->opt.slots];
        if (lock(r, &box->mutex, t, "an input") != 0) {
            return -1;
        }
        const int64_t deadline = deadline_of(r);
        while (slot->published != it + 1) {
            if (wait_slice(r, &box->mutex, &box->published, deadline, t, "an input's publish") != 0) {
                return -1;
            }
        }
        const int64_t stamp = slot->stamp_ns;
        pthread_mutex_unlock(&box->mutex);
        const int64_t received = now_ns();
        const uint64_t sum = word_sum(buffer_of(r, p, it), r->words);
        if (sum != expected_sum(r->words, p, it)) {
            ++o->checksum_errors[i];
        }
        o->digest[i] = fold_digest(o->digest[i], sum);
        if (lock(r, &box->mutex, t, "an input") != 0) {
            return -1;
        }
        const bool last = --slot->pending == 0;
        pthread_mutex_unlock(&box->mutex);
        if (last) {
            pthread_cond_signal(&box->released);
        }
        if (record) {
            o->latency_ns[i][o->recorded] = (double)(received - stamp);
        }
    }
    return 0;
}

static int produce(Run* r, int t, uint64_t it) {
    Outbox* box = &r->sh->boxes[t];
    Slot* slot = &box->slots[it % r->opt.slots];
    if (lock(r, &box->mutex, t, "its output") != 0) {
        return -1;
    }
    const int64_t deadline = deadline_of(r);
    while (slot->pending != 0) {
        if (wait_slice(r, &box->mutex, &box->released, deadline, t, "a free slot") != 0) {
            return -1;
        }
    }
    pthread_mutex_unlock(&box->mutex);
    fill(buffer_of(r, t, it), r->words, t, it);
    if (lock(r, &box->mutex, t, "its output") != 0) {
        return -1;
    }
    slot->pending = box->consumers;
    slot->stamp_ns = now_ns();
    slot->published = it + 1;
    pthread_mutex_unlock(&box->mutex);
    pthread_cond_broadcast(&box->published);
    return 0;
}

static int run_iterations(Run* r, int t, uint64_t first, uint64_t count, bool record, Outcome* o) {
    for (uint64_t it = first; it < first + count; ++it) {
        if (t == r->opt.die_task && it == r->opt.die_at) {
            die_holding_a_lock(r, t);
        }
        if (receive_all(r, t, it, record, o) != 0) {
            return -1;
        }
        if (record) {
            ++o->recorded;
        }
        if (r->has_output[t] && produce(r, t, it) != 0) {
            return -1;
        }
    }
    return 0;
}

static int compare_doubles(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

// The median of the samples as task_loop.cpp's summarize() takes it.
static double p50_of(double* samples, uint64_t n) {
    if (n == 0) {
        return 0;
    }
    qsort(samples, n, sizeof *samples, compare_doubles);
    return samples[n / 2];  // llround(0.5 * (n - 1))
}

static Usage usage_since(const struct rusage* before, const struct rusage* after) {
    return (Usage){after->ru_nvcsw - before->ru_nvcsw, after->ru_nivcsw - before->ru_nivcsw,
                   after->ru_minflt - before->ru_minflt};
}

// One task from start to end: warmup, the timed iterations between two barriers, its results.
static int task_main(Run* r, int t) {
    Outcome o = {.recorded = 0};
    int rc = -1;
    for (int i = 0; i < r->input_count[t]; ++i) {
        o.digest[i] = kDigestStart;
        o.latency_ns[i] = calloc(r->opt.iterations, sizeof(double));
        if (o.latency_ns[i] == NULL) {
            fail(r, t, "no memory for %" PRIu64 " latency samples", r->opt.iterations);
            goto out;
        }
    }
    if (run_iterations(r, t, 0, r->opt.warmup, false, &o) != 0 ||
        barrier_wait(r, t, deadline_of(r), "the others' warmup") != 0 ||
        barrier_wait(r, t, deadline_of(r), "the clock's start") != 0) {
        goto out;
    }
    struct rusage before, after;
    getrusage(RUSAGE_THREAD, &before);
    if (run_iterations(r, t, r->opt.warmup, r->opt.iterations, true, &o) != 0) {
        goto out;
    }
    getrusage(RUSAGE_THREAD, &after);
    if (barrier_wait(r, t, deadline_of(r), "the others' last iteration") != 0) {
        goto out;
    }
    r->sh->timed[t] = usage_since(&before, &after);
    for (int i = 0; i < r->input_count[t]; ++i) {
        EdgeResult* e = &r->sh->edges[r->inputs[t][i]];
        e->digest = o.digest[i];
        e->checksum_errors = o.checksum_errors[i];
        e->p50_ns = p50_of(o.latency_ns[i], o.recorded);
    }
    rc = 0;
out:
    for (int i = 0; i < r->input_count[t]; ++i) {
        free(o.latency_ns[i]);
    }
    return rc;
}

// The main thread's or the parent's part, the same for both vehicles: the clock runs from the
// barrier after everyone's warmup to the barrier after everyone's last iteration.
static int drive(Run* r, double* seconds) {
    if (barrier_wait(r, -1, INT64_MAX, "the tasks' warmup") != 0) {
        return -1;
    }
    const int64_t start = now_ns();
    if (barrier_wait(r, -1, INT64_MAX, "the clock's start") != 0 ||
        barrier_wait(r, -1, INT64_MAX, "the timed iterations") != 0) {
        return -1;
    }
    *seconds = (double)(now_ns() - start) / 1e9;
    return 0;
}

typedef struct {
    Run* run;
    int task;
    int rc;
} ThreadArg;

static void* thread_main(void* p) {
    ThreadArg* a = p;
    a->rc = task_main(a->run, a->task);
    return NULL;
}

static int run_threads(Run* r, double* seconds) {
    pthread_t threads[kMaxTasks];
    ThreadArg args[kMaxTasks];
    int started = 0;
    int rc = 0;
    for (int t = 0; t < r->tasks; ++t) {
        args[t] = (ThreadArg){r, t, -1};
        const int e = pthread_create(&threads[t], NULL, thread_main, &args[t]);
        if (e != 0) {
            fail(r, t, "starting its thread: %s", strerror(e));
            rc = -1;
            break;
        }
        ++started;
    }
    if (rc == 0) {
        rc = drive(r, seconds);
    }
    for (int t = 0; t < started; ++t) {
        pthread_join(threads[t], NULL);
        if (args[t].rc != 0) {
            rc = -1;
        }
    }
    return rc;
}

// Reaps every child that has ended; -1 when one ended badly. A death by a signal is always
// reported (the others only see a lock whose owner died); a failing exit only when the run had
// not failed yet (otherwise the child said why itself).
static int check_children(Run* r) {
    int rc = 0;
    for (int t = 0; t < r->children; ++t) {
        int status = 0;
        if (r->pids[t] <= 0 || waitpid(r->pids[t], &status, WNOHANG) == 0) {
            continue;
        }
        r->pids[t] = 0;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            continue;
        }
        rc = -1;
        if (WIFSIGNALED(status)) {
            fail(r, t, "its process died of signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
        } else if (!atomic_load(&r->sh->failed)) {
            fail(r, t, "its process exited with status %d", WEXITSTATUS(status));
        }
    }
    return rc;
}

// Waits for every child to end: up to --timeout-ms after a good run, a second after a failed one;
// then kills what is left, by pid.
static int reap_children(Run* r) {
    const int64_t grace = atomic_load(&r->sh->failed) ? 1000000000 : (int64_t)r->opt.timeout_ms * 1000000;
    const int64_t deadline = now_ns() + grace;
    int rc = 0;
    for (;;) {
        if (check_children(r) != 0) {
            rc = -1;
        }
        bool left = false;
        for (int t = 0; t < r->children; ++t) {
            left = left || r->pids[t] > 0;
        }
        if (!left) {
            return rc;
        }
        if (now_ns() > deadline) {
            break;
        }
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    for (int t = 0; t < r->children; ++t) {
        if (r->pids[t] > 0) {
            if (!atomic_load(&r->sh->failed)) {
                fail(r, t, "its process did not end; killing it");
            }
            kill(r->pids[t], SIGKILL);
            waitpid(r->pids[t], NULL, 0);
            r->pids[t] = 0;
        }
    }
    return -1;
}

static int run_processes(Run* r, double* seconds) {
    const pid_t parent = getpid();
    int rc = 0;
    fflush(stdout);
    fflush(stderr);
    for (int t = 0; t < r->tasks; ++t) {
        const pid_t pid = fork();
        if (pid < 0) {
            fail(r, t, "forking its process: %s", strerror(errno));
            rc = -1;
            break;
        }
        if (pid == 0) {
            // A child never outlives the parent, so no run leaves a process behind.
            if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
                _exit(1);
            }
            _exit(task_main(r, t) == 0 ? 0 : 1);
        }
        r->pids[t] = pid;
        r->children = t + 1;
    }
    r->check_children = check_children;
    if (rc == 0) {
        rc = drive(r, seconds);
    }
    if (reap_children(r) != 0) {
        rc = -1;
    }
    return rc;
}

// The edges of src/workflow/graph.cpp's generate(): scatter-gather t0 -> t1..t(n-2) -> t(n-1),
// otherwise a chain; the sink produces nothing.
static void build_graph(Run* r) {
    r->tasks = r->opt.tasks;
    const int n = r->tasks;
    if (strcmp(kShapes[r->opt.shape], "scatter-gather") == 0) {
        for (int i = 1; i + 1 < n; ++i) {
            r->from[r->edges] = 0, r->to[r->edges++] = i;
            r->from[r->edges] = i, r->to[r->edges++] = n - 1;
        }
    } else {
        for (int i = 0; i + 1 < n; ++i) {
            r->from[r->edges] = i, r->to[r->edges++] = i + 1;
        }
    }
    for (int e = 0; e < r->edges; ++e) {
        r->has_output[r->from[e]] = true;
        r->inputs[r->to[e]][r->input_count[r->to[e]]++] = e;
    }
}

static int init_sync(Run* r) {
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    int e = pthread_mutexattr_init(&ma) | pthread_condattr_init(&ca) | pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!r->opt.private_sync) {
        e |= pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) |
             pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST) |
             pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    }
    Shared* sh = r->sh;
    e |= pthread_mutex_init(&sh->barrier.mutex, &ma) | pthread_cond_init(&sh->barrier.cond, &ca);
    sh->barrier.parties = (uint32_t)r->tasks + 1;
    for (int t = 0; t < r->tasks; ++t) {
        Outbox* box = &sh->boxes[t];
        e |= pthread_mutex_init(&box->mutex, &ma) | pthread_cond_init(&box->published, &ca) |
             pthread_cond_init(&box->released, &ca);
    }
    for (int i = 0; i < r->edges; ++i) {
        ++sh->boxes[r->from[i]].consumers;
    }
    pthread_mutexattr_destroy(&ma);
    pthread_condattr_destroy(&ca);
    if (e != 0) {
        fprintf(stderr, "proc_vs_threads: could not make the mutexes and condition variables\n");
        return -1;
    }
    return 0;
}

static void unmap_region(Run* r) {
    if (r->data_mapped != 0) {
        munmap(r->data, r->data_mapped);
    }
    munmap(r->sh, r->mapped);
}

// One anonymous MAP_SHARED region for both vehicles: the handoff state, then the producers' slots
// (with --memory private, the slots in a MAP_PRIVATE mapping of their own, as threads.cpp's vectors).
static int map_region(Run* r) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t head = (sizeof(Shared) + page - 1) / page * page;
    r->words = r->opt.size / 8;
    r->stride = (r->opt.size + page - 1) / page * page;
    size_t buffers = 0;
    for (int t = 0; t < r->tasks; ++t) {
        if (r->has_output[t]) {
            r->first_buffer[t] = buffers;
            buffers += r->opt.slots;
        }
    }
    // Options were checked against memory: no overflow.
    r->data_mapped = r->opt.private_memory ? buffers * r->stride : 0;
    r->mapped = head + (r->opt.private_memory ? 0 : buffers * r->stride);
    void* p = mmap(NULL, r->mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "proc_vs_threads: mapping %zu shared bytes: %s\n", r->mapped, strerror(errno));
        return -1;
    }
    r->sh = p;
    r->data = (unsigned char*)p + head;
    if (r->opt.private_memory) {
        void* d = mmap(NULL, r->data_mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (d == MAP_FAILED) {
            fprintf(stderr, "proc_vs_threads: mapping %zu private bytes: %s\n", r->data_mapped, strerror(errno));
            munmap(p, r->mapped);
            return -1;
        }
        r->data = d;
    }
    if (init_sync(r) != 0) {
        unmap_region(r);
        return -1;
    }
    return 0;
}

static void print_usage(FILE* out, const Usage* u) {
    fprintf(out, "{\"voluntary_context_switches\":%ld,\"involuntary_context_switches\":%ld,\"minor_faults\":%ld}",
            u->voluntary, u->involuntary, u->minor_faults);
}

static int report(Run* r, double seconds, FILE* out) {
    uint64_t checksum = kDigestStart, errors = 0;
    double p50[kMaxEdges];
    for (int e = 0; e < r->edges; ++e) {
        checksum = fold_digest(checksum, r->sh->edges[e].digest);
        errors += r->sh->edges[e].checksum_errors;
        p50[e] = r->sh->edges[e].p50_ns;
    }
    // The median over edges, as bench.py takes it (the mean of the middle two for an even count).
    qsort(p50, (size_t)r->edges, sizeof *p50, compare_doubles);
    const double handoff_p50 = (p50[(r->edges - 1) / 2] + p50[r->edges / 2]) / 2;
    Usage timed = {0, 0, 0};
    for (int t = 0; t < r->tasks; ++t) {
        timed.voluntary += r->sh->timed[t].voluntary;
        timed.involuntary += r->sh->timed[t].involuntary;
        timed.minor_faults += r->sh->timed[t].minor_faults;
    }
    struct rusage self, children;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);  // zero for threads: no child was started
    const Usage life = {self.ru_nvcsw + children.ru_nvcsw, self.ru_nivcsw + children.ru_nivcsw,
                        self.ru_minflt + children.ru_minflt};
    const double its = (double)r->opt.iterations;
    fprintf(out,
            "{\"as\":\"%s\",\"sync\":\"%s\",\"memory\":\"%s\",\"shape\":\"%s\",\"tasks\":%d,\"data_size\":%" PRIu64
            ",\"slots\":%u,\"warmup\":%" PRIu64 ",\"iterations\":%" PRIu64
            ",\"seconds\":%.6f,\"iterations_per_s\":%.3f,\"throughput_mb_s\":%.3f,\"handoff_p50_ns\":%.1f,"
            "\"checksum\":\"%016" PRIx64 "\",\"checksum_errors\":%" PRIu64 ",\"timed\":",
            r->opt.processes ? "processes" : "threads", r->opt.private_sync ? "private" : "shared",
            r->opt.private_memory ? "private" : "shared", kShapes[r->opt.shape], r->tasks, r->opt.size, r->opt.slots,
            r->opt.warmup, r->opt.iterations, seconds, its / seconds,
            its * (double)r->edges * (double)r->opt.size / seconds / 1e6, handoff_p50, checksum, errors);
    print_usage(out, &timed);
    fprintf(out, ",\"lifetime\":");
    print_usage(out, &life);
    fprintf(out, "}\n");
    if (errors != 0) {
        fprintf(stderr, "proc_vs_threads: %" PRIu64 " checksum errors: a consumer read data it was not handed\n",
                errors);
        return -1;
    }
    return 0;
}

static const char kUsage[] =
    "Usage: proc_vs_threads --as threads|processes [OPTION...]\n"
    "  --as V          threads: every task a thread of this process; processes: a forked process each\n"
    "  --shape S       simple, pipeline or scatter-gather (default scatter-gather)\n"
    "  --tasks N       tasks of the workflow (default: simple 2, pipeline 4, scatter-gather 6)\n"
    "  --size B        bytes every producer hands over per iteration, a multiple of 8 (default 10000000)\n"
    "  --iterations N  timed iterations (default: bench/shared-objects/bench.py's for the size and tasks)\n"
    "  --warmup N      iterations before the clock starts (default 2)\n"
    "  --slots N       buffers per producer, 1 to 16 (default 2)\n"
    "  --sync S        shared: process-shared robust mutexes (default); private: threads.cpp's, threads only\n"
    "  --memory M      shared: buffers in the MAP_SHARED region (default); private: in private memory as\n"
    "                  threads.cpp's, threads only\n"
    "  --timeout-ms N  the longest wait for one handoff or barrier before the run fails (default 30000)\n"
    "  --die T:I       (a test) task T kills itself holding a lock at iteration I; processes only\n"
    "Prints one JSON line: iterations/s, wall time of the timed iterations, checksum, context switches.\n";

// Names the option, the value (NULL: none given) and the cause.
static int bad(const char* option, const char* value, const char* cause) {
    if (value == NULL) {
        fprintf(stderr, "proc_vs_threads: %s: %s (see --help)\n", option, cause);
    } else {
        fprintf(stderr, "proc_vs_threads: %s=%s: %s (see --help)\n", option, value, cause);
    }
    return 2;
}

// A whole decimal number in [min, max], nothing else.
static bool parse_u64(const char* text, uint64_t min, uint64_t max, uint64_t* out) {
    uint64_t v = 0;
    if (*text == '\0') {
        return false;
    }
    for (const char* c = text; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9' || v > (UINT64_MAX - (uint64_t)(*c - '0')) / 10) {
            return false;
        }
        v = v * 10 + (uint64_t)(*c - '0');
    }
    *out = v;
    return v >= min && v <= max;
}

// bench.py's iterations_for(size, tasks, quick=False): about 3 GB handed over, 8 to 200 iterations.
static uint64_t default_iterations(uint64_t size, int tasks) {
    const double n = 3000.0 * 1000000 / ((double)size * (tasks > 2 ? tasks - 1 : 1));
    return n > 200 ? 200 : n < 8 ? 8 : (uint64_t)n;
}

typedef struct {
    const char* as;
    const char* shape;
    const char* tasks;
    const char* size;
    const char* iterations;
    const char* warmup;
    const char* slots;
    const char* sync;
    const char* memory;
    const char* timeout_ms;
    const char* die;
} Given;

// Collects --name value and --name=value pairs; 0 when done, 2 for a bad argument, 1 for --help.
static int collect(int argc, char** argv, Given* g) {
    const struct {
        const char* name;
        const char** value;
    } known[] = {{"--as", &g->as},
                 {"--shape", &g->shape},
                 {"--tasks", &g->tasks},
                 {"--size", &g->size},
                 {"--iterations", &g->iterations},
                 {"--warmup", &g->warmup},
                 {"--slots", &g->slots},
                 {"--sync", &g->sync},
                 {"--memory", &g->memory},
                 {"--timeout-ms", &g->timeout_ms},
                 {"--die", &g->die}};
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(kUsage, stdout);
            return 1;
        }
        const char* eq = strchr(argv[i], '=');
        const size_t len = eq != NULL ? (size_t)(eq - argv[i]) : strlen(argv[i]);
        size_t k = 0;
        while (k < sizeof known / sizeof known[0] &&
               (strlen(known[k].name) != len || strncmp(known[k].name, argv[i], len) != 0)) {
            ++k;
        }
        if (k == sizeof known / sizeof known[0]) {
            return bad(argv[i], NULL, "unknown option");
        }
        if (eq == NULL && i + 1 == argc) {
            return bad(known[k].name, NULL, "needs a value");
        }
        *known[k].value = eq != NULL ? eq + 1 : argv[++i];
    }
    return 0;
}

static int parse_options(int argc, char** argv, Options* o) {
    Given g = {0};
    const int collected = collect(argc, argv, &g);
    if (collected != 0) {
        return collected == 1 ? 0 : 2;
    }
    if (g.as == NULL) {
        return bad("--as", NULL, "missing: say threads or processes");
    }
    if (strcmp(g.as, "threads") != 0 && strcmp(g.as, "processes") != 0) {
        return bad("--as", g.as, "expected threads or processes");
    }
    o->processes = strcmp(g.as, "processes") == 0;
    o->shape = 2;
    if (g.shape != NULL) {
        for (o->shape = 0; o->shape < 3 && strcmp(kShapes[o->shape], g.shape) != 0; ++o->shape) {
        }
        if (o->shape == 3) {
            return bad("--shape", g.shape, "expected simple, pipeline or scatter-gather");
        }
    }
    const int least = o->shape == 2 ? 3 : 2, most = o->shape == 0 ? 2 : kMaxTasks;
    uint64_t v = 0;
    o->tasks = o->shape == 0 ? 2 : o->shape == 1 ? 4 : 6;
    if (g.tasks != NULL) {
        if (!parse_u64(g.tasks, (uint64_t)least, (uint64_t)most, &v)) {
            char cause[96];
            if (least == most) {
                snprintf(cause, sizeof cause, "a %s workflow has %d tasks", kShapes[o->shape], least);
            } else {
                snprintf(cause, sizeof cause, "a %s workflow has %d to %d tasks", kShapes[o->shape], least, most);
            }
            return bad("--tasks", g.tasks, cause);
        }
        o->tasks = (int)v;
    }
    o->size = 10000000;
    if (g.size != NULL && (!parse_u64(g.size, 8, UINT64_MAX / 2, &o->size) || o->size % 8 != 0)) {
        return bad("--size", g.size, "expected a whole number of bytes, a multiple of 8 (whole 64-bit words)");
    }
    // Every producer but the sink has --slots buffers of --size bytes in memory at once.
    o->slots = 2;
    if (g.slots != NULL) {
        if (!parse_u64(g.slots, 1, kMaxSlots, &v)) {
            return bad("--slots", g.slots, "expected 1 to 16");
        }
        o->slots = (uint32_t)v;
    }
    const double need = (double)(o->tasks - 1) * o->slots * (double)o->size;
    const double memory = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (need > memory / 2) {
        return bad("--size", g.size != NULL ? g.size : "10000000",
                   "the producers' slots would take more than half of this machine's memory");
    }
    o->iterations = default_iterations(o->size, o->tasks);
    if (g.iterations != NULL && !parse_u64(g.iterations, 1, 10000000, &o->iterations)) {
        return bad("--iterations", g.iterations, "expected 1 to 10000000");
    }
    o->warmup = 2;
    if (g.warmup != NULL && !parse_u64(g.warmup, 0, 10000000, &o->warmup)) {
        return bad("--warmup", g.warmup, "expected 0 to 10000000");
    }
    o->timeout_ms = 30000;
    if (g.timeout_ms != NULL && !parse_u64(g.timeout_ms, 1, 86400000, &o->timeout_ms)) {
        return bad("--timeout-ms", g.timeout_ms, "expected 1 to 86400000 milliseconds");
    }
    if (g.sync != NULL && strcmp(g.sync, "shared") != 0 && strcmp(g.sync, "private") != 0) {
        return bad("--sync", g.sync, "expected shared or private");
    }
    o->private_sync = g.sync != NULL && strcmp(g.sync, "private") == 0;
    if (o->private_sync && o->processes) {
        return bad("--sync", g.sync, "processes need process-shared mutexes: private is for --as threads");
    }
    if (g.memory != NULL && strcmp(g.memory, "shared") != 0 && strcmp(g.memory, "private") != 0) {
        return bad("--memory", g.memory, "expected shared or private");
    }
    o->private_memory = g.memory != NULL && strcmp(g.memory, "private") == 0;
    if (o->private_memory && o->processes) {
        return bad("--memory", g.memory, "processes hand buffers over in shared memory: private is for --as threads");
    }
    o->die_task = -1;
    if (g.die != NULL) {
        char task[24] = "", at[24] = "";
        const char* colon = strchr(g.die, ':');
        uint64_t t = 0;
        if (colon != NULL && (size_t)(colon - g.die) < sizeof task && strlen(colon + 1) < sizeof at) {
            memcpy(task, g.die, (size_t)(colon - g.die));
            strcpy(at, colon + 1);
        }
        if (!parse_u64(task, 0, (uint64_t)o->tasks - 1, &t) || !parse_u64(at, 0, o->warmup + o->iterations - 1, &v)) {
            return bad("--die", g.die, "expected TASK:ITERATION, a task of the workflow and an iteration it runs");
        }
        if (!o->processes) {
            return bad("--die", g.die, "a thread cannot die alone: use --as processes");
        }
        o->die_task = (int)t;
        o->die_at = v;
    }
    return -1;
}

int main(int argc, char** argv) {
    static Run run;  // large: not on the stack
    const int parsed = parse_options(argc, argv, &run.opt);
    if (parsed >= 0) {
        return parsed;
    }
    build_graph(&run);
    if (map_region(&run) != 0) {
        return 1;
    }
    double seconds = 0;
    int rc = run.opt.processes ? run_processes(&run, &seconds) : run_threads(&run, &seconds);
    if (rc == 0) {
        rc = report(&run, seconds, stdout);
    }
    unmap_region(&run);
    return rc == 0 ? 0 : 1;
}
