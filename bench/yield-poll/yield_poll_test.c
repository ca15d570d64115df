/* SPDX-License-Identifier: MIT */
/* Loaded under LD_PRELOAD=libstrata-yield-poll.so: an empty zero-timeout
 * epoll_wait yields, one that finds an event or was given a timeout does not,
 * and every call returns what the kernel's epoll_wait returns. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

static int failures;
static void check(int ok, const char* what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        ++failures;
    }
}

int main(void) {
    unsigned long (*yields)(void) = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "strata_yield_poll_yields");
    if (yields == NULL) {
        fprintf(stderr, "FAIL: libstrata-yield-poll is not loaded (run under LD_PRELOAD)\n");
        return 1;
    }
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    int fds[2];
    check(ep >= 0 && pipe(fds) == 0, "epoll_create1 and pipe");
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[0]};
    check(epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev) == 0, "epoll_ctl");
    struct epoll_event out[4];
    const unsigned long before = yields();
    for (int i = 0; i < 100; ++i) check(epoll_wait(ep, out, 4, 0) == 0, "an empty poll returned events");
    check(yields() - before == 100, "100 empty zero-timeout polls did not yield 100 times");
    check(epoll_wait(ep, out, 4, 1) == 0, "an empty 1 ms wait returned events");
    check(yields() - before == 100, "a wait with a timeout yielded");
    check(write(fds[1], "x", 1) == 1, "write");
    check(epoll_wait(ep, out, 4, 0) == 1 && out[0].data.fd == fds[0], "a ready pipe was not returned");
    check(yields() - before == 100, "a poll that found an event yielded");
    printf("%s: %d failures\n", failures == 0 ? "ok" : "FAILED", failures);
    return failures == 0 ? 0 : 1;
}
