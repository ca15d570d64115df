// SPDX-License-Identifier: MIT
// The messages of the distributed OCR runtime (docs/runtime.md, "Distributed
// OCR"): a kind byte, then fields written in order by Writer and read back
// by Reader. Both ends run the same binary, so fields are native-endian.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/bytes.hpp"

namespace strata::ocr::dist {

enum class Msg : std::uint8_t {
    ping,  ///< "are you there" (answered by the communication thread)
    pong,
    hello,           ///< the sender's pid and host (to clean up after it if it dies)
    shutdown,        ///< ocrShutdown / ocrAbort / an error on the sender: exit code
    bye,             ///< the sender sends nothing more
    dead,            ///< the sender found a rank dead: its rank and why
    cleaned,         ///< the sender removed its files after a death
    create_edt,      ///< an EDT (and its output event) at a GUID the creator minted
    create_db,       ///< a data block at a GUID the creator minted (maybe held by the creator)
    satisfy,         ///< deliver a data block (or NULL_GUID) to an EDT slot or an event
    add_dependence,  ///< a dependence from an event of the receiver to any destination
    destroy,         ///< ocr*Destroy of an object of the receiver
    acquire,         ///< a hold on a data block of the receiver, for an EDT of the sender
    grant,           ///< the hold was taken: version and bytes (inline or a byte range)
    release,         ///< a write hold ends: the new bytes (inline or a byte range)
    scope_done,      ///< a proxy finish scope of the sender completed
    call,            ///< a request that waits for its reply (labeled creation, metadata)
    reply,           ///< the answer to a call
    collective,      ///< a contribution to a COLLECTIVE event of the receiver
    bundle,          ///< messages an EDT sent, together: each as Writer::bytes (cluster.hpp, "the outbox")
    count_,
};
inline constexpr int msg_kinds = static_cast<int>(Msg::count_);

/// What a call asks for (Msg::call).
enum class Call : std::uint8_t {
    fetch_template,    ///< an EDT template's function, counts and name
    fetch_map,         ///< a GUID range or map
    create_labeled,    ///< an object at a labeled GUID of the receiver (the result code)
    guid_kind,         ///< ocrGetGuidKind of an object of the receiver
    db_size,           ///< ocrDbGetSize of a data block of the receiver
    collective_bytes,  ///< the size of one contribution to a COLLECTIVE event of the receiver
};

class Writer {
public:
    /// `capacity`: the bytes the message will take, if more than most (each growth copies it).
    explicit Writer(Msg kind, std::size_t capacity = 96) : buffer_(std::make_shared<net::Bytes>()) {
        buffer_->reserve(capacity);
        u8(static_cast<std::uint8_t>(kind));
    }
    Writer& u8(std::uint8_t v) { return raw(&v, sizeof v); }
    Writer& u32(std::uint32_t v) { return raw(&v, sizeof v); }
    Writer& u64(std::uint64_t v) { return raw(&v, sizeof v); }
    Writer& i64(std::int64_t v) { return raw(&v, sizeof v); }
    Writer& bytes(std::span<const std::byte> v) {
        u64(v.size());
        return raw(v.data(), v.size());
    }
    Writer& str(std::string_view v) { return bytes(std::as_bytes(std::span(v.data(), v.size()))); }
    /// Words as they are, without a count (Reader::words reads them back).
    Writer& words(std::span<const std::uint64_t> v) { return raw(v.data(), v.size_bytes()); }
    [[nodiscard]] std::shared_ptr<net::Bytes> take() { return std::move(buffer_); }
    [[nodiscard]] const net::Bytes& view() const { return *buffer_; }

private:
    // resize and memcpy: Bytes' allocator constructs element by element in insert().
    Writer& raw(const void* p, std::size_t n) {
        if (n == 0) {
            return *this;  // p may be null (an empty vector's data())
        }
        const std::size_t at = buffer_->size();
        buffer_->resize(at + n);
        std::memcpy(buffer_->data() + at, p, n);
        return *this;
    }
    std::shared_ptr<net::Bytes> buffer_;
};

/// Reads what a Writer wrote; a short message leaves ok() false and reads zeros.
class Reader {
public:
    explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}
    [[nodiscard]] Msg kind() const { return bytes_.empty() ? Msg::count_ : static_cast<Msg>(bytes_[0]); }
    void skip_kind() { pos_ = 1; }
    std::uint8_t u8() { return get<std::uint8_t>(); }
    std::uint32_t u32() { return get<std::uint32_t>(); }
    std::uint64_t u64() { return get<std::uint64_t>(); }
    std::int64_t i64() { return get<std::int64_t>(); }
    std::span<const std::byte> bytes() {
        const std::uint64_t n = u64();
        if (!ok_ || n > bytes_.size() - pos_) {
            ok_ = false;
            return {};
        }
        auto out = bytes_.subspan(pos_, n);
        pos_ += n;
        return out;
    }
    /// Fills `out` with the next words; a short message leaves ok() false and `out` zero.
    void words(std::span<std::uint64_t> out) {
        if (!ok_ || out.size_bytes() > bytes_.size() - pos_) {
            ok_ = false;
            std::ranges::fill(out, 0);
            return;
        }
        if (out.empty()) {
            return;  // out.data() may be null
        }
        std::memcpy(out.data(), bytes_.data() + pos_, out.size_bytes());
        pos_ += out.size_bytes();
    }
    std::string str() {
        auto b = bytes();
        return {reinterpret_cast<const char*>(b.data()), b.size()};
    }
    [[nodiscard]] bool ok() const { return ok_; }
    /// What is left to read.
    [[nodiscard]] std::span<const std::byte> rest() const { return bytes_.subspan(pos_); }

private:
    template <class T>
    T get() {
        T v{};
        if (!ok_ || sizeof(T) > bytes_.size() - pos_) {
            ok_ = false;
            return v;
        }
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::span<const std::byte> bytes_;
    std::size_t pos_ = 0;
    bool ok_ = true;
};

}  // namespace strata::ocr::dist
