# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Every error the collection reports, under one base class: what went wrong, in words a user acts on.

The modules turn any of them into the task's failure in one place (module_utils/kube/module.py run_module), and the
action plugins into AnsibleActionFail, with `msg` as the task's msg and `result` as the task's other fields.
"""

from __future__ import annotations

from typing import Any


class MPIJobError(Exception):
    """The base: `msg` is what the failed task says; `result` holds fields it still returns."""

    def __init__(self, message: str, **result: Any):
        super().__init__(message)
        self.result = result

    @property
    def msg(self) -> str:
        return str(self)


class InvalidMPIJob(MPIJobError, ValueError):
    """The object is not a valid MPIJob; `errors` names every bad field (spec.FieldError)."""

    def __init__(self, errors: list[Any]):
        self.errors = tuple(errors)
        super().__init__("; ".join(str(e) for e in errors))


class SubmitError(MPIJobError, ValueError):
    """Bad module input; the message names the option or field."""


class BadAuth(MPIJobError, ValueError):
    """A connection option that cannot be used as given (the message names it)."""


class Unreachable(MPIJobError):
    """The API server could not be reached (or the credentials could not be loaded). The task says so in one form."""

    @property
    def msg(self) -> str:
        return f"Kubernetes API server unreachable: {self}"


class MissingLibrary(MPIJobError):
    """A Python library the task needs is not installed where the module runs (`library` names it)."""

    def __init__(self, library: str, exception: str = ""):
        super().__init__(f"missing {library}", exception=exception)
        self.library = library


class ApiError(MPIJobError):
    """The API server answered with an error status."""

    def __init__(self, status: int, reason: str, body: dict | None = None):
        self.status, self.reason, self.body = status, reason, body or {}
        detail = self.body.get("message") or reason
        super().__init__(f"{status} {self.body.get('reason') or reason}: {detail}")

    @property
    def message(self) -> str:  # the server's own words, without the status line
        return str(self.body.get("message") or self.reason)


class JobError(MPIJobError):
    """A failure to report as the task's message (bad input the API rejected, conflict, timeout, a failed job)."""


class Conflict(JobError):
    """Server-side apply met fields another field manager changed (a drift from the manifest)."""
