# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
name: fork_freeze
type: aggregate
short_description: Freeze the garbage collector's objects before ansible forks a worker
version_added: 0.1.0
author:
  - mpi.operator contributors (!UNKNOWN)
description:
  - Moves every object of the C(ansible) process to the garbage collector's permanent generation (C(gc.freeze())) right
    before the process forks, so that a collection in the forked worker does not write to the pages it shares with
    its parent (each write copies a page, memory the two processes then no longer share).
  - The operator enables it for its runs of C(mpi.operator.mpijob_reconcile), whose worker lives as long as the warm
    run (docs/operator.md). It changes nothing a task does and prints nothing.
requirements:
  - enable it in C(callbacks_enabled) (C(ANSIBLE_CALLBACKS_ENABLED)); an ad hoc run also needs
    C(ANSIBLE_LOAD_CALLBACK_PLUGINS)
"""

import gc  # noqa: E402
import os  # noqa: E402

from ansible.plugins.callback import CallbackBase  # noqa: E402

_REGISTERED = []


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "mpi.operator.fork_freeze"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display)
        if not _REGISTERED and hasattr(os, "register_at_fork"):
            os.register_at_fork(before=gc.freeze)
            _REGISTERED.append(True)
