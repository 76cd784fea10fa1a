"""Integration fixtures. Each module in _fixtures/ holds the fixtures of the code that owns them
(cluster, CRD, operator, modules); all of their public names are imported here so every
integration test sees them."""
import importlib
import pathlib

for _path in sorted((pathlib.Path(__file__).parent / "_fixtures").glob("[!_]*.py")):
    _mod = importlib.import_module("tests.integration._fixtures." + _path.stem)
    globals().update({k: v for k, v in vars(_mod).items() if not k.startswith("_")})
