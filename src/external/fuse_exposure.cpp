// SPDX-License-Identifier: MIT
// FuseExposure and its TaskFiles: the runtime's side of strata-fsd.
#include "external/fuse_exposure.hpp"

#include <fcntl.h>

#include <atomic>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "external/fsd/client.hpp"
#include "external/fsd/protocol.hpp"

namespace strata::external {

struct FuseExposure::State {
    FuseOptions options;
    std::mutex mutex;
    std::shared_ptr<fsd::Client> client;
    bool stopped = false;  // guarded by mutex
    std::atomic<std::uint64_t> next_task{1};

    // The live daemon, starting one if there is none or the last one died.
    Result<std::shared_ptr<fsd::Client>> running() {
        const std::lock_guard lock(mutex);
        if (stopped) {
            return make_error(Errc::busy, "FuseExposure: stopped (the run is ending); no new daemon is started");
        }
        if (client == nullptr || !client->alive()) {
            auto started = fsd::Client::start({.executable = options.daemon});
            if (!started) {
                return std::unexpected(started.error());
            }
            client = std::move(*started);
        }
        return client;
    }
};

namespace {

class FuseTaskFiles final : public TaskFiles {
public:
    FuseTaskFiles(std::shared_ptr<fsd::Client> client, const FuseOptions& options, std::uint64_t task)
        : client_(std::move(client)), options_(options), task_(task) {}
    ~FuseTaskFiles() override { release(); }
    FuseTaskFiles(const FuseTaskFiles&) = delete;
    FuseTaskFiles& operator=(const FuseTaskFiles&) = delete;

    Result<std::string> add_input(const BlockView& block) override {
        const bool use_fd = block.fd >= 0 && options_.channel != FuseOptions::Channel::vm;
        if (!use_fd && options_.channel == FuseOptions::Channel::shared) {
            return make_error(Errc::invalid_argument,
                              "FuseExposure::add_input: id={}: channel=shared needs a block with a descriptor (fd=-1)",
                              block.id);
        }
        if (!use_fd && block.data == nullptr && block.size > 0) {
            return make_error(Errc::invalid_argument, "FuseExposure::add_input: id={}: data=nullptr with size={}",
                              block.id, block.size);
        }
        const int cache = options_.page_cache ? 1 : 0;
        const std::string request = use_fd ? fmt::format("in {} {} {} shm {} {} {}", task_, block.id, block.size,
                                                         block.fd, block.fd_offset, cache)
                                           : fmt::format("in {} {} {} vm {} {}", task_, block.id, block.size,
                                                         reinterpret_cast<std::uintptr_t>(block.data), cache);
        auto path = client_->request(request);
        if (path) {
            registered_ = true;
        }
        return path;
    }

    Result<std::string> add_output(std::uint64_t id) override {
        auto path = client_->request(fmt::format("out {} {}", task_, id));
        if (path) {
            registered_ = true;
            outputs_.push_back(id);
        }
        return path;
    }

    Result<void> allow_temporary_files() override {
        auto reply = client_->request(fmt::format("temporaries {}", task_));
        if (!reply) {
            return std::unexpected(reply.error());
        }
        registered_ = true;
        return {};
    }

    [[nodiscard]] std::vector<int> inherited_fds() const override { return {}; }

    [[nodiscard]] std::string mount_dir() const override { return client_->mount_point(); }

    Result<void> started(pid_t pid) override {
        if (pid <= 0) {
            return make_error(Errc::invalid_argument, "FuseExposure::started: pid={}: not a process id", pid);
        }
        if (!registered_) {
            return {};  // a task without files: nothing to guard
        }
        auto reply = client_->request(fmt::format("started {} {}", task_, pid));
        if (!reply) {
            return std::unexpected(reply.error());
        }
        return {};
    }

    Result<OutputBytes> take_output(std::size_t k) override {
        if (k >= outputs_.size()) {
            return make_error(Errc::invalid_argument, "FuseExposure::take_output: k={}: the task has {} outputs", k,
                              outputs_.size());
        }
        auto reply = client_->request(fmt::format("take {} {}", task_, outputs_[k]));
        if (!reply) {
            return std::unexpected(reply.error());
        }
        const auto words = fsd::split_words(*reply);
        const auto fd = words.size() == 2 ? fsd::parse_u64(words[0]) : std::nullopt;
        const auto size = words.size() == 2 ? fsd::parse_u64(words[1]) : std::nullopt;
        if (!fd || !size) {
            return make_error(Errc::internal, "FuseExposure::take_output: malformed reply '{}'", *reply);
        }
        auto local = client_->open_daemon_fd(static_cast<int>(*fd), O_RDWR);
        if (!local) {
            return std::unexpected(local.error());
        }
        return OutputBytes{*local, static_cast<std::size_t>(*size)};
    }

    void release() noexcept override {
        if (registered_) {
            registered_ = false;
            (void)client_->request(fmt::format("end {}", task_));
        }
    }

private:
    std::shared_ptr<fsd::Client> client_;
    FuseOptions options_;
    std::uint64_t task_;
    bool registered_ = false;
    std::vector<std::uint64_t> outputs_;
};

}  // namespace

FuseExposure::FuseExposure(FuseOptions options) : state_(std::make_shared<State>()) {
    state_->options = std::move(options);
}

FuseExposure::~FuseExposure() = default;
FuseExposure::FuseExposure(FuseExposure&&) noexcept = default;
FuseExposure& FuseExposure::operator=(FuseExposure&&) noexcept = default;

Result<std::unique_ptr<TaskFiles>> FuseExposure::new_task() {
    if (state_ == nullptr) {
        return make_error(Errc::invalid_argument, "FuseExposure::new_task: the object was moved from");
    }
    auto client = state_->running();
    if (!client) {
        return std::unexpected(client.error());
    }
    return std::make_unique<FuseTaskFiles>(*client, state_->options, state_->next_task++);
}

Result<std::string> FuseExposure::mount_point() {
    if (state_ == nullptr) {
        return make_error(Errc::invalid_argument, "FuseExposure::mount_point: the object was moved from");
    }
    auto client = state_->running();
    if (!client) {
        return std::unexpected(client.error());
    }
    return (*client)->mount_point();
}

void FuseExposure::stop() noexcept {
    if (state_ == nullptr) {
        return;
    }
    std::shared_ptr<fsd::Client> client;
    {
        const std::lock_guard lock(state_->mutex);
        state_->stopped = true;
        client = std::move(state_->client);
    }
    if (client != nullptr) {
        client->shutdown();
    }
}

pid_t FuseExposure::daemon_pid() const {
    if (state_ == nullptr) {
        return 0;
    }
    const std::lock_guard lock(state_->mutex);
    return state_->client != nullptr && state_->client->alive() ? state_->client->pid() : 0;
}

}  // namespace strata::external
