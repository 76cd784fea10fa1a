# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The MPIJob APIs this collection serves, from its API registry (module_utils/mpijob/apis): what the roles read
instead of a list of their own."""

from __future__ import annotations

DOCUMENTATION = r"""
name: mpijob_apis
author:
  - mpi.operator contributors (!UNKNOWN)
short_description: The MPIJob APIs this collection serves
description:
  - Returns one entry per MPIJob API the collection serves (kubeflow.org first), as its API registry declares it, so
    that the roles and playbooks never keep a list of their own.
  - With terms, returns the entries of those API groups, in the order given, and fails naming each group that is not
    one of them (the roles check C(mpi_operator_apis) with it).
options:
  _terms:
    description: API groups (for example V(kubeflow.org)); none for every API.
    type: list
    elements: str
    required: false
  option:
    description: The name of the option the terms came from, named in the error for a group that is not served.
    type: str
    default: API group
"""

EXAMPLES = r"""
- name: Show the API groups and versions served
  ansible.builtin.debug:
    msg: "{{ lookup('mpi.operator.mpijob_apis', wantlist=True) | items2dict(key_name='group', value_name='version') }}"

- name: Fail on an API group that is not served
  ansible.builtin.debug:
    msg: "{{ query('mpi.operator.mpijob_apis', *mpi_operator_apis, option='mpi_operator_apis') }}"
"""

RETURN = r"""
_raw:
  description: One entry per API.
  type: list
  elements: dict
  contains:
    name:
      description: Its module's name in the collection, and its CRD source's (crd/<name>.py).
      type: str
    group:
      description: The API group.
      type: str
    version:
      description: The version jobs are read and written in (the CRD's storage version).
      type: str
    api_version:
      description: group/version.
      type: str
    kind:
      description: The kind (MPIJob).
      type: str
    crd_name:
      description: The name of its CustomResourceDefinition, mpijobs.<group>.
      type: str
    original:
      description: The operator whose CRD this API's is.
      type: str
    launcher_rbac:
      description: Its jobs' launchers run with a ServiceAccount, Role and RoleBinding of their own.
      type: bool
"""

from ansible.errors import AnsibleError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402

from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import describe  # noqa: E402


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        served = describe()
        if not terms:
            return served
        by_group = {api["group"]: api for api in served}
        unknown = [str(t) for t in terms if t not in by_group]
        if unknown:
            raise AnsibleError(
                f"{self.get_option('option')}: {', '.join(repr(u) for u in unknown)} "
                f"{'is not an MPIJob API' if len(unknown) == 1 else 'are not MPIJob APIs'} served by mpi.operator "
                f"(served: {', '.join(by_group)})"
            )
        return [by_group[t] for t in terms]
