# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Controller side of mpi.operator.mpijob_sync: on a local connection, `src` entries and `kubeconfig` are looked up
as mpi.operator.mpijob looks up its `src` (the role's and playbook's files/, then the playbook's directory), and a
relative glob is taken from the playbook's directory."""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.mpi.operator.plugins.action.mpijob import ActionModule as MPIJobAction

_GLOB = set("*?[")


class ActionModule(MPIJobAction):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        args = dict(self._task.args)
        if self._connection.transport != "local":
            return self._run_module(args, tmp, task_vars)
        try:
            if isinstance(args.get("kubeconfig"), str):
                args["kubeconfig"] = os.pathsep.join(self._local_file(p) for p in args["kubeconfig"].split(os.pathsep))
            src = args.get("src")
            if isinstance(src, str):
                src = [src]
            if isinstance(src, list):
                base = task_vars.get("playbook_dir") or self._loader.get_basedir()
                args["src"] = [self._local_src(str(entry), base) for entry in src]
        except AnsibleError as exc:
            result = super(MPIJobAction, self).run(tmp, task_vars)
            result.update(failed=True, msg=to_text(exc.message if hasattr(exc, "message") else exc))
            return result
        return self._run_module(args, tmp, task_vars)

    def _run_module(self, args: dict, tmp, task_vars: dict) -> dict:
        result = super(MPIJobAction, self).run(tmp, task_vars)
        result.update(self._execute_module(module_name=self._task.action, module_args=args, task_vars=task_vars))
        return result

    def _local_src(self, entry: str, base: str) -> str:
        entry = os.path.expanduser(entry)
        if os.path.isabs(entry):
            return entry
        if _GLOB & set(entry):
            return os.path.join(base, entry)
        try:
            found = self._find_needle("files", entry.rstrip("/") or entry)
        except AnsibleError:
            return entry  # the module reports what names nothing, naming the option
        return found if os.path.isdir(found) else self._loader.get_real_file(found, decrypt=True)
