"""batch.test.bdap.com/v1 MPIJob (seed 002, the kubebuilder operator): placeholder, filled by the seed-bdap branch.

It will define `API = Api(group="batch.test.bdap.com", versions=("v1",), kind="MPIJob", ...)` following the contract
in apis/__init__.py: `numWorkers`, `launcherTemplate`, `workerTemplate` read into the model (launcher created once
every worker is Ready, as WaitForWorkersReady), and the operator's own status. Until then no API is registered here.
"""
from __future__ import annotations
