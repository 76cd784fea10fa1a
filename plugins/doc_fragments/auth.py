# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Connection options shared by every mpi.operator module (module_utils/kube/auth.py AUTH_ARG_SPEC): the names, types,
aliases and environment variables of kubernetes.core's k8s_auth_options, so one module_defaults block
(group/mpi.operator.k8s) configures ours and kubernetes.core's."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, several paths joined by C(:) (merged as C(kubectl) merges them), or the
        kubeconfig document itself as a dict. Can also be given as E(K8S_AUTH_KUBECONFIG).
      - Without it, E(KUBECONFIG), then the in-cluster service account, then C(~/.kube/config) are tried in this
        order.
      - With the M(mpi.operator.mpijob) module on a local connection, a relative path is also looked up in the
        role's or playbook's C(files/) directory, as M(kubernetes.core.k8s) does.
    type: raw
  context:
    description:
      - The kubeconfig context to use instead of the current one. Can also be given as E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - URL of the API server, overriding the kubeconfig's. Can also be given as E(K8S_AUTH_HOST).
      - With O(host) and neither O(kubeconfig) nor O(context), no kubeconfig is read, so give the credentials too
        (O(api_key), O(client_cert) and O(client_key), or O(username) and O(password)).
    type: str
  api_key:
    description:
      - Bearer token for the API server. Can also be given as E(K8S_AUTH_API_KEY).
    type: str
  username:
    description:
      - User name for HTTP basic authentication, with O(password). Can also be given as E(K8S_AUTH_USERNAME).
      - Only for API servers configured for basic authentication (most are not).
    type: str
  password:
    description:
      - Password for HTTP basic authentication, with O(username). Can also be given as E(K8S_AUTH_PASSWORD).
    type: str
  client_cert:
    description:
      - Path to a client certificate to authenticate with, with O(client_key). Can also be given as
        E(K8S_AUTH_CERT_FILE) or E(K8S_AUTH_CLIENT_CERT).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path to the key of O(client_cert). Can also be given as E(K8S_AUTH_KEY_FILE) or E(K8S_AUTH_CLIENT_KEY).
    type: path
    aliases: [key_file]
  ca_cert:
    description:
      - Path to a CA bundle for the API server's certificate (the full chain). Can also be given as
        E(K8S_AUTH_SSL_CA_CERT) or E(K8S_AUTH_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate. Can also be given as E(K8S_AUTH_VERIFY_SSL) or
        E(K8S_AUTH_VALIDATE_CERTS) (V(0), V(false) and V(no) mean false). Defaults to what the kubeconfig says.
    type: bool
    aliases: [verify_ssl]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through. Can also be given as E(K8S_AUTH_PROXY).
      - The usual E(HTTPS_PROXY) variables are not read, as with M(kubernetes.core.k8s).
    type: str
  no_proxy:
    description:
      - Comma separated hosts, domains, IP addresses or CIDRs to reach without O(proxy). Can also be given as
        E(K8S_AUTH_NO_PROXY).
    type: str
  proxy_headers:
    description:
      - Headers for O(proxy).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - C(user:password) for the proxy's basic authentication. Can also be given as
            E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH).
        type: str
      basic_auth:
        description:
          - C(user:password) for basic authentication. Can also be given as E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH).
        type: str
      user_agent:
        description:
          - The User-Agent header. Can also be given as E(K8S_AUTH_PROXY_HEADERS_USER_AGENT).
        type: str
  persist_config:
    description:
      - Whether to write refreshed tokens (OIDC and other auth providers) back to the kubeconfig file. Can also
        be given as E(K8S_AUTH_PERSIST_CONFIG). Defaults to false, as with M(kubernetes.core.k8s).
    type: bool
  impersonate_user:
    description:
      - User to act as (the C(Impersonate-User) header; needs RBAC permission to impersonate). Can also be given
        as E(K8S_AUTH_IMPERSONATE_USER).
    type: str
  impersonate_groups:
    description:
      - Groups to act as (one C(Impersonate-Group) header each). Can also be given as
        E(K8S_AUTH_IMPERSONATE_GROUPS), comma separated.
    type: list
    elements: str
  request_timeout:
    description:
      - Seconds to wait for one API request. Not a M(kubernetes.core.k8s) option.
    type: float
    default: 30.0
requirements:
  - python >= 3.9
  - kubernetes >= 30.0 (Python; a plain client-certificate or token kubeconfig and the in-cluster service account
    need only its dependency urllib3)
  - PyYAML (Python)
  - cryptography (Python, for M(mpi.operator.mpijob_reconcile))
notes:
  - The connection options are those of M(kubernetes.core.k8s), with the same names, aliases and environment
    variables, so C(module_defaults) with C(group/mpi.operator.k8s) sets them for this collection's modules and
    for kubernetes.core's k8s modules at once.
"""
