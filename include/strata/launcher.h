/* SPDX-License-Identifier: MIT
 * strata_launcher_finalize(): end an MPI rank without MPI_Finalize, cleanly (C and C++).
 *
 * Why: across hosts MPICH 4.0.2's ch4:ucx MPI_Finalize can deadlock (every rank
 * disconnects its endpoints, then waits in a PMI barrier; MPICH PR #6596), so
 * strata's ranks that run across nodes exit without it. But Hydra's proxy
 * (pmip_cb.c, pmi_cb) takes a PMI socket that closes before a "finalize"
 * command as a failed process: it presets the rank's exit status to the raw
 * value 1, which mpiexec prints as "Hangup (signal 1)", and kills or signals
 * the node's other ranks — a race with the proxy's reaping, so a clean end
 * failed now and then. The finalize command MPICH's own PMI_Finalize sends
 * (simple PMI-1 wire protocol; libmpich.so.12 does not export PMI_Finalize)
 * tells the proxy the end is deliberate, with no barrier among ranks.
 *
 * Promise: strata_launcher_finalize() sends "cmd=finalize" on the socket
 * Hydra gave this process (PMI_FD), waits up to timeout_ms for the
 * acknowledgement and closes the socket. It returns 1 when the launcher
 * acknowledged, 0 when there is no launcher socket (a singleton run, another
 * launcher, PMI_FD not a socket), -1 when the socket failed or no
 * acknowledgement came in time. Call it once, as the
 * last step before _exit, and only in a process that called MPI_Init: after it,
 * no MPI call may be made. Async-signal-unsafe (getenv), so not from a handler.
 */
#ifndef STRATA_LAUNCHER_H
#define STRATA_LAUNCHER_H

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
#define STRATA_LAUNCHER_CAST(type, value) static_cast<type>(value)
#define STRATA_LAUNCHER_NULL nullptr
#else
#define STRATA_LAUNCHER_CAST(type, value) ((type)(value))
#define STRATA_LAUNCHER_NULL NULL
#endif

static inline int strata_launcher_finalize(int timeout_ms) {
    const char* text = getenv("PMI_FD");
    if (text == STRATA_LAUNCHER_NULL || *text == '\0') {
        return 0;
    }
    char* end = STRATA_LAUNCHER_NULL;
    errno = 0;
    const long value = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || value < 0 || value > INT_MAX) {
        return 0;
    }
    const int fd = STRATA_LAUNCHER_CAST(int, value);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        return 0;
    }
    static const char request[] = "cmd=finalize\n";
    size_t sent = 0;
    while (sent < sizeof request - 1) {
        const ssize_t n = send(fd, request + sent, sizeof request - 1 - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        sent += STRATA_LAUNCHER_CAST(size_t, n);
    }
    /* The answer is one line: "cmd=finalize_ack\n". */
    char answer[64];
    size_t got = 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const long long until = STRATA_LAUNCHER_CAST(long long, now.tv_sec) * 1000 + now.tv_nsec / 1000000 + timeout_ms;
    while (got < sizeof answer - 1 && (got == 0 || answer[got - 1] != '\n')) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        const long long left = until - (STRATA_LAUNCHER_CAST(long long, now.tv_sec) * 1000 + now.tv_nsec / 1000000);
        if (left <= 0) {
            return -1;
        }
        struct pollfd wait = {.fd = fd, .events = POLLIN, .revents = 0};
        const int ready = poll(&wait, 1, STRATA_LAUNCHER_CAST(int, left));
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        if (ready <= 0) {
            return -1;
        }
        const ssize_t n = recv(fd, answer + got, sizeof answer - 1 - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        got += STRATA_LAUNCHER_CAST(size_t, n);
    }
    answer[got] = '\0';
    shutdown(fd, SHUT_RDWR);
    close(fd);
    return strncmp(answer, "cmd=finalize_ack", strlen("cmd=finalize_ack")) == 0 ? 1 : -1;
}

#endif
