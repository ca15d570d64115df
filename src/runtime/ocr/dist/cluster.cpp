// SPDX-License-Identifier: MIT
// The cluster of a distributed OCR run: launch, the communication thread,
// liveness, the deferral of early operations, calls, and the job-wide end.
#include "cluster.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/batch_policy.hpp"
#include "core/env_switch.hpp"
#include "core/log.hpp"
#include "cpuset.hpp"

namespace strata::ocr::dist {

namespace {

using namespace std::chrono_literals;

Result<int> env_int(const char* name, int fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') {
        return fallback;
    }
    int value = 0;
    const char* end = text + std::char_traits<char>::length(text);
    auto [ptr, ec] = std::from_chars(text, end, value);
    if (ec != std::errc() || ptr != end || value < 0) {
        return make_error(Errc::invalid_argument, "{}={}: expected a non-negative integer (set by mpiexec)", name,
                          text);
    }
    return value;
}

// The directory of libstrata-ocr itself: the plugin sits beside it.
std::filesystem::path own_directory() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&launch_from_env), &info) == 0 || info.dli_fname == nullptr) {
        return {};
    }
    return std::filesystem::path(info.dli_fname).parent_path();
}

// When to sleep between polls. MPI offers no wait that sleeps in the kernel
// (ch4:ucx busy-polls), so an idle rank's communication thread either polls
// without pause or sleeps between polls:
// - while the rank's workers are idle and it sent or received a message less
//   than kSpinIdle ago, it polls with only a yield: its cores have nothing
//   else to run, and a reply is what the rank waits for. (Sleeping there made
//   every hop of a remote EDT's round trip wait out a pause: 1.7 ms per round
//   trip instead of tens of µs.) Not when the node's ranks outnumber its CPUs
//   (set_spin_when_idle): the cores are then another rank's.
// - otherwise (a task runs, or nothing moved for kSpinIdle) it yields for
//   50 µs after the last message, then sleeps from 10 µs doubling to 500 µs,
//   leaving the cores to the workers; a pause then costs under 5 % of the
//   quiet time before it.
constexpr auto kSpinIdle = 10ms;

class Backoff {
public:
    explicit Backoff(const std::atomic<std::int64_t>& last_sent) : last_sent_(last_sent) {}

    /// `hurry`: the outbox holds messages, which must leave within kOutboxHold.
    void idle(bool workers_idle, bool hurry) {
        const auto now = std::chrono::steady_clock::now();
        const auto sent = std::chrono::steady_clock::time_point(
            std::chrono::steady_clock::duration(last_sent_.load(std::memory_order_relaxed)));
        const auto last = std::max(last_, sent);
        if (now - last < 50us || (workers_idle && now - last < kSpinIdle)) {
            std::this_thread::yield();
            pause_ = 10us;
            return;
        }
        std::this_thread::sleep_for(hurry ? std::min<std::chrono::microseconds>(pause_, 50us) : pause_);
        pause_ = std::min<std::chrono::microseconds>(pause_ * 2, 500us);
    }
    void active() {
        last_ = std::chrono::steady_clock::now();
        pause_ = 10us;
    }

private:
    const std::atomic<std::int64_t>& last_sent_;  // Cluster::last_sent_
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
    std::chrono::microseconds pause_{10us};
};

}  // namespace

Result<std::optional<Launch>> launch_from_env() {
    auto size = env_int("PMI_SIZE", 1);
    if (!size) {
        return std::unexpected(size.error());
    }
    if (*size <= 1) {
        return std::nullopt;
    }
    auto rank = env_int("PMI_RANK", 0);
    if (!rank) {
        return std::unexpected(rank.error());
    }
    if (*size > guid_max_ranks) {
        return make_error(Errc::resource_exhausted, "PMI_SIZE={}: strata's OCR GUIDs name at most {} ranks", *size,
                          guid_max_ranks);
    }
    if (*rank >= *size) {
        return make_error(Errc::invalid_argument, "PMI_RANK={}: not below PMI_SIZE={}", *rank, *size);
    }
    auto comm_batch = core::env_switch("STRATA_OCR_COMM_BATCH", true);
    if (!comm_batch) {
        return std::unexpected(comm_batch.error());
    }
    return Launch{.rank = *rank, .size = *size, .comm_batch = *comm_batch};
}

std::vector<int> cpus_of_rank(const std::vector<int>& cpus, int local_rank, int local_size) {
    if (cpus.empty() || local_size <= 1) {
        return cpus;
    }
    std::vector<int> mine;
    for (std::size_t i = static_cast<std::size_t>(local_rank); i < cpus.size();
         i += static_cast<std::size_t>(local_size)) {
        mine.push_back(cpus[i]);
    }
    if (mine.empty()) {
        mine.push_back(cpus[static_cast<std::size_t>(local_rank) % cpus.size()]);
    }
    return mine;
}

Result<std::unique_ptr<Cluster>> Cluster::start(OcrState& state, const Launch& launch) {
    const auto path = own_directory() / plugin_name;
    void* plugin = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (plugin == nullptr) {
        return make_error(Errc::not_found,
                          "mpiexec launched {} ranks (PMI_SIZE), but the distributed runtime {} could not be loaded: "
                          "{}",
                          launch.size, path.string(), ::dlerror());
    }
    auto open = reinterpret_cast<OpenWire>(::dlsym(plugin, open_wire_symbol));
    if (open == nullptr) {
        return make_error(Errc::internal, "{}: no symbol {}", path.string(), open_wire_symbol);
    }
    WireOptions options;
    const Writer ping(Msg::ping);
    options.ping.assign(ping.view().begin(), ping.view().end());
    auto wire = open(options);
    if (!wire) {
        return std::unexpected(wire.error());
    }
    if ((*wire)->rank() != launch.rank || (*wire)->size() != launch.size) {
        return make_error(Errc::internal, "MPI says rank {} of {}, PMI said rank {} of {}", (*wire)->rank(),
                          (*wire)->size(), launch.rank, launch.size);
    }
    watch_hydra_notice();  // after MPI_Init, whose own handler would end the rank at once

    std::unique_ptr<Cluster> c(new Cluster(state, std::move(*wire), plugin, launch.comm_batch));
    state.table.set_rank(c->rank_, c->size_);
    state.cluster = c.get();
    // Nothing can tell when the last EDT of all ranks ended without a shutdown: the
    // stuck-program check of one rank would fire while others still work.
    state.detect_stuck.store(false, std::memory_order_release);
    if (auto met = c->meet(); !met) {
        return std::unexpected(met.error());
    }
    return c;
}

// Every rank tells the others its place (pid, host, segments), and waits for
// theirs: the ranks of one host then share its CPUs (local_rank, local_size),
// and the survivors of a dead rank remove the files it left on their host. What else
// arrives meanwhile waits for the communication thread.
Result<void> Cluster::meet() {
    for (int r = 0; r < size_; ++r) {
        if (r == rank_) {
            continue;
        }
        const Place& here = peers_[static_cast<std::size_t>(rank_)];
        Writer hello(Msg::hello);
        hello.u64(static_cast<std::uint64_t>(here.pid)).str(here.machine).str(here.network);
        hello.str(here.segment_dir).str(here.segment_prefix);
        hello.str(here.node).str(runtime::describe_cpus(here.cpus)).str(here.processes);
        send(r, hello);
    }
    const auto until = std::chrono::steady_clock::now() + 60s;
    for (int heard = 1; heard < size_;) {
        int source = -1;
        std::shared_ptr<net::Bytes> message;
        auto got = wire_->poll(source, message);
        if (!got) {
            return std::unexpected(got.error());
        }
        if (!*got) {
            if (std::chrono::steady_clock::now() > until) {
                return make_error(Errc::timeout, "rank {}: {} of the {} ranks did not start within 60 s", rank_,
                                  size_ - heard, size_);
            }
            std::this_thread::sleep_for(20us);
            continue;
        }
        if (Reader(*message).kind() == Msg::hello) {
            (void)handle(source, message);
            ++heard;
        } else {
            backlog_.emplace_back(source, std::move(message));
        }
    }
    const Place& here = peers_[static_cast<std::size_t>(rank_)];
    for (int r = 0; r < size_; ++r) {
        const Place& there = peers_[static_cast<std::size_t>(r)];
        one_network_ = one_network_ && there.network == here.network;
        const bool overlap =
            std::ranges::any_of(there.cpus, [&](int c) { return std::ranges::find(here.cpus, c) != here.cpus.end(); });
        cpu_sharers_ += there.machine == here.machine && overlap ? 1 : 0;
        if (there.machine != here.machine) {
            continue;
        }
        if (r < rank_) {
            ++local_rank_;
        }
        ++local_size_;
    }
    return {};
}

void Cluster::run(const std::vector<int>& cpus) {
    thread_ = std::thread([this, cpus] {
        if (const int err = cpus.empty() ? 0 : runtime::bind_this_thread(cpus); err != 0) {
            strata::detail::log().warn("strata-ocr: rank {}: cannot bind the communication thread to cpus {}: {}",
                                       rank_, runtime::describe_cpus(cpus), describe_errno(err));
        }
        for (auto& [source, message] : backlog_) {
            dispatch(source, message);
        }
        backlog_.clear();
        // From here on idle workers poll too (never before: the backlog comes
        // first), unless the run already ended (quiesce()).
        {
            std::lock_guard lock(dispatch_mutex_);
            if (!quiet_) {
                state_.runtime->set_idle_poller(this);
            }
        }
        loop();
    });
}

Cluster::Cluster(OcrState& state, std::unique_ptr<Wire> wire, void* plugin, bool comm_batch)
    : state_(state), wire_(std::move(wire)), plugin_(plugin), comm_batch_(comm_batch) {
    rank_ = wire_->rank();
    size_ = wire_->size();
    mint_mutex_ = std::make_unique<std::mutex[]>(static_cast<std::size_t>(size_));
    said_bye_.assign(static_cast<std::size_t>(size_), false);
    created_up_to_.assign(static_cast<std::size_t>(size_), 0);
    peers_.assign(static_cast<std::size_t>(size_), Place{});
    peers_[static_cast<std::size_t>(rank_)] = this_place(state.options().job);
    cleaned_.assign(static_cast<std::size_t>(size_), false);
    pidfds_.assign(static_cast<std::size_t>(size_), -1);
    ended_seen_.assign(static_cast<std::size_t>(size_), {});
}

Cluster::~Cluster() {
    stop_ = true;
    if (thread_.joinable()) {
        thread_.join();
    }
    for (const int fd : pidfds_) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
}

Cluster* cluster() noexcept {
    OcrState* s = ocr::state();
    return s != nullptr ? s->cluster : nullptr;
}

void Cluster::loop() {
    ::prctl(PR_SET_NAME, "strata-ocr-comm");
    // Precise short sleeps: the default 50 µs timer slack would stretch every pause.
    ::prctl(PR_SET_TIMERSLACK, 1UL);
    // While a task runs this thread sleeps between polls, and at the normal policy each sleep's
    // end preempted the worker on its core; while the workers are idle it answers at once.
    core::BatchPolicy batch(false);
    Backoff backoff(last_sent_);
    auto next_check = std::chrono::steady_clock::now();
    while (!stop_.load(std::memory_order_acquire)) {
        Result<bool> got = false;
        // An idle worker may be polling: then this thread backs off and checks
        // the peers (waiting for the lock could leave pings unanswered behind a
        // worker the kernel runs rarely, a cover at SCHED_IDLE).
        if (std::unique_lock lock(poll_mutex_, std::try_to_lock); lock.owns_lock()) {
            got = poll_and_dispatch_locked();
        }
        flush_older_than(kOutboxHold);
        const bool hurry = queued_.load(std::memory_order_relaxed);
        if (!got) {
            strata::detail::log().warn("strata-ocr: rank {}: {}", rank_, got.error().what());
            backoff.idle(false, hurry);
        } else if (*got) {
            backoff.active();
            continue;
        } else {
            const bool workers_idle = state_.runtime && state_.runtime->idle();
            batch.set(comm_batch_ && !workers_idle);
            backoff.idle(spin_when_idle_.load(std::memory_order_relaxed) && workers_idle, hurry);
        }
        if (const auto now = std::chrono::steady_clock::now(); now >= next_check) {
            check_peers();
            next_check = now + 100ms;
        }
    }
}

Result<bool> Cluster::poll_and_dispatch_locked() {
    int source = -1;
    std::shared_ptr<net::Bytes> message;
    auto got = wire_->poll(source, message);
    if (got && *got) {
        last_received_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
        dispatch(source, message);
    }
    return got;
}

bool Cluster::poll() noexcept {
    std::unique_lock lock(poll_mutex_, std::try_to_lock);
    if (!lock.owns_lock()) {
        return false;
    }
    auto got = poll_and_dispatch_locked();
    if (!got) {
        strata::detail::log().warn("strata-ocr: rank {}: {}", rank_, got.error().what());
        return false;
    }
    return *got;
}

bool Cluster::expecting() const noexcept {
    if (!spin_when_idle_.load(std::memory_order_relaxed)) {
        return false;
    }
    const auto last =
        std::max(last_received_.load(std::memory_order_relaxed), last_sent_.load(std::memory_order_relaxed));
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    return now - last < std::chrono::duration_cast<std::chrono::steady_clock::duration>(kSpinIdle).count();
}

void Cluster::dispatch(int source, const std::shared_ptr<net::Bytes>& message) {
    const Msg kind = Reader(*message).kind();
    if (kind == Msg::bundle) {
        unbundle(source, *message);
        return;
    }
    std::lock_guard lock(dispatch_mutex_);
    if (kind == Msg::bye) {
        said_bye_[static_cast<std::size_t>(source)] = true;
        return;
    }
    if (quiet_ && kind != Msg::ping && kind != Msg::shutdown && kind != Msg::hello && kind != Msg::dead &&
        kind != Msg::cleaned) {
        return;  // the run ended here: what others still send no longer matters
    }
    if (!handle(source, message)) {
        // Its object was not created yet; if it was meanwhile, handle it now.
        if (!defer(target_of(*message), source, message)) {
            (void)handle(source, message);
        }
    }
}

bool Cluster::handle(int source, const std::shared_ptr<net::Bytes>& message) {
    Reader in(*message);
    const Msg kind = in.kind();
    in.skip_kind();
    switch (kind) {
        case Msg::ping: {
            Writer pong(Msg::pong);
            send(source, pong);
            return true;
        }
        case Msg::pong: return true;
        case Msg::hello: {
            Place place;
            place.pid = static_cast<long>(in.u64());
            place.machine = in.str();
            place.network = in.str();
            place.segment_dir = in.str();
            place.segment_prefix = in.str();
            place.node = in.str();
            // What does not parse leaves the list empty: the rank then shares no CPU.
            place.cpus = runtime::parse_cpus(in.str(), "hello cpus").value_or(std::vector<int>{});
            place.processes = in.str();
            watch_process(source, place);
            std::lock_guard lock(peers_mutex_);
            peers_[static_cast<std::size_t>(source)] = std::move(place);
            return true;
        }
        case Msg::shutdown: state_.finish_from_peer(static_cast<int>(in.u32())); return true;
        case Msg::bye: return true;
        case Msg::dead: on_dead(source, in); return true;
        case Msg::cleaned: on_cleaned(source); return true;
        case Msg::create_edt: on_create_edt(*this, source, in); return true;
        case Msg::create_db: on_create_db(*this, source, in); return true;
        case Msg::satisfy: return on_satisfy(*this, source, in);
        case Msg::add_dependence: return on_add_dependence(*this, source, in);
        case Msg::destroy: return on_destroy(*this, source, in);
        case Msg::acquire: return on_acquire(*this, source, in);
        case Msg::collective: return on_collective(*this, source, in);
        case Msg::grant: on_grant(*this, source, in); return true;
        case Msg::release: on_release(*this, source, in); return true;
        case Msg::scope_done: on_scope_done(*this, source, in); return true;
        case Msg::call: on_call(*this, source, in); return true;
        case Msg::reply: {
            const std::uint64_t token = in.u64();
            {
                std::lock_guard lock(calls_mutex_);
                if (auto it = calls_.find(token); it != calls_.end()) {
                    it->second.reply = message;
                }
            }
            calls_cv_.notify_all();
            return true;
        }
        case Msg::bundle:  // dispatch() opens bundles; none arrives here
        case Msg::count_: break;
    }
    strata::detail::log().warn("strata-ocr: rank {}: a message of unknown kind {} from rank {}", rank_,
                               static_cast<int>(kind), source);
    return true;
}

ocrGuid_t target_of(const net::Bytes& message) {
    Reader in(message);
    in.skip_kind();
    return guid_of(in.u64());
}

// Why the test is safe: a rank mints the GUIDs of objects it creates on another
// rank from a counter per owner, and sends each creation under the lock of that
// counter, so an owner receives a minting rank's creations in counter order. A
// counter above the last creation received from its minter is therefore one
// whose creation is still on its way; one at or below it was created (and, if
// it is gone, destroyed).
bool Cluster::not_created_yet(ocrGuid_t guid) {
    const int minter = minter_of(guid);
    if (guid.guid <= 0 || owner_of(guid) != rank_ || minter == rank_ || minter >= size_) {
        return false;
    }
    std::lock_guard lock(pending_mutex_);
    return counter_of(guid) > created_up_to_[static_cast<std::size_t>(minter)];
}

bool Cluster::defer(ocrGuid_t guid, int source, std::shared_ptr<net::Bytes> message) {
    std::lock_guard lock(pending_mutex_);
    const int minter = minter_of(guid);
    if (counter_of(guid) <= created_up_to_[static_cast<std::size_t>(minter)]) {
        return false;
    }
    pending_[id_of(guid)].emplace_back(source, std::move(message));
    return true;
}

void Cluster::created(ocrGuid_t guid) {
    std::vector<std::pair<int, std::shared_ptr<net::Bytes>>> waiting;
    {
        std::lock_guard lock(pending_mutex_);
        const int minter = minter_of(guid);
        if (minter == rank_ || minter >= size_) {
            return;
        }
        auto& up_to = created_up_to_[static_cast<std::size_t>(minter)];
        up_to = std::max(up_to, counter_of(guid));
        if (auto it = pending_.find(id_of(guid)); it != pending_.end()) {
            waiting = std::move(it->second);
            pending_.erase(it);
        }
    }
    for (auto& [source, message] : waiting) {
        (void)handle(source, message);
    }
}

std::uint64_t Cluster::export_scope(const std::shared_ptr<FinishScope>& scope) {
    std::lock_guard lock(scopes_mutex_);
    // One id per scope: look it up by pointer among the few exported at a time.
    for (auto& [id, entry] : scopes_) {
        if (entry.first == scope) {
            ++entry.second;
            return id;
        }
    }
    const std::uint64_t id = next_scope_++;
    scopes_.emplace(id, std::make_pair(scope, std::uint64_t{1}));
    return id;
}

std::shared_ptr<FinishScope> Cluster::import_done(std::uint64_t id) {
    std::lock_guard lock(scopes_mutex_);
    auto it = scopes_.find(id);
    if (it == scopes_.end()) {
        return nullptr;
    }
    auto scope = it->second.first;
    if (--it->second.second == 0) {
        scopes_.erase(it);
    }
    return scope;
}

const char* Cluster::intern(const std::string& file) {
    if (file.empty()) {
        return nullptr;
    }
    std::lock_guard lock(files_mutex_);
    return files_.insert(file).first->c_str();
}

Result<std::shared_ptr<net::Bytes>> Cluster::call(int dest, Writer& message, std::uint64_t token) {
    {
        std::lock_guard lock(calls_mutex_);
        calls_[token] = Waiting{dest, nullptr};
    }
    send(dest, message);
    flush_sends();  // the reply may need what waits in the outbox
    std::unique_lock lock(calls_mutex_);
    // The reply, the owner's death or the end of the run: whichever comes first.
    while (!calls_[token].reply && !wire_->is_dead(dest) && !state_.finished()) {
        calls_cv_.wait_for(lock, 50ms);
    }
    auto reply = std::move(calls_[token].reply);
    calls_.erase(token);
    if (!reply) {
        return make_error(wire_->is_dead(dest) ? Errc::peer_dead : Errc::busy, "rank {} {}", dest,
                          wire_->is_dead(dest) ? "died before it answered" : "did not answer: the run ended");
    }
    return reply;
}

void Cluster::quiesce() {
    std::lock_guard lock(dispatch_mutex_);
    quiet_ = true;
    if (state_.runtime) {
        state_.runtime->set_idle_poller(nullptr);
    }
}

int Cluster::leave(int code) {
    for (int r = 0; r < size_; ++r) {
        if (r == rank_ || wire_->is_dead(r)) {
            continue;
        }
        Writer bye(Msg::bye);
        send(r, bye);
    }
    // Every live peer's bye: it ends once its EDTs did; a peer that dies meanwhile
    // is found by the liveness check that keeps running.
    for (;;) {
        bool all = true;
        {
            std::lock_guard lock(dispatch_mutex_);
            for (int r = 0; r < size_; ++r) {
                if (r != rank_ && !said_bye_[static_cast<std::size_t>(r)] && !wire_->is_dead(r)) {
                    all = false;
                }
            }
        }
        if (all) {
            break;
        }
        std::this_thread::sleep_for(1ms);
    }
    const bool clean = !died_.load();
    if (state_.options().runtime.print_stats) {
        std::lock_guard lock(state_.print_mutex);
        fmt::print(stderr, "strata-ocr: rank {}: {} messages to other ranks in {} posts\n", rank_, messages_.load(),
                   posts_.load());
    }
    wire_->flush(clean ? 2000ms : 100ms);
    stop_ = true;
    if (thread_.joinable()) {
        thread_.join();
    }
    // MPI_Finalize only when every rank said bye, all run in this network (wire.hpp) and the
    // program ended by ocrShutdown: after ocrAbort it may still hold MPI objects that only a
    // collective call could free (an MPI window: MPI_Finalize then fails in MPICH's UCX
    // clean-up, SIGABRT instead of the abort's code).
    if (!wire_->finish(clean && one_network_ && code == 0, 10000ms)) {
        std::fflush(nullptr);
        ::_exit(clean ? code : 1);
    }
    return clean ? code : 1;
}

void tell_finish(Cluster& cluster, int code) {
    for (int r = 0; r < cluster.size(); ++r) {
        if (r == cluster.rank()) {
            continue;
        }
        Writer message(Msg::shutdown);
        message.u32(static_cast<std::uint32_t>(code));
        cluster.send(r, message);
    }
}

}  // namespace strata::ocr::dist
