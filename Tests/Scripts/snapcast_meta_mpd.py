#!/usr/bin/python3
"""snapserver's own MPD plug-in, run unchanged as the Snapcast tests' `controlscript`.

/usr/share/snapserver/plug-ins/meta_mpd.py (Snapcast 0.26) connects to an MPD server (here
Tonearm's MPD front-end), forwards snapserver's Stream.Control to it and reports its status and current song.
For every song with an artist and an album it asks MusicBrainz for cover art; without a network
the lookup raises inside the plug-in's MPD socket callback (a traceback, in the middle of its
idle bookkeeping), so the tests, which have no internet, point musicbrainzngs at a stub on
loopback that knows no release: what they check does not hang on that failure. Nothing else of
the plug-in is touched: it runs as `__main__` with the arguments snapserver passed, and the MPD
server named as mpc takes it, by MPD_HOST (a Unix socket's path, or a host) and MPD_PORT in the
environment (snapserver 0.26 passes a control script no arguments of the source's).

Started and stopped by snapserver (which the tests stop by PID with its children).
"""
import http.server
import os
import runpy
import sys
import threading

import musicbrainzngs

PLUGIN = "/usr/share/snapserver/plug-ins/meta_mpd.py"
NO_RELEASE = (b'<?xml version="1.0" encoding="UTF-8"?>'
              b'<metadata xmlns="http://musicbrainz.org/ns/mmd-2.0#">'
              b'<release-list count="0" offset="0"/></metadata>')


class NoRelease(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/xml; charset=utf-8")
        self.send_header("Content-Length", str(len(NO_RELEASE)))
        self.end_headers()
        self.wfile.write(NO_RELEASE)

    def log_message(self, *args):
        pass


stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoRelease)
threading.Thread(target=stub.serve_forever, daemon=True).start()
musicbrainzngs.set_hostname(f"127.0.0.1:{stub.server_address[1]}", use_https=False)

sys.argv[0] = PLUGIN
for variable, option in (("MPD_HOST", "--mpd-host"), ("MPD_PORT", "--mpd-port")):
    if os.environ.get(variable):
        sys.argv.append(f"{option}={os.environ[variable]}")
runpy.run_path(PLUGIN, run_name="__main__")
