# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""JSON over a transport (no model (de)serialisation, any kind, any content type), and
`connect`: the one way the modules, the action plugins and the operator get a client from connection options."""

from __future__ import annotations

import json
import threading
from typing import Any

from ..mpijob.errors import ApiError, MissingLibrary, MPIJobError, Unreachable
from .auth import api_client, auth, light_endpoint
from .transport import ApiClientTransport, Urllib3Transport


def connect(params: dict, wrap: Any = None) -> Rest:
    """The Rest client for connection options named as AUTH_ARG_SPEC (each else its $K8S_AUTH_* variable).
    `wrap(transport)` may wrap the transport (the operator's rate limit). Raises BadAuth, MissingLibrary (the
    credentials need the kubernetes library) or Unreachable (they cannot be loaded)."""
    try:
        headers = auth(params).headers()
        endpoint = light_endpoint(params)
        if endpoint is not None:
            transport: Any = Urllib3Transport(endpoint, headers)
        else:
            transport = ApiClientTransport(api_client(params), headers)
    except ImportError as exc:
        raise MissingLibrary("kubernetes", str(exc)) from exc
    except MPIJobError:
        raise
    except (OSError, ValueError) as exc:  # unreadable key or CA files (ssl.SSLError is an OSError)
        raise Unreachable(f"cannot load the credentials: {exc}") from exc
    return Rest(wrap(transport) if wrap else transport, timeout=params.get("request_timeout") or 30.0)


class Rest:
    """JSON over a connection pool: no model (de)serialisation, any kind, any content type. `transport` is a
    Urllib3Transport, an ApiClientTransport, or a kubernetes client ApiClient (wrapped in one)."""

    def __init__(self, transport: Any, timeout: float = 30.0):
        self.transport = transport if hasattr(transport, "send") else ApiClientTransport(transport)
        self.timeout = timeout
        self.calls = 0
        self._lock = threading.Lock()

    def raw(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        timeout: float | None = None,
    ) -> tuple[int, str, bytes]:
        """(status, reason, body bytes); raises Unreachable when the API server does not answer."""
        with self._lock:
            self.calls += 1
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        return self.transport.send(method, path, query, headers, body, timeout or self.timeout)

    def stream(self, path: str, query: dict, timeout: float | tuple[float, float]) -> Any:
        """A GET whose body is read as it comes (a watch): the urllib3 response; release_conn() when done."""
        with self._lock:
            self.calls += 1
        return self.transport.open("GET", path, query, {"Accept": "application/json"}, None, timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict | None = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> dict:
        status, reason, data = self.raw(method, path, body, query, content_type, timeout=timeout)
        payload = _payload(data)
        if status >= 400:
            raise ApiError(status, reason, payload if isinstance(payload, dict) else {})
        return payload

    def send(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> None:
        """request() for a write whose answer is not read (a creation, a deletion, an Event): the body of a success
        is not decoded (a created pod's is kilobytes of JSON); an error raises ApiError as request() does."""
        status, reason, data = self.raw(method, path, body, None, content_type)
        if status >= 400:
            payload = _payload(data)
            raise ApiError(status, reason, payload if isinstance(payload, dict) else {})

    def get(self, path: str) -> dict | None:
        try:
            return self.request("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, path: str, selector: str = "", fields: str = "") -> list[dict]:
        """All items (None when the kind is not served, e.g. a missing PodGroup CRD), by label and field selector."""
        query = {key: value for key, value in (("labelSelector", selector), ("fieldSelector", fields)) if value}
        try:
            return self.request("GET", path, query=query).get("items") or []
        except ApiError as exc:
            if exc.status == 404:
                return []
            raise


def _payload(data: Any) -> Any:
    """An answer's JSON; one that is not JSON as {message: its first 500 characters}."""
    try:
        return json.loads(data) if data else {}
    except ValueError:
        return {"message": data.decode(errors="replace")[:500] if isinstance(data, bytes) else str(data)}


# ---- where each kind lives --------------------------------------------------------------------------------------
