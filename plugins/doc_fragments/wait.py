"""What the waits for an MPIJob (mpijob's O(wait), mpijob_wait) mean. Each module gives these options their type and
default itself (they differ: mpijob takes whole seconds, mpijob_wait fractions), which ansible-core merges over this
fragment option by option."""
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
  wait_sleep:
    description:
      - Seconds between two looks at the job while waiting.
"""
