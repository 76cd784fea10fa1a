"""The shell: the only code of the collection that talks to the Kubernetes API server.

It builds a client from module parameters or the environment, reads the world of a batch of MPIJobs with one
LIST per kind and namespace, asks the core (module_utils/mpijob) for a plan, and carries the plan out: creates,
merge patches, deletes with a uid precondition, the status subresource only when it changed, and events.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote, urlencode

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import status as S
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.plan import (
    Action,
    Plan,
    World,
    controlled_by,
    reconcile,
)

# The connection options of every module of the collection, named and typed as kubernetes.core's (args_common.py)
# so one module_defaults block (group/mpi.operator.k8s) configures both; documented by doc_fragments/auth.py.
PROXY_HEADERS_SPEC: dict[str, dict[str, Any]] = {
    "proxy_basic_auth": {"type": "str", "no_log": True},
    "basic_auth": {"type": "str", "no_log": True},
    "user_agent": {"type": "str"},
}
AUTH_ARG_SPEC: dict[str, dict[str, Any]] = {
    "kubeconfig": {"type": "raw", "no_log": True},  # a path, paths joined by os.pathsep, or the document as a dict
    "context": {"type": "str"},
    "host": {"type": "str"},
    "api_key": {"type": "str", "no_log": True},
    "username": {"type": "str"},
    "password": {"type": "str", "no_log": True},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"]},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"]},
    "client_cert": {"type": "path", "aliases": ["cert_file"]},
    "client_key": {"type": "path", "aliases": ["key_file"]},
    "proxy": {"type": "str"},
    "no_proxy": {"type": "str"},
    "proxy_headers": {"type": "dict", "options": PROXY_HEADERS_SPEC},
    "persist_config": {"type": "bool"},
    "impersonate_user": {"type": "str"},
    "impersonate_groups": {"type": "list", "elements": "str"},
    "request_timeout": {"type": "float", "default": 30.0},
}
# Each option's environment variables, as kubernetes.core reads them: K8S_AUTH_<OPTION>, then K8S_AUTH_<the kubernetes
# client's name> where that differs (K8S_AUTH_VERIFY_SSL, K8S_AUTH_SSL_CA_CERT, K8S_AUTH_CERT_FILE, K8S_AUTH_KEY_FILE).
_CLIENT_NAMES = {"validate_certs": "verify_ssl", "ca_cert": "ssl_ca_cert", "client_cert": "cert_file",
                 "client_key": "key_file"}


class ApiError(Exception):
    def __init__(self, status: int, reason: str, body: dict | None = None):
        self.status, self.reason, self.body = status, reason, body or {}
        message = self.body.get("message") or reason
        super().__init__(f"{status} {self.body.get('reason') or reason}: {message}")

    @property
    def message(self) -> str:
        return str(self.body.get("message") or self.reason)


class Unreachable(Exception):
    """The API server could not be reached (or the credentials could not be loaded)."""


class BadAuth(ValueError):
    """A connection option that cannot be used as given (the message names it)."""


def _env(option: str) -> str | None:
    for name in (option, _CLIENT_NAMES.get(option)):
        value = os.environ.get(f"K8S_AUTH_{name.upper()}") if name else None
        if value:
            return value
    return None


def _param(params: dict, option: str) -> Any:
    """The option from the module's parameters, else from its environment variables (typed as the option)."""
    value = params.get(option)
    if value is not None:
        return value
    text = _env(option)
    if text is None:
        return None
    kind = AUTH_ARG_SPEC[option].get("type")
    if kind == "bool":
        return text.lower() not in ("0", "false", "no")  # as kubernetes.core reads its boolean variables
    if kind == "list":
        return [v for v in text.split(",") if v]
    return text


@dataclass(frozen=True)
class Auth:
    """The connection options, each from the module's parameters else its $K8S_AUTH_* variable, and where the
    credentials come from: "kubeconfig", "in-cluster" (the service account) or "host" (host and credentials alone)."""

    kubeconfig: str | dict | None
    context: str | None
    host: str | None
    api_key: str | None
    verify: bool | None
    ca_cert: str | None
    source: str
    username: str | None = None
    password: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    proxy: str | None = None
    no_proxy: str | None = None
    proxy_headers: dict | None = None
    persist_config: bool = False
    impersonate_user: str | None = None
    impersonate_groups: tuple[str, ...] = ()

    def headers(self) -> list[tuple[str, str]]:
        """Headers every request carries: impersonation (one Impersonate-Group line per group, as the API server
        reads them) and basic auth."""
        out = [("Impersonate-User", self.impersonate_user)] if self.impersonate_user else []
        out += [("Impersonate-Group", g) for g in self.impersonate_groups]
        if self.username and self.password and not self.api_key:
            basic = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            out.append(("Authorization", f"Basic {basic}"))
        return out


def auth(params: dict) -> Auth:
    kubeconfig = _param(params, "kubeconfig")
    if kubeconfig is not None and not isinstance(kubeconfig, (str, dict)):
        raise BadAuth(f"kubeconfig: must be a path or a kubeconfig document (a dict), got {type(kubeconfig).__name__}")
    if isinstance(kubeconfig, dict) and not isinstance(kubeconfig.get("contexts", []), list):
        raise BadAuth("kubeconfig: the dict must be a kubeconfig document (contexts, clusters, users lists)")
    kubeconfig = kubeconfig or None
    context, host = _param(params, "context"), _param(params, "host")
    if host and not (kubeconfig or context):
        source = "host"
    elif kubeconfig or context or os.environ.get("KUBECONFIG") or not _in_cluster():
        source = "kubeconfig"
    else:
        source = "in-cluster"
    headers = params.get("proxy_headers") or {
        key: os.environ[f"K8S_AUTH_PROXY_HEADERS_{key.upper()}"] for key in PROXY_HEADERS_SPEC
        if os.environ.get(f"K8S_AUTH_PROXY_HEADERS_{key.upper()}")}
    return Auth(kubeconfig, context, host, _param(params, "api_key"), _param(params, "validate_certs"),
                _param(params, "ca_cert"), source, username=_param(params, "username"),
                password=_param(params, "password"), client_cert=_param(params, "client_cert"),
                client_key=_param(params, "client_key"), proxy=_param(params, "proxy"),
                no_proxy=_param(params, "no_proxy"),
                proxy_headers={k: v for k, v in headers.items() if v is not None} or None,
                persist_config=bool(_param(params, "persist_config")),
                impersonate_user=_param(params, "impersonate_user"),
                impersonate_groups=tuple(_param(params, "impersonate_groups") or ()))


def api_client(params: dict) -> Any:
    """A kubernetes client ApiClient from explicit parameters, else $K8S_AUTH_* / $KUBECONFIG, else the in-cluster
    service account (raises ImportError without the kubernetes library)."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    cfg = k8s_client.Configuration()
    a = auth(params)
    try:
        if a.source == "kubeconfig" and isinstance(a.kubeconfig, dict):
            k8s_config.load_kube_config_from_dict(a.kubeconfig, context=a.context, client_configuration=cfg,
                                                  persist_config=a.persist_config)
        elif a.source == "kubeconfig":
            k8s_config.load_kube_config(config_file=a.kubeconfig, context=a.context, client_configuration=cfg,
                                        persist_config=a.persist_config)
        elif a.source == "in-cluster":
            k8s_config.load_incluster_config(client_configuration=cfg)
    except (ConfigException, OSError) as exc:
        raise Unreachable(f"cannot load Kubernetes credentials: {exc}") from exc
    if a.host:
        cfg.host = a.host.rstrip("/")
    if a.api_key:
        cfg.api_key = {"authorization": f"Bearer {a.api_key}"}
    if a.verify is not None:
        cfg.verify_ssl = a.verify
    # the kubernetes client's names of the options that override the kubeconfig as they are
    for attr, value in (("ssl_ca_cert", a.ca_cert), ("cert_file", a.client_cert), ("key_file", a.client_key),
                        ("proxy", a.proxy), ("no_proxy", a.no_proxy)):
        if value:
            setattr(cfg, attr, value)
    if a.proxy_headers:
        import urllib3

        cfg.proxy_headers = urllib3.util.make_headers(**a.proxy_headers)
    cfg.retries = 1  # a dead API server must fail fast; transient errors are retried by the operator loop
    cfg.connection_pool_maxsize = 16
    return k8s_client.ApiClient(cfg)


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    )


def connect(module: Any) -> Rest:
    """The Rest client of an AnsibleModule built with AUTH_ARG_SPEC; fails the module when the credentials cannot be
    loaded, or when they need the kubernetes library and it is missing (shared by every module of the collection)."""
    timeout = module.params.get("request_timeout") or 30.0
    try:
        headers = auth(module.params).headers()
        endpoint = light_endpoint(module.params)
        if endpoint is not None:
            return Rest(Urllib3Transport(endpoint, headers), timeout=timeout)
        return Rest(ApiClientTransport(api_client(module.params), headers), timeout=timeout)
    except BadAuth as exc:
        module.fail_json(msg=str(exc))
        raise
    except ImportError as exc:
        from ansible.module_utils.basic import missing_required_lib

        module.fail_json(msg=missing_required_lib("kubernetes"), exception=str(exc))
        raise  # fail_json exits; this keeps type checkers honest
    except Unreachable as exc:
        module.fail_json(msg=f"Kubernetes API server unreachable: {exc}")
        raise
    except (OSError, ValueError) as exc:  # unreadable key or CA files (ssl.SSLError is an OSError)
        module.fail_json(msg=f"Kubernetes API server unreachable: cannot load the credentials: {exc}")
        raise


# ---- connecting ------------------------------------------------------------------------------------------------------
#
# Most runs connect with a plain kubeconfig (a client certificate or a token) or the in-cluster service account:
# those go straight to urllib3, without importing the kubernetes client (about 0.45 s of CPU per module run, paid by
# every run of the operator). Anything else a kubeconfig can say (exec plugins, auth providers, proxies, several
# files in KUBECONFIG ...) is left to the kubernetes client's own loader.

_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_LIGHT_USER_KEYS = {"client-certificate", "client-certificate-data", "client-key", "client-key-data", "token",
                    "tokenFile"}
_LIGHT_CLUSTER_KEYS = {"server", "certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify"}


@dataclass
class Endpoint:
    """Where the API server is and how to authenticate, as plain files and strings."""

    host: str
    token: str | None = None
    ca_file: str | None = None
    ca_data: str | None = None  # PEM
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True


def _kubeconfig_endpoint(path: str | dict, context: str | None) -> Endpoint | None:
    """The endpoint of a simple kubeconfig (a file, or the document itself with paths relative to the working
    directory); None when it needs the kubernetes client's loader."""
    import yaml

    if isinstance(path, dict):
        doc, base = path, os.getcwd()
    else:
        try:
            with open(path) as f:
                doc = yaml.safe_load(f) or {}
        except (OSError, yaml.YAMLError):
            return None  # the client's loader reports it with its own words
        base = os.path.dirname(os.path.abspath(path))
    if not isinstance(doc, dict):
        return None

    def named(kind: str, name: str | None) -> dict | None:
        for entry in doc.get(kind) or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                return entry.get(kind[:-1]) or {}
        return None

    ctx = named("contexts", context or doc.get("current-context"))
    if not isinstance(ctx, dict):
        return None
    cluster, user = named("clusters", ctx.get("cluster")), named("users", ctx.get("user")) or {}
    if not isinstance(cluster, dict) or not isinstance(user, dict) or not cluster.get("server"):
        return None
    if set(user) - _LIGHT_USER_KEYS or set(cluster) - _LIGHT_CLUSTER_KEYS:
        return None

    def file(key: str) -> str | None:
        value = user.get(key) or cluster.get(key)
        return os.path.join(base, value) if value else None

    ep = Endpoint(host=str(cluster["server"]).rstrip("/"), verify=not cluster.get("insecure-skip-tls-verify"))
    ep.ca_file = file("certificate-authority")
    if cluster.get("certificate-authority-data"):
        ep.ca_data = base64.b64decode(cluster["certificate-authority-data"]).decode()
    ep.cert_file, ep.key_file = file("client-certificate"), file("client-key")
    for key, attr in (("client-certificate-data", "cert_file"), ("client-key-data", "key_file")):
        if user.get(key):
            setattr(ep, attr, _private_file(base64.b64decode(user[key])))
    if user.get("token"):
        ep.token = str(user["token"])
    elif user.get("tokenFile"):
        try:
            with open(file("tokenFile") or "") as f:
                ep.token = f.read().strip()
        except OSError:
            return None
    return ep


def _private_file(data: bytes) -> str:
    """A 0600 temporary file (ssl loads client keys from files only), removed when the module exits."""
    import atexit
    import tempfile

    fd, path = tempfile.mkstemp(prefix="mpi-operator-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    atexit.register(lambda: os.path.exists(path) and os.unlink(path))
    return path


def light_endpoint(params: dict) -> Endpoint | None:
    """The endpoint for `params` when urllib3 alone can reach it, else None (the kubernetes client's loader)."""
    a = auth(params)
    if a.proxy or a.proxy_headers:
        return None  # proxies: the kubernetes client's pool manager
    if a.source == "kubeconfig":
        path = a.kubeconfig or os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
        if isinstance(path, str) and os.pathsep in path:
            return None  # several files to merge: the client's loader does that
        ep = _kubeconfig_endpoint(path, a.context)
    elif a.source == "in-cluster":
        ep = _in_cluster_endpoint()
    else:
        ep = Endpoint(host=a.host or "")
    if ep is None:
        return None
    if a.host:
        ep.host = a.host.rstrip("/")
    if a.client_cert and a.client_key:
        ep.cert_file, ep.key_file = a.client_cert, a.client_key
    if a.api_key:
        ep.token, ep.cert_file, ep.key_file = a.api_key, None, None
    elif a.username and a.password:
        ep.token = None  # basic auth instead (Auth.headers)
    if a.verify is not None:
        ep.verify = a.verify
    if a.ca_cert:
        ep.ca_file, ep.ca_data = a.ca_cert, None
    return ep


def _in_cluster_endpoint() -> Endpoint | None:
    try:
        with open(f"{_SA_DIR}/token") as f:
            token = f.read().strip()
    except OSError:
        return None
    server = os.environ["KUBERNETES_SERVICE_HOST"]
    server = f"[{server}]" if ":" in server else server
    return Endpoint(host=f"https://{server}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}", token=token,
                    ca_file=f"{_SA_DIR}/ca.crt")


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
        self.pool = urllib3.PoolManager(maxsize=16, ssl_context=ctx, retries=urllib3.Retry(total=1, redirect=0),
                                        cert_reqs="CERT_REQUIRED" if ep.verify else "CERT_NONE")

    def send(self, method: str, path: str, query: dict | None, headers: dict, body: Any,
             timeout: float) -> tuple[int, str, bytes]:
        url = self.host + path + (("?" + urlencode(query)) if query else "")
        if body is None or isinstance(body, bytes):
            data = body
        elif isinstance(body, str):  # already serialised (server-side apply sends its manifest as text)
            data = body.encode()
        else:
            data = json.dumps(body, separators=(",", ":")).encode()
        try:
            resp = self.pool.request(method, url, body=data, headers=_header_dict(self.headers, headers),
                                     timeout=timeout, preload_content=True)
        except self._urllib3.exceptions.HTTPError as exc:
            raise Unreachable(f"{method} {path}: {exc}") from exc
        return resp.status, resp.reason or "", resp.data


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

    def send(self, method: str, path: str, query: dict | None, headers: dict, body: Any,
             timeout: float) -> tuple[int, str, bytes]:
        params = self.client.param_serialize(method=method, resource_path=path,
                                             query_params=list((query or {}).items()), header_params=headers,
                                             body=body, auth_settings=["BearerToken"])
        if self.headers:  # after serialisation: a repeated header (Impersonate-Group) needs urllib3's own dict
            params = (params[0], params[1], _header_dict(params[2], self.headers), *params[3:])
        try:
            resp = self.client.call_api(*params, _request_timeout=timeout)
        except self._urllib3.exceptions.HTTPError as exc:
            raise Unreachable(f"{method} {path}: {exc}") from exc
        return resp.status, resp.reason or "", resp.read()


class Rest:
    """JSON over a connection pool: no model (de)serialisation, any kind, any content type. `transport` is a
    Urllib3Transport, an ApiClientTransport, or a kubernetes client ApiClient (wrapped in one)."""

    def __init__(self, transport: Any, timeout: float = 30.0):
        self.transport = transport if hasattr(transport, "send") else ApiClientTransport(transport)
        self.timeout = timeout
        self.calls = 0
        self._lock = threading.Lock()

    def raw(self, method: str, path: str, body: Any = None, query: dict | None = None,
            content_type: str = "application/json", accept: str = "application/json",
            timeout: float | None = None) -> tuple[int, str, bytes]:
        """(status, reason, body bytes); raises Unreachable when the API server does not answer."""
        with self._lock:
            self.calls += 1
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        return self.transport.send(method, path, query, headers, body, timeout or self.timeout)

    def request(self, method: str, path: str, body: Any = None, query: dict | None = None,
                content_type: str = "application/json") -> dict:
        status, reason, data = self.raw(method, path, body, query, content_type)
        try:
            payload = json.loads(data) if data else {}
        except ValueError:
            payload = {"message": data.decode(errors="replace")[:500] if isinstance(data, bytes) else str(data)}
        if status >= 400:
            raise ApiError(status, reason, payload if isinstance(payload, dict) else {})
        return payload

    def get(self, path: str) -> dict | None:
        try:
            return self.request("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, path: str, selector: str = "") -> list[dict]:
        """All items (None when the kind is not served, e.g. a missing PodGroup CRD)."""
        query = {"labelSelector": selector} if selector else {}
        try:
            return self.request("GET", path, query=query).get("items") or []
        except ApiError as exc:
            if exc.status == 404:
                return []
            raise


# ---- where each kind lives --------------------------------------------------------------------------------------

_PLURALS = {"Service": "services", "ConfigMap": "configmaps", "Secret": "secrets", "Pod": "pods", "Event": "events",
            "Job": "jobs", "MPIJob": C.PLURAL, "PodGroup": "podgroups"}


def collection(api_version: str, kind: str, namespace: str) -> str:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{prefix}/namespaces/{quote(namespace)}/{_PLURALS[kind]}"


def item(api_version: str, kind: str, namespace: str, name: str) -> str:
    return f"{collection(api_version, kind, namespace)}/{quote(name)}"


def mpijob_path(namespace: str, name: str = "") -> str:
    base = collection(C.API_VERSION, C.KIND, namespace)
    return f"{base}/{quote(name)}" if name else base


# ---- SSH keys ----------------------------------------------------------------------------------------------------

def generate_ssh_keys() -> tuple[bytes, bytes]:
    """ECDSA P-521: PEM `EC PRIVATE KEY` and the authorized_keys line, as the Kubeflow operator makes them."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


def _placeholder_keys() -> tuple[bytes, bytes]:
    return b"", b""  # check mode: the Secret is only planned, no key is made


# ---- reading a batch ------------------------------------------------------------------------------------------------

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _by_name(items: list[dict]) -> dict[str, dict]:
    return {i["metadata"]["name"]: i for i in items}


def _in(names: list[str]) -> str:
    return "(" + ",".join(sorted(names)) + ")"


@dataclass
class Namespaced:
    """The children of a namespace's jobs, read with one LIST per kind."""

    services: dict[str, dict] = field(default_factory=dict)
    config_maps: dict[str, dict] = field(default_factory=dict)
    secrets: dict[str, dict] = field(default_factory=dict)
    jobs: dict[str, dict] = field(default_factory=dict)
    pod_groups: dict[str, dict] = field(default_factory=dict)
    pods_by_job: dict[str, list[dict]] = field(default_factory=dict)


def read_namespace(rest: Rest, namespace: str, names: list[str], opts: K.Options) -> tuple[dict[str, dict], Namespaced]:
    """(MPIJobs by name, their children) for the jobs `names` of one namespace."""
    if len(names) >= 3:
        found = _by_name(rest.list(mpijob_path(namespace)))
        mpijobs = {n: found[n] for n in names if n in found}
    else:
        mpijobs = {n: obj for n in names if (obj := rest.get(mpijob_path(namespace, n))) is not None}
    kids = Namespaced()
    labelled = [n for n in mpijobs if _LABEL_VALUE.match(n) and len(n) <= 63]
    if not labelled:
        return mpijobs, kids
    app = f"{C.APP_LABEL} in {_in(labelled)}"
    kids.services = _by_name(rest.list(collection("v1", "Service", namespace), app))
    kids.config_maps = _by_name(rest.list(collection("v1", "ConfigMap", namespace), app))
    kids.secrets = _by_name(rest.list(collection("v1", "Secret", namespace), app))
    kids.jobs = _by_name(rest.list(collection("batch/v1", "Job", namespace), app))
    for pod in rest.list(collection("v1", "Pod", namespace), f"{C.JOB_NAME_LABEL} in {_in(labelled)}"):
        kids.pods_by_job.setdefault(pod["metadata"]["labels"][C.JOB_NAME_LABEL], []).append(pod)
    if opts.gang_scheduling:
        api = C.VOLCANO_PODGROUP_API if opts.volcano else C.PLUGINS_PODGROUP_API
        kids.pod_groups = _by_name(rest.list(collection(api, "PodGroup", namespace)))
    return mpijobs, kids


def world_of(obj: dict, kids: Namespaced, priorities: dict[str, int]) -> World:
    name = obj["metadata"]["name"]
    return World(
        mpijob=obj,
        service=kids.services.get(name),
        config_map=kids.config_maps.get(name + C.CONFIG_SUFFIX),
        secret=kids.secrets.get(name + C.SSH_SUFFIX),
        launcher=kids.jobs.get(name + C.LAUNCHER_SUFFIX),
        pod_group=kids.pod_groups.get(name),
        pods=kids.pods_by_job.get(name, []),
        priorities=priorities,
    )


def priority_values(rest: Rest, mpijobs: list[dict], opts: K.Options) -> dict[str, int]:
    """Values of the PriorityClasses the jobs' templates name (only needed for PodGroup minResources)."""
    if not opts.gang_scheduling:
        return {}
    names = set()
    for obj in mpijobs:
        for replica in ((obj.get("spec") or {}).get("mpiReplicaSpecs") or {}).values():
            pc = (((replica or {}).get("template") or {}).get("spec") or {}).get("priorityClassName")
            if isinstance(pc, str) and pc:
                names.add(pc)
    values = {}
    for pc in sorted(names):
        try:
            found = rest.get(f"/apis/scheduling.k8s.io/v1/priorityclasses/{quote(pc)}")
        except ApiError:
            continue  # as in Kubeflow, an unreadable PriorityClass counts as priority 0
        if found is not None:
            values[pc] = int(found.get("value") or 0)
    return values


# ---- carrying a plan out --------------------------------------------------------------------------------------------

@dataclass
class JobResult:
    namespace: str
    name: str
    uid: str | None = None
    actions: list[dict] = field(default_factory=list)
    status: dict | None = None
    error: str | None = None
    retry: bool = False
    requeue_after: float | None = None
    deleted: bool = False

    def as_dict(self) -> dict:
        return {
            "namespace": self.namespace, "name": self.name, "uid": self.uid, "actions": self.actions,
            "status": self.status, "error": self.error, "retry": self.retry, "requeue_after": self.requeue_after,
            "deleted": self.deleted,
        }


class Applier:
    """Carries out one job's plan, in order; turns API errors into the job's result."""

    def __init__(self, rest: Rest, obj: dict, result: JobResult):
        self.rest, self.obj, self.result = rest, obj, result
        self.namespace = obj["metadata"]["namespace"]
        self.name = obj["metadata"]["name"]
        self.uid = obj["metadata"].get("uid", "")

    def apply(self, plan: Plan) -> None:
        for action in plan.actions:
            try:
                if not self.do(action):
                    return
            except ApiError as exc:
                if not self.failed(action, exc):
                    return
            self.result.actions.append(action.summary())

    def do(self, a: Action) -> bool:
        """False stops the plan (the error is already in the result)."""
        ns = self.namespace
        if a.action == "create":
            try:
                self.rest.request("POST", collection(a.api_version, a.kind, ns), a.body)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                return self.exists(a)
        elif a.action == "patch":
            path = item(a.api_version, a.kind, ns, a.name) + (f"/{a.subresource}" if a.subresource else "")
            self.rest.request("PATCH", path, a.body, content_type="application/merge-patch+json")
        elif a.action == "delete":
            body = {"preconditions": {"uid": a.uid}} if a.uid else None
            try:
                self.rest.request("DELETE", item(a.api_version, a.kind, ns, a.name), body)
            except ApiError as exc:
                if exc.status != 404:  # already gone is what we wanted
                    raise
        elif a.action == "status":
            body = dict(self.obj, status=a.body)
            written = self.rest.request("PUT", mpijob_path(ns, self.name) + "/status", body)
            self.result.status = written.get("status")
        elif a.action == "event":
            self.event(a.body or {})
        elif a.action == "delete-mpijob":
            try:
                self.rest.request("DELETE", mpijob_path(ns, self.name),
                                  {"preconditions": {"uid": a.uid}, "propagationPolicy": "Background"})
            except ApiError as exc:
                if exc.status != 404:
                    raise
            self.result.deleted = True
            self.result.status = None
        return True

    def exists(self, a: Action) -> bool:
        """A create met an object of that name: ours (a stale read, retry later) or someone else's (no takeover)."""
        current = self.rest.get(item(a.api_version, a.kind, self.namespace, a.name))
        if current is not None and not controlled_by(current, self.uid):
            msg = C.MESSAGE_RESOURCE_EXISTS.format(name=a.name, kind=a.kind)
            self.event({"type": "Warning", "reason": C.REASON_RESOURCE_EXISTS, "message": msg})
            self.result.actions.append({"action": "event", "kind": "Event", "name": C.REASON_RESOURCE_EXISTS,
                                        "reason": C.REASON_RESOURCE_EXISTS})
            self.result.error, self.result.retry = msg, True
            return False
        self.result.retry = True
        return True

    def failed(self, a: Action, exc: ApiError) -> bool:
        """True to go on with the next action."""
        if a.action == "status" and exc.status == 404:
            self.result.deleted, self.result.status = True, None
            return False
        if exc.status in (404, 409):  # vanished or changed under us: the next reconcile sees the new state
            self.result.retry = True
            if a.action in ("patch", "event"):
                return True
            self.result.error = f"{a.action} {a.kind} {a.name}: {exc}"
            return False
        self.result.error = f"{a.action} {a.kind} {a.name}: {exc}"
        if exc.status in (400, 422) and a.action == "create":
            # The API rejects what the template asks for: say so on the MPIJob, as Kubeflow does.
            with contextlib.suppress(ApiError):
                self.event({"type": "Warning", "reason": C.REASON_FAILED,
                            "message": f"{a.kind} {a.name} creation failed: {exc.message}"})
            self.result.retry = False
        else:
            self.result.retry = True
        return False

    def event(self, ev: dict) -> None:
        """A core/v1 Event on the MPIJob; repeats of the same event bump its count instead of piling up."""
        now = S.rfc3339(datetime.now(timezone.utc))
        digest = hashlib.sha256(f"{self.uid}/{ev['type']}/{ev['reason']}/{ev['message']}".encode()).hexdigest()[:16]
        name = f"{self.name}.{digest}"
        body = {
            "metadata": {"name": name, "namespace": self.namespace},
            "involvedObject": {"apiVersion": self.obj.get("apiVersion", C.API_VERSION), "kind": C.KIND,
                               "name": self.name, "namespace": self.namespace, "uid": self.uid},
            "type": ev["type"], "reason": ev["reason"], "message": ev["message"],
            "source": {"component": C.EVENT_COMPONENT}, "reportingComponent": C.EVENT_COMPONENT,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }
        path = collection("v1", "Event", self.namespace)
        try:
            self.rest.request("POST", path, body)
        except ApiError as exc:
            if exc.status != 409:
                raise
            current = self.rest.get(f"{path}/{name}") or {}
            self.rest.request("PATCH", f"{path}/{name}", {"count": int(current.get("count") or 1) + 1,
                                                          "lastTimestamp": now},
                              content_type="application/merge-patch+json")


def reconcile_batch(rest: Rest, jobs: list[dict], opts: K.Options, check_mode: bool = False,
                    threads: int = 8) -> list[JobResult]:
    """Reconciles every job of the batch; one job's failure never stops the others."""
    unique = {(j["namespace"], j["name"]): JobResult(namespace=j["namespace"], name=j["name"]) for j in jobs}
    results = list(unique.values())
    by_ns: dict[str, list[str]] = {}
    for ns, name in unique:
        by_ns.setdefault(ns, []).append(name)

    def read(ns: str) -> tuple[str, dict[str, dict], Namespaced | Exception]:
        try:
            found, kids = read_namespace(rest, ns, by_ns[ns], opts)
            return ns, found, kids
        except ApiError as exc:
            return ns, {}, exc

    pool = ThreadPoolExecutor(max_workers=max(1, threads))
    try:
        reads = list(pool.map(read, sorted(by_ns)))  # Unreachable propagates: the whole call fails
        worlds: dict[tuple[str, str], tuple[dict, World] | Exception | None] = {}
        all_jobs = [obj for _ns, found, _kids in reads for obj in found.values()]
        priorities = priority_values(rest, all_jobs, opts)
        for ns, found, kids in reads:
            for name in by_ns[ns]:
                if isinstance(kids, Exception):
                    worlds[(ns, name)] = kids
                elif name in found:
                    worlds[(ns, name)] = (found[name], world_of(found[name], kids, priorities))
                else:
                    worlds[(ns, name)] = None
        now = datetime.now(timezone.utc)

        def one(result: JobResult) -> None:
            seen = worlds[(result.namespace, result.name)]
            if seen is None:
                result.deleted = True  # gone: nothing to do, the children go with it
                return
            if isinstance(seen, Exception):
                result.error, result.retry = f"reading the job's objects: {seen}", True
                return
            obj, world = seen
            result.uid = obj["metadata"].get("uid")
            result.status = obj.get("status")
            try:
                plan = reconcile(obj, world, opts, now, _placeholder_keys if check_mode else generate_ssh_keys)
            except Exception as exc:  # a bug must cost one job, not the batch
                result.error, result.retry = f"internal error planning the job: {exc!r}", True
                return
            result.status, result.requeue_after, result.error = plan.status, plan.requeue_after, plan.error
            result.retry = plan.retry
            if check_mode:
                result.actions = [a.summary() for a in plan.actions]
                result.deleted = plan.deletes_job
                return
            Applier(rest, obj, result).apply(plan)

        for future in [pool.submit(one, r) for r in results]:
            future.result()
    finally:
        pool.shutdown(wait=True)
    return [unique[(j["namespace"], j["name"])] for j in jobs]
