# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Controller side of mpi.operator.mpijob, as kubernetes.core.k8s's action plugin does it: `src` and `kubeconfig`
are looked up in the role's and playbook's files/ on a local connection, and `template` is rendered here with the
task's variables and handed to the module as a YAML `definition`. A relative `src` found nowhere else is looked up
in this collection last, so that its examples (`examples/v2beta1/pi.yaml`) run from the installed collection."""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

try:  # ansible-core 2.19+: file contents are templated only when marked trusted
    from ansible.template import trust_as_template
except ImportError:  # ansible-core 2.17, 2.18
    trust_as_template = None

# This collection's root (plugins/action/mpijob.py is two folders below it), where its examples/ are.
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The Jinja2 settings a template dict may carry, as kubernetes.core.k8s's `template` takes them.
TEMPLATE_SETTINGS = (
    "variable_start_string",
    "variable_end_string",
    "block_start_string",
    "block_end_string",
    "trim_blocks",
    "lstrip_blocks",
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        local = self._connection.transport == "local"
        try:
            if local and isinstance(args.get("kubeconfig"), str):
                args["kubeconfig"] = os.pathsep.join(self._local_file(p) for p in args["kubeconfig"].split(os.pathsep))
            if local and isinstance(args.get("src"), str):
                args["src"] = self._local_file(args["src"])
            if args.get("template") is not None:
                if args.get("definition") is not None or args.get("src") is not None:
                    raise AnsibleError("parameters are mutually exclusive: definition|src|template")
                args["definition"] = self._render(args.pop("template"), task_vars)
        except AnsibleError as exc:
            result.update(failed=True, msg=to_text(exc.message if hasattr(exc, "message") else exc))
            return result
        result.update(self._execute_module(module_name=self._task.action, module_args=args, task_vars=task_vars))
        return result

    def _local_file(self, path: str) -> str:
        """The file as kubernetes.core.k8s finds it (the role's files/, the playbook's files/ and directory);
        a path that only exists relative to the working directory stays as it is, as before this plugin."""
        path = os.path.expanduser(path)
        if os.path.isabs(path):
            return path
        try:
            found = self._find_needle("files", path)
        except AnsibleError:
            if not os.path.exists(path) and os.path.exists(os.path.join(COLLECTION_ROOT, path)):
                return os.path.join(COLLECTION_ROOT, path)  # e.g. examples/v2beta1/pi.yaml of the installed collection
            return path  # the module reports a missing file, naming the option
        return self._loader.get_real_file(found, decrypt=True)  # a vaulted file is decrypted to a temporary copy

    def _render(self, template, task_vars: dict) -> str:
        if isinstance(template, str):
            template = {"path": template}
        if not isinstance(template, dict) or not template.get("path"):
            raise AnsibleError("template: a path, or a dict with path (and Jinja2 settings), is required")
        unknown = sorted(set(template) - {"path", *TEMPLATE_SETTINGS})
        if unknown:
            raise AnsibleError(
                f"template: unknown keys {', '.join(unknown)}; known: path, {', '.join(TEMPLATE_SETTINGS)}"
            )
        settings = {k: template[k] for k in TEMPLATE_SETTINGS if template.get(k) is not None}
        for key in ("trim_blocks", "lstrip_blocks"):
            if key in settings:
                settings[key] = boolean(settings[key], strict=True)
        source = self._find_needle("templates", template["path"])
        with open(self._loader.get_real_file(source, decrypt=True), encoding="utf-8") as f:
            text = f.read()
        if trust_as_template is not None:
            templar = self._templar.copy_with_new_env(available_variables=task_vars)
            return templar.template(
                trust_as_template(text), preserve_trailing_newlines=True, escape_backslashes=False, overrides=settings
            )
        templar = self._templar.copy_with_new_env(**settings)
        templar.available_variables = task_vars
        return templar.do_template(text, preserve_trailing_newlines=True, escape_backslashes=False)
