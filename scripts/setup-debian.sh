#!/usr/bin/env bash
# Installs the C libraries Tonearm builds against (Debian 12). Safe to run again.
set -euo pipefail
packages=(libavformat-dev libavcodec-dev libswresample-dev libavutil-dev libasound2-dev pkg-config make gcc)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
