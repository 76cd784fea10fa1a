# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""Structured logs: one line per record, logfmt (`text`) or JSON, with the job's namespace/name when known."""

from __future__ import annotations

import json
import logging
import sys
import time

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.protocol import Key

from .client import LIBRARY_LOGGERS

# Attributes every LogRecord has; anything else was passed with `extra=` and is a structured field.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def fields(record: logging.LogRecord) -> dict[str, object]:
    out: dict[str, object] = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
        "level": record.levelname.lower(),
        "logger": record.name,
        "msg": record.getMessage(),
    }
    for k, v in vars(record).items():
        if k not in _STANDARD and not k.startswith("_"):
            out[k] = v
    if record.exc_info:
        out["error"] = logging.Formatter().formatException(record.exc_info)
    return out


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(fields(record), default=str)


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_quote(v)}" for k, v in fields(record).items())


def _quote(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if text and not any(c in text for c in ' "=\n\t'):
        return text
    return json.dumps(text)


def job_fields(key: Key) -> dict[str, str]:
    """The `extra=` of every log line about one MPIJob (its apiVersion when it is not kubeflow.org's)."""
    api = {"api": key.api_version} if key.api_version != C.API_VERSION else {}
    return {"job": f"{key.namespace}/{key.name}", **api}


def setup(level: str = "info", fmt: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else LogfmtFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # the libraries under the shell's transports are chatty at debug level
    for noisy in LIBRARY_LOGGERS:
        logging.getLogger(noisy).setLevel(max(logging.INFO, root.level))
