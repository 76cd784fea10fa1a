"""The bad-input storm of `make chaos` at the cheapest tier: a thousand mutations of valid manifests of the three
APIs (hack/experiments/chaos/mutations.py), each planned by the core as the operator would on its first look. None may crash
the plan: each is a valid job, or Failed with reason ValidationError naming the fields."""

from __future__ import annotations

import copy

import yaml

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from hack.experiments.chaos import mutations
from tests.support.paths import ROOT

from ._helpers import manifest, plan
from ._t9k import t9k

# The batch.test.bdap.com README's example, as the API server stores it but for the uid.
BDAP_EXAMPLE = ROOT / "tests/integration/manifests/bdap-simple-train-cpu.yaml"


def valid_manifests() -> list[dict]:
    bdap = yaml.safe_load(BDAP_EXAMPLE.read_text())
    return [manifest("pi", 2), t9k(), bdap]


def test_a_thousand_mutations_each_plan_to_a_job_or_a_failure_naming_the_field() -> None:
    outcomes: dict[str, int] = {"valid": 0, "invalid": 0}
    for i, (obj, done) in enumerate(mutations.storm(valid_manifests(), 1000, seed=30)):
        obj = copy.deepcopy(obj)
        if isinstance(obj.get("metadata"), dict):
            obj["metadata"].setdefault("uid", f"uid-{i}")
        try:
            p = plan(obj)
        except Exception as exc:
            raise AssertionError(f"mutation {i} ({'; '.join(done)}) crashed the plan: {exc!r}") from exc
        if p.error:
            outcomes["invalid"] += 1
            failed = next(c for c in p.status["conditions"] if c["type"] == C.FAILED)
            assert failed["reason"] == C.REASON_VALIDATION, done
            assert mutations.FIELD.match(p.error), (done, p.error)
        else:
            outcomes["valid"] += 1
    # the storm is a storm: most mutations break the job, some leave it valid (a label changed, say)
    assert outcomes["invalid"] > 500 and outcomes["valid"] > 20, outcomes
