// SPDX-License-Identifier: MIT
// Decoder (decoder.hpp) over libavformat / libavcodec / libswscale.
#include "decoder.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}

#include <cstring>

namespace strata::video {

std::string av_error_text(int code) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(code, text, sizeof text);
    return text;
}

struct Decoder::Impl {
    std::string path;
    AVFormatContext* format = nullptr;
    AVCodecContext* codec = nullptr;
    AVPacket* packet = nullptr;
    AVFrame* frame = nullptr;
    SwsContext* scaler = nullptr;
    int stream = -1;
    bool draining = false;
    std::int64_t decoded = 0;
    StreamInfo info;

    ~Impl() {
        sws_freeContext(scaler);
        av_frame_free(&frame);
        av_packet_free(&packet);
        avcodec_free_context(&codec);
        avformat_close_input(&format);
    }

    Result<void> convert(std::span<std::uint8_t> grey) {
        if (frame->width != info.width || frame->height != info.height) {
            return make_error(Errc::corrupted, "{}: frame {} is {}x{}, the stream started at {}x{}", path, decoded - 1,
                              frame->width, frame->height, info.width, info.height);
        }
        const auto format_of_frame = static_cast<AVPixelFormat>(frame->format);
        if (format_of_frame == AV_PIX_FMT_GRAY8) {
            av_image_copy_plane(grey.data(), info.width, frame->data[0], frame->linesize[0], info.width, info.height);
            return {};
        }
        scaler = sws_getCachedContext(scaler, info.width, info.height, format_of_frame, info.width, info.height,
                                      AV_PIX_FMT_GRAY8, SWS_POINT, nullptr, nullptr, nullptr);
        if (scaler == nullptr) {
            return make_error(Errc::unsupported, "{}: cannot convert pixel format {} to gray", path,
                              av_get_pix_fmt_name(format_of_frame));
        }
        std::uint8_t* planes[4] = {grey.data(), nullptr, nullptr, nullptr};
        int strides[4] = {info.width, 0, 0, 0};
        sws_scale(scaler, frame->data, frame->linesize, 0, info.height, planes, strides);
        return {};
    }
};

Decoder::Decoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Decoder::Decoder(Decoder&&) noexcept = default;
Decoder& Decoder::operator=(Decoder&&) noexcept = default;
Decoder::~Decoder() = default;

const StreamInfo& Decoder::info() const noexcept {
    return impl_->info;
}

Result<Decoder> Decoder::open(const std::string& path, const std::string& parameter, int threads) {
    auto impl = std::make_unique<Impl>();
    impl->path = path;
    av_log_set_level(AV_LOG_ERROR);
    if (int rc = avformat_open_input(&impl->format, path.c_str(), nullptr, nullptr); rc < 0) {
        return make_error(rc == AVERROR(ENOENT) ? Errc::not_found : Errc::io_error, "{}={}: cannot open: {}", parameter,
                          path, av_error_text(rc));
    }
    if (int rc = avformat_find_stream_info(impl->format, nullptr); rc < 0) {
        return make_error(Errc::corrupted, "{}={}: cannot read the stream information: {}", parameter, path,
                          av_error_text(rc));
    }
    const AVCodec* codec = nullptr;
    impl->stream = av_find_best_stream(impl->format, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (impl->stream < 0 || codec == nullptr) {
        return make_error(
            Errc::invalid_argument, "{}={}: {}", parameter, path,
            impl->stream == AVERROR_DECODER_NOT_FOUND ? "no decoder for its video stream" : "has no video stream");
    }
    const AVStream* stream = impl->format->streams[impl->stream];
    impl->codec = avcodec_alloc_context3(codec);
    if (impl->codec == nullptr || avcodec_parameters_to_context(impl->codec, stream->codecpar) < 0) {
        return make_error(Errc::out_of_memory, "{}={}: cannot set up the {} decoder", parameter, path, codec->name);
    }
    impl->codec->thread_count = threads;
    if (int rc = avcodec_open2(impl->codec, codec, nullptr); rc < 0) {
        return make_error(Errc::unsupported, "{}={}: cannot open the {} decoder: {}", parameter, path, codec->name,
                          av_error_text(rc));
    }
    impl->info.width = impl->codec->width;
    impl->info.height = impl->codec->height;
    if (impl->info.width <= 0 || impl->info.height <= 0) {
        return make_error(Errc::corrupted, "{}={}: the video stream has no frame size", parameter, path);
    }
    const AVRational rate = av_guess_frame_rate(impl->format, const_cast<AVStream*>(stream), nullptr);
    if (rate.num > 0 && rate.den > 0) {
        impl->info.rate_num = rate.num;
        impl->info.rate_den = rate.den;
    }
    // For the progress line only: a container need not count its frames (Matroska does not), and a
    // duration gives an estimate.
    if (stream->nb_frames > 0) {
        impl->info.frames = stream->nb_frames;
    } else if (stream->duration > 0 && rate.num > 0 && rate.den > 0) {
        impl->info.frames = av_rescale_q(stream->duration, stream->time_base, av_inv_q(rate));
    } else if (impl->format->duration > 0 && rate.num > 0 && rate.den > 0) {
        impl->info.frames = av_rescale_q(impl->format->duration, AV_TIME_BASE_Q, av_inv_q(rate));
    }
    impl->packet = av_packet_alloc();
    impl->frame = av_frame_alloc();
    if (impl->packet == nullptr || impl->frame == nullptr) {
        return make_error(Errc::out_of_memory, "{}={}: cannot allocate a packet and a frame", parameter, path);
    }
    return Decoder(std::move(impl));
}

Result<bool> Decoder::decode() {
    Impl& d = *impl_;
    av_frame_unref(d.frame);
    for (;;) {
        const int rc = avcodec_receive_frame(d.codec, d.frame);
        if (rc == 0) {
            ++d.decoded;
            return true;
        }
        if (rc == AVERROR_EOF) return false;
        if (rc != AVERROR(EAGAIN)) {
            return make_error(Errc::corrupted, "{}: cannot decode frame {}: {}", d.path, d.decoded, av_error_text(rc));
        }
        if (d.draining) return false;
        const int read = av_read_frame(d.format, d.packet);
        if (read == AVERROR_EOF) {
            d.draining = true;
            avcodec_send_packet(d.codec, nullptr);
            continue;
        }
        if (read < 0) {
            return make_error(Errc::io_error, "{}: cannot read after frame {}: {}", d.path, d.decoded,
                              av_error_text(read));
        }
        if (d.packet->stream_index == d.stream) {
            const int sent = avcodec_send_packet(d.codec, d.packet);
            if (sent < 0 && sent != AVERROR(EAGAIN)) {
                av_packet_unref(d.packet);
                return make_error(Errc::corrupted, "{}: cannot decode the packet after frame {}: {}", d.path, d.decoded,
                                  av_error_text(sent));
            }
        }
        av_packet_unref(d.packet);
    }
}

Result<void> Decoder::convert(std::span<std::uint8_t> grey) {
    Impl& d = *impl_;
    if (grey.size() < d.info.frame_bytes()) {
        return make_error(Errc::invalid_argument, "Decoder::convert: buffer of {} bytes for a {}x{} frame", grey.size(),
                          d.info.width, d.info.height);
    }
    if (d.frame->data[0] == nullptr) {
        return make_error(Errc::invalid_argument, "Decoder::convert: no decoded frame");
    }
    return d.convert(grey);
}

Result<bool> Decoder::next(std::span<std::uint8_t> grey) {
    auto got = decode();
    if (!got || !*got) return got;
    if (auto c = convert(grey); !c) return std::unexpected(c.error());
    return true;
}

}  // namespace strata::video
