/* The libav floor for Tonearm's decode-cost benchmark: demux + decode + swresample of one file to the
 * format tonearmd would hand the device (source rate and channels, the nearest packed S16/S32/float),
 * with the output discarded. Nothing else: the least any player built on libav can spend.
 *
 * Build: cc -O2 bench/floor.c $(pkg-config --cflags --libs libavformat libavcodec libswresample libavutil)
 * Usage: floor FILE          (prints the number of frames produced)
 */
#include <stdio.h>
#include <stdlib.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswresample/swresample.h>
#include <libavutil/channel_layout.h>

static enum AVSampleFormat nearest(enum AVSampleFormat in) {
    switch (av_get_packed_sample_fmt(in)) {
    case AV_SAMPLE_FMT_U8: case AV_SAMPLE_FMT_S16: return AV_SAMPLE_FMT_S16;
    case AV_SAMPLE_FMT_S32: return AV_SAMPLE_FMT_S32;
    default: return AV_SAMPLE_FMT_FLT;
    }
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: floor FILE\n"); return 2; }
    AVFormatContext *fmt = NULL;
    if (avformat_open_input(&fmt, argv[1], NULL, NULL) < 0 || avformat_find_stream_info(fmt, NULL) < 0) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 1;
    }
    const AVCodec *codec = NULL;
    int index = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
    if (index < 0) { fprintf(stderr, "no audio stream\n"); return 1; }
    for (unsigned i = 0; i < fmt->nb_streams; i++) if ((int)i != index) fmt->streams[i]->discard = AVDISCARD_ALL;
    AVCodecContext *dec = avcodec_alloc_context3(codec);
    avcodec_parameters_to_context(dec, fmt->streams[index]->codecpar);
    dec->pkt_timebase = fmt->streams[index]->time_base;
    if (avcodec_open2(dec, codec, NULL) < 0) { fprintf(stderr, "cannot open decoder\n"); return 1; }

    AVChannelLayout layout;
    if (dec->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC) av_channel_layout_default(&layout, dec->ch_layout.nb_channels);
    else av_channel_layout_copy(&layout, &dec->ch_layout);
    enum AVSampleFormat out_fmt = nearest(dec->sample_fmt);
    SwrContext *swr = NULL;
    swr_alloc_set_opts2(&swr, &layout, out_fmt, dec->sample_rate, &layout, dec->sample_fmt, dec->sample_rate, 0, NULL);
    if (swr_init(swr) < 0) { fprintf(stderr, "cannot init swresample\n"); return 1; }

    int bytes_per_frame = av_get_bytes_per_sample(out_fmt) * layout.nb_channels;
    int capacity = 8192;
    uint8_t *out = malloc((size_t)capacity * bytes_per_frame);
    AVPacket *pkt = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    long long frames = 0;
    int draining = 0;
    for (;;) {
        int ret = avcodec_receive_frame(dec, frame);
        if (ret >= 0) {
            int needed = swr_get_out_samples(swr, frame->nb_samples);
            if (needed > capacity) { capacity = needed; out = realloc(out, (size_t)capacity * bytes_per_frame); }
            frames += swr_convert(swr, &out, capacity, (const uint8_t **)frame->extended_data, frame->nb_samples);
            av_frame_unref(frame);
            continue;
        }
        if (ret == AVERROR_EOF) break;
        if (draining) break;
        if (av_read_frame(fmt, pkt) < 0) { draining = 1; avcodec_send_packet(dec, NULL); continue; }
        if (pkt->stream_index == index) avcodec_send_packet(dec, pkt);
        av_packet_unref(pkt);
    }
    int tail;
    while ((tail = swr_convert(swr, &out, capacity, NULL, 0)) > 0) frames += tail;
    printf("%lld\n", frames);
    free(out);
    av_frame_free(&frame);
    av_packet_free(&pkt);
    swr_free(&swr);
    av_channel_layout_uninit(&layout);
    avcodec_free_context(&dec);
    avformat_close_input(&fmt);
    return 0;
}
