#!/usr/bin/env bash
# Makes the benchmark's media (600 s, 60 s and 1 s of music-like stereo 44.1 kHz audio per format) in
# .build/bench/media, once. Needs the `ffmpeg` package (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/bench/media
mkdir -p "$out"
if ! command -v ffmpeg >/dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq ffmpeg
fi
ff() { ffmpeg -hide_banner -loglevel error -y "$@"; }
for seconds in 600 60 1; do
    wav="$out/src-$seconds.wav"
    # Two detuned chords with tremolo and a little noise: denser than a sine, so the encoders and
    # decoders do real work, as with music.
    [ -f "$wav" ] || ff -f lavfi -i "aevalsrc=0.2*sin(2*PI*220*t)*(1+0.3*sin(2*PI*3*t))+0.15*sin(2*PI*277*t)+0.1*sin(2*PI*330*t)+0.05*(random(0)-0.5)|0.2*sin(2*PI*221*t)+0.15*sin(2*PI*349*t)*(1+0.3*sin(2*PI*5*t))+0.1*sin(2*PI*440*t)+0.05*(random(1)-0.5):s=44100:d=$seconds" -c:a pcm_s16le "$wav"
    [ -f "$out/bench-$seconds.flac" ] || ff -i "$wav" -c:a flac "$out/bench-$seconds.flac"
    [ -f "$out/bench-$seconds.mp3" ] || ff -i "$wav" -c:a libmp3lame -b:a 192k "$out/bench-$seconds.mp3"
    [ -f "$out/bench-$seconds.ogg" ] || ff -i "$wav" -c:a libvorbis -q:a 5 "$out/bench-$seconds.ogg"
    [ -f "$out/bench-$seconds.opus" ] || ff -i "$wav" -c:a libopus -b:a 128k "$out/bench-$seconds.opus"
    [ -f "$out/bench-$seconds.m4a" ] || ff -i "$wav" -c:a aac -b:a 192k "$out/bench-$seconds.m4a"
done
# A song tagged as a tagger leaves it (the queue listings' figures show every tag it carries).
tags=(-metadata TITLE="Night Song" -metadata ARTIST="First Voice" -metadata ALBUM="Tagged Album"
      -metadata ALBUMARTIST="The Ensemble" -metadata DATE="2021-05-04" -metadata GENRE="Jazz"
      -metadata TRACKNUMBER="3" -metadata DISCNUMBER="1" -metadata COMPOSER="A. Composer"
      -metadata ARTISTSORT="Voice, First" -metadata ALBUMARTISTSORT="Ensemble, The" -metadata LABEL="Small Label"
      -metadata MUSICBRAINZ_ARTISTID="11111111-1111-1111-1111-111111111111"
      -metadata MUSICBRAINZ_ALBUMID="22222222-2222-2222-2222-222222222222"
      -metadata MUSICBRAINZ_TRACKID="33333333-3333-3333-3333-333333333333")
[ -f "$out/bench-tagged.flac" ] || ff -i "$out/src-1.wav" "${tags[@]}" -c:a flac "$out/bench-tagged.flac"
ls "$out"
