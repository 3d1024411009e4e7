// Helpers for FFmpeg 5.1 macros that Swift cannot import (function-like macros,
// FFERRTAG codes, compound-literal constants). Each is a static inline so no .c is needed.
#ifndef TONEARM_CFFMPEG_SHIM_H
#define TONEARM_CFFMPEG_SHIM_H

#include <errno.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswresample/swresample.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libavutil/error.h>
#include <libavutil/samplefmt.h>

static inline int tonearm_averror(int posix_errno) { return AVERROR(posix_errno); }
static inline int tonearm_averror_eof(void) { return AVERROR_EOF; }
static inline int tonearm_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int tonearm_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int tonearm_averror_stream_not_found(void) { return AVERROR_STREAM_NOT_FOUND; }
static inline int tonearm_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int tonearm_averror_exit(void) { return AVERROR_EXIT; }
static inline int tonearm_averror_http_unauthorized(void) { return AVERROR_HTTP_UNAUTHORIZED; }
static inline int tonearm_averror_http_forbidden(void) { return AVERROR_HTTP_FORBIDDEN; }
static inline int tonearm_averror_http_not_found(void) { return AVERROR_HTTP_NOT_FOUND; }
static inline int tonearm_averror_http_bad_request(void) { return AVERROR_HTTP_BAD_REQUEST; }
static inline int tonearm_averror_http_other_4xx(void) { return AVERROR_HTTP_OTHER_4XX; }
static inline int tonearm_averror_http_server_error(void) { return AVERROR_HTTP_SERVER_ERROR; }
static inline int tonearm_errno_enoent(void) { return ENOENT; }
static inline int tonearm_errno_eacces(void) { return EACCES; }
static inline int64_t tonearm_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline AVRational tonearm_av_time_base_q(void) { return AV_TIME_BASE_Q; }
static inline AVChannelLayout tonearm_channel_layout_mono(void) { return (AVChannelLayout)AV_CHANNEL_LAYOUT_MONO; }
static inline AVChannelLayout tonearm_channel_layout_stereo(void) { return (AVChannelLayout)AV_CHANNEL_LAYOUT_STEREO; }

/// Writes FFmpeg's description of `errnum` into `buf` (at least AV_ERROR_MAX_STRING_SIZE bytes).
static inline const char *tonearm_av_error_string(int errnum, char *buf, size_t size) {
    return av_make_error_string(buf, size, errnum);
}
static inline size_t tonearm_av_error_max_string_size(void) { return AV_ERROR_MAX_STRING_SIZE; }

/// Sets the AVIOInterruptCB of a format context so blocking I/O can be abandoned.
static inline void tonearm_set_interrupt(AVFormatContext *ctx, int (*cb)(void *), void *opaque) {
    ctx->interrupt_callback.callback = cb;
    ctx->interrupt_callback.opaque = opaque;
}


#endif
