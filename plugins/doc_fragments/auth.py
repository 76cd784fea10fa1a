"""Connection options shared by the mpi.operator modules (see module_utils/kube.py AUTH_ARG_SPEC)."""
from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file.
      - Without it, C(K8S_AUTH_KUBECONFIG), then C(KUBECONFIG), then the in-cluster service account, then
        C(~/.kube/config) are tried in this order.
    type: path
  context:
    description:
      - The kubeconfig context to use. Defaults to C(K8S_AUTH_CONTEXT), then the current context.
    type: str
  host:
    description:
      - URL of the API server, overriding the kubeconfig. Defaults to C(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - Bearer token for the API server. Defaults to C(K8S_AUTH_API_KEY).
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. Defaults to C(K8S_AUTH_VERIFY_SSL), then the kubeconfig.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path to a CA bundle for the API server's certificate.
    type: path
    aliases: [ssl_ca_cert]
  request_timeout:
    description:
      - Seconds to wait for one API request.
    type: float
    default: 30.0
requirements:
  - kubernetes >= 30.0 (Python)
  - cryptography (Python)
"""
