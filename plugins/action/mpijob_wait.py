# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""mpi.operator.mpijob_wait: waits for an MPIJob on the controller, printing a progress line per look.

An action plugin, not a module, so that each look can be shown while the task runs and a wait of any length is one
Python loop (a module runs once per look: too slow for short polls, and an include per look recursed until Ansible
hit its recursion limit). The loop and the predicate are the collection's own (module_utils/kube/jobs.py and
mpijob/submit.py), the same as the mpijob module's `wait`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ..module_utils.kube.auth import AUTH_ARG_SPEC
from ..module_utils.kube.jobs import WAIT_ARG_SPEC, Jobs
from ..module_utils.kube.module import task_message
from ..module_utils.kube.mpijob_task import named_api_version
from ..module_utils.kube.rest import connect
from ..module_utils.mpijob import submit as S
from ..module_utils.mpijob.errors import JobError, MPIJobError

display = Display()

ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "name": {"type": "str", "required": True},
    "namespace": {"type": "str", "default": "default"},
    "api_version": {"type": "str", "aliases": ["apiVersion"]},
    "request_timeout": {"type": "float", "default": 30.0},
    **{k: dict(v) for k, v in WAIT_ARG_SPEC.items()},
    # a wait of its own takes longer, and fractions of a second
    "wait_timeout": {"type": "float", "default": 3600},
    "wait_sleep": {"type": "float", "default": 5},
    **AUTH_ARG_SPEC,
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False  # talks to the API server from the controller, not through the target

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        result = super().run(tmp, task_vars)
        del tmp
        args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        if args["wait_timeout"] < 0 or args["wait_sleep"] < 0:
            raise AnsibleActionFail("wait_timeout and wait_sleep: must be >= 0")
        rounds = 0

        def report(job: dict, waited: float) -> None:
            nonlocal rounds
            rounds += 1
            line = jobs.summary(job)["progress"]  # and why Kueue holds it
            display.display(f"MPIJob progress: {line} (waited {int(waited)}s of {args['wait_timeout']:g}s)")

        try:
            jobs = Jobs(connect(args), pods_while_running=True)  # one job, read every round: its pods say why
            job = jobs.get(args["namespace"], args["name"], named_api_version(args))
            if job is None:
                raise AnsibleActionFail(f"MPIJob {args['namespace']}/{args['name']} does not exist")
            target = S.wait_target(args["wait_for"], job)
            started = datetime.now(timezone.utc)
            job = jobs.wait_for(job, target, args["wait_timeout"], args["wait_sleep"], report)
        except JobError as exc:
            last = exc.result.get("result")
            summary = S.summary(last, datetime.now(timezone.utc)) if last else None
            return {**result, "failed": True, "msg": str(exc), "rounds": rounds, "result": last, "summary": summary}
        except MPIJobError as exc:
            raise AnsibleActionFail(task_message(exc)) from exc
        return {
            **result,
            "changed": False,
            "reached": True,
            "wait_for": target,
            "rounds": rounds,
            "waited_seconds": int((datetime.now(timezone.utc) - started).total_seconds()),
            "result": job,
            "summary": S.summary(job, datetime.now(timezone.utc)),
        }
