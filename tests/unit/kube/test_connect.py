"""Which kubeconfigs module_utils/kube/auth.py reaches with urllib3 alone, and what it reads from them.

The light path saves each module run the kubernetes client's import; everything it does not understand must go to
the kubernetes client's loader (None here), never be half-read."""

from __future__ import annotations

import base64
import pathlib

import pytest
import yaml

from ansible_collections.mpi.operator.plugins.module_utils.kube import auth as kube_auth
from ansible_collections.mpi.operator.plugins.module_utils.kube import rest as kube_rest
from ansible_collections.mpi.operator.plugins.module_utils.kube import transport as kube_transport
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import ApiError, BadAuth

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def write(tmp_path: pathlib.Path, user: dict, cluster: dict | None = None, name: str = "config") -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "main",
        "contexts": [
            {"name": "main", "context": {"cluster": "c", "user": "u"}},
            {"name": "other", "context": {"cluster": "c2", "user": "u"}},
        ],
        "clusters": [
            {
                "name": "c",
                "cluster": cluster
                or {
                    "server": "https://127.0.0.1:6443/",
                    "certificate-authority-data": base64.b64encode(PEM.encode()).decode(),
                },
            },
            {"name": "c2", "cluster": {"server": "https://other:443", "insecure-skip-tls-verify": True}},
        ],
        "users": [{"name": "u", "user": user}],
    }
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for var in [v for v in os.environ if v.startswith("K8S_AUTH_")] + ["KUBECONFIG", "KUBERNETES_SERVICE_HOST"]:
        monkeypatch.delenv(var, raising=False)


def test_client_certificate_data_becomes_private_files(tmp_path: pathlib.Path) -> None:
    path = write(
        tmp_path,
        {
            "client-certificate-data": base64.b64encode(b"CERT").decode(),
            "client-key-data": base64.b64encode(b"KEY").decode(),
        },
    )
    ep = kube_auth.light_endpoint({"kubeconfig": path})
    assert ep is not None
    assert ep.host == "https://127.0.0.1:6443" and ep.verify and ep.ca_data == PEM and ep.token is None
    assert pathlib.Path(ep.cert_file).read_bytes() == b"CERT"
    assert pathlib.Path(ep.key_file).read_bytes() == b"KEY"
    assert pathlib.Path(ep.key_file).stat().st_mode & 0o077 == 0  # nobody else may read the key


def test_token_file_is_relative_to_the_kubeconfig(tmp_path: pathlib.Path) -> None:
    (tmp_path / "token").write_text("s3cret\n")
    ep = kube_auth.light_endpoint({"kubeconfig": write(tmp_path, {"tokenFile": "token"})})
    assert ep is not None and ep.token == "s3cret"


def test_context_selects_cluster_and_insecure_skip_tls_verify(tmp_path: pathlib.Path) -> None:
    ep = kube_auth.light_endpoint({"kubeconfig": write(tmp_path, {"token": "t"}), "context": "other"})
    assert ep is not None and ep.host == "https://other:443" and ep.verify is False


def test_parameters_override_the_kubeconfig(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, {"client-certificate": "c.crt", "client-key": "c.key"})
    ep = kube_auth.light_endpoint(
        {
            "kubeconfig": path,
            "host": "https://api.example:443/",
            "api_key": "tok",
            "validate_certs": False,
            "ca_cert": "/etc/ca.pem",
        }
    )
    assert ep is not None
    assert (ep.host, ep.token, ep.verify, ep.ca_file, ep.ca_data) == (
        "https://api.example:443",
        "tok",
        False,
        "/etc/ca.pem",
        None,
    )
    assert ep.cert_file is None and ep.key_file is None  # a token replaces the client certificate


def test_client_certificate_paths_are_relative_to_the_kubeconfig(tmp_path: pathlib.Path) -> None:
    ep = kube_auth.light_endpoint(
        {"kubeconfig": write(tmp_path, {"client-certificate": "c.crt", "client-key": "c.key"})}
    )
    assert ep is not None and ep.cert_file == str(tmp_path / "c.crt") and ep.key_file == str(tmp_path / "c.key")


def test_environment_kubeconfig_is_used(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", write(tmp_path, {"token": "from-env"}))
    ep = kube_auth.light_endpoint({})
    assert ep is not None and ep.token == "from-env"


@pytest.mark.parametrize(
    "user",
    [
        {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "get-token"}},
        {"auth-provider": {"name": "oidc"}},
        {"username": "admin", "password": "pw"},
    ],
)
def test_other_credentials_go_to_the_kubernetes_loader(tmp_path: pathlib.Path, user: dict) -> None:
    assert kube_auth.light_endpoint({"kubeconfig": write(tmp_path, user)}) is None


def test_proxies_several_files_and_unknown_contexts_go_to_the_kubernetes_loader(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxied = write(tmp_path, {"token": "t"}, {"server": "https://x", "proxy-url": "http://proxy:3128"}, "p")
    assert kube_auth.light_endpoint({"kubeconfig": proxied}) is None
    assert kube_auth.light_endpoint({"kubeconfig": write(tmp_path, {"token": "t"}), "context": "missing"}) is None
    assert kube_auth.light_endpoint({"kubeconfig": str(tmp_path / "absent")}) is None
    monkeypatch.setenv("KUBECONFIG", f"{write(tmp_path, {'token': 't'}, name='a')}:{tmp_path / 'b'}")
    assert kube_auth.light_endpoint({}) is None


def test_host_and_token_alone_need_no_kubeconfig() -> None:
    ep = kube_auth.light_endpoint({"host": "https://10.0.0.1:6443", "api_key": "tok", "ca_cert": "/ca.pem"})
    assert ep is not None and (ep.host, ep.token, ep.ca_file) == ("https://10.0.0.1:6443", "tok", "/ca.pem")


class Recorder:
    """A transport that records what Rest hands it (no network)."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def send(
        self, method: str, path: str, query: dict | None, headers: dict, body: object, timeout: float
    ) -> tuple[int, str, bytes]:
        self.sent.append((method, path, query, headers, body, timeout))
        return 200, "OK", b'{"kind": "Status"}'


def test_urllib3_transport_sends_text_bodies_as_they_are_and_objects_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[bytes | None] = []

    class Pool:
        def request(self, method: str, url: str, body: bytes | None = None, **kwargs: object) -> object:
            sent.append(body)
            return type("R", (), {"status": 200, "reason": "OK", "data": b"{}"})()

    transport = kube_transport.Urllib3Transport(kube_auth.Endpoint(host="https://127.0.0.1:1", verify=False))
    monkeypatch.setattr(transport, "pool", Pool())
    rest = kube_rest.Rest(transport)
    rest.request("PATCH", "/x", '{"apiVersion": "v1"}', content_type="application/apply-patch+yaml")
    rest.request("POST", "/x", {"a": 1})
    rest.request("GET", "/x")
    assert sent == [b'{"apiVersion": "v1"}', b'{"a":1}', None]


def test_rest_counts_calls_and_passes_query_and_timeout() -> None:
    rec = Recorder()
    rest = kube_rest.Rest(rec, timeout=7)
    assert rest.request("GET", "/api/v1/namespaces", query={"limit": "1"}) == {"kind": "Status"}
    assert rest.calls == 1 and rec.sent[0][2] == {"limit": "1"} and rec.sent[0][5] == 7
    assert "Content-Type" not in rec.sent[0][3]


def test_a_write_whose_answer_is_not_read_raises_its_error_all_the_same() -> None:
    class Answers(Recorder):
        def __init__(self, answers: list[tuple[int, str, bytes]]) -> None:
            super().__init__()
            self.answers = answers

        def send(self, *args: object) -> tuple[int, str, bytes]:
            super().send(*args)  # type: ignore[arg-type]
            return self.answers.pop(0)

    rest = kube_rest.Rest(
        Answers([(201, "Created", b"not json, never decoded"), (409, "Conflict", b'{"message": "x"}')])
    )
    assert rest.send("POST", "/x", {"a": 1}) is None
    with pytest.raises(ApiError) as err:
        rest.send("DELETE", "/x/y")
    assert err.value.status == 409 and rest.calls == 2


# ---- kubernetes.core's connection options and environment variables ----------------------------------------------


def test_every_option_reads_kubernetes_cores_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for var, value in {
        "K8S_AUTH_HOST": "https://api:6443",
        "K8S_AUTH_SSL_CA_CERT": "/ca.pem",
        "K8S_AUTH_CERT_FILE": "/c.crt",
        "K8S_AUTH_KEY_FILE": "/c.key",
        "K8S_AUTH_VERIFY_SSL": "no",
        "K8S_AUTH_USERNAME": "u",
        "K8S_AUTH_PASSWORD": "p",
        "K8S_AUTH_PROXY": "http://proxy:3128",
        "K8S_AUTH_NO_PROXY": "10.0.0.0/8",
        "K8S_AUTH_PROXY_HEADERS_USER_AGENT": "ua/1",
        "K8S_AUTH_PERSIST_CONFIG": "true",
        "K8S_AUTH_IMPERSONATE_USER": "jane",
        "K8S_AUTH_IMPERSONATE_GROUPS": "g1,g2",
    }.items():
        monkeypatch.setenv(var, value)
    a = kube_auth.auth({})
    assert (a.host, a.ca_cert, a.client_cert, a.client_key, a.verify) == (
        "https://api:6443",
        "/ca.pem",
        "/c.crt",
        "/c.key",
        False,
    )
    assert (a.username, a.password, a.proxy, a.no_proxy) == ("u", "p", "http://proxy:3128", "10.0.0.0/8")
    assert a.proxy_headers == {"user_agent": "ua/1"} and a.persist_config is True
    assert (a.impersonate_user, a.impersonate_groups) == ("jane", ("g1", "g2"))
    # The option's own name works too, and a module parameter wins over the environment.
    monkeypatch.setenv("K8S_AUTH_CA_CERT", "/other.pem")
    assert kube_auth.auth({}).ca_cert == "/other.pem"
    assert kube_auth.auth({"ca_cert": "/param.pem", "validate_certs": True}).ca_cert == "/param.pem"
    assert kube_auth.auth({"validate_certs": True}).verify is True


def test_impersonation_and_basic_auth_become_headers() -> None:
    a = kube_auth.auth(
        {
            "host": "https://h",
            "impersonate_user": "jane",
            "impersonate_groups": ["a", "b"],
            "username": "u",
            "password": "p",
        }
    )
    assert a.headers() == [
        ("Impersonate-User", "jane"),
        ("Impersonate-Group", "a"),
        ("Impersonate-Group", "b"),
        ("Authorization", "Basic " + base64.b64encode(b"u:p").decode()),
    ]
    assert kube_auth.auth({"host": "https://h", "api_key": "t", "username": "u", "password": "p"}).headers() == []


def test_urllib3_transport_sends_one_header_line_per_impersonated_group() -> None:
    import http.server
    import threading

    seen: list[list[tuple[str, str]]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(list(self.headers.items()))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        params = {
            "host": f"http://127.0.0.1:{server.server_port}",
            "api_key": "tok",
            "impersonate_user": "jane",
            "impersonate_groups": ["a", "b"],
        }
        ep = kube_auth.light_endpoint(params)
        kube_rest.Rest(kube_transport.Urllib3Transport(ep, kube_auth.auth(params).headers())).request("GET", "/api")
    finally:
        server.shutdown()
    headers = seen[0]
    assert ("Impersonate-Group", "a") in headers and ("Impersonate-Group", "b") in headers
    assert ("Impersonate-User", "jane") in headers and ("Authorization", "Bearer tok") in headers


def test_a_kubeconfig_dict_is_read_like_the_file(tmp_path: pathlib.Path) -> None:
    doc = yaml.safe_load(pathlib.Path(write(tmp_path, {"token": "t"})).read_text())
    ep = kube_auth.light_endpoint({"kubeconfig": doc})
    assert ep is not None and (ep.host, ep.token, ep.ca_data) == ("https://127.0.0.1:6443", "t", PEM)
    assert kube_auth.light_endpoint({"kubeconfig": doc, "context": "other"}).host == "https://other:443"


@pytest.mark.parametrize("bad", [["a", "b"], 3, {"contexts": "x"}])
def test_a_kubeconfig_of_another_type_is_an_error_naming_the_option(bad: object) -> None:
    with pytest.raises(BadAuth, match=r"^kubeconfig: "):
        kube_auth.auth({"kubeconfig": bad})


def test_client_certificate_options_replace_the_kubeconfig_user(tmp_path: pathlib.Path) -> None:
    ep = kube_auth.light_endpoint(
        {
            "kubeconfig": write(tmp_path, {"token": "t"}),
            "client_cert": "/c.crt",
            "client_key": "/c.key",
            "api_key": None,
        }
    )
    assert (ep.cert_file, ep.key_file) == ("/c.crt", "/c.key")
    ep = kube_auth.light_endpoint(
        {"host": "https://h", "client_cert": "/c.crt", "client_key": "/c.key", "ca_cert": "/ca"}
    )
    assert (ep.host, ep.cert_file, ep.key_file, ep.ca_file, ep.token) == ("https://h", "/c.crt", "/c.key", "/ca", None)


def test_a_proxy_goes_to_the_kubernetes_client_with_every_proxy_option(tmp_path: pathlib.Path) -> None:
    params = {
        "kubeconfig": write(tmp_path, {"token": "t"}),
        "proxy": "http://proxy:3128",
        "no_proxy": "localhost",
        "proxy_headers": {"proxy_basic_auth": "u:p", "user_agent": "ua/1", "basic_auth": None},
    }
    assert kube_auth.light_endpoint(params) is None
    cfg = kube_auth.api_client(params).configuration
    assert (cfg.proxy, cfg.no_proxy) == ("http://proxy:3128", "localhost")
    assert cfg.proxy_headers["proxy-authorization"] == "Basic " + base64.b64encode(b"u:p").decode()
    assert cfg.proxy_headers["user-agent"] == "ua/1"


def test_the_kubernetes_client_path_takes_a_dict_and_the_certificate_options(tmp_path: pathlib.Path) -> None:
    doc = yaml.safe_load(pathlib.Path(write(tmp_path, {"token": "t"})).read_text())
    cfg = kube_auth.api_client(
        {
            "kubeconfig": doc,
            "client_cert": "/c.crt",
            "client_key": "/c.key",
            "ca_cert": "/ca.pem",
            "validate_certs": False,
        }
    ).configuration
    assert (cfg.host, cfg.cert_file, cfg.key_file, cfg.ssl_ca_cert, cfg.verify_ssl) == (
        "https://127.0.0.1:6443",
        "/c.crt",
        "/c.key",
        "/ca.pem",
        False,
    )


def test_credentials_that_cannot_be_loaded_are_named_with_their_path(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31: a missing kubeconfig was 'Kubernetes API server unreachable: ... No configuration found', its path
    never named. It is a bad connection option, named as the user gave it."""
    missing = str(tmp_path / "missing")
    with pytest.raises(BadAuth, match=f"the kubeconfig option, kubeconfig {missing}: "):
        kube_auth.api_client({"kubeconfig": missing})
    monkeypatch.setenv("KUBECONFIG", missing)
    with pytest.raises(BadAuth, match=f"of \\$KUBECONFIG, kubeconfig {missing}: "):
        kube_auth.api_client({})
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(BadAuth, match=f"the default kubeconfig {tmp_path}/.kube/config \\(no kubeconfig option"):
        kube_auth.api_client({})


def test_a_server_that_accepts_and_never_answers_fails_within_request_timeout_saying_so(tmp_path: pathlib.Path) -> None:
    """Issue 31: such a server took 61.9 s to fail with request_timeout 30 (the request was sent twice). A refused
    connection is still tried twice; a request the server took is not sent again. Both transports."""
    import socket
    import time

    from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import Unreachable

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        host = f"https://127.0.0.1:{server.getsockname()[1]}"
        # two kubeconfig files go to the kubernetes client's loader (ApiClientTransport)
        first = write(tmp_path, {"token": "t"}, {"server": host, "insecure-skip-tls-verify": True}, "a")
        both = f"{first}:{write(tmp_path, {'token': 't'}, name='b')}"
        for params, transport in (
            ({"host": host, "validate_certs": False}, "Urllib3Transport"),
            ({"kubeconfig": both}, "ApiClientTransport"),
        ):
            rest = kube_rest.connect({**params, "request_timeout": 1.5})
            assert type(rest.transport).__name__ == transport
            started = time.monotonic()
            with pytest.raises(Unreachable, match=r"no answer within request_timeout \(1.5 s\)"):
                rest.get("/version")
            assert time.monotonic() - started < 2.9, transport
