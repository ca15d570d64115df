// SPDX-License-Identifier: MIT
// OCR objects (templates, EDTs, events, data blocks), the GUID table and the
// program-wide state of one OCR run (docs/runtime.md).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "db_dir.hpp"
#include "ocr/ocr-errors.h"
#include "ocr/ocr-types.h"
#include "strata/region.hpp"
#include "strata/runtime.hpp"
#include "strata/runtime/ocr.hpp"

namespace strata::ocr {

/// The file and line of the API call (recorded by the header macros).
struct CallSite {
    const char* file = nullptr;
    int line = 0;
    [[nodiscard]] std::string str() const { return file != nullptr ? fmt::format("{}:{}", file, line) : "?:?"; }
};
/// Takes the call site recorded for this thread's current API call.
CallSite take_call_site() noexcept;

enum class Kind : std::uint8_t {
    none = 0,
    edt_template = 1,
    edt = 2,
    event = 3,
    db = 4,
    guid_map = 5,
    external_template = 6,
};
std::string_view to_string(Kind kind) noexcept;

inline std::uint64_t id_of(ocrGuid_t guid) noexcept {
    return static_cast<std::uint64_t>(guid.guid);
}
inline ocrGuid_t guid_of(std::uint64_t id) noexcept {
    return ocrGuid_t{static_cast<intptr_t>(id)};
}
/// The kind encoded in a GUID (its low 3 bits); none for NULL and the special GUIDs.
inline Kind kind_of(ocrGuid_t guid) noexcept {
    return guid.guid <= 0 ? Kind::none : static_cast<Kind>(id_of(guid) & 7U);
}
inline bool is_null(ocrGuid_t guid) noexcept {
    return guid.guid == 0;
}

// Every GUID names its owner, the rank whose table holds the object, and the
// rank that minted it (docs/runtime.md, "Distributed OCR"):
//   [62..51] owner rank  [50..39] minting rank  [38..3] counter  [2..0] kind
// With one rank both rank fields are 0: the GUIDs of a one-process run.
inline constexpr int guid_rank_bits = 12;
inline constexpr int guid_max_ranks = 1 << guid_rank_bits;
inline constexpr int guid_owner_shift = 51;
inline constexpr int guid_minter_shift = 39;
inline constexpr std::uint64_t guid_counter_mask = (std::uint64_t{1} << 36) - 1;
inline constexpr std::uint64_t guid_base(int owner, int minter) noexcept {
    return (static_cast<std::uint64_t>(owner) << guid_owner_shift) |
           (static_cast<std::uint64_t>(minter) << guid_minter_shift);
}
inline int owner_of(ocrGuid_t guid) noexcept {
    return guid.guid <= 0 ? 0 : static_cast<int>((id_of(guid) >> guid_owner_shift) & (guid_max_ranks - 1));
}
inline int minter_of(ocrGuid_t guid) noexcept {
    return guid.guid <= 0 ? 0 : static_cast<int>((id_of(guid) >> guid_minter_shift) & (guid_max_ranks - 1));
}
inline std::uint64_t counter_of(ocrGuid_t guid) noexcept {
    return (id_of(guid) >> 3) & guid_counter_mask;
}
/// Affinities are GUIDs of kind 7 (no object has it) naming a rank, counter 0.
inline constexpr std::uint64_t affinity_kind = 7;
inline ocrGuid_t affinity_of(int rank) noexcept {
    return guid_of(guid_base(rank, rank) | affinity_kind);
}
inline std::string show(ocrGuid_t guid) {
    return fmt::format("{:#x}", id_of(guid));
}

struct Object {
    explicit Object(Kind k) : kind(k) {}
    Object(const Object&) = delete;
    Object& operator=(const Object&) = delete;
    virtual ~Object() = default;
    Kind kind;
    ocrGuid_t guid{0};
};

/// GUID → object, sharded by id so concurrent EDTs rarely share a lock.
class GuidTable {
public:
    ocrGuid_t insert(std::shared_ptr<Object> object);
    /// Inserts at a labeled GUID (its kind bits must match the object's);
    /// false when an object lives there already.
    bool insert_at(ocrGuid_t guid, std::shared_ptr<Object> object);
    /// Reserves `count` consecutive GUID numbers no insert() will use; returns the first.
    std::uint64_t reserve(std::uint64_t count);
    /// Makes this table rank `rank` of `size` (before any insert): its GUIDs name it.
    void set_rank(int rank, int size);
    [[nodiscard]] int rank() const noexcept { return rank_; }
    /// The base of the GUIDs this rank mints for its own objects (guid_base(rank, rank)).
    [[nodiscard]] std::uint64_t base() const noexcept { return guid_base(rank_, rank_); }
    /// A GUID of `kind` for an object this rank creates on rank `owner`. The counters
    /// of one owner grow in the order of the calls: the caller serializes a mint and
    /// the send of its creation message, so the owner receives them in counter order.
    ocrGuid_t mint(int owner, Kind kind);
    [[nodiscard]] std::shared_ptr<Object> find(ocrGuid_t guid) const;
    template <class T>
    [[nodiscard]] std::shared_ptr<T> find_as(ocrGuid_t guid, Kind kind) const {
        if (kind_of(guid) != kind) {
            return nullptr;
        }
        return std::static_pointer_cast<T>(find(guid));
    }
    std::shared_ptr<Object> erase(ocrGuid_t guid);
    /// Removes and returns every object (end of a run).
    std::vector<std::shared_ptr<Object>> drain();
    /// Up to `limit` live objects of `kind`, lowest GUIDs first.
    std::vector<std::shared_ptr<Object>> sample(Kind kind, std::size_t limit) const;

private:
    struct Shard {
        mutable std::mutex mutex;
        std::unordered_map<std::uint64_t, std::shared_ptr<Object>> objects;
    };
    static constexpr std::size_t shard_count = 16;
    std::array<Shard, shard_count> shards_;
    std::atomic<std::uint64_t> next_{1};
    int rank_ = 0;
    std::unique_ptr<std::atomic<std::uint64_t>[]> minted_;  // per owner rank: the last counter minted there
};

/// OCR_HINT_EDT_PRIORITY of a template or an EDT (ocrEdtCreate's hint,
/// ocrSetHint): a ready EDT with a priority starts before those without, a
/// higher value first (runtime::Runtime::spawn_prioritized).
struct EdtPriority {
    std::atomic<bool> set{false};
    std::atomic<u64> value{0};
    void assign(u64 v) noexcept {
        value.store(v, std::memory_order_relaxed);
        set.store(true, std::memory_order_release);
    }
    [[nodiscard]] std::optional<u64> get() const noexcept {
        if (!set.load(std::memory_order_acquire)) {
            return std::nullopt;
        }
        return value.load(std::memory_order_relaxed);
    }
};
/// The OCR_HINT_EDT_PRIORITY value of an EDT hint, if it has one.
std::optional<u64> hint_priority(const ocrHint_t* hint) noexcept;

struct EdtTemplate : Object {
    EdtTemplate() : Object(Kind::edt_template) {}
    ocrEdt_t function = nullptr;
    u32 paramc = 0;
    u32 depc = 0;
    std::string name;
    EdtPriority priority;  // for the EDTs made from it afterwards
};

/// A finish scope: the finish EDT and every EDT created inside it, transitively.
struct FinishScope {
    std::atomic<std::int64_t> pending{1};
    ocrGuid_t output_event{0};
    ocrGuid_t result{0};  // what the finish EDT returned: its output event carries it
    std::shared_ptr<FinishScope> parent;
    // A proxy, on the rank where an EDT of a scope of another rank was created:
    // when it completes, that rank's scope `remote_id` counts one member done.
    int remote_rank = -1;
    std::uint64_t remote_id = 0;
};

struct Db;
struct Edt;
struct SharedBlock;  // db_shared.hpp

/// The hold an external task (src/external) takes on each input: RO and
/// CONST holders proceed beside it, RW and EW requests wait until the program
/// exits, and it waits for RW and EW holders itself, so the program reads a
/// block nobody changes.
constexpr auto db_mode_external_read = static_cast<ocrDbAccessMode_t>(0xC);  // no OCR mode uses it

/// The body of an EDT that is not a C function (an external program). The
/// runtime calls start() where it would call the function; the EDT stays live
/// (counted as a running task, holding its data blocks) until the body calls
/// complete_edt(), from any thread.
struct EdtBody {
    virtual ~EdtBody() = default;
    virtual void start(const std::shared_ptr<Edt>& edt) = 0;
    /// The hold taken for a slot added in `asked` mode (not DB_MODE_NULL).
    [[nodiscard]] virtual ocrDbAccessMode_t hold_mode(ocrDbAccessMode_t asked) const { return asked; }
};

/// What a layer above attaches to a run (the external layer): stop() is called
/// once the program finished, before the workers stop.
struct RunExtension {
    virtual ~RunExtension() = default;
    virtual void stop() noexcept = 0;
};

/// One data block: its bytes (heap, or a Region of any kind) and who holds it.
struct Db : Object, std::enable_shared_from_this<Db> {
    Db() : Object(Kind::db) {}
    ~Db() override;
    std::uint64_t size = 0;
    void* data = nullptr;
    std::byte* heap = nullptr;            // small memory blocks
    std::optional<Region> region;         // large memory blocks and storage ones
    std::shared_ptr<SharedBlock> shared;  // shared blocks: their segment (db_shared.hpp)
    int memfd = -1;                       // memfd blocks and adopted outputs: the file, mapped shared at data
    std::size_t memfd_mapped = 0;         // length of that mapping
    DbPlacement placement = DbPlacement::memory;

    std::mutex mutex;
    bool ew_held = false;      // guarded by mutex
    int rw_holders = 0;        // guarded by mutex
    int external_readers = 0;  // guarded by mutex: db_mode_external_read holds
    struct Waiter {
        std::shared_ptr<Edt> edt;
        ocrDbAccessMode_t mode;
        std::uint64_t remote_token = 0;  // a hold asked by another rank (edt is null)
        int remote_rank = -1;
        std::uint64_t remote_cached = ~std::uint64_t{0};  // the version of its copy, if it has one
    };
    std::deque<Waiter> waiters;  // guarded by mutex; granted in order
    bool destroyed = false;      // guarded by mutex
    // Distributed runs (dist/blocks.cpp): a write hold of another rank excludes
    // every hold but RO; byte ranges sent from `data` to CONST readers of other
    // ranks exclude writers until they are out; `version` counts write holds
    // released, so other ranks know whether their copy is still the block's.
    bool remote_writer = false;  // guarded by mutex
    int senders = 0;             // guarded by mutex
    std::uint64_t version = 0;   // guarded by mutex

    /// Takes a hold in `mode` if compatible, else queues `edt`; true when taken.
    bool acquire_or_wait(const std::shared_ptr<Edt>& edt, ocrDbAccessMode_t mode, std::vector<std::byte>* copy);
    /// The same for a hold of another rank (dist/blocks.cpp); *version: the block's when taken.
    bool acquire_remote_or_wait(const Waiter& waiter, std::uint64_t* version);
    /// Drops a hold taken in `mode` and grants queued EDTs that now fit.
    void release(ocrDbAccessMode_t mode);

private:
    [[nodiscard]] bool fits(ocrDbAccessMode_t mode) const;            // mutex held
    void take(ocrDbAccessMode_t mode, std::vector<std::byte>* copy);  // mutex held
};

/// One input slot of an EDT.
struct Slot {
    bool satisfied = false;
    ocrGuid_t db{0};
    std::shared_ptr<Db> block;
    ocrDbAccessMode_t mode = DB_DEFAULT_MODE;
    CallSite site;  // where the dependence was added
};

/// The bytes of a data block of another rank, held by this one (dist/blocks.cpp).
struct RemoteCopy;
void* remote_data(const RemoteCopy& copy) noexcept;

/// A hold of the running EDT on a data block: of this rank (db), or of another
/// one (remote: the copy the owner sent).
struct Hold {
    std::shared_ptr<Db> db;
    ocrDbAccessMode_t mode = DB_MODE_RW;  // the mode the hold was taken in
    std::vector<std::byte> copy;          // CONST: the EDT's private copy
    bool released = false;
    ocrGuid_t guid{0};
    std::shared_ptr<RemoteCopy> remote;
    [[nodiscard]] void* pointer() {
        if (remote) {
            { return remote_data(*remote); }
        }
        return mode == DB_MODE_CONST ? static_cast<void*>(copy.data()) : db->data;
    }
};

struct Edt : Object {
    Edt() : Object(Kind::edt) {}
    ocrEdt_t function = nullptr;
    std::string name;
    std::vector<u64> params;
    u16 properties = 0;
    CallSite created_at;
    ocrGuid_t output_event{0};
    std::shared_ptr<FinishScope> scope;      // the scope it belongs to (may be null)
    std::shared_ptr<FinishScope> own_scope;  // EDT_PROP_FINISH: the scope it opens

    std::mutex mutex;
    std::vector<Slot> slots;  // guarded by mutex until the EDT is runnable
    u32 unsatisfied = 0;      // guarded by mutex
    bool destroyed = false;   // guarded by mutex

    std::array<ocrGuid_t, 8> els{};  // EDT-local storage (extensions/ocr-runtime-itf.h)

    // Acquisition, in GUID order so two EDTs never wait on each other in a cycle.
    std::vector<Hold> holds;
    std::size_t next_hold = 0;

    std::shared_ptr<EdtBody> body;  // set for external tasks: runs instead of function
    EdtPriority priority;           // read when it becomes runnable
};

struct Collective;  // collective.cpp

struct Event : Object {
    Event() : Object(Kind::event) {}
    ocrEventTypes_t type = OCR_EVENT_ONCE_T;
    bool takes_arg = false;
    struct Waiter {
        ocrGuid_t destination{0};
        u32 slot = 0;
        ocrDbAccessMode_t mode = DB_DEFAULT_MODE;
        CallSite site;
    };
    std::mutex mutex;
    bool satisfied = false;  // guarded by mutex (ONCE, IDEM, STICKY, LATCH, COUNTED)
    ocrGuid_t payload{0};
    std::vector<Waiter> waiters;
    s64 increments = 0, decrements = 0;                   // LATCH
    u64 expected_dependences = 0, added_dependences = 0;  // COUNTED
    std::deque<ocrGuid_t> channel_values;                 // CHANNEL
    std::deque<Waiter> channel_waiters;
    u32 channel_max = EVENT_CHANNEL_UNBOUNDED;  // values or waiters that may wait unmatched
    std::shared_ptr<Collective> collective;     // COLLECTIVE: its generations (own lock)
};

/// COLLECTIVE events (collective.cpp): the state made from the creation
/// parameters (nullptr and a warning when they are invalid), and a dependence
/// of contributor `sslot` for its next generation.
std::shared_ptr<Collective> make_collective(const ocrEventParams_t* params, const CallSite& site);
u8 add_collective_dependence(const std::shared_ptr<Event>& event, u32 sslot, const Event::Waiter& waiter);
/// Whether two COLLECTIVE events reduce alike (contributors, datums, op, maxGen):
/// creating one at the labeled GUID of the other joins it (event.cpp).
bool same_collective(const Collective& a, const Collective& b) noexcept;

/// A range or map of labeled GUIDs (labels.cpp).
struct GuidMap : Object {
    GuidMap() : Object(Kind::guid_map) {}
    std::uint64_t base = 0;   // guid_base() of the rank that made it
    std::uint64_t first = 0;  // the first reserved GUID number
    std::uint64_t count = 0;
    Kind object_kind = Kind::none;
    ocrGuid_t (*function)(ocrGuid_t, u64, s64*, s64*) = nullptr;  // maps only
    std::vector<s64> params;
};

/// Inserts `object` at the labeled *guid per GUID_PROP_IS_LABELED / _CHECK /
/// _BLOCK in `properties`; 0 or OCR_EINVAL / OCR_EGUIDEXISTS.
u8 insert_labeled(ocrGuid_t guid, u16 properties, const std::shared_ptr<Object>& object);
inline bool is_labeled(u16 properties) noexcept {
    return (properties & GUID_PROP_IS_LABELED) != 0;
}

namespace dist {
class Cluster;
}

/// The state of one OCR run.
class OcrState {
public:
    explicit OcrState(const OcrOptions& options) : options_(options) {}

    GuidTable table;
    std::unique_ptr<runtime::Runtime> runtime;
    /// The other ranks of a distributed run (dist/cluster.hpp); null with one rank.
    dist::Cluster* cluster = nullptr;

    [[nodiscard]] const OcrOptions& options() const noexcept { return options_; }

    /// ocrShutdown / ocrAbort / a deferred error: the first one sets the exit code
    /// (and, in a distributed run, tells every other rank).
    void finish(int exit_code);
    /// The same, told by another rank (not told on).
    void finish_from_peer(int exit_code);
    [[nodiscard]] bool finished() const noexcept { return finished_.load(std::memory_order_acquire); }
    /// Blocks until finish(); returns the exit code.
    int wait_finished();

    /// Prints "strata-ocr: <site>: <call>: <error>: <details>" and ends the run with exit code 1.
    void deferred_error(const CallSite& site, std::string_view call, int code, const std::string& details);

    /// EDTs that are runnable, acquiring or running; when it falls to zero
    /// without a shutdown, nothing can ever run again.
    void edt_became_runnable() noexcept { live_.fetch_add(1, std::memory_order_acq_rel); }
    void edt_finished();
    /// Legacy programs (extensions/ocr-legacy.h) run DAGs now and then: no
    /// EDT running between them is no reason to stop.
    std::atomic<bool> detect_stuck{true};

    // ocrPause / ocrResume (extensions.cpp): EDTs wait before starting while
    // paused. The flags are seq_cst atomics so that an EDT starting and a
    // pause never both miss each other (each writes its flag, then reads the
    // other's); the mutex and condition variable serve only the waits.
    std::mutex pause_mutex;
    std::condition_variable pause_cv;
    std::atomic<bool> paused{false};
    std::atomic<int> running_edts{0};
    std::atomic<std::int64_t> waiting_edts{0};  // created, not yet runnable

    std::mutex print_mutex;

    /// This run's private directory of storage data blocks, made on first
    /// use (db_dir.hpp); close_db_dir() removes it at the end of the run.
    Result<std::filesystem::path> db_dir();
    void close_db_dir();

    /// The external layer's state for this run, made on first use.
    std::mutex extension_mutex;
    std::shared_ptr<RunExtension> extension;  // guarded by extension_mutex

private:
    OcrOptions options_;
    std::mutex db_dir_mutex_;
    std::optional<RunDbDir> db_dir_;  // guarded by db_dir_mutex_
    bool finish_once(int exit_code);
    std::atomic<std::int64_t> live_{0};
    std::atomic<bool> finished_{false};
    std::mutex mutex_;
    std::condition_variable cv_;
    int exit_code_ = 0;
};

/// The run under way; nullptr outside run_ocr().
OcrState* state() noexcept;
void set_state(OcrState* s) noexcept;

/// The EDT running on this thread (nullptr outside EDTs).
Edt*& current_edt() noexcept;

/// "EINVAL" for OCR_EINVAL etc.
std::string_view error_name(int code) noexcept;

// Satisfaction and dependences (edt.cpp, event.cpp).
void satisfy_edt(const std::shared_ptr<Edt>& edt, u32 slot, ocrGuid_t db, ocrDbAccessMode_t mode, const CallSite& site);
u8 satisfy_event(const std::shared_ptr<Event>& event, ocrGuid_t db, u32 slot, const CallSite& site);
/// Delivers `db` to a destination (EDT or event), reporting a deferred error if it is gone.
void deliver(ocrGuid_t destination, u32 slot, ocrGuid_t db, ocrDbAccessMode_t mode, const CallSite& site);
u8 add_event_dependence(const std::shared_ptr<Event>& event, Event::Waiter waiter);
/// Continues acquiring the EDT's data blocks after hold `granted` was granted; schedules it when done.
void continue_acquire(const std::shared_ptr<Edt>& edt);
/// Waits while ocrPause holds EDTs, then counts the EDT as running (extensions.cpp).
void enter_edt();
void leave_edt();
/// Breaks the references between the objects left at the end of a run (run.cpp).
void clear_objects(std::vector<std::shared_ptr<Object>>& objects);
/// Creates a data block (db.cpp).
Result<std::shared_ptr<Db>> make_db(u64 length, DbPlacement placement);
/// A data block made of a memfd the runtime now owns (an external program's
/// output): mapped shared, no copy. Closes `fd` on error too.
Result<std::shared_ptr<Db>> adopt_memfd(int fd, u64 length);
/// Makes an EDT with no unsatisfied slot runnable (its GUID goes stale).
void start_edt(const std::shared_ptr<Edt>& edt);
/// A new EDT (not in the table yet), counted in `scope`; EDT_PROP_FINISH opens its own.
std::shared_ptr<Edt> new_edt(ocrEdt_t function, std::string name, const std::vector<u64>& params, u32 depc,
                             u16 properties, const CallSite& site, std::shared_ptr<FinishScope> scope);
/// One member of `scope` is done; a scope that completes fires its output event
/// and counts done in its parent (or, for a proxy, on its creator's rank).
void scope_done(std::shared_ptr<FinishScope> scope);
/// The bytes of one contribution to a COLLECTIVE event (collective.cpp).
u64 collective_contribution_bytes(const Event& event);
/// Ends an EDT whose body returned `result`: releases its holds, satisfies its
/// output event, closes its part of the finish scope, counts it finished.
void complete_edt(const std::shared_ptr<Edt>& edt, ocrGuid_t result);
/// Releases every hold of the EDT that ends (db.cpp).
void release_all(Edt& edt);

}  // namespace strata::ocr
