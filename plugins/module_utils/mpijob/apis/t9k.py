"""batch.tensorstack.dev/v1beta1 MPIJob (seed 003, T9k): work in progress on the seed-t9k branch."""
from __future__ import annotations
