// SPDX-License-Identifier: MIT
// `strata ocr [options] ./program args...`: runs an OCR program linked with
// -lstrata-ocr, with the runtime options given as flags instead of
// environment variables (docs/runtime.md); `-n N` runs it on N ranks through
// mpiexec as one job, and removes what the job's ranks left on this host once
// mpiexec ended (docs/runtime.md, "Distributed OCR" and "Failures").
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "external/config.hpp"
#include "external/tree_kill.hpp"
#include "strata/error.hpp"
#include "strata/runtime.hpp"
#include "strata/runtime/ocr.hpp"
#include "strata/shm/admin.hpp"

namespace strata::cli {

namespace {

void set(const char* name, const std::string& value) {
    if (!value.empty()) {
        ::setenv(name, value.c_str(), 1);
    }
}

// mpiexec for N ranks. Without -disable-auto-cleanup Hydra SIGKILLs every rank
// when one dies; with it the survivors get its notice (SIGUSR1), name the dead
// rank, remove their files and end (docs/runtime.md, "Failures") -- but
// MPICH 4.0.2's proxy still SIGKILLs the other ranks it started once one of
// them dies, so on this machine each rank gets a proxy of its own (the fork
// launcher, one "host" per rank; the ranks find the CPUs they share
// themselves). $STRATA_MPIEXEC (split at blanks: a launcher with its options,
// its hosts included) replaces all but -disable-auto-cleanup -n N.
std::vector<std::string> mpiexec_command(int ranks, std::vector<std::string> command) {
    std::vector<std::string> full;
    const char* launcher = std::getenv("STRATA_MPIEXEC");
    if (launcher != nullptr && *launcher != '\0') {
        const std::string words = launcher;
        for (std::size_t at = 0; at < words.size();) {
            const std::size_t start = words.find_first_not_of(" \t", at);
            if (start == std::string::npos) {
                break;
            }
            const std::size_t end = words.find_first_of(" \t", start);
            full.push_back(words.substr(start, end == std::string::npos ? std::string::npos : end - start));
            at = end == std::string::npos ? words.size() : end;
        }
    } else {
        std::string hosts;
        for (int r = 0; r < ranks; ++r) {
            hosts += fmt::format("{}127.0.{}.{}", r == 0 ? "" : ",", (r + 1) / 250, (r + 1) % 250 + 1);
        }
        full = {"mpiexec", "-launcher", "fork", "-hosts", hosts, "-ppn", "1"};
    }
    full.insert(full.end(), {"-disable-auto-cleanup", "-n", std::to_string(ranks)});
    full.insert(full.end(), std::make_move_iterator(command.begin()), std::make_move_iterator(command.end()));
    return full;
}

// Runs `command` in place of this process; returns only when it cannot.
int exec(const std::vector<std::string>& command) {
    std::vector<char*> argv;
    argv.reserve(command.size() + 1);
    for (const std::string& arg : command) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    const int err = errno;
    fmt::print(stderr, "strata ocr: program={}: cannot run it: {}\n", command.front(), describe_errno(err));
    return err == ENOENT ? 127 : 126;
}

std::atomic<pid_t> g_mpiexec{0};
std::atomic<int> g_forwarded{0};  // the first signal passed on to mpiexec

void forward_signal(int sig) {
    int none = 0;
    g_forwarded.compare_exchange_strong(none, sig);
    if (const pid_t child = g_mpiexec.load(); child > 0) {
        ::kill(child, sig);
    }
}

// The files a job's ranks left on this host, however they ended (every rank
// SIGKILLed, or killed by their proxies before they cleaned up): the segments
// of their shared data blocks, named after the job, that nobody uses, and the
// storage directories of dead runs.
// mpiexec may end before the ranks do (MPICH 4.0.2's mpiexec exits 255 when
// it cannot signal a proxy that just ended, and its proxies then kill their
// ranks): segments still in use are collected again once their users are
// gone, for up to `ranks_gone_wait`.
constexpr auto ranks_gone_wait = std::chrono::seconds(10);

// The job's segments still in use by a live process.
std::size_t job_segments_in_use(const std::string& prefix) {
    auto listed = list_segments();
    if (!listed) {
        return 0;
    }
    return static_cast<std::size_t>(std::ranges::count_if(
        *listed, [&](const SegmentInfo& s) { return s.name.starts_with(prefix) && s.users_alive > 0; }));
}

void clean_up_job(const std::string& job) {
    const std::string prefix = ocr::job_segment_prefix(job);
    const auto until = std::chrono::steady_clock::now() + ranks_gone_wait;
    std::size_t removed_count = 0;
    std::size_t in_use = 0;
    for (;;) {
        // Counted before the collection: a rank that ends between the two would otherwise
        // be counted gone after the collection had skipped its segments as in use, and
        // they would stay (seen in a loaded fresh-clone run: 26 files left).
        in_use = job_segments_in_use(prefix);
        auto removed = collect_segments({}, prefix);
        if (!removed) {
            fmt::print(stderr, "strata ocr: the segments the job left: {}\n", removed.error().what());
            break;
        }
        removed_count += removed->size();
        if (in_use == 0 || std::chrono::steady_clock::now() >= until) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (removed_count > 0) {
        fmt::print(stderr, "strata ocr: removed {} segment{} of shared data blocks the job's ranks left ({}*)\n",
                   removed_count, removed_count == 1 ? "" : "s", prefix);
    }
    if (in_use > 0) {
        fmt::print(stderr,
                   "strata ocr: {} segment{} of the job ({}*) still in use {} s after mpiexec ended: left to "
                   "their users (`strata shm gc` removes them once those are gone)\n",
                   in_use, in_use == 1 ? "" : "s", prefix, ranks_gone_wait.count());
    }
    (void)ocr::collect_db_dirs(ocr::default_db_dir());
}

// Waits until every process of the job that outlived mpiexec has ended: this
// process is the job's subreaper, so ranks whose proxy ended before them (a
// signal to mpiexec: it exits once it passed it on, and the proxies' SIGKILL
// takes a moment under load) are its children now. After `ranks_gone_wait`
// those still there are SIGKILLed: nothing of the job outlives `strata ocr`.
void reap_job(std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    bool killed = false;
    for (;;) {
        int status = 0;
        const pid_t reaped = ::waitpid(-1, &status, WNOHANG);
        if (reaped > 0) {
            continue;
        }
        if (reaped < 0 && errno != EINTR) {
            return;  // ECHILD: none left
        }
        const auto now = std::chrono::steady_clock::now();
        if (killed && now >= until + std::chrono::seconds(2)) {
            return;  // SIGKILLed and still there: nothing more to do
        }
        if (!killed && now >= until) {
            killed = true;
            std::size_t count = 0;
            for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
                const std::string name = entry.path().filename().string();
                if (!name.empty() && std::ranges::all_of(name, [](char c) { return c >= '0' && c <= '9'; })) {
                    const auto pid = static_cast<pid_t>(std::stol(name));
                    if (external::parent_of(pid) == ::getpid() && ::kill(pid, SIGKILL) == 0) {
                        ++count;
                    }
                }
            }
            fmt::print(stderr, "strata ocr: {} process{} of the job still ran {} s after mpiexec ended: killed\n",
                       count, count == 1 ? "" : "es", limit.count());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

// mpiexec as a child named by a job (STRATA_OCR_JOB, which its ranks inherit),
// then clean_up_job(). Signals to this process go to mpiexec; this process
// killed, mpiexec gets SIGTERM and ends the job. Returns mpiexec's exit code,
// or ends by the signal that ended it or that this process passed on to it.
int run_job(const std::vector<std::string>& command) {
    const std::string job = fmt::format("j{}_{:08x}", ::getpid(), std::random_device{}());
    ::setenv("STRATA_OCR_JOB", job.c_str(), 1);
    const pid_t parent = ::getpid();
    // The job's processes that outlive their parents (ranks whose proxy ended
    // first) become this process's children, for reap_job().
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    const pid_t child = ::fork();
    if (child < 0) {
        fmt::print(stderr, "strata ocr: program={}: cannot fork: {}\n", command.front(), describe_errno(errno));
        return 126;
    }
    if (child == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) {
            ::_exit(126);  // the launcher died before prctl
        }
        ::_exit(exec(command));
    }
    g_mpiexec.store(child);
    struct sigaction forward {};
    forward.sa_handler = forward_signal;
    sigemptyset(&forward.sa_mask);
    forward.sa_flags = SA_RESTART;
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
        ::sigaction(sig, &forward, nullptr);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    reap_job(ranks_gone_wait);
    clean_up_job(job);
    // Ended by a signal: mpiexec's own, else the one it was sent (Hydra exits 0
    // after passing SIGTERM on to the ranks), so callers see how the job ended.
    if (const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : g_forwarded.load(); sig != 0) {
        ::signal(sig, SIG_DFL);
        ::raise(sig);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int split_ocr_command(const CLI::App& ocr_cmd, int argc, char** argv, std::vector<std::string>& command) {
    if (argc < 2 || std::string_view(argv[1]) != "ocr") {
        return argc;
    }
    int i = 2;
    while (i < argc) {
        const std::string_view arg(argv[i]);
        if (arg == "--") {
            break;  // ends strata's options; dropped by run_ocr_program
        }
        if (arg.size() < 2 || arg.front() != '-') {
            break;  // the program path
        }
        // An option strata knows that takes a value consumes the next word too
        // (unless written --name=value); flags and unknown options do not.
        const CLI::Option* option = ocr_cmd.get_option_no_throw(std::string(arg));
        i += option != nullptr && option->get_expected_max() > 0 && arg.find('=') == std::string_view::npos ? 2 : 1;
    }
    i = std::min(i, argc);
    command.assign(argv + i, argv + argc);
    return i;
}

int run_ocr_program(const OcrOptions& options, std::vector<std::string> command) {
    // `strata ocr [options] -- ./program args`: the `--` only ends strata's options.
    if (!command.empty() && command.front() == "--") {
        command.erase(command.begin());
    }
    if (command.empty()) {
        fmt::print(stderr, "strata ocr: program: missing (usage: strata ocr [options] ./program args...)\n");
        return 2;
    }
    if (!options.external_config.empty()) {
        // Checked here, so a wrong file is reported before the program runs;
        // the program reads it again (its own copy of the runtime).
        auto config = external::Config::load(options.external_config);
        if (!config) {
            fmt::print(stderr, "strata ocr: --external-config={}: {}\n", options.external_config,
                       config.error().message);
            return 2;
        }
    }
    if (!options.workers.empty()) {
        if (auto workers = runtime::parse_workers(options.workers, "--workers"); !workers) {
            fmt::print(stderr, "strata ocr: {}\n", workers.error().what());
            return 2;
        }
    }
    if (!options.external_exposure.empty() && !external::exposure_choice_of(options.external_exposure)) {
        fmt::print(stderr, "strata ocr: --external-exposure={}: not an exposure (expected auto, memfd or fuse)\n",
                   options.external_exposure);
        return 2;
    }
    // Absolute, so a program that changes directory still finds it.
    set("STRATA_EXTERNAL_CONFIG",
        options.external_config.empty() ? "" : std::filesystem::absolute(options.external_config).string());
    set("STRATA_EXTERNAL_EXPOSURE", options.external_exposure);
    set("STRATA_MONITOR", options.monitor);
    set("STRATA_CPUS", options.cpus);
    set("STRATA_WORKERS", options.workers);
    set("STRATA_OCR_DB_PLACEMENT", options.db_placement);
    set("STRATA_OCR_DB_DIR", options.db_dir);
    if (options.stats) {
        ::setenv("STRATA_STATS", "1", 1);
    }
    if (options.verbose) {
        ::setenv("STRATA_VERBOSE", "1", 1);
    }
    if (options.ranks < 0 || options.ranks > 4096) {
        fmt::print(stderr, "strata ocr: -n={}: expected 1 to 4096 ranks\n", options.ranks);
        return 2;
    }
    if (options.ranks > 1) {
        // mpiexec writes Hydra's notice of a dead rank to every proxy, the dead
        // rank's own (gone) too: ignored, SIGPIPE would end mpiexec and its
        // proxies would SIGKILL the survivors before they report (the
        // disposition survives exec).
        ::signal(SIGPIPE, SIG_IGN);
        return run_job(mpiexec_command(options.ranks, std::move(command)));
    }
    return exec(command);
}

}  // namespace strata::cli
