"""An https server for the TLS tests: serves one directory over TLS on 127.0.0.1 with the given
certificate, and answers /redirect?to=URL with a 302 to URL. Prints its port, then serves until
killed. Usage: tls_server.py CERT KEY DIRECTORY"""
import functools
import http.server
import ssl
import sys
import urllib.parse


class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        parts = urllib.parse.urlsplit(self.path)
        if parts.path == "/redirect":
            target = urllib.parse.parse_qs(parts.query).get("to", [""])[0]
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, *args):
        pass


cert, key, directory = sys.argv[1], sys.argv[2], sys.argv[3]
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=directory))
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
