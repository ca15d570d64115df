// SPDX-License-Identifier: MIT
// One external task: from satisfied inputs to a started program (on a
// worker), and from its exit to output data blocks (on a worker again).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "container_launch.hpp"
#include "ocr/ocr.h"
#include "ocr_external.hpp"
#include "runtime/ocr/db_shared.hpp"

namespace strata::external {

using namespace strata::ocr;

namespace {

constexpr std::size_t stderr_tail_bytes = 2048;

// A descriptor closed when the last owner lets go.
struct OwnedFd {
    int fd = -1;
    explicit OwnedFd(int f = -1) : fd(f) {}
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
    ~OwnedFd() {
        if (fd >= 0) {
            ::close(fd);
        }
    }
};

std::string tail_of(int fd) {
    if (fd < 0) {
        return {};
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
        return {};
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    const std::size_t n = std::min(size, stderr_tail_bytes);
    std::string text(n, '\0');
    const ssize_t got = ::pread(fd, text.data(), n, static_cast<off_t>(size - n));
    text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    return text;
}

std::string describe(const ocrExternalStatus_t& st) {
    switch (st.state) {
        case OCR_EXTERNAL_OK: return fmt::format("exited with {}", st.exitCode);
        case OCR_EXTERNAL_EXIT: return fmt::format("exited with {}, not a success code", st.exitCode);
        case OCR_EXTERNAL_SIGNAL: return fmt::format("killed by signal {} ({})", st.signal, ::strsignal(st.signal));
        case OCR_EXTERNAL_TIMEOUT: return "ran past its timeout: its process group was killed";
        case OCR_EXTERNAL_NO_OUTPUT:
            return fmt::format("exited with {} but left output {} empty", st.exitCode, st.output);
        case OCR_EXTERNAL_NO_START: return "could not be started";
        case OCR_EXTERNAL_CANCELLED: return "cancelled: the program ended while it ran";
        default: return "pending";
    }
}

}  // namespace

struct ExternalBody::Launch {
    std::shared_ptr<Edt> edt;
    std::unique_ptr<TaskFiles> files;
    std::vector<std::string> argv;
    std::shared_ptr<OwnedFd> stderr_capture;  // stderr=tail or a file: read for the tail
    std::string stderr_note;                  // why no tail is available
    std::optional<container::Bundle> bundle;  // container = ...: removed after the program was reaped
};

void ExternalBody::fail_to_start(const std::shared_ptr<Edt>& edt, const std::string& why) {
    OcrState* s = state();
    {
        std::lock_guard lock(record_->mutex);
        record_->status = {OCR_EXTERNAL_NO_START, -1, 0, 0};
    }
    {
        std::lock_guard lock(s->print_mutex);
        std::fflush(stdout);
        fmt::print(stderr, "strata-external: task {} [{}] could not start: {}\n", show(edt->guid), tpl_->entry->name,
                   why);
    }
    for (const ocrGuid_t event : outputs_) {
        if (auto e = s->table.find_as<Event>(event, Kind::event)) {
            satisfy_event(e, NULL_GUID, 0, edt->created_at);
        }
    }
    complete_edt(edt, NULL_GUID);
}

namespace {

using Launch = ExternalBody::Launch;

// One path per output of the task, in its exposure.
Result<std::vector<std::string>> expose_outputs(const ExternalTemplate& tpl, const Edt& edt, Launch& launch) {
    std::vector<std::string> out_paths(tpl.outputs);
    for (std::size_t k = 0; k < tpl.outputs; ++k) {
        // Output ids have the top bit set: never a data block id (inputs), unique per task and output.
        auto path = launch.files->add_output((std::uint64_t{1} << 63) | (id_of(edt.guid) << 6) | k);
        if (!path) {
            return std::unexpected(path.error());
        }
        out_paths[k] = *path;
    }
    return out_paths;
}

// [handle:K]: the input's shm handle, read-only (the program may not change
// an input); only a block placed in shared memory has one.
Result<std::string> handle_argument(const Db& db) {
    auto named = shared_block_handle(db, false);
    if (!named) {
        return std::unexpected(named.error());
    }
    return to_string(*named);
}

// The command with its placeholders replaced: the paths of outputs and of
// inputs (each exposed once), and arguments read from input data blocks.
Result<std::vector<std::string>> command_line(const ExternalTemplate& tpl, const Edt& edt, Launch& launch,
                                              const std::vector<std::string>& out_paths) {
    const Entry& entry = *tpl.entry;
    std::vector<std::string> in_paths(tpl.inputs);
    auto block_of = [&](std::size_t k, const Placeholder& p) -> Result<std::shared_ptr<Db>> {
        const Slot& slot = edt.slots[k];
        if (!slot.block) {
            return make_error(Errc::invalid_argument, "{}{}: input {} was satisfied with NULL_GUID, not a data block",
                              entry.where("command", fmt::format("\"{}\"", entry.command_text)), p.text, k);
        }
        return slot.block;
    };
    auto resolve = [&](const Placeholder& p) -> Result<std::string> {
        if (p.kind == PlaceholderKind::out) {
            return out_paths[p.index];
        }
        auto block = block_of(p.index, p);
        if (!block) {
            return std::unexpected(block.error());
        }
        const Db& db = **block;
        Result<std::string> value;
        switch (p.kind) {
            case PlaceholderKind::in:
                if (in_paths[p.index].empty()) {
                    BlockView view{id_of(db.guid), db.data, static_cast<std::size_t>(db.size), db.memfd, 0};
                    auto path = launch.files->add_input(view);
                    if (!path) {
                        return std::unexpected(path.error());
                    }
                    in_paths[p.index] = *path;
                }
                return in_paths[p.index];
            case PlaceholderKind::handle: value = handle_argument(db); break;
            case PlaceholderKind::arg_int: value = int_argument(db.data, db.size); break;
            case PlaceholderKind::arg_float: value = float_argument(db.data, db.size); break;
            case PlaceholderKind::arg_str: value = str_argument(db.data, db.size); break;
            default: break;
        }
        if (!value) {
            return make_error(Errc::invalid_argument, "{}{}: {}",
                              entry.where("command", fmt::format("\"{}\"", entry.command_text)), p.text,
                              value.error().message);
        }
        return value;
    };
    return expand(entry.command, resolve);
}

// stdout and stderr of the program as the entry says, into `request`; their
// descriptors stay open in `open_fds` until the spawn. A captured stderr (a
// tail or a file) is kept in the launch for the failure report.
Result<void> open_streams(const Entry& entry, const Edt& edt, const std::vector<std::string>& out_paths, Launch& launch,
                          SpawnRequest& request, std::vector<std::shared_ptr<OwnedFd>>& open_fds) {
    auto stream = [&](const StreamSpec& spec, bool is_stderr) -> Result<int> {
        using T = StreamSpec::Target;
        int fd = -1;
        switch (spec.target) {
            case T::inherit: return -1;
            case T::null: fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC); break;
            case T::tail:
                fd = ::memfd_create(fmt::format("strata-stderr-{}", show(edt.guid)).c_str(), MFD_CLOEXEC);
                break;
            case T::output: fd = ::open(out_paths[spec.output].c_str(), O_WRONLY | O_CLOEXEC); break;
            case T::file:
                fd = ::open(spec.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
                break;
        }
        if (fd < 0) {
            return make_sys_error(
                errno, "{}cannot open it",
                entry.where(is_stderr ? "stderr" : "stdout", spec.target == T::file ? spec.path : "?"));
        }
        auto owned = std::make_shared<OwnedFd>(fd);
        open_fds.push_back(owned);
        if (is_stderr && (spec.target == T::tail || spec.target == T::file)) {
            launch.stderr_capture = owned;
        }
        return fd;
    };
    auto out_fd = stream(entry.stdout_spec, false);
    if (!out_fd) {
        return std::unexpected(out_fd.error());
    }
    auto err_fd = stream(entry.stderr_spec, true);
    if (!err_fd) {
        return std::unexpected(err_fd.error());
    }
    request.stdout_fd = *out_fd;
    request.stderr_fd = *err_fd;
    if (!launch.stderr_capture) {
        launch.stderr_note = fmt::format("(stderr={}: not captured)",
                                         entry.stderr_spec.target == StreamSpec::Target::output ? "[out:K]"
                                         : entry.stderr_spec.target == StreamSpec::Target::null ? "null"
                                                                                                : "inherit");
    }
    return {};
}

}  // namespace

void ExternalBody::start(const std::shared_ptr<Edt>& edt) {
    const Entry& entry = *tpl_->entry;
    auto exposure = run_->exposure(entry);
    if (!exposure) {
        return fail_to_start(edt, exposure.error().message);
    }
    auto files = (*exposure)->new_task();
    if (!files) {
        return fail_to_start(edt, files.error().message);
    }

    auto launch = std::make_shared<Launch>();
    launch->edt = edt;
    launch->files = std::move(*files);
    if (entry.temporary_files) {
        if (auto allowed = launch->files->allow_temporary_files(); !allowed) {
            return fail_to_start(
                edt, fmt::format("{}{}", entry.where("unregistered", "\"temporary\""), allowed.error().message));
        }
    }
    // Expose what the command names, each input and output once.
    auto out_paths = expose_outputs(*tpl_, *edt, *launch);
    if (!out_paths) {
        return fail_to_start(edt, out_paths.error().message);
    }
    auto argv = command_line(*tpl_, *edt, *launch, *out_paths);
    if (!argv) {
        return fail_to_start(edt, argv.error().message);
    }
    launch->argv = std::move(*argv);

    SpawnRequest request;
    request.argv = launch->argv;
    request.env = entry.env;
    request.cwd = entry.cwd;
    request.inherit = launch->files->inherited_fds();
    std::vector<std::shared_ptr<OwnedFd>> stream_fds;  // open until the spawn
    if (auto opened = open_streams(entry, *edt, *out_paths, *launch, request, stream_fds); !opened) {
        return fail_to_start(edt, opened.error().message);
    }
    if (!entry.container.empty()) {
        auto bundle = containerize(entry, *launch->files, request);
        if (!bundle) {
            return fail_to_start(edt, bundle.error().message);
        }
        launch->bundle.emplace(std::move(*bundle));
    }
    auto child = spawn(request);
    if (!child) {
        return fail_to_start(edt, fmt::format("{}; command: {}", child.error().message, show_command(launch->argv)));
    }
    if (auto started = launch->files->started(child->pid); !started) {
        ::kill(-child->pid, SIGKILL);
        ::waitpid(child->pid, nullptr, 0);
        ::close(child->pidfd);
        return fail_to_start(edt, started.error().message);
    }
    auto self = std::static_pointer_cast<ExternalBody>(edt->body);
    auto watched = run_->reactor().watch(*child, entry.timeout, [self, launch](const ExitInfo& exit) {
        OcrState* s = state();
        if (exit.cancelled || s == nullptr || s->finished()) {
            {
                std::lock_guard lock(self->record_->mutex);
                self->record_->status = {OCR_EXTERNAL_CANCELLED, -1, exit.signal, 0};
            }
            launch->files->release();
            return;
        }
        // The outputs become data blocks on a worker: the reactor only waits.
        s->runtime->spawn([self, launch, exit] { self->finish(*launch, exit); });
    });
    if (!watched) {
        return fail_to_start(edt, watched.error().message);
    }
}

void ExternalBody::finish(Launch& launch, const ExitInfo& exit) {
    OcrState* s = state();
    const Entry& entry = *tpl_->entry;
    ocrExternalStatus_t st{OCR_EXTERNAL_OK, exit.code, exit.signal, 0};
    if (exit.timed_out) {
        st.state = OCR_EXTERNAL_TIMEOUT;
    } else if (!exit.exited) {
        st.state = OCR_EXTERNAL_SIGNAL;
    } else if (std::find(entry.success_exit_codes.begin(), entry.success_exit_codes.end(), exit.code) ==
               entry.success_exit_codes.end()) {
        st.state = OCR_EXTERNAL_EXIT;
    }
    std::vector<std::shared_ptr<Db>> blocks;
    std::string adopt_error;
    for (std::size_t k = 0; st.state == OCR_EXTERNAL_OK && k < tpl_->outputs; ++k) {
        auto bytes = launch.files->take_output(k);
        if (bytes && bytes->size == 0 && !entry.allow_empty_outputs) {
            ::close(bytes->fd);
            st = {OCR_EXTERNAL_NO_OUTPUT, exit.code, 0, static_cast<u32>(k)};
            break;
        }
        auto db = bytes ? adopt_memfd(bytes->fd, bytes->size) : std::unexpected(bytes.error());
        if (!db) {
            adopt_error = db.error().message;
            st = {OCR_EXTERNAL_NO_OUTPUT, exit.code, 0, static_cast<u32>(k)};
            break;
        }
        blocks.push_back(std::move(*db));
    }
    launch.files->release();
    if (st.state != OCR_EXTERNAL_OK) {
        blocks.clear();  // no half-made data block survives a failure
        std::string tail = launch.stderr_capture ? tail_of(launch.stderr_capture->fd) : launch.stderr_note;
        std::lock_guard lock(s->print_mutex);
        std::fflush(stdout);
        fmt::print(
            stderr, "strata-external: task {} [{}] failed after {:.3f} s: {}{}\n  command: {}\n  stderr tail:\n{}\n",
            show(launch.edt->guid), entry.name, std::chrono::duration<double>(exit.elapsed).count(), describe(st),
            adopt_error.empty() ? "" : ": " + adopt_error, show_command(launch.argv), tail.empty() ? "(empty)" : tail);
    }
    {
        std::lock_guard lock(record_->mutex);
        record_->status = st;
    }
    for (std::size_t k = 0; k < outputs_.size(); ++k) {
        ocrGuid_t db = NULL_GUID;
        if (k < blocks.size()) {
            db = s->table.insert(blocks[k]);
        }
        if (auto event = s->table.find_as<Event>(outputs_[k], Kind::event)) {
            satisfy_event(event, db, 0, launch.edt->created_at);
        } else {
            if (!is_null(db)) {
                s->table.erase(db);
            }
            s->deferred_error(launch.edt->created_at, "ocrExternalTaskCreate", OCR_EINVAL,
                              fmt::format("external task {} [{}]: output event {} (output {}) no longer exists",
                                          show(launch.edt->guid), entry.name, show(outputs_[k]), k));
        }
    }
    auto edt = std::move(launch.edt);
    complete_edt(edt, NULL_GUID);
}

}  // namespace strata::external
