#!/usr/bin/env bash
# Installs the C libraries Tonearm builds against (Debian 12). Safe to run again.
# With --tests, also what the tests drive for real: systemd's tools (systemd-socket-activate,
# systemd-analyze), strace (the unit's system-call filter), util-linux's prlimit, mpc (the MPD
# client), Debian's mpd (the peer whose answers the MPD side is compared with; its own service
# is not used), python3-venv (the tests install python-mpd2 from PyPI into a virtualenv), icecast2 and
# ffmpeg (a real Icecast server fed by ffmpeg, for the network-stream tests), snapserver and
# snapclient (a real Snapcast system Tonearm plays into), openssl (the TLS tests make their
# certificates), and what snapserver's MPD plug-in
# (meta_mpd.py, which drives Tonearm's MPD side in the tests) imports: python3-mpd, python3-dbus,
# python3-gi, python3-musicbrainzngs; and Chromium, chromedriver and python3-selenium (the web remote's
# tests open its page in the real, headless browser); minidlna (a real DLNA media server the UPnP
# renderer plays from; its own service is not used).
# With --bench, also ffmpeg (the benchmark's media), Debian's mpd (the peer the benchmark's
# control figures are measured beside; its own service is not started) and gmediarender with
# gstreamer1.0-plugins-good (the renderer the UPnP figures are measured beside).
# With --deb, also what makes and checks the package: dpkg-dev (dpkg-shlibdeps), lintian, and
# binutils (strip).
set -euo pipefail
packages=(libavformat-dev libavcodec-dev libswresample-dev libavutil-dev libasound2-dev libsqlite3-dev libebur128-dev zlib1g-dev pkg-config make gcc)
if [ "${1:-}" = "--tests" ]; then
    packages+=(systemd strace util-linux mpc mpd ncmpcpp tmux python3-venv icecast2 ffmpeg snapserver snapclient openssl
               python3-mpd python3-dbus python3-gi python3-musicbrainzngs chromium chromium-driver python3-selenium
               minidlna)
elif [ "${1:-}" = "--bench" ]; then
    packages+=(ffmpeg mpd gmediarender gstreamer1.0-plugins-good)
elif [ "${1:-}" = "--deb" ]; then
    packages+=(dpkg-dev lintian binutils)
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
