"""/metrics, /healthz and /readyz on --monitoring-port."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger("mpijob_operator.health")

# A check returns None when fine, else the reason it is not.
Check = Callable[[], "str | None"]


def serve(port: int, registry: CollectorRegistry, healthz: Check, readyz: Check,
          before_scrape: Callable[[], None] = lambda: None) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                before_scrape()
                self._reply(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path in ("/healthz", "/readyz"):
                problem = (healthz if path == "/healthz" else readyz)()
                body = (problem or "ok").encode() + b"\n"
                self._reply(503 if problem else 200, body, "text/plain; charset=utf-8")
            else:
                self._reply(404, b"not found\n", "text/plain; charset=utf-8")

        def _reply(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # probes every few seconds would drown the job logs

    server = ThreadingHTTPServer(("", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="monitoring", daemon=True).start()
    log.info("monitoring endpoints up", extra={"port": server.server_address[1]})
    return server
