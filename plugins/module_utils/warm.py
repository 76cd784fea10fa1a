"""The hand-off of a batch to a warm run, both ends: the operator listens on a unix socket it names in the module's
`batch_from`; the module, once it has started and connected, says `ready <pid>`, reads the batch (JSON, up to EOF) and
acknowledges it with `ok`. Only an acknowledged batch belongs to the run: anything else and the operator runs the
batch cold, so a warm run that dies or times out never loses one. Standard library only (it runs in the module)."""
from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import time
from collections.abc import Callable

READY, ACK = b"ready", b"ok\n"
MAX_LINE = 64


def receive_batch(path: str, timeout: float) -> list[dict] | None:
    """The module's end: the batch's jobs, or None when none came within `timeout` seconds or the operator went away
    (it closed the socket: shutdown, or it died)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(READY + b" %d\n" % os.getpid())
        data = _read_to_eof(sock, time.monotonic() + timeout)
        if not data:
            return None
        jobs = json.loads(data)["jobs"]
        sock.sendall(ACK)
        return jobs
    except (OSError, ValueError, KeyError):  # socket.timeout is an OSError
        return None
    finally:
        sock.close()


def _read_to_eof(sock: socket.socket, deadline: float) -> bytes:
    chunks = []
    while True:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


class Handoff:
    """The operator's end: one listening socket per warm run."""

    def __init__(self, path: str):
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.pid: int | None = None  # the module process, once it said ready

    def ready(self) -> bool:
        """The module has connected: it waits for its batch."""
        try:
            return bool(select.select([self.listener], [], [], 0)[0])
        except (OSError, ValueError):  # closed
            return False

    def give(self, jobs: list[dict], ready_within: float, alive: Callable[[], bool], ack_within: float = 10.0) -> bool:
        """Hands `jobs` over; True once the module acknowledged them. Waits up to `ready_within` seconds for a module
        still starting, as long as `alive()` (its run has not ended)."""
        deadline = time.monotonic() + ready_within
        conn = None
        try:
            while conn is None:
                self.listener.settimeout(0.05)
                try:
                    conn = self.listener.accept()[0]
                except socket.timeout:
                    if time.monotonic() > deadline or not alive():
                        return False
            conn.settimeout(ack_within)
            line = b""
            while not line.endswith(b"\n") and len(line) < MAX_LINE:
                chunk = conn.recv(MAX_LINE)
                if not chunk:
                    return False  # it ended (its own timeout) before taking the batch
                line += chunk
            if not line.startswith(READY):
                return False
            self.pid = int(line.split()[1])
            conn.sendall(json.dumps({"jobs": jobs}, separators=(",", ":")).encode())
            conn.shutdown(socket.SHUT_WR)
            return conn.recv(len(ACK)) == ACK
        except (OSError, ValueError, IndexError):
            return False
        finally:
            if conn is not None:
                conn.close()
            self.close()

    def close(self) -> None:
        """Refuses the module (a connected one reads EOF and ends its run with no batch)."""
        self.listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
