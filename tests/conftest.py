"""Makes the collection importable as ansible_collections.mpi.operator for every test."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".collections")
if not os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections", "mpi", "operator")):
    raise RuntimeError("run `make venv` first: .collections/ansible_collections/mpi/operator is missing")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", COLLECTIONS)
os.environ.setdefault("ANSIBLE_CONFIG", os.path.join(ROOT, "ansible.cfg"))
