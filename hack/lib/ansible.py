"""The environment of ansible, ansible-playbook, ansible-runner and the other venv tools run against the checkout
(its ansible.cfg and collection, the venv's tools first on PATH, no colour), with exactly one way to the cluster:
the kubeconfig given, as both KUBECONFIG and K8S_AUTH_KUBECONFIG (what the operator's own runs get from
mpijob_operator/runner.py's runner_env), or none at all. The caller's other cluster credentials ($KUBECONFIG,
K8S_AUTH_*) never leak in: a run reaches the cluster it was given, or none. Nor does PYTHONPATH: ansible finds the
collection through ANSIBLE_COLLECTIONS_PATH and also scans sys.path for collections, so a run given another
collections path (a built tarball's) would still find the checkout's through hack/make/env.sh's PYTHONPATH."""

from __future__ import annotations

import os
import sys

from hack.lib.paths import ROOT


def ansible_env(kubeconfig: str | None = None, **extra: str) -> dict[str, str]:
    """This process's environment for an ansible tool run against the checkout; `extra` is set last (another tree's
    ANSIBLE_CONFIG, a K8S_AUTH_* setting a test is about...)."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k not in ("KUBECONFIG", "PYTHONPATH")
    }
    env.update(
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    )
    if kubeconfig:
        env.update(KUBECONFIG=kubeconfig, K8S_AUTH_KUBECONFIG=kubeconfig)
    env.update(extra)
    return env
