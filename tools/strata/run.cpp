// SPDX-License-Identifier: MIT
// `strata run WORKFLOW.toml`: runs a synthetic workflow (docs/workflow.md).
// Process methods start one strata-workflow-task rank per task with mpiexec,
// placed on nodes by --nodes or --hosts (default: all here); method threads
// runs in this process. A run that lasts over 2 s shows its
// progress on a terminal (progress.hpp).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.hpp"
#include "paths.hpp"
#include "progress.hpp"
#include "strata/shm.hpp"
#include "strata/workflow.hpp"

namespace strata::cli {

namespace {

namespace wf = strata::workflow;

// After the job: a job that died leaves its segment behind with no live user
// (the last user to detach removes it, and no one detached). The name is this
// run's own, so remove it: attach and detach as its last user, else unlink.
void remove_dead_segment(const std::string& name) {
    if (auto seg = Segment::open(name, SegmentMode::open_only); seg) {
        (void)seg->close();
    }
    std::error_code ignored;
    for (const char* suffix : {".seg", ".lock"}) {
        std::filesystem::remove(default_segment_dir() / ("strata." + name + suffix), ignored);
    }
}

// The run's files live in /tmp/strata-run-PID-XXXXXX. A run ended by a signal it
// can catch removes them itself (below); one SIGKILLed cannot, so each run
// first removes the directories of runs of this user whose process is gone.
constexpr std::string_view kRunDirPrefix = "strata-run-";

void remove_directories_of_dead_runs() {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/tmp", ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with(kRunDirPrefix)) {
            continue;
        }
        const std::string rest = name.substr(kRunDirPrefix.size());
        const auto dash = rest.find('-');
        if (dash == std::string::npos || dash == 0) {
            continue;
        }
        pid_t pid = 0;
        try {
            pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
        } catch (...) {
            continue;
        }
        struct stat st {};
        // Only our own real directories, never a link another user planted.
        if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) {
            continue;
        }
        if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) {
            continue;
        }
        std::error_code ignored;
        std::filesystem::remove_all(entry.path(), ignored);
    }
}

// SIGINT, SIGTERM and SIGHUP while mpiexec runs: passed on to it, and the run
// ends by the same signal once its files and segment are removed.
volatile sig_atomic_t g_job_pid = 0;
volatile sig_atomic_t g_signal = 0;

void forward_signal(int sig) {
    g_signal = sig;
    if (g_job_pid > 0) {
        ::kill(static_cast<pid_t>(g_job_pid), sig);
    }
}

class ForwardSignals {
public:
    ForwardSignals() {
        struct sigaction action {};
        action.sa_handler = forward_signal;
        action.sa_flags = SA_RESTART;
        sigemptyset(&action.sa_mask);
        for (std::size_t i = 0; i < kSignals.size(); ++i) {
            ::sigaction(kSignals[i], &action, &old_[i]);
        }
    }
    ForwardSignals(const ForwardSignals&) = delete;
    ForwardSignals& operator=(const ForwardSignals&) = delete;
    ~ForwardSignals() {
        for (std::size_t i = 0; i < kSignals.size(); ++i) {
            ::sigaction(kSignals[i], &old_[i], nullptr);
        }
        g_job_pid = 0;
    }
    // After cleanup: ends this process by the signal that ended the job.
    static void reraise() {
        if (const int sig = g_signal; sig != 0) {
            ::signal(sig, SIG_DFL);
            ::raise(sig);
        }
    }

private:
    static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
    std::array<struct sigaction, 3> old_{};
};

std::vector<std::string> split_words(std::string_view text) {
    std::vector<std::string> words;
    std::istringstream in{std::string(text)};
    for (std::string w; in >> w;) {
        words.push_back(w);
    }
    return words;
}

const char* env_or_null(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
}

// The launcher: --mpiexec; else, for a placement inside apps/video/emulate, its mpiexec (which
// launches into the emulated nodes); else the mpiexec strata was built with.
std::vector<std::string> launcher_of(const RunOptions& options, bool placed) {
    if (!options.mpiexec.empty()) {
        return split_words(options.mpiexec);
    }
    if (const char* emulated = env_or_null("STRATA_EMU_MPIEXEC"); placed && emulated != nullptr) {
        return split_words(emulated);
    }
    return {STRATA_MPIEXEC};
}

// --nodes or --hosts, checked against the workflow (and, inside the emulation with its
// launcher, against the emulated nodes). No placement: every task on this node.
Result<wf::Placement> placement_of(const wf::Workflow& workflow, const RunOptions& options) {
    auto across = wf::parse_across(options.across, "--across");
    if (!across) {
        return std::unexpected(across.error());
    }
    if (options.nodes.empty() && options.hosts.empty()) {
        if (*across != wf::Method::mpi) {
            return make_error(Errc::invalid_argument,
                              "--across={}: edges cross nodes only with a placement (give --nodes or --hosts)",
                              options.across);
        }
        return wf::Placement{};
    }
    const std::string param = options.hosts.empty() ? "--nodes=" + options.nodes : "--hosts=" + options.hosts;
    if (workflow.uses_threads()) {
        return make_error(Errc::invalid_argument,
                          "{}: method threads runs every task in this process; a placement needs process methods "
                          "(shm, copy-into, copy-from, copy, mpi)",
                          param);
    }
    auto placement = options.hosts.empty() ? wf::placement_from_nodes(workflow, options.nodes, "--nodes")
                                           : wf::load_placement(workflow, options.hosts);
    if (!placement) {
        return placement;
    }
    placement->across = *across;
    const char* emulated = env_or_null("STRATA_EMU_NODES");
    if (emulated != nullptr && options.mpiexec.empty()) {
        const auto known = split_words(emulated);
        for (const auto& node : placement->nodes()) {
            if (std::ranges::find(known, node) == known.end()) {
                return make_error(Errc::invalid_argument, "{}: node {} is not an emulated node (STRATA_EMU_NODES={})",
                                  param, node, emulated);
            }
        }
    }
    return placement;
}

// mpiexec's arguments that place rank i (task i) on its node: -hosts A:k,B:m,... in task order, so
// that hydra fills each entry's k slots before the next, then one DSM server per node (node k's is rank
// tasks + k) when an edge runs dsm; and the task's --nodes and --across.
void add_placement(const wf::Workflow& workflow, const wf::Placement& placement, std::vector<std::string>& launch,
                   std::vector<std::string>& task) {
    if (placement.task_nodes.empty()) {
        return;
    }
    std::string hosts;
    std::string nodes;
    for (std::size_t t = 0; t < placement.task_nodes.size();) {
        std::size_t run = 1;
        while (t + run < placement.task_nodes.size() && placement.task_nodes[t + run] == placement.task_nodes[t]) {
            ++run;
        }
        hosts += fmt::format("{}{}:{}", hosts.empty() ? "" : ",", placement.task_nodes[t], run);
        t += run;
    }
    for (const auto& node : placement.task_nodes) {
        nodes += (nodes.empty() ? "" : ",") + node;
    }
    if (wf::dsm_servers(workflow, placement) > 0) {
        for (const auto& node : placement.nodes()) {
            hosts += fmt::format(",{}:1", node);
        }
    }
    launch.insert(launch.end(), {"-hosts", hosts});
    task.insert(task.end(), {"--nodes", nodes, "--across", std::string(wf::to_string(placement.across))});
}

Result<wf::Report> run_processes(const wf::Workflow& workflow, const RunOptions& options,
                                 const wf::Placement& placement, progress::Line& line) {
    const auto found = paths::find_helper("strata-workflow-task");
    if (!found) {
        return make_error(Errc::not_found, "strata-workflow-task: not in {} (build the default preset)",
                          paths::helper_dir().string());
    }
    const auto task = *found;
    remove_directories_of_dead_runs();
    std::string dir_template = fmt::format("/tmp/{}{}-XXXXXX", kRunDirPrefix, ::getpid());
    if (::mkdtemp(dir_template.data()) == nullptr) {
        return make_sys_error(errno, "strata run: cannot create a directory under /tmp");
    }
    const std::filesystem::path dir = dir_template;
    struct Cleanup {
        std::filesystem::path dir;
        ~Cleanup() {
            std::error_code ignored;
            std::filesystem::remove_all(dir, ignored);
        }
    } cleanup{dir};
    const auto file = dir / "workflow.toml";
    const auto result = dir / "report.json";
    {
        std::ofstream out(file);
        out << wf::to_toml(workflow);
        if (!out) {
            return make_error(Errc::io_error, "strata run: cannot write {}", file.string());
        }
    }
    const std::string segment = fmt::format("strata-workflow-{}-{}", ::getpid(), dir.filename().string());
    std::vector<std::string> args = launcher_of(options, !placement.task_nodes.empty());
    const std::string launcher = fmt::format("{}", fmt::join(args, " "));
    std::vector<std::string> task_args{task.string(), file.string(), "--result", result.string(), "--segment", segment};
    add_placement(workflow, placement, args, task_args);
    const std::size_t ranks = workflow.tasks.size() + wf::dsm_servers(workflow, placement);
    args.insert(args.end(), {"-n", std::to_string(ranks)});
    args.insert(args.end(), task_args.begin(), task_args.end());
    if (line.active()) {
        args.emplace_back("--progress");
    }
    const ForwardSignals forwarding;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        return make_sys_error(errno, "strata run: pipe");
    }
    const pid_t child = ::fork();
    if (child < 0) {
        const int err = errno;
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
        return make_sys_error(err, "strata run: fork");
    }
    if (child == 0) {
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGHUP, SIG_DFL);
        ::dup2(pipe_fds[1], STDOUT_FILENO);
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        ::execvp(argv[0], argv.data());
        std::fprintf(stderr, "strata run: cannot run %s: %s\n", argv[0], std::strerror(errno));
        ::_exit(127);
    }
    g_job_pid = child;
    if (g_signal != 0) {  // arrived before the job's pid was known
        ::kill(child, g_signal);
    }
    ::close(pipe_fds[1]);
    FILE* lines = ::fdopen(pipe_fds[0], "r");
    char buffer[512];
    while (lines != nullptr && std::fgets(buffer, sizeof buffer, lines) != nullptr) {
        unsigned long long done = 0;
        unsigned long long total = 0;
        if (std::sscanf(buffer, "progress %llu %llu", &done, &total) == 2) {
            line.show(done, total, "iterations");
        } else {
            // mpiexec's own messages (a dead rank's banner): never inside the JSON report.
            line.clear();
            std::fputs(buffer, options.json ? stderr : stdout);
        }
    }
    if (lines != nullptr) {
        std::fclose(lines);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    line.clear();
    for (std::size_t node = 0; node < std::max<std::size_t>(1, placement.nodes().size()); ++node) {
        // The segments of nodes that share this machine's segment directory (emulated nodes); a
        // real remote node's leftover is removed by `strata shm gc` there.
        remove_dead_segment(wf::node_segment_name(segment, placement, node));
    }
    if (g_signal != 0) {
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
        ForwardSignals::reraise();
    }
    std::ifstream in(result);
    std::stringstream text;
    text << in.rdbuf();
    auto report = wf::report_from_json(text.str());
    const bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (failed && report && !placement.task_nodes.empty()) {
        // Rank 0 writes the report once every rank has sent its figures: what failed after it is
        // MPI_Finalize, whose MPICH 4.0.2 deadlock over TCP the tasks' watchdog ends (task_main.cpp).
        fmt::print(stderr,
                   "strata run: warning: {} ended with exit status {} after every task had finished and the report "
                   "was written (MPI_Finalize across nodes; see the tasks' warnings above)\n",
                   launcher, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return report;
    }
    if (failed) {
        return make_error(Errc::io_error, "{} -n {} {}: failed (exit status {}; its errors are above)", launcher, ranks,
                          task.string(), WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    return report;
}

void print_report(const wf::Workflow& workflow, const std::string& source, const wf::Report& r) {
    fmt::print("workflow {}: {} tasks, {} edges, {} iterations (+{} warmup)\n", source, r.tasks, workflow.edges.size(),
               r.iterations, workflow.warmup);
    fmt::print("  throughput {:.1f} MB/s   {:.1f} iterations/s   wall {:.3f} s   checksum errors {}\n",
               r.throughput_mb_s, r.iterations_per_s, r.seconds, r.checksum_errors);
    const wf::Placement placement{r.task_nodes};
    for (const auto& node : placement.nodes()) {
        std::string tasks;
        for (std::size_t t = 0; t < r.task_nodes.size(); ++t) {
            tasks += r.task_nodes[t] == node ? " " + workflow.tasks[t].name : "";
        }
        fmt::print("  node {}:{}\n", node, tasks);
    }
    fmt::print("  handoff latency per edge (µs):     p50       p90       p99       max\n");
    for (const auto& e : r.edges) {
        fmt::print("    {:>12} -> {:<12} {:<9} {:9.1f} {:9.1f} {:9.1f} {:9.1f}{}\n", e.from, e.to,
                   wf::to_string(e.method), e.p50_ns / 1e3, e.p90_ns / 1e3, e.p99_ns / 1e3, e.max_ns / 1e3,
                   e.across_nodes ? "   across nodes" : "");
    }
}

}  // namespace

int run_workflow(const RunOptions& options) {
    Result<wf::Workflow> workflow;
    std::string source = options.file;
    if (!options.shape.empty()) {
        if (!options.file.empty()) {
            fmt::print(stderr, "strata run: give a workflow file or --shape, not both\n");
            return 2;
        }
        auto shape = wf::parse_shape(options.shape, "--shape");
        auto method = wf::parse_method(options.method, "--method");
        auto size = wf::parse_size(options.data_size, "--data-size");
        auto wait = wf::parse_wait(options.wait, "--wait");
        for (const Error* e : {shape ? nullptr : &shape.error(), method ? nullptr : &method.error(),
                               size ? nullptr : &size.error(), wait ? nullptr : &wait.error()}) {
            if (e != nullptr) {
                fmt::print(stderr, "strata run: {}\n", e->what());
                return 2;
            }
        }
        workflow = wf::generate({.shape = *shape,
                                 .tasks = options.tasks,
                                 .data_size = *size,
                                 .method = *method,
                                 .iterations = options.iterations == 0 ? 100 : options.iterations,
                                 .period_us = 0,
                                 .wait = *wait});
        source =
            fmt::format("{}({}) {}", options.shape, workflow ? workflow->tasks.size() : options.tasks, options.method);
    } else if (options.file.empty()) {
        fmt::print(stderr, "strata run: give a workflow file (examples/workflows/) or --shape\n");
        return 2;
    } else {
        workflow = wf::load(options.file);
        if (workflow && options.iterations != 0) {
            workflow->iterations = options.iterations;
        }
    }
    if (!workflow) {
        fmt::print(stderr, "strata run: {}\n", workflow.error().what());
        return 2;
    }
    if (!workflow->uses_threads()) {
        if (auto timeout = wf::handoff_timeout_from_env(); !timeout) {
            fmt::print(stderr, "strata run: {}\n", timeout.error().what());
            return 2;
        }
    }
    const auto placement = placement_of(*workflow, options);
    if (!placement) {
        fmt::print(stderr, "strata run: {}\n", placement.error().what());
        return 2;
    }
    if (!options.write.empty()) {
        std::ofstream out(options.write);
        out << wf::to_toml(*workflow);
        if (!out) {
            fmt::print(stderr, "strata run: --write={}: cannot write the file\n", options.write);
            return 1;
        }
        return 0;
    }
    // Only a run that lasts: the line appears after 2 s.
    progress::Line line(
        {.enabled = !options.quiet && !options.json, .prefix = "strata run", .delay = std::chrono::seconds(2)});
    // The workers call this between iterations: every 200th of the run, and
    // not at all without a terminal.
    wf::Progress on_iteration;
    if (line.active()) {
        on_iteration = [&](std::uint64_t done, std::uint64_t total) {
            if (done % std::max<std::uint64_t>(1, total / 200) == 0 || done == total) {
                line.show(done, total, "iterations");
            }
        };
    }
    Result<wf::Report> report = workflow->uses_threads() ? wf::run_threads(*workflow, on_iteration)
                                                         : run_processes(*workflow, options, *placement, line);
    line.clear();
    if (!report) {
        fmt::print(stderr, "strata run: {}\n", report.error().what());
        return 1;
    }
    if (options.json) {
        fmt::print("{}\n", wf::to_json(*report));
    } else {
        print_report(*workflow, source, *report);
    }
    if (report->checksum_errors != 0) {
        fmt::print(stderr, "strata run: {} checksum errors: consumers read data their producer did not write\n",
                   report->checksum_errors);
        return 1;
    }
    return 0;
}

}  // namespace strata::cli
