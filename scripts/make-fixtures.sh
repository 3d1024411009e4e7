#!/usr/bin/env bash
# Regenerates the sample media under Tests/Fixtures (needs the `ffmpeg` package).
# The FLAC is encoded from the WAV, so a lossless decode of either must equal the WAV's PCM.
set -euo pipefail
cd "$(dirname "$0")/../Tests/Fixtures"
ff() { ffmpeg -hide_banner -loglevel error -y "$@"; }
tags=(-metadata title="Test Tone" -metadata artist="Tonearm" -metadata album="Fixtures")

# 3 s stereo: 440 Hz left, 660 Hz right, so channel order and sample offsets are visible.
ff -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=3" \
   -f lavfi -i "sine=frequency=660:sample_rate=44100:duration=3" \
   -filter_complex "[0][1]amerge=inputs=2" -c:a pcm_s16le "${tags[@]}" tone.wav
ff -i tone.wav -c:a flac "${tags[@]}" tone.flac
ff -i tone.wav -c:a libmp3lame -b:a 128k "${tags[@]}" tone.mp3
ff -i tone.wav -c:a libvorbis -q:a 3 "${tags[@]}" tone.ogg
ff -i tone.wav -c:a libopus -b:a 64k "${tags[@]}" tone.opus
ff -i tone.wav -c:a aac -b:a 96k "${tags[@]}" tone.m4a
# 2 s mono 48 kHz, and a video file whose audio must play while its video is ignored.
ff -f lavfi -i "sine=frequency=1000:sample_rate=48000:duration=2" -c:a pcm_s16le mono48k.wav
ff -f lavfi -i "testsrc=size=160x120:rate=10:duration=2" -f lavfi -i "sine=frequency=500:sample_rate=44100:duration=2" \
   -c:v libx264 -pix_fmt yuv420p -c:a aac -b:a 64k -shortest video.mp4
# 24-bit FLAC: decodes to s32.
ff -f lavfi -i "sine=frequency=440:sample_rate=96000:duration=1" -ac 2 -c:a flac -sample_fmt s32 hires.flac

# Broken inputs.
: > empty.wav
printf 'this is a text file, not audio\n%.0s' {1..20} > notmedia.mp3
head -c 44 tone.wav > headeronly.wav
head -c 20000 tone.mp3 > truncated.mp3
