"""Offline stand-in for the get-pip.py that ansible-test downloads (its host is unreachable here).

ansible-test runs it with the Python of each new test virtualenv and the packages to bootstrap (e.g. pip==24.2):
pip comes from the interpreter's own ensurepip, then pip installs the pinned packages from the usual index.
"""

import subprocess
import sys

# get-pip.py's own options; pip install does not know them (ensurepip installs neither setuptools nor wheel anyway).
GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}

subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"], stdout=subprocess.DEVNULL)
subprocess.check_call(
    [sys.executable, "-m", "pip", "install", "-q"] + [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
)
