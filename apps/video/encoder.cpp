// SPDX-License-Identifier: MIT
// Encoder (encoder.hpp): libavcodec + libavformat writing through an AVIO
// context on a descriptor the Encoder opened itself (O_EXCL, O_NOFOLLOW).
#include "encoder.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
}

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace strata::video {

bool known_codec(const std::string& codec) {
    return codec == "rawvideo" || codec == "ffv1";
}

namespace {

constexpr int io_buffer_size = 1 << 20;

int write_packet(void* opaque, std::uint8_t* data, int size) {  // FFmpeg 5: not const
    const int fd = *static_cast<int*>(opaque);
    int done = 0;
    while (done < size) {
        const ssize_t n = ::write(fd, data + done, static_cast<std::size_t>(size - done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return AVERROR(errno);
        }
        done += static_cast<int>(n);
    }
    return size;
}

std::int64_t seek(void* opaque, std::int64_t offset, int whence) {
    const int fd = *static_cast<int*>(opaque);
    if (whence == AVSEEK_SIZE) {
        struct stat st {};
        return ::fstat(fd, &st) == 0 ? st.st_size : AVERROR(errno);
    }
    const off_t at = ::lseek(fd, offset, whence & ~AVSEEK_FORCE);
    return at < 0 ? AVERROR(errno) : at;
}

const char* muxer_for(const std::string& path) {
    for (const char* ext : {".raw", ".gray", ".yuv"}) {
        if (path.ends_with(ext)) return "rawvideo";
    }
    return nullptr;
}

}  // namespace

struct Encoder::Impl {
    EncoderOptions options;
    int fd = -1;
    bool finished = false;
    AVFormatContext* format = nullptr;
    AVIOContext* io = nullptr;
    AVCodecContext* codec = nullptr;
    AVStream* stream = nullptr;
    AVFrame* frame = nullptr;
    AVPacket* packet = nullptr;
    std::int64_t frames = 0;

    ~Impl() {
        av_frame_free(&frame);
        av_packet_free(&packet);
        avcodec_free_context(&codec);
        if (format != nullptr) {
            avformat_free_context(format);
        }
        if (io != nullptr) {
            av_freep(&io->buffer);
            avio_context_free(&io);
        }
        if (fd >= 0) {
            ::close(fd);
            if (!finished) {
                ::unlink(options.path.c_str());
            }
        }
    }

    Result<void> drain() {
        for (;;) {
            const int rc = avcodec_receive_packet(codec, packet);
            if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return {};
            if (rc < 0) {
                return make_error(Errc::io_error, "--codec={}: encoding frame {} failed: {}", options.codec, frames,
                                  av_error_text(rc));
            }
            av_packet_rescale_ts(packet, codec->time_base, stream->time_base);
            packet->stream_index = stream->index;
            if (int w = av_interleaved_write_frame(format, packet); w < 0) {
                return make_error(Errc::io_error, "--output={}: cannot write frame {}: {}", options.path, frames,
                                  av_error_text(w));
            }
        }
    }
};

Encoder::Encoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Encoder::Encoder(Encoder&&) noexcept = default;
Encoder& Encoder::operator=(Encoder&&) noexcept = default;
Encoder::~Encoder() = default;
std::int64_t Encoder::frames() const noexcept {
    return impl_->frames;
}

Result<Encoder> Encoder::create(const EncoderOptions& options) {
    if (!known_codec(options.codec)) {
        return make_error(Errc::invalid_argument, "--codec={}: unknown codec (expected rawvideo or ffv1)",
                          options.codec);
    }
    const char* muxer = muxer_for(options.path);
    if (muxer != nullptr && options.codec != "rawvideo") {
        return make_error(Errc::invalid_argument, "--codec={}: a bare-bytes file (--output={}) holds rawvideo only",
                          options.codec, options.path);
    }
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    if (avformat_alloc_output_context2(&impl->format, nullptr, muxer, options.path.c_str()) < 0 ||
        impl->format == nullptr) {
        return make_error(Errc::invalid_argument,
                          "--output={}: no container for this file name (use .mkv, .nut, .avi, or .raw for bare bytes)",
                          options.path);
    }
    if (options.overwrite) {
        struct stat st {};
        if (::lstat(options.path.c_str(), &st) == 0) {
            if (!S_ISREG(st.st_mode)) {
                return make_error(Errc::invalid_argument, "--output={}: exists and is not a regular file",
                                  options.path);
            }
            ::unlink(options.path.c_str());
        }
    }
    impl->fd = ::open(options.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (impl->fd < 0) {
        const int err = errno;
        if (err == EEXIST) {
            return make_error(Errc::already_exists, "--output={}: exists (pass --overwrite to replace it)",
                              options.path);
        }
        return make_sys_error(err, "--output={}: cannot create", options.path);
    }
    auto* buffer = static_cast<unsigned char*>(av_malloc(io_buffer_size));
    impl->io = buffer == nullptr
                   ? nullptr
                   : avio_alloc_context(buffer, io_buffer_size, 1, &impl->fd, nullptr, write_packet, seek);
    if (impl->io == nullptr) {
        av_free(buffer);
        return make_error(Errc::out_of_memory, "--output={}: cannot allocate the output buffer", options.path);
    }
    impl->format->pb = impl->io;
    impl->format->flags |= AVFMT_FLAG_CUSTOM_IO;
    return Encoder(std::move(impl));
}

Result<void> Encoder::start(const StreamInfo& info) {
    Impl& e = *impl_;
    const AVCodec* codec = avcodec_find_encoder_by_name(e.options.codec.c_str());
    if (codec == nullptr) {
        return make_error(Errc::unsupported, "--codec={}: this FFmpeg has no such encoder", e.options.codec);
    }
    e.codec = avcodec_alloc_context3(codec);
    e.stream = avformat_new_stream(e.format, nullptr);
    e.frame = av_frame_alloc();
    e.packet = av_packet_alloc();
    if (e.codec == nullptr || e.stream == nullptr || e.frame == nullptr || e.packet == nullptr) {
        return make_error(Errc::out_of_memory, "--output={}: cannot allocate the encoder", e.options.path);
    }
    e.codec->width = info.width;
    e.codec->height = info.height;
    e.codec->pix_fmt = AV_PIX_FMT_GRAY8;
    e.codec->time_base = AVRational{info.rate_den, info.rate_num};
    e.codec->framerate = AVRational{info.rate_num, info.rate_den};
    e.codec->thread_count = e.options.threads;
    if (e.format->oformat->flags & AVFMT_GLOBALHEADER) {
        e.codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    }
    AVDictionary* settings = nullptr;
    if (e.options.codec == "ffv1") {
        av_dict_set(&settings, "level", "3", 0);  // level 3: slices, so that threads help
    }
    const int opened = avcodec_open2(e.codec, codec, &settings);
    av_dict_free(&settings);
    if (opened < 0) {
        return make_error(Errc::unsupported, "--codec={}: cannot open the encoder for {}x{} gray: {}", e.options.codec,
                          info.width, info.height, av_error_text(opened));
    }
    if (avcodec_parameters_from_context(e.stream->codecpar, e.codec) < 0) {
        return make_error(Errc::internal, "--codec={}: cannot copy the codec parameters", e.options.codec);
    }
    e.stream->time_base = e.codec->time_base;
    if (int rc = avformat_write_header(e.format, nullptr); rc < 0) {
        return make_error(Errc::io_error, "--output={}: cannot write the header: {}", e.options.path,
                          av_error_text(rc));
    }
    e.frame->format = AV_PIX_FMT_GRAY8;
    e.frame->width = info.width;
    e.frame->height = info.height;
    if (av_frame_get_buffer(e.frame, 0) < 0) {
        return make_error(Errc::out_of_memory, "--output={}: cannot allocate a frame", e.options.path);
    }
    return {};
}

Result<void> Encoder::write(std::span<const std::uint8_t> grey) {
    Impl& e = *impl_;
    if (av_frame_make_writable(e.frame) < 0) {
        return make_error(Errc::out_of_memory, "--output={}: cannot allocate a frame", e.options.path);
    }
    av_image_copy_plane(e.frame->data[0], e.frame->linesize[0], grey.data(), e.frame->width, e.frame->width,
                        e.frame->height);
    e.frame->pts = e.frames;
    if (int rc = avcodec_send_frame(e.codec, e.frame); rc < 0) {
        return make_error(Errc::io_error, "--codec={}: encoding frame {} failed: {}", e.options.codec, e.frames,
                          av_error_text(rc));
    }
    ++e.frames;
    return e.drain();
}

Result<void> Encoder::finish() {
    Impl& e = *impl_;
    if (e.codec != nullptr) {
        avcodec_send_frame(e.codec, nullptr);
        if (auto drained = e.drain(); !drained) return drained;
        if (int rc = av_write_trailer(e.format); rc < 0) {
            return make_error(Errc::io_error, "--output={}: cannot write the trailer: {}", e.options.path,
                              av_error_text(rc));
        }
    }
    avio_flush(e.io);
    if (e.io->error < 0) {
        return make_error(Errc::io_error, "--output={}: cannot write: {}", e.options.path, av_error_text(e.io->error));
    }
    e.finished = true;
    return {};
}

}  // namespace strata::video
