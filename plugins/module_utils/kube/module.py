# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Every module's entry: run_module parses the arguments, connects, runs the module's body and turns any MPIJobError
into the task's failure, the same way for every module (the action plugins use task_message for theirs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..mpijob.errors import MissingLibrary, MPIJobError
from .rest import Rest, connect


def task_message(exc: MPIJobError) -> str:
    """What a failed task says about `exc`."""
    if isinstance(exc, MissingLibrary):
        from ansible.module_utils.basic import missing_required_lib

        return missing_required_lib(exc.library)
    return exc.msg


def run_module(argument_spec: dict, body: Callable[[Any, Rest], dict], **module_options: Any) -> None:
    """Runs `body(module, rest)` and exits with the result it returns; every task also returns api_calls. A failure
    returns the error's fields (MPIJobError.result) besides its msg."""
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec=argument_spec, **module_options)
    # kubeconfig is no_log for the document a dict gives (keys, tokens); a path is no secret, and the errors about
    # that file must name it (the invocation's module_args still hide it, as kubernetes.core's do)
    if isinstance(module.params.get("kubeconfig"), str):
        module.no_log_values.discard(module.params["kubeconfig"])
    rest = None
    try:
        rest = connect(module.params)
        result = body(module, rest)
    except MPIJobError as exc:
        fields = dict(exc.result)
        if rest is not None:
            fields.setdefault("api_calls", rest.calls)
        module.fail_json(msg=task_message(exc), **fields)
        raise  # fail_json exits; this keeps type checkers honest
    module.exit_json(api_calls=rest.calls, **result)
