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
# Matroska whose audio starts at 30 s, after a one-frame video at 0: the audio's own extent is 5 s.
ff -f lavfi -i "color=c=black:size=16x16:rate=1:duration=1" -itsoffset 30 -f lavfi -i "sine=frequency=440:sample_rate=8000:duration=5" \
   -map 0:v -map 1:a -c:v libx264 -pix_fmt yuv420p -c:a flac -ac 1 late-audio.mkv
# 24-bit FLAC: decodes to s32.
ff -f lavfi -i "sine=frequency=440:sample_rate=96000:duration=1" -ac 2 -c:a flac -sample_fmt s32 hires.flac

# Broken inputs.
: > empty.wav
printf 'this is a text file, not audio\n%.0s' {1..20} > notmedia.mp3
head -c 44 tone.wav > headeronly.wav
head -c 20000 tone.mp3 > truncated.mp3

# Gapless: tone.wav cut at sample counts that are not round (0–37817, 37817–91009, 91009–end),
# each part encoded on its own. Played as a queue, the lossless parts must give back tone.wav's
# PCM exactly; the lossy ones the concatenation of each part's own decode.
cuts=(0 37817 91009 132300)
for i in 1 2 3; do
    ff -i tone.wav -af "atrim=start_sample=${cuts[$((i - 1))]}:end_sample=${cuts[$i]}" -c:a pcm_s16le "gapless-$i.wav"
    ff -i "gapless-$i.wav" -c:a flac "gapless-$i.flac"
    ff -i "gapless-$i.wav" -c:a libmp3lame -b:a 128k "gapless-$i.mp3"
    ff -i "gapless-$i.wav" -c:a aac -b:a 96k "gapless-$i.m4a"
    ff -i "gapless-$i.wav" -c:a libopus -b:a 64k "gapless-$i.opus"
    rm "gapless-$i.wav"
done
# ReplayGain: tone.flac with a track gain of −6.02 dB (half the amplitude) and its peak.
ff -i tone.flac -c:a copy -metadata REPLAYGAIN_TRACK_GAIN="-6.02 dB" -metadata REPLAYGAIN_TRACK_PEAK="0.5" \
   -metadata REPLAYGAIN_ALBUM_GAIN="-12.04 dB" -metadata REPLAYGAIN_ALBUM_PEAK="0.5" replaygain.flac
# A playlist of the parts, with a title and a relative path.
printf '#EXTM3U\n#EXTINF:1,Part one\ngapless-1.flac\ngapless-2.flac\n%s\n' "gapless-3.flac" > gapless.m3u
