"""A kubeconfig given by path is named in the error about it (kubeconfig is no_log for the document a dict gives,
which must stay hidden); a kubeconfig given as a document keeps its values out of the result (ansible, no cluster)."""

from __future__ import annotations

import json
import pathlib

from tests.support.ansible import ansible_env, run_module


def test_the_error_about_a_kubeconfig_file_names_the_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "no-such-kubeconfig"
    result = run_module("mpi.operator.mpijob_info", {"kubeconfig": str(path)}, ansible_env("/nonexistent-kubeconfig"))
    assert result["failed"] and f"kubeconfig {path}:" in result["msg"], result


def test_a_kubeconfig_document_keeps_its_token_out_of_the_result(tmp_path: pathlib.Path) -> None:
    token = "s3cr3t-token-value-123"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }
    result = run_module("mpi.operator.mpijob_info", {"kubeconfig": doc}, ansible_env("/nonexistent-kubeconfig"))
    assert result["failed"] and token not in json.dumps(result), result
