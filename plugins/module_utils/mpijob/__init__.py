"""The MPIJob core: pure Python, no I/O, no Ansible imports.

spec (parse, default, validate) -> children (desired objects) -> status (from what was observed)
-> plan (ordered actions that turn observed into desired). The shell (module_utils/kube/) reads and writes.
apis/ is the registry of the MPIJob APIs served: each has its own parse and status stage (kubeflow.org's are spec.py
and status.py); children and plan are shared.
"""
