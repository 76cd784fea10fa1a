"""The MPIJob core: pure Python, no I/O, no Ansible imports.

parse (an API's, into spec's one model) -> children (desired objects) -> status (an API's stage, from what was
observed) -> plan (ordered actions that turn observed into desired). The shell (module_utils/kube/) reads and writes.
apis/ is the registry of the MPIJob APIs served, one module each (kubeflow.py, t9k.py, bdap.py) with its parse and
status stage; spec.py (the model, Reader), status.py (Observed, condition mechanics), children and plan are shared.
"""
