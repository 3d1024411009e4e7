#!/usr/bin/env bash
# Installs the package scripts/make-deb.sh built on this machine (root, dpkg -i) and checks it:
# no Swift library linked, `--version` of both tools, the units accepted by `systemd-analyze
# verify`, the service user in "audio", the manual's CONFIGURATION section, and a short play of a
# fixture on the `null` device by the service user with the unit's own ExecStart line (the
# directories systemd would make for it made by hand: no systemd runs here); then purges it and
# checks that nothing is left (the system user stays, as Debian's practice is). CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check-deb: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (dpkg -i)"
arch=$(dpkg --print-architecture)
version=$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/TonearmProtocol/TonearmVersion.swift)
deb=.build/deb/tonearm_${version}_$arch.deb
[ -f "$deb" ] || fail "no $deb: run make deb first"
if dpkg-query -W -f='${Status}' tonearm 2>/dev/null | grep -q installed; then fail "tonearm is installed already: not touched"; fi
work=$(mktemp -d)
chmod 755 "$work"
daemon=""
cleanup() {
    if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null || true; fi
    dpkg --purge tonearm >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

timeout 120 dpkg -i "$deb"
if ldd /usr/bin/tonearmd /usr/bin/tonearmctl | grep -i swift; then fail "a Swift library is linked dynamically"; fi
[ "$(tonearmd --version)" = "$version" ] || fail "tonearmd --version: $(tonearmd --version)"
[ "$(tonearmctl --version)" = "$version" ] || fail "tonearmctl --version: $(tonearmctl --version)"
timeout 60 systemd-analyze verify /lib/systemd/system/tonearmd.socket /lib/systemd/system/tonearmd.service
id -nG tonearm | grep -qw audio || fail "the tonearm user is not in audio"
MANWIDTH=80 man -l /usr/share/man/man8/tonearmd.8.gz 2>/dev/null | grep -q '^CONFIGURATION' || fail "tonearmd(8) has no CONFIGURATION"
grep -qx /etc/tonearm/tonearmd.toml /var/lib/dpkg/info/tonearm.conffiles || fail "the config is not a conffile"
[ "$(stat -c '%a %U %G' /etc/tonearm/tonearmd.toml)" = "640 root tonearm" ] \
    || fail "the config (it may hold passwords) is $(stat -c '%a %U %G' /etc/tonearm/tonearmd.toml), not 640 root tonearm"
setpriv --reuid=tonearm --regid=audio --init-groups cat /etc/tonearm/tonearmd.toml >/dev/null \
    || fail "the service user cannot read its config"
if setpriv --reuid=nobody --regid=nogroup --clear-groups cat /etc/tonearm/tonearmd.toml >/dev/null 2>&1; then
    fail "any user can read the config"
fi

# The service as systemd would start it: its user and group, its directories, its ExecStart.
exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/tonearmd.service)
socket=$(echo "$exec_start" | sed -n 's/.*--socket \([^ ]*\).*/\1/p')
install -d -o tonearm -g audio -m 755 "$(dirname "$socket")"
install -d -o tonearm -g audio -m 700 /var/lib/tonearm
cp Tests/Fixtures/tone.wav "$work/tone.wav" && chmod 644 "$work/tone.wav"
# shellcheck disable=SC2086 # the ExecStart line is split into words as systemd does
setpriv --reuid=tonearm --regid=audio --init-groups env STATE_DIRECTORY=/var/lib/tonearm TONEARM_DEVICE=null \
    $exec_start > "$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || fail "no control socket: $(cat "$work/daemon.log")"
timeout 10 tonearmctl load --socket "$socket" "$work/tone.wav" --play
for _ in $(seq 100); do
    timeout 5 tonearmctl status --socket "$socket" | grep -q '^ended' && break
    sleep 0.1
done
timeout 5 tonearmctl status --socket "$socket" | grep -q '^ended' || fail "the fixture did not play to its end"
kill -TERM "$daemon"
wait "$daemon" || fail "the daemon did not stop cleanly: $(cat "$work/daemon.log")"
daemon=""
stat -c '%U' /var/lib/tonearm/state.json | grep -qx tonearm || fail "the state was not kept by the service user"

timeout 120 dpkg --purge tonearm
for path in /usr/bin/tonearmd /usr/bin/tonearmctl /etc/tonearm /var/lib/tonearm /lib/systemd/system/tonearmd.service \
            /lib/systemd/system/tonearmd.socket /usr/share/doc/tonearm /usr/share/man/man8/tonearmd.8.gz; do
    [ ! -e "$path" ] || fail "$path is left after purge"
done
left=$(find /etc/systemd /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked \
       -name 'tonearmd*' 2>/dev/null || true)
[ -z "$left" ] || fail "left after purge: $left"
! dpkg-statoverride --list /etc/tonearm/tonearmd.toml >/dev/null || fail "the config's mode override is left after purge"
id tonearm >/dev/null || fail "the system user should stay"
echo "check-deb: $deb installs, plays as tonearm, and purges clean"
