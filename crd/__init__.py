"""The CRDs of the MPIJob APIs the collection serves (roles/crds/files), generated from the core's API registry and
Kubernetes' own OpenAPI schemas: gen.py the command (`make crd`), one CRD source per API (kubeflow.py, t9k.py,
bdap.py), and what they share (schema.py, openapi.py)."""
