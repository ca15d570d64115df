// SPDX-License-Identifier: MIT
// strata-fsd's control thread: registrations from the runtime (protocol.hpp),
// and the events that end the daemon (quit, the owner's death, a signal, the
// FUSE loop ending because someone unmounted).
#include <fcntl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "daemon.hpp"
#include "protocol.hpp"

namespace strata::external::fsd {

namespace {

constexpr std::size_t kStoreChunk = std::size_t{8} << 20;

std::string error_reply(int err, const std::string& message) {
    return fmt::format("err {} {}", err, message);
}

// Parses the words of a request as numbers; `ok` turns false on the first bad one.
struct Numbers {
    const std::vector<std::string_view>& words;
    bool ok = true;
    std::uint64_t operator[](std::size_t i) {
        const auto value = i < words.size() ? parse_u64(words[i]) : std::nullopt;
        ok = ok && value.has_value();
        return value.value_or(0);
    }
};

std::string handle_input(Daemon& daemon, const std::vector<std::string_view>& w) {
    // in <task> <id> <size> shm <fd> <offset> <cache> | in <task> <id> <size> vm <address> <cache>
    const bool shm = w.size() == 8 && w[4] == "shm";
    const bool vm = w.size() == 7 && w[4] == "vm";
    Numbers n{w};
    const std::uint64_t task = n[1];
    const std::uint64_t id = n[2];
    const std::uint64_t size = n[3];
    const bool cache = n[w.size() - 1] != 0;
    const std::uint64_t where = n[5];
    const std::uint64_t offset = shm ? n[6] : 0;
    if (!n.ok || (!shm && !vm)) {
        return error_reply(EINVAL, "malformed in request");
    }
    if (daemon.owner <= 0) {
        return error_reply(EINVAL, "a daemon without an owner has no data blocks to serve");
    }
    std::unique_ptr<Source> source;
    std::string message;
    int err = shm ? make_shared_source(daemon.owner, static_cast<int>(where), offset, size, source, message)
                  : make_vm_source(daemon.owner, where, size, source, message);
    if (err != 0) {
        return error_reply(err, message);
    }
    std::shared_ptr<Entry> entry;
    const std::string name = std::to_string(id);
    if (err = daemon.registry.add_input(task, name, std::move(source), cache, entry); err != 0) {
        return error_reply(err, fmt::format("id={}: already registered as an output", id));
    }
    if (entry->cache && entry->pin_fd < 0) {
        if (err = store_in_page_cache(daemon, *entry, message); err != 0) {
            forget_entries(daemon, daemon.registry.end(task));
            return error_reply(err, message);
        }
    }
    return fmt::format("ok {}/{}/{}", daemon.mount_point, kDbDir, name);
}

std::string handle(Daemon& daemon, std::string_view request, bool& quit) {
    const auto w = split_words(request);
    if (w.empty()) {
        return error_reply(EINVAL, "empty request");
    }
    if (w[0] == "in") {
        return handle_input(daemon, w);
    }
    Numbers n{w};
    const std::uint64_t task = n[1];
    const std::uint64_t arg = w.size() == 3 ? n[2] : 0;
    const bool three = w.size() == 3 && n.ok;
    if (w[0] == "out" && three) {
        std::shared_ptr<Entry> entry;
        const std::string name = std::to_string(arg);
        if (const int err = daemon.registry.add_output(task, name, entry); err != 0) {
            return error_reply(
                err, fmt::format("id={}: {}", name, err == EEXIST ? "already registered" : std::strerror(err)));
        }
        return fmt::format("ok {}/{}/{}", daemon.mount_point, kDbDir, name);
    }
    if (w[0] == "temporaries" && w.size() == 2 && n.ok) {
        daemon.registry.allow_temporaries(task);
        return "ok";
    }
    if (w[0] == "started" && three) {
        if (daemon.registry.started(task, static_cast<pid_t>(arg)) != 0) {
            return error_reply(ENOENT, fmt::format("task={}: no file registered for this task", task));
        }
        return "ok";
    }
    if (w[0] == "take" && three) {
        const auto entry = daemon.registry.find_for_task(task, std::to_string(arg));
        if (entry == nullptr || !entry->output) {
            return error_reply(ENOENT, fmt::format("task={} id={}: no such output", task, arg));
        }
        return fmt::format("ok {} {}", entry->memfd, entry->current_size());
    }
    if (w[0] == "end" && w.size() == 2 && n.ok) {
        forget_entries(daemon, daemon.registry.end(task));
        return "ok";
    }
    if (w[0] == "quit" && w.size() == 1) {
        quit = true;
        return "ok";
    }
    return error_reply(EINVAL, fmt::format("unknown request '{}'", request.substr(0, 64)));
}

}  // namespace

int store_in_page_cache(Daemon& daemon, Entry& entry, std::string& error) {
    // The kernel keeps pages only for an inode it knows: open the file
    // ourselves (served by the FUSE workers) and keep it open while registered.
    const std::string path = fmt::format("{}/{}/{}", daemon.mount_point, kDbDir, entry.name);
    entry.pin_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (entry.pin_fd < 0) {
        const int err = errno;
        error = fmt::format("id={}: cannot open {} to fill its page cache: {}", entry.name, path, std::strerror(err));
        return err;
    }
    const std::uint64_t size = entry.source->size();
    for (std::uint64_t offset = 0; offset < size; offset += kStoreChunk) {
        const auto length = static_cast<std::size_t>(std::min<std::uint64_t>(kStoreChunk, size - offset));
        const char* bytes = nullptr;
        if (const int err = entry.source->read(offset, length, bytes); err != 0) {
            error =
                fmt::format("id={}: cannot read the block at offset {}: {}", entry.name, offset, std::strerror(err));
            return err;
        }
        fuse_bufvec buf = FUSE_BUFVEC_INIT(length);
        buf.buf[0].mem = const_cast<char*>(bytes);
        const int rc = fuse_lowlevel_notify_store(daemon.session, entry.ino, static_cast<off_t>(offset), &buf,
                                                  static_cast<fuse_buf_copy_flags>(0));
        if (rc != 0) {
            error = fmt::format("id={}: fuse_lowlevel_notify_store at offset {}: {}", entry.name, offset,
                                std::strerror(-rc));
            return -rc;
        }
    }
    return 0;
}

void forget_entries(Daemon& daemon, const std::vector<std::shared_ptr<Entry>>& entries) {
    for (const auto& entry : entries) {
        if (entry->pin_fd >= 0) {
            ::close(entry->pin_fd);
            entry->pin_fd = -1;
        }
        // Errors mean the kernel never knew the file; nothing to drop then.
        fuse_lowlevel_notify_inval_entry(daemon.session, kDbIno, entry->name.c_str(), entry->name.size());
        if (entry->cache) {
            fuse_lowlevel_notify_inval_inode(daemon.session, entry->ino, 0, 0);
        }
    }
}

std::string serve_control(Daemon& daemon, void* socket, int owner_pidfd, int signal_fd, int loop_done) {
    std::vector<zmq_pollitem_t> items{
        {socket, 0, ZMQ_POLLIN, 0}, {nullptr, signal_fd, ZMQ_POLLIN, 0}, {nullptr, loop_done, ZMQ_POLLIN, 0}};
    if (owner_pidfd >= 0) {
        items.push_back({nullptr, owner_pidfd, ZMQ_POLLIN, 0});
    }
    for (;;) {
        if (zmq_poll(items.data(), static_cast<int>(items.size()), -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return fmt::format("zmq_poll failed: {}", zmq_strerror(errno));
        }
        if (owner_pidfd >= 0 && (items[3].revents & ZMQ_POLLIN) != 0) {
            return fmt::format("the owner (pid {}) exited", daemon.owner);
        }
        if ((items[1].revents & ZMQ_POLLIN) != 0) {
            signalfd_siginfo info{};
            (void)!::read(signal_fd, &info, sizeof(info));
            return fmt::format("signal {}", strsignal(static_cast<int>(info.ssi_signo)));
        }
        if ((items[2].revents & ZMQ_POLLIN) != 0) {
            return "the FUSE session ended (unmounted from outside)";
        }
        if ((items[0].revents & ZMQ_POLLIN) == 0) {
            continue;
        }
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, socket, 0) < 0) {
            zmq_msg_close(&msg);
            continue;
        }
        const std::string request(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
        zmq_msg_close(&msg);
        bool quit = false;
        const std::string reply = handle(daemon, request, quit);
        zmq_send(socket, reply.data(), reply.size(), 0);
        if (quit) {
            return "quit requested";
        }
    }
}

}  // namespace strata::external::fsd
