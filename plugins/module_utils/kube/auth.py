# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Connection options and credentials: the modules' AUTH_ARG_SPEC (kubernetes.core's names), each option from the
parameters else its $K8S_AUTH_* variable, and where they lead: an Endpoint urllib3 alone can reach (a plain
kubeconfig or the in-cluster service account), else a kubernetes client ApiClient from the client's own loader.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from typing import Any

from ..mpijob.errors import BadAuth

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
_CLIENT_NAMES = {
    "validate_certs": "verify_ssl",
    "ca_cert": "ssl_ca_cert",
    "client_cert": "cert_file",
    "client_key": "key_file",
}


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
    elif kubeconfig or context or os.environ.get("KUBECONFIG") or not in_cluster():
        source = "kubeconfig"
    else:
        source = "in-cluster"
    headers = params.get("proxy_headers") or {
        key: os.environ[f"K8S_AUTH_PROXY_HEADERS_{key.upper()}"]
        for key in PROXY_HEADERS_SPEC
        if os.environ.get(f"K8S_AUTH_PROXY_HEADERS_{key.upper()}")
    }
    return Auth(
        kubeconfig,
        context,
        host,
        _param(params, "api_key"),
        _param(params, "validate_certs"),
        _param(params, "ca_cert"),
        source,
        username=_param(params, "username"),
        password=_param(params, "password"),
        client_cert=_param(params, "client_cert"),
        client_key=_param(params, "client_key"),
        proxy=_param(params, "proxy"),
        no_proxy=_param(params, "no_proxy"),
        proxy_headers={k: v for k, v in headers.items() if v is not None} or None,
        persist_config=bool(_param(params, "persist_config")),
        impersonate_user=_param(params, "impersonate_user"),
        impersonate_groups=tuple(_param(params, "impersonate_groups") or ()),
    )


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
            k8s_config.load_kube_config_from_dict(
                a.kubeconfig, context=a.context, client_configuration=cfg, persist_config=a.persist_config
            )
        elif a.source == "kubeconfig":
            k8s_config.load_kube_config(
                config_file=a.kubeconfig, context=a.context, client_configuration=cfg, persist_config=a.persist_config
            )
        elif a.source == "in-cluster":
            k8s_config.load_incluster_config(client_configuration=cfg)
    except (ConfigException, OSError) as exc:
        raise BadAuth(f"cannot load the Kubernetes credentials of {_credentials_source(a, params)}: {exc}") from exc
    if a.host:
        cfg.host = a.host.rstrip("/")
    if a.api_key:
        cfg.api_key = {"authorization": f"Bearer {a.api_key}"}
    if a.verify is not None:
        cfg.verify_ssl = a.verify
    # the kubernetes client's names of the options that override the kubeconfig as they are
    for attr, value in (
        ("ssl_ca_cert", a.ca_cert),
        ("cert_file", a.client_cert),
        ("key_file", a.client_key),
        ("proxy", a.proxy),
        ("no_proxy", a.no_proxy),
    ):
        if value:
            setattr(cfg, attr, value)
    if a.proxy_headers:
        import urllib3

        cfg.proxy_headers = urllib3.util.make_headers(**a.proxy_headers)
    # A dead API server must fail fast: a refused connection is tried once more, a request the server took and never
    # answered is not (it already waited request_timeout). Transient errors are retried by the operator loop.
    import urllib3

    cfg.retries = urllib3.util.Retry(total=1, connect=1, read=0, status=0, redirect=0)
    cfg.connection_pool_maxsize = 16
    return k8s_client.ApiClient(cfg)


def _credentials_source(a: Auth, params: dict) -> str:
    """Which credentials were tried, named as the user gave them: the kubeconfig option or its environment variable
    (with the path), $KUBECONFIG, the default ~/.kube/config, or the in-cluster service account."""
    if a.source == "in-cluster":
        return "the in-cluster service account (/var/run/secrets/kubernetes.io/serviceaccount)"
    if isinstance(a.kubeconfig, dict):
        return "the kubeconfig option (a kubeconfig document)"
    if a.kubeconfig:
        given = "the kubeconfig option" if params.get("kubeconfig") else "$K8S_AUTH_KUBECONFIG"
        return f"{given}, kubeconfig {a.kubeconfig}"
    if os.environ.get("KUBECONFIG"):
        return f"$KUBECONFIG, kubeconfig {os.environ['KUBECONFIG']}"
    default = os.path.expanduser("~/.kube/config")
    return (
        f"the default kubeconfig {default} (no kubeconfig option, $K8S_AUTH_KUBECONFIG or $KUBECONFIG"
        + (", nor host" if not a.host else "")
        + " was given)"
    )


def in_cluster() -> bool:
    """Whether this process runs in a pod with a service account token: the one test, for the modules' credentials
    and for the operator's defaults (mpijob_operator/config.py)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    )


# ---- the light path --------------------------------------------------------------------------------------------------
#
# Most runs connect with a plain kubeconfig (a client certificate or a token) or the in-cluster service account:
# those go straight to urllib3, without importing the kubernetes client (an import every run of the operator would
# pay; docs/operator.md). Anything else a kubeconfig can say (exec plugins, auth providers, proxies, several
# files in KUBECONFIG ...) is left to the kubernetes client's own loader.

_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_LIGHT_USER_KEYS = {
    "client-certificate",
    "client-certificate-data",
    "client-key",
    "client-key-data",
    "token",
    "tokenFile",
}
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
    return Endpoint(
        host=f"https://{server}:{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}",
        token=token,
        ca_file=f"{_SA_DIR}/ca.crt",
    )
