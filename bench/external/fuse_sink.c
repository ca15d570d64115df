/* SPDX-License-Identifier: MIT */
/* The floor of the kernel's FUSE write path (docs/benchmarks/external/fuse-bound/):
 * a libfuse3 low-level daemon with one regular file, /out, that accepts every
 * write and either drops it (--sink discard) or copies it into a memfd
 * (--sink copy: what any daemon that keeps the bytes must do, and what
 * strata-fsd does with an output). Mounted and served as strata-fsd serves an
 * output (src/external/fsd/main.cpp, ops.cpp): the same session options
 * (libfuse's defaults, so max_write and max_pages of 1 MiB), the same init
 * (auto_inval_data off), direct I/O at open, no flush handler, timeouts of 0
 * for the file's attributes, and the multi-threaded loop (at most 16 threads,
 * 4 idle) in a thread of its own. No strata code: what this costs, every FUSE
 * daemon on this kernel pays.
 *
 *   fuse_sink --sink discard|copy --mount DIR [--owner PID]
 *
 * Prints "ready libfuse <version>" once mounted, then serves until DIR is
 * unmounted (fusermount3 -u), SIGTERM/SIGINT/SIGHUP arrive or the owner dies;
 * unmounts, prints "writes <requests> bytes <total> largest <request bytes>"
 * and exits 0. Truncating /out to 0 (open with O_TRUNC, or truncate) frees the
 * copy's pages, so each run of a writer allocates its pages anew, as a fresh
 * tmpfs file does. Reads of /out return the copy (discard: EIO).
 *
 * Built by bench/external/CMakeLists.txt (bench_external_fuse_sink); by hand:
 *   gcc -O2 fuse_sink.c $(pkg-config --cflags --libs fuse3) -o fuse_sink */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 312 /* strata-fsd's API level */
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { kRootIno = 1, kFileIno = 2 };
static const char kFileName[] = "out";
static const double kForever = 86400.0;

struct sink {
    bool copy;
    int memfd;             /* copy: the file's bytes */
    _Atomic uint64_t size; /* the file's size: its highest byte written, or a truncation */
    _Atomic uint64_t writes;
    _Atomic uint64_t bytes;
    _Atomic uint64_t largest;
    struct fuse_session* session;
    int loop_done; /* eventfd: the loop thread ended */
};

static struct sink* sink_of(fuse_req_t req) {
    return fuse_req_userdata(req);
}

static struct stat attributes(struct sink* s, fuse_ino_t ino) {
    struct stat st;
    memset(&st, 0, sizeof(st));
    st.st_ino = ino;
    st.st_uid = getuid();
    st.st_gid = getgid();
    if (ino == kRootIno) {
        st.st_mode = S_IFDIR | 0500;
        st.st_nlink = 2;
        return st;
    }
    st.st_mode = S_IFREG | 0600;
    st.st_nlink = 1;
    st.st_size = (off_t)atomic_load(&s->size);
    st.st_blocks = (st.st_size + 511) / 512;
    return st;
}

static int truncate_to(struct sink* s, uint64_t size) {
    if (s->copy && ftruncate(s->memfd, (off_t)size) != 0) {
        return errno;
    }
    atomic_store(&s->size, size);
    return 0;
}

static void atomic_raise(_Atomic uint64_t* value, uint64_t to) {
    uint64_t seen = atomic_load(value);
    while (seen < to && !atomic_compare_exchange_weak(value, &seen, to)) {
    }
}

static void on_init(void* userdata, struct fuse_conn_info* conn) {
    (void)userdata;
    conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA; /* as strata-fsd */
}

static void on_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
    if (parent != kRootIno || strcmp(name, kFileName) != 0) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct fuse_entry_param param;
    memset(&param, 0, sizeof(param));
    param.ino = kFileIno;
    param.generation = 1;
    param.attr = attributes(sink_of(req), kFileIno);
    param.entry_timeout = kForever;
    param.attr_timeout = 0.0; /* a growing file, as strata-fsd's outputs */
    fuse_reply_entry(req, &param);
}

static void on_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
    (void)fi;
    const struct stat st = attributes(sink_of(req), ino);
    fuse_reply_attr(req, &st, ino == kRootIno ? kForever : 0.0);
}

static void on_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, struct fuse_file_info* fi) {
    (void)fi;
    if (ino != kFileIno) {
        fuse_reply_err(req, EACCES);
        return;
    }
    if ((to_set & FUSE_SET_ATTR_SIZE) != 0) {
        const int err = truncate_to(sink_of(req), (uint64_t)attr->st_size);
        if (err != 0) {
            fuse_reply_err(req, err);
            return;
        }
    }
    const struct stat st = attributes(sink_of(req), ino);
    fuse_reply_attr(req, &st, 0.0);
}

static void on_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
    if (ino != kFileIno) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    /* libfuse asks for atomic_o_trunc: a truncating open arrives here, not as a setattr. */
    if ((fi->flags & O_TRUNC) != 0) {
        const int err = truncate_to(sink_of(req), 0);
        if (err != 0) {
            fuse_reply_err(req, err);
            return;
        }
    }
    fi->keep_cache = 0;
    fi->direct_io = 1; /* as strata-fsd's outputs: writes go to the daemon, not to the page cache */
    fuse_reply_open(req, fi);
}

static void on_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info* fi) {
    (void)ino;
    (void)fi;
    struct sink* s = sink_of(req);
    if (!s->copy) {
        fuse_reply_err(req, EIO); /* the bytes were not kept */
        return;
    }
    const uint64_t total = atomic_load(&s->size);
    const uint64_t left = (uint64_t)off >= total ? 0 : total - (uint64_t)off;
    const size_t length = left < size ? (size_t)left : size;
    struct fuse_bufvec buf = FUSE_BUFVEC_INIT(length);
    buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    buf.buf[0].fd = s->memfd;
    buf.buf[0].pos = off;
    fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void on_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
                     struct fuse_file_info* fi) {
    (void)ino;
    (void)fi;
    struct sink* s = sink_of(req);
    for (size_t done = 0; s->copy && done < size;) {
        const ssize_t n = pwrite(s->memfd, buf + done, size - done, off + (off_t)done);
        if (n < 0) {
            fuse_reply_err(req, errno);
            return;
        }
        done += (size_t)n;
    }
    atomic_raise(&s->size, (uint64_t)off + size);
    atomic_fetch_add(&s->writes, 1);
    atomic_fetch_add(&s->bytes, size);
    atomic_raise(&s->largest, size);
    fuse_reply_write(req, size);
}

static void on_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

static void on_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info* fi) {
    (void)ino;
    (void)datasync;
    (void)fi;
    fuse_reply_err(req, 0);
}

static void* serve(void* arg) {
    struct sink* s = arg;
    struct fuse_loop_config* config = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(config, 16);
    fuse_loop_cfg_set_idle_threads(config, 4);
    fuse_session_loop_mt(s->session, config);
    fuse_loop_cfg_destroy(config);
    const uint64_t one = 1;
    (void)!write(s->loop_done, &one, sizeof(one));
    return NULL;
}

static void usage_error(const char* what) {
    fprintf(stderr, "fuse_sink: %s\nusage: fuse_sink --sink discard|copy --mount DIR [--owner PID]\n", what);
    exit(2);
}

/* Waits for the end of the loop (an unmount), a signal or the owner's death. */
static void wait_for_the_end(struct sink* s, pid_t owner) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    const int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC);
    const int owner_fd = owner > 0 ? (int)syscall(SYS_pidfd_open, owner, 0) : -1;
    struct pollfd fds[3] = {{s->loop_done, POLLIN, 0}, {signal_fd, POLLIN, 0}, {owner_fd, POLLIN, 0}};
    while (poll(fds, 3, -1) < 0 && errno == EINTR) {
    }
}

int main(int argc, char** argv) {
    const char* mode = NULL;
    const char* mount_point = NULL;
    pid_t owner = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--sink") == 0) {
            mode = argv[i + 1];
        } else if (strcmp(argv[i], "--mount") == 0) {
            mount_point = argv[i + 1];
        } else if (strcmp(argv[i], "--owner") == 0) {
            owner = (pid_t)atoi(argv[i + 1]);
        } else {
            usage_error(argv[i]);
        }
    }
    if (mode == NULL || mount_point == NULL || (strcmp(mode, "discard") != 0 && strcmp(mode, "copy") != 0)) {
        usage_error("--sink discard|copy and --mount DIR are required");
    }
    /* Signals are waited for by the main thread, never delivered to the workers. */
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGINT);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGHUP);
    sigaddset(&blocked, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &blocked, NULL);

    static struct sink s;
    s.copy = strcmp(mode, "copy") == 0;
    s.memfd = s.copy ? memfd_create("fuse-sink", MFD_CLOEXEC) : -1;
    s.loop_done = eventfd(0, EFD_CLOEXEC);
    if ((s.copy && s.memfd < 0) || s.loop_done < 0) {
        perror("fuse_sink: memfd_create/eventfd");
        return 1;
    }
    const struct fuse_lowlevel_ops ops = {
        .init = on_init,
        .lookup = on_lookup,
        .getattr = on_getattr,
        .setattr = on_setattr,
        .open = on_open,
        .read = on_read,
        .write = on_write,
        .release = on_release,
        .fsync = on_fsync,
    };
    char* args_v[] = {"fuse_sink", "-o", "fsname=fuse-sink,subtype=fuse-sink", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, args_v);
    s.session = fuse_session_new(&args, &ops, sizeof(ops), &s);
    if (s.session == NULL || fuse_session_mount(s.session, mount_point) != 0) {
        fprintf(stderr, "fuse_sink: cannot mount %s (see the message above)\n", mount_point);
        return 1;
    }
    pthread_t loop;
    if (pthread_create(&loop, NULL, serve, &s) != 0) {
        fuse_session_unmount(s.session);
        return 1;
    }
    pthread_detach(loop);
    printf("ready libfuse %s\n", fuse_pkgversion());
    fflush(stdout);
    wait_for_the_end(&s, owner);
    fuse_session_unmount(s.session);
    printf("writes %llu bytes %llu largest %llu\n", (unsigned long long)atomic_load(&s.writes),
           (unsigned long long)atomic_load(&s.bytes), (unsigned long long)atomic_load(&s.largest));
    fflush(stdout);
    /* As strata-fsd: exiting closes /dev/fuse, with workers still parked in it. */
    _exit(0);
}
