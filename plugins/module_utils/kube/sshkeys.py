# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The SSH key pair of a job's Secret (the core decides when one is needed and calls the generator it is given)."""

from __future__ import annotations


def generate_ssh_keys() -> tuple[bytes, bytes]:
    """ECDSA P-521: PEM `EC PRIVATE KEY` and the authorized_keys line, as the Kubeflow operator makes them."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


def _placeholder_keys() -> tuple[bytes, bytes]:
    return b"", b""  # check mode: the Secret is only planned, no key is made
