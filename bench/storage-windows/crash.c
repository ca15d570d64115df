/* SPDX-License-Identifier: MIT */
/* Crash consistency of checkpoints in storage windows. Each rank's state
 * (--size bytes) is checkpointed every step into a storage window holding
 * two slots, used alternately: a slot is a header page {magic, step,
 * checksum} followed by the data. A checkpoint writes the data, makes it
 * durable (MPI_Win_sync), then writes the header and makes that durable, and
 * a barrier ends it: checkpoint s is complete when every rank passed it.
 *
 * A start first looks for checkpoints: each rank takes its newest slot whose
 * checksum matches, the ranks agree on the oldest of those (a rank killed
 * while writing s+1 leaves s in its other slot), verify every value of that
 * step's state, and continue from there. So kill -9 at any moment costs at
 * most the step in progress.
 *
 * Usage: crash --dir DIR [--steps 20] [--size 16M] [--step-ms 0]
 *              [--crash-rank R --crash-step S]   (R kills itself halfway through
 *                                                  writing checkpoint S)
 *              [--json FILE] [--repeat N]
 * Prints "checkpoint S complete" (rank 0) and a JSON line with the step it
 * resumed from. Writes DIR/pid-<rank> so a harness can kill a rank. */
#include "sw.h"

#include <signal.h>

enum { HEADER = 4096 };
static const uint64_t magic = 0x5354524154414350ULL; /* "STRATACP" */

typedef struct {
    uint64_t magic, step, checksum, words;
} header;

static uint64_t value(int rank, uint64_t step, uint64_t i) {
    return sw_mix(((uint64_t)rank << 48) ^ (step << 32) ^ i);
}

static uint64_t checksum(const uint64_t* data, uint64_t words, uint64_t step) {
    uint64_t sum = step * 0x9e3779b97f4a7c15ULL;
    for (uint64_t i = 0; i < words; ++i) sum = (sum ^ data[i]) * 0x100000001b3ULL + i;
    return sum;
}

typedef struct {
    unsigned char* base;
    size_t slot_bytes;
    uint64_t words;
} slots;

static header* slot_header(const slots* s, int slot) {
    return (header*)(s->base + (size_t)slot * s->slot_bytes);
}

static uint64_t* slot_data(const slots* s, int slot) {
    return (uint64_t*)(s->base + (size_t)slot * s->slot_bytes + HEADER);
}

/* The step of a slot whose checksum matches, or 0. */
static uint64_t valid_step(const slots* s, int slot) {
    const header* h = slot_header(s, slot);
    if (h->magic != magic || h->words != s->words || h->step == 0) return 0;
    return checksum(slot_data(s, slot), s->words, h->step) == h->checksum ? h->step : 0;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    sw_config config = sw_config_from(argc, argv, "storage");
    config.variant = "storage";
    const long steps = sw_opt_long(argc, argv, "--steps", 20);
    const size_t size = sw_opt_size(argc, argv, "--size", "16M") / 8 * 8;
    const long step_ms = sw_opt_long(argc, argv, "--step-ms", 0);
    const long crash_rank = sw_opt_long(argc, argv, "--crash-rank", -1);
    const long crash_step = sw_opt_long(argc, argv, "--crash-step", -1);
    const int rank = sw_rank();
    char path[4096];
    snprintf(path, sizeof path, "%s/pid-%d", config.dir, rank);
    FILE* pid = fopen(path, "w");
    CHECK(pid, "%s: %s", path, strerror(errno));
    fprintf(pid, "%d\n", (int)getpid());
    fclose(pid);

    slots s = {.slot_bytes = HEADER + (size + 4095) / 4096 * 4096, .words = size / 8};
    MPI_Win win;
    s.base = sw_win_allocate(&config, "crash-%r.dat", 0, 2 * s.slot_bytes, 1, &win);

    /* Resume: the newest step every rank holds intact. */
    const uint64_t mine[2] = {valid_step(&s, 0), valid_step(&s, 1)};
    uint64_t newest = mine[0] > mine[1] ? mine[0] : mine[1], resume = 0;
    MPI_Allreduce(&newest, &resume, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    uint64_t* state = malloc(size);
    CHECK(state, "cannot allocate %zu bytes", size);
    if (resume > 0) {
        const int slot = mine[0] == resume ? 0 : 1;
        CHECK(mine[slot] == resume, "rank %d holds steps %" PRIu64 " and %" PRIu64 ", not %" PRIu64, rank, mine[0],
              mine[1], resume);
        memcpy(state, slot_data(&s, slot), size);
        for (uint64_t i = 0; i < s.words; ++i) {
            CHECK(state[i] == value(rank, resume, i), "resumed state of step %" PRIu64 " differs at word %" PRIu64,
                  resume, i);
        }
    }

    double checkpoint_seconds = 0;
    for (uint64_t step = resume + 1; step <= (uint64_t)steps; ++step) {
        for (uint64_t i = 0; i < s.words; ++i) state[i] = value(rank, step, i); /* the computation */
        if (step_ms > 0) usleep((useconds_t)step_ms * 1000);
        const double start = MPI_Wtime();
        const int slot = (int)(step % 2);
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        slot_header(&s, slot)->step = 0; /* the slot is being rewritten */
        if (rank == crash_rank && (long)step == crash_step) {
            memcpy(slot_data(&s, slot), state, size / 2);
            CHECK_MPI(MPI_Win_sync(win));
            raise(SIGKILL);
        }
        memcpy(slot_data(&s, slot), state, size);
        CHECK_MPI(MPI_Win_sync(win));
        *slot_header(&s, slot) = (header){magic, step, checksum(state, s.words, step), s.words};
        CHECK_MPI(MPI_Win_sync(win));
        CHECK_MPI(MPI_Win_unlock(rank, win));
        MPI_Barrier(MPI_COMM_WORLD);
        checkpoint_seconds += MPI_Wtime() - start;
        if (rank == 0) {
            printf("checkpoint %" PRIu64 " complete\n", step);
            fflush(stdout);
        }
    }
    sw_emit(argc, argv,
            "\"app\":\"crash\",\"repeat\":%ld,\"ranks\":%d,\"state_bytes\":%zu,\"steps\":%ld,\"resumed_from\":%" PRIu64
            ",\"checkpoint_seconds\":%.6f,\"verified\":true",
            sw_opt_long(argc, argv, "--repeat", 0), sw_size(), size, steps, resume, checkpoint_seconds);
    CHECK_MPI(MPI_Win_free(&win));
    free(state);
    snprintf(path, sizeof path, "%s/pid-%d", config.dir, rank);
    unlink(path);
    MPI_Finalize();
    return 0;
}
