"""Scenario 5, the bad-input storm on the cluster: good jobs created while, in the same namespace, a storm of mutated
manifests of the three APIs (hack/experiments/chaos/mutations.py) is applied. Each storm manifest must be rejected by
the API server naming a field it broke, or accepted and then reconciled: Failed with a ValidationError naming the field,
or a valid job. The good jobs' create -> Running p95 must stay within 1.5x of the same jobs without the storm (run
first, in a namespace of its own), and the operator must never crash or stall."""

from __future__ import annotations

import concurrent.futures as cf
import functools
import json
import pathlib
import random
import time
from collections import Counter
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import REGISTRY
from hack.experiments.bench.results import percentile
from hack.experiments.chaos import mutations
from hack.experiments.chaos.faults import Operator
from hack.experiments.chaos.observer import Observer
from hack.experiments.chaos.scenarios import Row, fresh_namespace, harness_job, retrying
from hack.lib.mpijob import GROUP, PLURAL, VERSION, install_crd
from hack.lib.paths import ROOT
from hack.lib.wait import wait_until

LATENCY_LIMIT = 1.5  # the good jobs' create -> Running p95 with the storm, at most this times without


def base_manifests() -> list[dict[str, Any]]:
    """A valid small job of each API, its pods on kwok nodes."""
    container = {"name": "worker", "image": "mpioperator/mpi-pi:openmpi"}
    kubeflow = harness_job("storm", 2)
    t9k = {
        "apiVersion": "batch.tensorstack.dev/v1beta1",
        "kind": "MPIJob",
        "metadata": {"name": "storm"},
        "spec": {
            "worker": {
                "replicas": 2,
                "cmd": ["./random_walk", "20"],
                "extraMPIArgs": ["-N", "1"],
                "template": {"spec": {"containers": [dict(container, name="mpi-worker")]}},
            },
            "mca": {"btl": "^openib"},
            "runPolicy": {"cleanUpWorkers": True},
            "ssh": {"sshdPath": "/usr/sbin/sshd"},
            "mpiHome": "/usr/local",
        },
    }
    bdap = {
        "apiVersion": "batch.test.bdap.com/v1",
        "kind": "MPIJob",
        "metadata": {"name": "storm"},
        "spec": {
            "numWorkers": 2,
            "launcherTemplate": {
                "spec": {
                    "containers": [dict(container, name="launcher", command=["/bin/sh", "-c"], args=["true"])],
                    "restartPolicy": "Never",
                }
            },
            "workerTemplate": {"spec": {"containers": [dict(container, command=["sleep"], args=["infinity"])]}},
        },
    }
    return [kubeflow, t9k, bdap]


def names_a_field(message: str, done: list[str]) -> bool:
    """The API server's or the operator's message names a field a mutation broke: its path, or its last named key
    (the server writes list indexes as [0], the operator as .0 or [0]), or the object itself for a mutation at the
    top."""
    for change in done:
        path = change.split(": ", 1)[0]
        keys = [k for k in path.split(".") if not k.isdigit()]
        if not keys:
            return True
        if any(k in message for k in keys[-2:]) or (keys[0] in ("apiVersion", "kind") and "version" in message.lower()):
            return True
    return False


def create(custom: client.CustomObjectsApi, namespace: str, obj: dict, api_version: str) -> tuple[int, Any]:
    """(0, the object created) or (the HTTP status, the message) of one create at the URL of `api_version`."""
    group, version = api_version.split("/")
    try:
        json.dumps(obj, allow_nan=False)
    except ValueError as exc:  # NaN or infinity: no client sends it (JSON has no such number); kubectl refuses it
        return -1, f"not JSON: {exc}"
    try:
        made = retrying(
            lambda: custom.create_namespaced_custom_object(group, version, namespace, PLURAL, obj), timeout=120
        )
    except ApiException as exc:
        return exc.status, exc.body if isinstance(exc.body, str) else str(exc.body)
    except (ValueError, TypeError) as exc:  # the client itself refused it
        return -1, str(exc)
    return (409, "already exists") if made is None else (0, made)


class Storm:
    """`count` mutated manifests (the three APIs in turn, reproducible from `seed`), applied in `namespace`; what
    became of each."""

    def __init__(self, namespace: str, count: int, seed: int):
        self.namespace = namespace
        rng = random.Random(seed)
        bases = base_manifests()
        self.items: dict[str, tuple[str, dict, list[str]]] = {}  # name -> (the URL's apiVersion, manifest, mutations)
        for i in range(count):
            base = dict(bases[i % len(bases)], metadata={"name": f"storm-{i:05d}"})
            obj, done = mutations.mutate(base, rng)
            self.items[f"storm-{i:05d}"] = (base["apiVersion"], obj, done)
        self.rejected: dict[str, tuple[int, str]] = {}
        self.accepted: dict[str, dict] = {}  # name -> the object as created (its stored name may differ)

    def apply(self, custom: client.CustomObjectsApi, name: str) -> None:
        api_version, obj, _ = self.items[name]
        status, out = create(custom, self.namespace, obj, api_version)
        if status:
            self.rejected[name] = (status, str(out))
        else:
            self.accepted[name] = out

    def current(self, custom: client.CustomObjectsApi) -> dict[str, dict]:
        """The accepted manifests as they are now, by their storm name."""
        listed = {}
        for api_version in {v for v, _, _ in self.items.values()}:
            group, version = api_version.split("/")
            for obj in custom.list_namespaced_custom_object(group, version, self.namespace, PLURAL)["items"]:
                listed[(obj["apiVersion"].split("/")[0], obj["metadata"]["name"])] = obj
        return {
            name: listed[key]
            for name, made in self.accepted.items()
            if (key := (made["apiVersion"].split("/")[0], made["metadata"]["name"])) in listed
        }

    def findings(self, custom: client.CustomObjectsApi) -> tuple[list[str], Counter[str]]:
        """What the API server and the operator made of each manifest: a finding for a rejection that names no field
        it broke, a server error, an accepted manifest not reconciled, a Failed job not naming its field."""
        found: list[str] = []
        outcome: Counter[str] = Counter()
        for name, (status, message) in sorted(self.rejected.items()):
            done = self.items[name][2]
            outcome[f"rejected {status}"] += 1
            if status >= 500 or (status not in (-1, 409) and not names_a_field(message, done)):
                found.append(f"{name} ({'; '.join(done)}) rejected with {status} not naming the field: {message[:300]}")
        now = self.current(custom)
        for name in sorted(self.accepted):
            done = self.items[name][2]
            obj = now.get(name)
            conds = conditions(obj) if obj else []
            failed = next((c for c in conds if c.get("type") == C.FAILED and c.get("status") == "True"), None)
            if obj is None:
                outcome["accepted, then gone"] += 1
            elif not conds:
                found.append(f"{name} ({'; '.join(done)}) accepted and never reconciled")
            elif failed and failed.get("reason") == C.REASON_VALIDATION:
                outcome["accepted, Failed naming the field"] += 1
                if not (mutations.FIELD.match(failed.get("message", "")) and names_a_field(failed["message"], done)):
                    found.append(f"{name} ({'; '.join(done)}) Failed not naming the field: {failed.get('message')}")
            elif failed:
                outcome[f"accepted, Failed {failed.get('reason')}"] += 1
            else:
                outcome["accepted, a valid job"] += 1
        return found, outcome

    def all_reconciled(self, custom: client.CustomObjectsApi) -> bool:
        now = self.current(custom)
        return all(conditions(obj) for obj in now.values())


def conditions(obj: dict) -> list[dict]:
    status = obj.get("status")
    found = status.get("conditions") if isinstance(status, dict) else None
    return found if isinstance(found, list) else []


def good_and_storm(
    api: client.ApiClient,
    kubeconfig: str,
    work: pathlib.Path,
    namespace: str,
    good: int,
    workers: int,
    storm: Storm | None,
    timeout: float,
) -> tuple[list[float], list[str]]:
    """One run: the good jobs (interleaved with the storm's manifests, when there is one) created by 16 clients on an
    operator of their own watching `namespace`; each good job's create -> Running, and the findings of the run."""
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    fresh_namespace(core, namespace)
    operator = Operator(kubeconfig, work, namespace, ["--apis", ",".join(a.group for a in REGISTRY.values())])
    operator.start()
    observer = Observer(api, namespace).start()
    names = [f"good-{i:05d}" for i in range(good)]
    created: dict[str, float] = {}

    def good_one(name: str) -> None:
        created[name] = time.time()
        retrying(
            lambda: custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, harness_job(name, workers)
            )
        )

    tasks: list[Any] = [functools.partial(good_one, n) for n in names]
    if storm is not None:  # a good job after every (storm / good) storm manifests
        stormy = [functools.partial(storm.apply, custom, n) for n in storm.items]
        every = max(1, len(stormy) // max(1, good))
        tasks = [t for i, g in enumerate(tasks) for t in (*stormy[i * every : (i + 1) * every], g)]
        tasks += stormy[good * every :]
    findings: list[str] = []
    try:
        with cf.ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda task: task(), tasks))
        try:
            wait_until(
                lambda: (operator.check_alive(), all((n, "Running") in observer.first for n in names))[1],
                timeout,
                f"{good} good jobs Running",
                interval=0.5,
            )
            if storm is not None:
                wait_until(
                    lambda: storm.all_reconciled(custom), timeout, "every accepted storm job reconciled", interval=2
                )
        except TimeoutError as exc:
            findings.append(str(exc))
        findings += [f"the operator exited by itself with {code}" for code in operator.exits]
    finally:
        observer.stop()
        operator.stop()
    latencies = [observer.first[(n, "Running")] - created[n] for n in names if (n, "Running") in observer.first]
    return latencies, findings


def bad_input_storm(
    api: client.ApiClient,
    kubeconfig: str,
    work: pathlib.Path,
    good: int = 200,
    storm: int = 1000,
    workers: int = 2,
    seed: int = 30,
    timeout: float = 900,
) -> Row:
    """Scenario 5: the good jobs alone, then the same number beside the storm, each on a fresh namespace and operator."""
    row = Row("bad-input storm", good)
    for api_ in REGISTRY.values():
        install_crd(api, ROOT / f"roles/crds/files/{api_.crd_name}.yaml")
    calm, _ = good_and_storm(api, kubeconfig, work, "chaos-storm-calm", good, workers, None, timeout)
    run = Storm("chaos-storm", storm, seed)
    start = time.monotonic()
    stormy, findings = good_and_storm(api, kubeconfig, work, run.namespace, good, workers, run, timeout)
    row.faults = [f"{storm} mutated manifests"]
    row.settle_s = time.monotonic() - start
    row.findings += findings
    storm_findings, outcome = run.findings(client.CustomObjectsApi(api))
    row.findings += storm_findings
    row.notes.append("storm: " + ", ".join(f"{n} {what}" for what, n in sorted(outcome.items())))
    p_calm, p_storm = percentile(calm, 95), percentile(stormy, 95)
    row.notes.append(
        f"good jobs create -> Running p95: {p_calm:.1f} s alone, {p_storm:.1f} s in the storm"
        f" ({p_storm / p_calm:.2f}x; p50 {percentile(calm, 50):.1f} / {percentile(stormy, 50):.1f} s)"
    )
    if len(calm) < good or len(stormy) < good:
        row.findings.append(f"good jobs Running: {len(calm)} alone, {len(stormy)} in the storm, of {good}")
    elif p_storm > LATENCY_LIMIT * p_calm:
        row.findings.append(f"the storm slowed the good jobs {p_storm / p_calm:.2f}x (limit {LATENCY_LIMIT}x)")
    if not row.findings:
        core = client.CoreV1Api(api)
        for ns in ("chaos-storm-calm", "chaos-storm"):
            retrying(lambda ns=ns: core.delete_namespace(ns))
    return row
