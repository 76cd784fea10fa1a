# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The options of every wait for an MPIJob (mpijob's and mpijob_sync's O(wait), mpijob_wait), as
module_utils/kube/jobs.py's WAIT_ARG_SPEC declares them. A module that differs (mpijob_sync waits for fewer targets
and looks less often, mpijob_wait takes fractions of a second and waits longer) says so in its own DOCUMENTATION,
which ansible-core merges over this fragment option by option."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  wait_for:
    description:
      - V(Succeeded) waits until the job has finished, succeeded or failed (see RV(summary)'s C(phase)). V(Running)
        waits until it runs (or has already finished). V(Suspended) waits until it is suspended.
      - Without it, V(Suspended) for a suspended job (which would never finish), else V(Succeeded).
    type: str
    choices: [Succeeded, Running, Suspended]
  wait_timeout:
    description:
      - Seconds to wait before failing the task with a timeout (the job keeps running).
    type: int
    default: 600
  wait_sleep:
    description:
      - Seconds between two looks at the job while waiting.
    type: int
    default: 2
"""
