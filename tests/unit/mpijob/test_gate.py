"""The launch gate's init container: on every launcher the operator makes (first start, resume, a T9k pause's resume, a
bare launcher Pod), on all three APIs; the ports it tries; how a job turns it off; bad annotations refused."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.mpi.operator.plugins.module_utils.mpijob import children as K
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import constants as C
from ansible_collections.mpi.operator.plugins.module_utils.mpijob import plan as P
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.apis import api_for, kubeflow
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.errors import InvalidMPIJob
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.gate import ssh_ports
from ansible_collections.mpi.operator.plugins.module_utils.mpijob.submit import validate

from . import _bdap, _t9k
from ._helpers import assert_golden, at, manifest, plan, set_phase, settle, world_after

IMAGE = "registry.example.com/mpi-operator:0.1.0"
GATED = K.Options(launch_gate_image=IMAGE)


def annotated(obj: dict, **annotations: str) -> dict:
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("annotations", {}).update(annotations)
    return obj


def gate_of(pod_spec: dict) -> dict | None:
    found = [c for c in pod_spec.get("initContainers") or [] if c["name"] == C.LAUNCH_GATE_CONTAINER]
    assert len(found) <= 1
    return found[0] if found else None


def launcher_spec(action: P.Action) -> dict:
    body = action.body or {}
    return body["spec"]["template"]["spec"] if body["kind"] == "Job" else body["spec"]


def created_launcher(p: P.Plan) -> P.Action:
    (found,) = [
        a for a in p.actions if a.action == "create" and a.name.endswith("-launcher") and a.kind in ("Job", "Pod")
    ]
    return found


def test_the_launcher_job_gets_the_gate_last_among_its_init_containers() -> None:
    obj = manifest("pi", 2)
    obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["initContainers"] = [{"name": "data", "image": "x"}]
    spec = K.launcher_job(kubeflow.parse(obj), GATED)["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["data", C.LAUNCH_GATE_CONTAINER]
    gate = spec["initContainers"][-1]
    assert gate["image"] == IMAGE and gate["command"] == ["python3", "-m", "mpijob_operator.gate"]
    assert gate["args"] == ["--hostfile", "/etc/mpi/hostfile", "--timeout", "600", "--port", "22", "--port", "2222"]
    # it reads the hostfile from the launcher's own config volume
    assert {"name": C.CONFIG_VOLUME, "mountPath": "/etc/mpi", "readOnly": True} in gate["volumeMounts"]
    assert any(v["name"] == C.CONFIG_VOLUME for v in spec["volumes"])
    # requests = limits: a Guaranteed launcher stays Guaranteed
    assert gate["resources"]["requests"] == gate["resources"]["limits"]


def test_golden_launcher_with_the_gate() -> None:
    job = kubeflow.parse(manifest("gate", 2, sshAuthMountPath="/home/mpiuser/.ssh"))
    assert_golden("launch_gate", [K.launcher_job(job, GATED)])


def test_no_gate_without_an_image_when_the_job_turns_it_off_or_without_workers() -> None:
    def gate(obj: dict, opts: K.Options = GATED) -> dict | None:
        return gate_of(K.launcher_job(kubeflow.parse(obj), opts)["spec"]["template"]["spec"])

    assert gate(manifest("pi", 2), K.Options()) is None
    assert gate(annotated(manifest("pi", 2), **{C.LAUNCH_GATE_ANNOTATION: "false"})) is None
    assert gate(manifest("solo", None, runLauncherAsWorker=True)) is None
    assert gate(annotated(manifest("pi", 2), **{C.LAUNCH_GATE_ANNOTATION: "true"})) is not None


def test_a_launcher_that_is_a_worker_does_not_wait_for_itself() -> None:
    spec = K.launcher_job(kubeflow.parse(manifest("law", 2, runLauncherAsWorker=True)), GATED)
    args = gate_of(spec["spec"]["template"]["spec"])["args"]
    assert args[-2:] == ["--skip", "law-launcher"]


def test_the_timeout_annotation() -> None:
    obj = annotated(manifest("pi", 2), **{C.LAUNCH_GATE_TIMEOUT_ANNOTATION: "1800"})
    args = gate_of(K.launcher_job(kubeflow.parse(obj), GATED)["spec"]["template"]["spec"])["args"]
    assert args[args.index("--timeout") + 1] == "1800"


def _worker(**container) -> dict:
    obj = manifest("pi", 2)
    obj["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(container)
    return obj


@pytest.mark.parametrize(
    ("obj", "ports"),
    [
        (manifest("pi", 2), (22, 2222)),
        (annotated(manifest("pi", 2), **{C.SSH_PORT_ANNOTATION: "2022"}), (2022,)),
        (_worker(readinessProbe={"tcpSocket": {"port": 2222}}), (2222,)),
        (_worker(readinessProbe={"tcpSocket": {"port": "ssh"}}), (22, 2222)),  # a named port: not followed
        (_worker(ports=[{"name": "ssh", "containerPort": 3022}]), (3022,)),
        (_worker(command=["/usr/sbin/sshd", "-De", "-p", "2200"]), (2200,)),
        (_worker(command=["/bin/sh", "-c", "sleep 60; exec /usr/sbin/sshd -De"]), (22, 2222)),
    ],
    ids=["default", "annotation", "probe", "named-probe", "ssh-port", "sshd-p", "shell"],
)
def test_the_ports_the_gate_tries(obj: dict, ports: tuple[int, ...]) -> None:
    assert ssh_ports(kubeflow.parse(obj)) == ports


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (C.LAUNCH_GATE_ANNOTATION, "off", 'must be "true" or "false"'),
        (C.LAUNCH_GATE_TIMEOUT_ANNOTATION, "10m", "must be an integer from 1 to 86400"),
        (C.LAUNCH_GATE_TIMEOUT_ANNOTATION, "0", "must be an integer from 1 to 86400"),
        (C.SSH_PORT_ANNOTATION, "70000", "must be an integer from 1 to 65535"),
        (C.HOSTFILE_TOPOLOGY_ANNOTATION, "", "node label keys separated by commas"),
        (C.HOSTFILE_TOPOLOGY_ANNOTATION, "zone,,rack", "node label keys separated by commas"),
        (C.HOSTFILE_TOPOLOGY_ANNOTATION, "Example.com/rack", "node label keys separated by commas"),
        (C.HOSTFILE_TOPOLOGY_ANNOTATION, "rack/", "node label keys separated by commas"),
    ],
)
def test_a_bad_annotation_is_refused_naming_it_on_every_api(key: str, value: str, message: str) -> None:
    for obj in (manifest("pi", 2), _t9k.random_walk(), _bdap.example()):
        bad = annotated(obj, **{key: value})
        with pytest.raises(InvalidMPIJob) as err:
            api_for(bad).parse(bad)
        assert any(e.path == f"metadata.annotations[{key}]" and message in e.message for e in err.value.errors)
        with pytest.raises(Exception, match=key.replace(".", r"\.")):
            validate(bad)  # mpijob / submit.yml refuse it before it is applied
        failed = plan(bad, opts=GATED)  # and the operator fails it as any invalid spec (ValidationError)
        assert key in (failed.error or "")


def test_every_launcher_the_planner_creates_is_gated_kubeflow_first_start_and_resume() -> None:
    obj = manifest("pi", 2)
    first = plan(obj, opts=GATED)
    assert gate_of(launcher_spec(created_launcher(first))) is not None
    # Suspended at creation: the suspended launcher Job is made with its gate; the resume only patches the
    # scheduling directives, so the gate stays in the template the Job's new pod is made from.
    suspended = manifest("pi", 2, runPolicy={"suspend": True})
    world = settle(suspended, GATED)
    assert gate_of(world.launcher["spec"]["template"]["spec"]) is not None
    resumed = copy.deepcopy(world.mpijob)
    resumed["spec"]["runPolicy"]["suspend"] = False
    world.pods = [set_phase(p, "Running", ready=True) for p in world.pods]
    p = plan(resumed, world, GATED, now=at(60))
    patches = [a for a in p.actions if a.action == "patch" and a.kind == "Job" and not a.subresource]
    assert patches and all("initContainers" not in a.body["spec"]["template"]["spec"] for a in patches)


def test_t9k_launcher_is_gated_at_start_and_after_a_pause() -> None:
    obj = _t9k.random_walk()
    world = _t9k.workers_ready(_t9k.settle(obj, None))
    world = _t9k.settle(obj, world)
    p = plan(obj, P.World(mpijob=obj, pods=world.pods), GATED)
    assert gate_of(launcher_spec(created_launcher(p))) is not None
    # T9k's pause deletes the launcher Job; the resume makes a new one, gated too.
    paused = _t9k.t9k(runMode={"pause": {"enabled": True}})
    world = _t9k.settle(paused, None)
    assert world.launcher is None
    resumed = copy.deepcopy(world.mpijob)
    resumed["spec"]["runMode"] = {"pause": {"enabled": False}}
    world = _t9k.workers_ready(world_after(world, plan(resumed, world, GATED)))
    p = plan(resumed, world, GATED)
    assert gate_of(launcher_spec(created_launcher(p))) is not None


def test_bdap_bare_launcher_pod_is_gated_on_names_only() -> None:
    world = _bdap.ready_workers(_bdap.settle(P.World(mpijob=_bdap.example())))
    p = plan(world.mpijob, world, GATED)
    gate = gate_of(launcher_spec(created_launcher(p)))
    assert gate is not None and "--port" not in gate["args"]  # kubectl exec: no sshd to wait for
