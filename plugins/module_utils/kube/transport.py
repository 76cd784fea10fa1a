# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""HTTP to the API server, two ways with one interface (`send` reads the body, `open` streams it): urllib3 alone
for an Endpoint, or a kubernetes client ApiClient. A failure to connect raises Unreachable."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from ..mpijob.errors import Unreachable
from .auth import Endpoint

# The libraries under the transports, whose debug logging the operator quiets.
LIBRARY_LOGGERS = ("urllib3", "kubernetes")


class Urllib3Transport:
    """HTTP to the API server with urllib3 alone."""

    def __init__(self, ep: Endpoint, headers: list[tuple[str, str]] | None = None):
        import ssl

        import urllib3

        self._urllib3 = urllib3
        self.host = ep.host
        self.headers = [("Authorization", f"Bearer {ep.token}")] if ep.token else []
        self.headers += headers or []
        if ep.verify:
            ctx = ssl.create_default_context(cafile=ep.ca_file, cadata=ep.ca_data)
        else:  # asked for with validate_certs=false or insecure-skip-tls-verify
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        if ep.cert_file and ep.key_file:
            ctx.load_cert_chain(ep.cert_file, ep.key_file)
        # a refused connection is tried once more; a request the server took and never answered is not sent again
        retries = urllib3.Retry(total=1, connect=1, read=0, status=0, redirect=0)
        self.pool = urllib3.PoolManager(
            maxsize=16, ssl_context=ctx, retries=retries, cert_reqs="CERT_REQUIRED" if ep.verify else "CERT_NONE"
        )

    def open(
        self,
        method: str,
        path: str,
        query: dict | None,
        headers: dict,
        body: Any,
        timeout: float | tuple[float, float],
        preload: bool = False,
    ) -> Any:
        """The response, its body not read unless `preload` (a watch streams it; release_conn() when done).
        `timeout`: seconds, or (connect, read) as a watch needs them."""
        url = self.host + path + (("?" + urlencode(query)) if query else "")
        data, timeout = _encoded(body), _timeout(self._urllib3, timeout)
        try:
            return self.pool.request(
                method,
                url,
                body=data,
                headers=_header_dict(self.headers, headers),
                timeout=timeout,
                preload_content=preload,
            )
        except self._urllib3.exceptions.HTTPError as exc:
            late = "timed out" in str(exc).lower()
            raise Unreachable(
                f"{method} {path}: " + (f"no answer within request_timeout ({timeout} s): " if late else "") + str(exc)
            ) from exc

    def send(
        self, method: str, path: str, query: dict | None, headers: dict, body: Any, timeout: float | tuple[float, float]
    ) -> tuple[int, str, bytes]:
        resp = self.open(method, path, query, headers, body, timeout, preload=True)
        return resp.status, resp.reason or "", resp.data


def _encoded(body: Any) -> bytes | None:
    """The request body as bytes: as given, a str already serialised (server-side apply sends its manifest as text),
    anything else as compact JSON."""
    if body is None or isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":")).encode()


def _timeout(urllib3: Any, timeout: float | tuple[float, float]) -> Any:
    """Seconds, or (connect, read) as a watch needs them, as urllib3 takes them."""
    return urllib3.Timeout(connect=timeout[0], read=timeout[1]) if isinstance(timeout, tuple) else timeout


def _header_dict(*parts: Any) -> Any:
    """One urllib3 HTTPHeaderDict from dicts and (name, value) lists; later parts win, except that repeated
    names within a list (Impersonate-Group) are all sent. An Authorization from a list replaces an earlier one."""
    from urllib3._collections import HTTPHeaderDict  # where urllib3 1.26 and 2.x both have it

    out = HTTPHeaderDict()
    for part in parts:
        pairs = list(part.items()) if isinstance(part, dict) else list(part)
        for name in {pair[0] for pair in pairs}:
            out.discard(name)
        for name, value in pairs:
            out.add(name, value)
    return out


class ApiClientTransport:
    """HTTP through a kubernetes client ApiClient (its loader handles every kind of kubeconfig)."""

    def __init__(self, client: Any, headers: list[tuple[str, str]] | None = None):
        import urllib3

        self._urllib3 = urllib3
        self.client = client
        self.headers = headers or []

    def open(
        self, method: str, path: str, query: dict | None, headers: dict, body: Any, timeout: float | tuple[float, float]
    ) -> Any:
        """The urllib3 response, its body not read yet (the client never preloads)."""
        try:
            if not hasattr(self.client, "param_serialize"):
                return self._open_before_36(method, path, query, headers, body, timeout)
            params = self.client.param_serialize(
                method=method,
                resource_path=path,
                query_params=list((query or {}).items()),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            if self.headers:  # after serialisation: a repeated header (Impersonate-Group) needs urllib3's own dict
                params = (params[0], params[1], _header_dict(params[2], self.headers), *params[3:])
            return self.client.call_api(*params, _request_timeout=timeout).response
        except self._urllib3.exceptions.HTTPError as exc:
            late = "timed out" in str(exc).lower()
            raise Unreachable(
                f"{method} {path}: " + (f"no answer within request_timeout ({timeout} s): " if late else "") + str(exc)
            ) from exc

    def _open_before_36(
        self, method: str, path: str, query: dict | None, headers: dict, body: Any, timeout: float | tuple[float, float]
    ) -> Any:
        """The same through kubernetes < 36 (the newest on Python 3.9), whose ApiClient has no param_serialize and
        whose call_api raises on every status >= 300: the request goes to its REST client's pool (certificates, proxy
        and retries as the loader configured them), with the headers its auth settings give (a token refreshed by
        an exec plugin included)."""
        hdrs = dict(self.client.default_headers)
        hdrs.update(headers)
        queries = list((query or {}).items())
        self.client.update_params_for_auth(hdrs, queries, ["BearerToken"])
        url = self.client.configuration.host + path + (("?" + urlencode(queries)) if queries else "")
        data, timeout = _encoded(body), _timeout(self._urllib3, timeout)
        return self.client.rest_client.pool_manager.request(
            method, url, body=data, headers=_header_dict(hdrs, self.headers), timeout=timeout, preload_content=False
        )

    def send(
        self, method: str, path: str, query: dict | None, headers: dict, body: Any, timeout: float | tuple[float, float]
    ) -> tuple[int, str, bytes]:
        resp = self.open(method, path, query, headers, body, timeout)
        try:
            return resp.status, resp.reason or "", resp.read()
        finally:
            resp.release_conn()
