"""A loopback stand-in for deploy/gateway/nginx.conf: TLS in, /v1/fleet/* forwarded over TLS, 403 otherwise.

It checks, with the real Flower processes, what the nginx gateway relies on: SuperNodes work
through a proxy that terminates TLS and forwards only Fleet API paths (their authentication signs
HTTP headers, which a proxy passes on), while the Control and Runtime APIs stay out of the
parties' reach.  It runs in threads of the test process, bound to 127.0.0.1.
"""

from __future__ import annotations

import http.client
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

from ._harness import LOOPBACK

FORWARDED_PREFIX = "/v1/fleet/"
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    "host",
    "content-length",
}


class FleetGateway:
    """Listen on ``LOOPBACK:port`` with ``cert``/``key``; forward Fleet paths to ``LOOPBACK:upstream``."""

    def __init__(self, port: int, upstream: int, cert: Path, key: Path, ca: Path) -> None:
        self.refused: list[str] = []
        self.forwarded = 0
        gateway = self
        upstream_tls = ssl.create_default_context(cafile=str(ca))  # verifies the SuperLink's certificate

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if not self.path.startswith(FORWARDED_PREFIX):
                    gateway.refused.append(f"{self.command} {self.path}")
                    self._reply(403, [("Content-Type", "text/plain")], b"forbidden\n")
                    return
                conn = http.client.HTTPSConnection(LOOPBACK, upstream, context=upstream_tls, timeout=300)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    data = response.read()
                    gateway.forwarded += 1
                    self._reply(
                        response.status,
                        [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP],
                        data,
                    )
                finally:
                    conn.close()

            def _reply(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.server = ThreadingHTTPServer((LOOPBACK, port), Handler)
        self.server.daemon_threads = True
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.minimum_version = ssl.TLSVersion.TLSv1_2
        tls.load_cert_chain(str(cert), str(key))
        self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, name="fleet-gateway", daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
