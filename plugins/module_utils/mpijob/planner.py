# Copyright: mpi.operator contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# SPDX-License-Identifier: Apache-2.0
"""The planner: desired vs observed -> the ordered actions that turn one into the other, and the status that results.

The order is Kubeflow's sync order: Service, ConfigMap, Secret, PodGroup, workers (deletions highest index first,
then creations), launcher Job, launcher suspension, cleanup, status, events. A child that exists but is controlled
by something else stops the plan with an ErrResourceExists event: it is never taken over. What a plan is (Action,
World, Plan) is plan.py's; the builders of each child are children.py's and podgroup.py's.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from . import accelerators as A
from . import children as K
from . import constants as C
from . import podgroup as PG
from . import record as Rec
from . import restart as R
from . import status as S
from .apis import Api, api_for
from .errors import InvalidMPIJob
from .plan import Action, Plan, World, controlled_by, replace_map
from .protocol import Outcome
from .spec import FailurePolicy, FieldError, MPIJob, mapping

SSHKeys = Callable[[], "tuple[bytes, bytes]"]


def _annotations(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def terminating(obj: dict) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def workers_ready(workers: list[dict]) -> bool:
    """Every worker is Ready and none is being deleted: a worker that is going keeps its Ready condition until its
    containers have stopped, and a launcher started against it (a resume right after a pause or suspend, before the
    old pods are gone) would reach a host that is about to vanish."""
    return all(S.is_ready(p) and not terminating(p) for p in workers)


def _name(obj: dict) -> str:
    return obj["metadata"]["name"]


def _event(ev: S.Event) -> Action:
    return Action(
        "event",
        "Event",
        ev.reason,
        reason=ev.reason,
        body={"type": ev.type, "reason": ev.reason, "message": S.truncate(ev.message)},
    )


def _delete(obj: dict, kind: str, reason: str, api_version: str = "", force: bool = False) -> Action:
    return Action(
        "delete",
        kind,
        _name(obj),
        reason=reason,
        uid=obj["metadata"].get("uid", ""),
        api_version=api_version or obj.get("apiVersion", ""),
        force=force,
    )


def _suspends(a: Action) -> bool:
    """A patch that suspends a Job (its controller then deletes the Job's running pods)."""
    return a.action == "patch" and not a.subresource and ((a.body or {}).get("spec") or {}).get("suspend") is True


def _create(obj: dict, reason: str = "") -> Action:
    return Action("create", obj["kind"], _name(obj), reason=reason, body=obj, api_version=obj["apiVersion"])


def _hosts_patch(a: Action) -> bool:
    """The patch of the hostfile ConfigMap that only changes discover_hosts.sh (sync_config_map's reason "hosts")."""
    return a.action == "patch" and a.kind == "ConfigMap" and a.reason == "hosts" and not a.subresource


def plan_job(
    obj: dict, world: World, opts: K.Options, now: datetime, ssh_keys: SSHKeys, held_for: float | None = None
) -> Plan:
    """The plan for one MPIJob. `obj` is the MPIJob as read; `ssh_keys` makes a key pair (called only when the
    Secret must be created or repaired). `held_for`: how long the shell has held back the job's progress write
    (Plan.held); None when it keeps no such memory, and then none is held."""
    meta = mapping(obj.get("metadata"))
    old_status = mapping(obj.get("status"))
    api = api_for(obj)  # the API's own parse and status stages; children and plan are shared
    if meta.get("deletionTimestamp"):
        return Plan([], old_status, done=api.finished(old_status))
    run_policy = (obj.get("spec") or {}).get("runPolicy") if isinstance(obj.get("spec"), dict) else None
    managed_by = run_policy.get("managedBy") if isinstance(run_policy, dict) else None
    if isinstance(managed_by, str) and managed_by != C.MANAGED_BY_US and managed_by in C.MANAGED_BY_VALUES:
        return Plan([], old_status)  # another controller (e.g. MultiKueue) owns this job, status included
    now_s = S.rfc3339(now)
    try:
        parsed = api.parse(obj)
        job = A.with_slots(parsed, opts.accelerators)
        _check_config_size(api, job, opts)
    except InvalidMPIJob as exc:
        return _invalid(api, obj, old_status, exc, now_s)
    planner = _Planner(api, job, obj, world, opts, now, ssh_keys)
    planner.held_for = held_for
    planner.slots_notice = A.notice(parsed, opts.accelerators)
    return planner.run()


def _check_config_size(api: Api, job: MPIJob, opts: K.Options) -> None:
    """Raises InvalidMPIJob, naming the API's workers field, when the hostfile of that many workers cannot be stored:
    the job could never run, and building its children would cost memory in proportion (two billion workers pass the
    CRD's int32)."""
    size = K.config_bytes(job, opts)
    if size > C.CONFIG_MAP_MAX_BYTES:
        raise InvalidMPIJob(
            [
                FieldError(
                    ".".join(api.workers_path),
                    (
                        f"{job.worker_replicas} workers do not fit: their hostfile and discover_hosts.sh take {size} bytes in the "
                        f"ConfigMap {K.config_name(job)}, which holds at most {C.CONFIG_MAP_MAX_BYTES}"
                    ),
                )
            ]
        )


def _invalid(api: Api, obj: dict, old: dict, exc: InvalidMPIJob, now_s: str) -> Plan:
    meta = mapping(obj.get("metadata"))
    events: list[S.Event] = []
    message = S.truncate("Found validation errors: " + "; ".join(str(e) for e in exc.errors))
    status = api.invalid_status(old, message, now_s, events)
    actions = (
        [Action("status", C.KIND, str(meta.get("name", "")), reason=C.REASON_VALIDATION, body=status)]
        if status != old
        else []
    )
    return Plan(
        actions + [_event(e) for e in events],
        status,
        error=message,
        outcome=Outcome.ERROR,
        transitions=S.transitions(old, status),
        done=api.finished(status),
    )


def rejected(obj: dict, kind: str, name: str, message: str, now: datetime) -> Plan:
    """The plan once the API server has refused (400, 422) to create a child the job asks for: it would refuse it again,
    so the job fails as an invalid spec does (Failed, ValidationError), naming the field of the job the server named in
    the child. `message` is the server's: a launcher Job's `spec.template.spec.containers[0].name` is the job's
    launcher template's `.spec.containers[0].name`, a worker Pod's `spec.containers[0].image` its worker template's."""
    meta = mapping(obj.get("metadata"))
    old = mapping(obj.get("status"))
    api = api_for(obj)
    error = child_field_error(api, kind, name == f"{meta.get('name')}-launcher", name, message)
    return _invalid(api, obj, old, InvalidMPIJob([error]), S.rfc3339(now))


def child_field_error(api: Api, kind: str, launcher: bool, name: str, message: str) -> FieldError:
    """The server's refusal of a child, its field paths moved to where the job's template has them. A child not made
    from a pod template (Service, ConfigMap...) or a refusal naming no field is named as the object's."""
    refused = f"the API server refused {kind} {name}: {message}"
    if kind not in ("Job", "Pod"):
        return FieldError("<object>", refused)
    template = api.template_paths[0 if kind == "Job" or launcher else 1]
    detail = message.split(" is invalid: ", 1)[1] if " is invalid: " in message else ""
    if detail.startswith("[") and detail.endswith("]"):
        detail = detail[1:-1]
    child_prefix = r"spec\.template\." if kind == "Job" else r"(?=(?:spec|metadata)\.)"
    mapped = re.sub(rf"(?<![\w.\]]){child_prefix}", template + ".", detail)
    if not mapped.startswith(template + ".") or ": " not in mapped:
        return FieldError(template, refused)
    path, rest = mapped.split(": ", 1)
    return FieldError(path, rest)


class _Planner:
    def __init__(
        self, api: Api, job: MPIJob, obj: dict, world: World, opts: K.Options, now: datetime, ssh_keys: SSHKeys
    ):
        self.api = api
        self.job, self.obj, self.world, self.opts, self.now, self.ssh_keys = job, obj, world, opts, now, ssh_keys
        self.now_s = S.rfc3339(now)
        self.old_status = mapping(obj.get("status"))
        self.policy = job.run_policy.failure_policy
        if self.policy is not None:
            self.job = job = replace(job, attempt=R.restart_count(self.old_status))
        self.restart_requeue: float | None = None  # when a node that is down counts as lost (restart.py)
        self.held_for: float | None = None  # how long the shell has held back a progress write (plan_job)
        self.actions: list[Action] = []
        self.events: list[S.Event] = []
        uid = job.uid
        self.worker_pods = [
            p
            for p in world.pods
            if (p["metadata"].get("labels") or {}).get(C.JOB_ROLE_LABEL) == C.ROLE_WORKER and controlled_by(p, uid)
        ]
        self.hosts: tuple[str, dict | None] | None = None  # discover_hosts.sh as wanted, the ConfigMap as seen
        self.hosts_requeue: float | None = None  # when a held scale-down may go on (notice_hosts)
        self.record_ref: dict | None = None  # status.record, when this plan keeps a record (keep_record)
        self.slots_notice: str | None = None  # the slots disagree with the workers' accelerators (accelerators.py)
        self.awaiting_placement = False  # a job with a hostfile topology whose workers are not all bound yet
        launcher_uid = ((world.launcher or {}).get("metadata") or {}).get("uid")
        self.launcher_pods = [p for p in world.pods if launcher_uid and controlled_by(p, launcher_uid)]
        # launcher pods the Job controller deleted before a pass saw them fail: the record keeps them (keep_record). The
        # store moved each out of the pods when it was deleted, so none is in world.pods too.
        self.gone_launchers = [p for p in world.gone_pods if launcher_uid and controlled_by(p, launcher_uid)]
        if job.launcher_pod:
            # The launcher is the pod <job>-launcher itself: the plan reads it as the launcher Job it stands for.
            pod = next((p for p in world.pods if _name(p) == K.launcher_name(job)), None)
            self.world = replace(world, launcher=S.launcher_pod_as_job(pod) if pod else None)
            self.launcher_pods = [pod] if pod else []

    # ---- helpers ----
    def foreign(self) -> Action | None:
        w = self.world
        for kind, obj in (
            ("Service", w.service),
            ("ConfigMap", w.config_map),
            ("Secret", w.secret),
            ("Job", w.launcher),
            ("PodGroup", w.pod_group),
            *w.launcher_rbac.items(),
        ):
            if obj is not None and not controlled_by(obj, self.job.uid):
                msg = C.MESSAGE_RESOURCE_EXISTS.format(name=_name(obj), kind=kind)
                return _event(S.Event("Warning", C.REASON_RESOURCE_EXISTS, msg))
        return None

    def workers_by_index(self) -> dict[int, dict]:
        return S.indexed_workers(self.job, self.worker_pods)

    def result(
        self, status: dict, requeue: float | None = None, status_at: int | None = None, record: bool = True
    ) -> Plan:
        """The plan: its actions, then the status (at `status_at` among them when given), then its events. With
        `record`, the record of the pods it deletes goes before the first deletion (keep_record)."""
        # every status this plan writes says its phase (also one written before it)
        status = self.api.with_phase(status)
        if record:
            at_record = self.keep_record(status)
            if at_record is not None and status_at is not None and at_record < status_at:
                status_at += 1  # the status still goes where it was meant to, after what came before it
        status = self.tell_at_creation(status)
        ref = self.record_ref or self.old_status.get("record")
        if ref and status.get("record") != ref:
            status = {**status, "record": ref}  # every API's status stage keeps it
        if status != self.old_status:
            wait = self.hold(status)
            if wait is not None:
                requeue = wait if requeue is None else min(requeue, wait)
                actions = [a for a in self.actions if not _hosts_patch(a)]
                return Plan(actions, self.old_status, requeue_after=requeue, held=True, done=self.api.finished(status))
            at = len(self.actions) if status_at is None else status_at
            self.actions.insert(at, Action("status", C.KIND, self.job.name, body=status))
        self.actions.extend(_event(e) for e in self.events)
        return Plan(
            self.actions,
            status,
            requeue_after=requeue,
            transitions=S.transitions(self.old_status, status),
            done=self.api.finished(status),
        )

    def hold(self, status: dict) -> float | None:
        """Seconds the write of `status` may still wait (Options.progress_every), or None: write it now. Only a status
        that counts pods coming up and nothing else (Api.progress_only), in a pass that does nothing else but tell
        the launcher of those workers (discover_hosts.sh), and only until it has waited progress_every."""
        every, held_for = self.opts.progress_every, self.held_for
        if every <= 0 or held_for is None or held_for >= every or self.events:
            return None
        if not all(_hosts_patch(a) for a in self.actions) or not self.api.progress_only(self.old_status, status):
            return None
        return every - held_for

    def tell_at_creation(self, status: dict) -> dict:
        """The pass that gives the job its first condition (Created, T9k's Initialized) adds the slots notice to that
        condition's message, and a Warning event."""
        if not self.slots_notice or self.old_status.get("conditions") or not status.get("conditions"):
            return status
        first, *rest = status["conditions"]
        message = f"{first.get('message') or ''} {self.slots_notice}".strip()
        self.events.append(S.Event("Warning", A.REASON, S.truncate(self.slots_notice)))
        return {**status, "conditions": [{**first, "message": S.truncate(message)}, *rest]}

    def keep_record(self, status: dict) -> int | None:
        """The record (record.py) of every pod this plan removes (a Pod deleted, a launcher Job deleted or suspended,
        whatever the reason: clean-up, suspend, pause, scale-down, a world restart), and of a job that has failed, goes
        into the plan right before the first such removal (at the end when none): the shell reads the logs and writes
        it before any of them runs. A planner step that deletes pods needs nothing more to be recorded. Returns where
        the record went among the actions (None: nothing to keep)."""
        by_name = {_name(p): p for p in self.world.pods}
        launcher = K.launcher_name(self.job)
        going: list[dict] = []
        first, why = None, ""
        for i, a in enumerate(self.actions):
            if a.action == "delete" and a.kind == "Pod":
                pods = [by_name[a.name]] if a.name in by_name else []
            elif a.kind == "Job" and a.name == launcher and (a.action == "delete" or _suspends(a)):
                pods = list(self.launcher_pods)
            else:
                continue
            going += pods
            if pods and first is None:
                first, why = i, a.reason
        job_failed = self.api.finished(status) and self.api.phase(status) == C.FAILED
        launchers = self.launcher_pods + self.gone_launchers
        launcher_failed = [p for p in launchers if Rec.launcher_failed(p)]
        if not going and not job_failed and not launcher_failed:
            return None
        name = Rec.record_name(self.job.name)
        meta = {
            "name": name,
            "namespace": self.job.namespace,
            "labels": {C.APP_LABEL: self.job.name},
            "ownerReferences": [K.owner_reference(self.job)],
        }
        limits = Rec.Limits(self.opts.record_lines, self.opts.record_pod_bytes, self.opts.record_total_bytes)
        failing = "launcher failed" if launcher_failed and not job_failed else ""
        why = "; ".join(w for w in ("job failed" if job_failed else "", failing, why) if w)
        action = Rec.record_action(
            self.job.name,
            meta,
            self.world.record,
            launchers,
            self.worker_pods,
            going,
            job_failed,
            why,
            self.job.main_container,
            limits,
        )
        if action is None:
            return None
        # the Warning events this same pass emits (a job's failure, its workers') are not in the API yet: the record
        # takes them from the plan, so that a record written once says why
        owner = K.owner_reference(self.job)
        kind = f"{owner['kind']}/{owner['name']}"
        body = action.body if action.body is not None else {}  # record_action always gives one
        body["pending"] = [
            {"object": kind, "reason": e.reason, "message": e.message} for e in self.events if e.type == "Warning"
        ]
        at = len(self.actions) if first is None else first
        self.actions.insert(at, action)
        count = len(Rec.recorded(self.world.record).get("pods") or []) + len((action.body or {}).get("pods") or [])
        self.record_ref = Rec.status_ref(name, count, self.now_s)
        self.events.append(S.Event("Normal", Rec.REASON, Rec.event_message(action)))
        return at

    # ---- the sync ----
    def run(self) -> Plan:
        if self.api.settled(self.old_status):
            return self.finished(self.old_status)
        conflict = self.foreign()
        if conflict is not None:
            msg = conflict.body["message"] if conflict.body else ""
            return Plan(
                [conflict], self.old_status, error=msg, outcome=Outcome.RETRY, done=self.api.finished(self.old_status)
            )
        if self.policy is not None:
            handled = self.sync_failures(self.policy)
            if handled is not None:
                return handled
        job, w = self.job, self.world
        launcher = w.launcher
        done = launcher is not None and S.launcher_finished(launcher)
        by_index = self.workers_by_index()
        live_workers = [p for i, p in sorted(by_index.items()) if i < job.worker_replicas] if done else []
        if not done:
            self.sync_service()
            order = self.hostfile_order(by_index)
            self.awaiting_placement = bool(job.directives.hostfile_topology) and order is None
            self.sync_config_map(by_index, order)
            self.sync_secret()
            if not job.suspended:
                self.sync_pod_group()
                live_workers = self.sync_workers(by_index)
            all_ready = workers_ready(live_workers)
            if job.launch_agent == C.LAUNCH_KUBEXEC:
                self.sync_launcher_rbac()
            if (
                launcher is None
                and not self.launcher_paused()
                and (job.launcher_creation_policy == C.AT_STARTUP or all_ready)
                and not self.awaiting_placement
                and self.world_remade(live_workers)
            ):
                launcher = self.create_launcher()
        launcher_pods, deleting = self.launcher_pods, []
        if w.launcher is not None and self.launcher_paused():
            if not done:  # a finished launcher is never paused away: its job is settled
                self.delete_launcher("pause")
                launcher, launcher_pods, deleting = None, [], list(self.launcher_pods)
        elif w.launcher is not None:
            self.sync_launcher_suspension(w.launcher, done, workers_ready(live_workers))
        if job.suspended:
            self.delete_all_workers()
            deleting += [p for _i, p in sorted(by_index.items())]
            live_workers = []
        seen = S.Observed(launcher=launcher, launcher_pods=launcher_pods, workers=live_workers, deleting=deleting)
        status = R.carry(self.old_status, self.api.live_status(job, self.old_status, seen, self.now_s, self.events))
        if self.api.settled(status):
            return self.finished(status)  # clean up in the same pass
        requeues = [
            r for r in (self.deadline_requeue(status), self.hosts_requeue, self.restart_requeue) if r is not None
        ]
        return self.result(status, requeue=min(requeues, default=None))

    def sync_service(self) -> None:
        want, have = K.service(self.job), self.world.service
        if have is None:
            self.actions.append(_create(want))
            return
        patch = {}
        if (have.get("spec") or {}).get("selector") != want["spec"]["selector"]:
            patch["selector"] = replace_map((have.get("spec") or {}).get("selector"), want["spec"]["selector"])
        if bool((have.get("spec") or {}).get("publishNotReadyAddresses")) != want["spec"]["publishNotReadyAddresses"]:
            patch["publishNotReadyAddresses"] = want["spec"]["publishNotReadyAddresses"]
        if patch:
            self.actions.append(
                Action("patch", "Service", self.job.name, reason="drift", body={"spec": patch}, api_version="v1")
            )

    def hostfile_order(self, by_index: dict[int, dict]) -> list[int] | None:
        """The hostfile's worker order for a job with `mpi.operator/hostfile-topology` once every worker is bound to
        a node (children.topology_order), from the nodes' labels; None otherwise, and once the launcher runs (its
        hostfile is read: the order written stays, sync_config_map). A node the shell could not read counts as one
        without the labels."""
        keys = self.job.directives.hostfile_topology
        launcher = self.world.launcher
        if (
            not keys
            or self.job.suspended
            or (launcher is not None and not mapping(launcher.get("spec")).get("suspend"))
        ):
            return None
        placement = {}
        for i, pod in by_index.items():
            node = (pod.get("spec") or {}).get("nodeName")
            if i < self.job.worker_replicas and not terminating(pod) and isinstance(node, str) and node:
                labels = mapping(mapping(self.world.nodes.get(node)).get("metadata")).get("labels")
                placement[i] = tuple(str(mapping(labels).get(k, "")) for k in keys)
        return K.topology_order(self.job, placement)

    def sync_config_map(self, by_index: dict[int, dict], order: list[int] | None = None) -> None:
        running = (
            []
            if self.job.suspended
            else [
                _name(p)
                for i, p in by_index.items()
                if i < self.job.worker_replicas and S.pod_phase(p) == "Running" and not terminating(p)
            ]
        )
        want, have = K.config_map(self.job, running, self.opts, order), self.world.config_map
        kept = (mapping(have).get("data") or {}).get(C.HOSTFILE)
        # A topology order once written stays while a worker is away (its hosts are the same, in another order).
        if (
            order is None
            and self.job.directives.hostfile_topology
            and isinstance(kept, str)
            and sorted(kept.splitlines()) == sorted(want["data"][C.HOSTFILE].splitlines())
        ):
            want["data"][C.HOSTFILE] = kept
        if have is None:
            self.actions.append(_create(want))
        elif (have.get("data") or {}) != want["data"]:
            reason = "hostfile" if (have.get("data") or {}).get(C.HOSTFILE) != want["data"][C.HOSTFILE] else "hosts"
            self.actions.append(
                Action(
                    "patch",
                    "ConfigMap",
                    _name(want),
                    reason=reason,
                    body={"data": replace_map(have.get("data"), want["data"])},
                    api_version="v1",
                )
            )
        self.hosts = (want["data"][C.DISCOVER_HOSTS], have)  # for notice_hosts, when a scale-down needs it

    def notice_hosts(self, discover: str, have: dict | None) -> float | None:
        """Tells each running launcher pod of a new discover_hosts.sh (C.DISCOVER_HOSTS_ANNOTATION) once the
        ConfigMap has it, so that the kubelet rewrites the file now. Returns how long ago every running launcher
        was told of this one (None: not all yet); no running launcher: infinity (nothing to wait for)."""
        launchers = [p for p in self.launcher_pods if S.pod_phase(p) == "Running" and not terminating(p)]
        if not launchers:
            return float("inf")
        if ((have or {}).get("data") or {}).get(C.DISCOVER_HOSTS) != discover:
            return None  # the ConfigMap first: a pod change before it would rewrite the old file
        digest = hashlib.sha256(discover.encode()).hexdigest()[:16]
        ages = []
        for pod in launchers:
            told, _sep, when = (_annotations(pod).get(C.DISCOVER_HOSTS_ANNOTATION) or "").partition("@")
            at = S.parse_time(when) if told == digest else None
            if at is None:
                self.actions.append(
                    Action(
                        "patch",
                        "Pod",
                        _name(pod),
                        reason="hosts",
                        api_version="v1",
                        body={"metadata": {"annotations": {C.DISCOVER_HOSTS_ANNOTATION: f"{digest}@{self.now_s}"}}},
                    )
                )
                return None
            ages.append((self.now - at).total_seconds())
        return min(ages)

    def sync_secret(self) -> None:
        have = self.world.secret
        if have is not None and set(have.get("data") or {}) == {C.SSH_PRIVATE_KEY, C.SSH_PUBLIC_KEY}:
            return
        want = K.ssh_secret(self.job, *self.ssh_keys())
        if have is None:
            self.actions.append(_create(want))
        else:
            self.actions.append(
                Action(
                    "patch",
                    "Secret",
                    _name(want),
                    reason="keys",
                    body={"data": replace_map(have.get("data"), want["data"])},
                    api_version="v1",
                )
            )

    def sync_launcher_rbac(self) -> None:
        """The launcher's ServiceAccount, Role and RoleBinding, created before it (a pod naming a missing
        ServiceAccount is refused)."""
        for want in K.launcher_rbac(self.job):
            if want["kind"] not in self.world.launcher_rbac:
                self.actions.append(_create(want))

    def sync_pod_group(self) -> None:
        want = PG.pod_group(self.job, self.opts, self.world.priorities)
        if want is None:
            return
        have = self.world.pod_group
        if have is None:
            self.actions.append(_create(want))
        elif (patch := PG.patch(have, want)) is not None:
            self.actions.append(
                Action("patch", "PodGroup", self.job.name, reason="drift", body=patch, api_version=want["apiVersion"])
            )

    def sync_workers(self, by_index: dict[int, dict]) -> list[dict]:
        """Scale to the Worker replicas: highest indices go first; missing ones are created. Returns the workers
        that remain (index < replicas), new ones included."""
        replicas = self.job.worker_replicas
        going = [by_index[i] for i in sorted(by_index, reverse=True) if i >= replicas and not terminating(by_index[i])]
        # A Running one may still be in the launcher's discover_hosts.sh: Horovod must drop it first (notice_hosts).
        hold = any(S.pod_phase(p) == "Running" for p in going) and not self.hosts_noticed()
        for extra in going:
            if not (hold and S.pod_phase(extra) == "Running"):
                self.actions.append(_delete(extra, "Pod", "scale-down", "v1"))
        live = []
        for index in range(replicas):
            pod = by_index.get(index)
            if pod is None:
                pod = K.worker_pod(self.job, index, self.opts)
                self.actions.append(_create(pod))
            live.append(pod)
        if self.job.roll_workers:
            self.roll_workers(live)
        return live

    def hosts_noticed(self) -> bool:
        """Whether every running launcher has known the current hosts list for C.HOSTS_NOTICE_S; if not, when to
        look again."""
        told = self.notice_hosts(*self.hosts) if self.hosts is not None else None
        if told is not None and told >= C.HOSTS_NOTICE_S:
            return True
        self.hosts_requeue = 1.0 if told is None else C.HOSTS_NOTICE_S - told
        return False

    def roll_workers(self, live: list[dict]) -> None:
        """A worker made from an older template is deleted (and recreated by a later pass), one at a time: only
        while every other worker is Ready and none is going away, as a StatefulSet's rolling update does."""
        want = K.worker_template_hash(self.job)
        outdated = [p for p in live if _annotations(p).get(C.WORKER_TEMPLATE_HASH_ANNOTATION) != want]
        if not outdated or any(terminating(p) or (p not in outdated and not S.is_ready(p)) for p in live):
            return
        self.actions.append(_delete(outdated[0], "Pod", "worker template changed", "v1"))

    def create_launcher(self) -> dict:
        body = K.launcher_pod(self.job, self.opts) if self.job.launcher_pod else K.launcher_job(self.job, self.opts)
        left = self.deadline_requeue(self.old_status)
        if self.job.attempt > 0 and left is not None and not self.job.launcher_pod:
            # activeDeadlineSeconds is the job's, from its startTime: a restarted launcher gets what is left of it.
            body["spec"]["activeDeadlineSeconds"] = max(int(left), 1)
        self.actions.append(_create(body))
        if self.job.launcher.template_restart_policy:
            self.events.append(
                S.Event(
                    "Warning",
                    C.REASON_RESTART_POLICY,
                    "Restart policy in pod template overridden by restart policy in replica spec",
                )
            )
        return {**body, "status": {}}

    def sync_launcher_suspension(self, launcher: dict, done: bool, workers_ready: bool) -> None:
        job = self.job
        spec = launcher.get("spec") or {}
        name = _name(launcher)
        if not job.suspended and spec.get("suspend"):
            if job.launcher_creation_policy == C.WAIT_FOR_WORKERS_READY and not workers_ready:
                return  # resume holds the launcher until the workers are Ready (kubeflow/mpi-operator#615)
            if self.awaiting_placement:
                return  # its pod mounts the hostfile: not before the workers' topology order is in it
            if (launcher.get("status") or {}).get("startTime"):
                # Kubernetes refuses template changes of a Job that has a startTime.
                self.actions.append(
                    Action(
                        "patch",
                        "Job",
                        name,
                        reason="resume",
                        subresource="status",
                        body={"status": {"startTime": None}},
                        api_version="batch/v1",
                    )
                )
            want = K.scheduling_directives(job, self.opts)
            tmpl = spec.get("template") or {}
            tspec = tmpl.get("spec") or {}
            # Labels and annotations are merged into the Job's (Kueue may have added some); the rest is replaced.
            meta = {k: want[k] for k in ("labels", "annotations") if want[k]}
            template = {
                "metadata": meta,
                "spec": {
                    "nodeSelector": replace_map(tspec.get("nodeSelector"), want["nodeSelector"]),
                    "tolerations": want["tolerations"],
                    "schedulingGates": want["schedulingGates"],
                },
            }
            self.actions.append(
                Action(
                    "patch",
                    "Job",
                    name,
                    reason="resume",
                    api_version="batch/v1",
                    body={"spec": {"suspend": False, "template": template}},
                )
            )
        elif job.suspended and not spec.get("suspend") and not done:
            self.actions.append(
                Action("patch", "Job", name, reason="suspend", api_version="batch/v1", body={"spec": {"suspend": True}})
            )

    def launcher_paused(self) -> bool:
        """A suspended job of an API whose pause removes every replica (T9k): no launcher Job, not a suspended one,
        so that the launcher made on resume is built from the spec then (resumeSpecs; a Job's containers are
        immutable)."""
        return self.job.suspended and self.job.pause_deletes_launcher

    def delete_launcher(self, reason: str) -> None:
        launcher = self.world.launcher
        if launcher is not None and controlled_by(launcher, self.job.uid) and not terminating(launcher):
            # Background: a Job's pods go with it (a launcher_pod's view is the Pod itself)
            self.actions.append(
                _delete(launcher, launcher.get("kind") or "Job", reason, launcher.get("apiVersion") or "batch/v1")
            )

    def delete_all_workers(self) -> None:
        reason = "pause" if self.launcher_paused() else "suspend"
        for _index, pod in sorted(self.workers_by_index().items(), reverse=True):
            if not terminating(pod) and not any(a.action == "delete" and a.name == _name(pod) for a in self.actions):
                self.actions.append(_delete(pod, "Pod", reason, "v1"))
        self.delete_pod_group(reason)

    def delete_pod_group(self, reason: str) -> None:
        pg = self.world.pod_group
        if pg is not None and controlled_by(pg, self.job.uid) and not terminating(pg):
            self.actions.append(_delete(pg, "PodGroup", reason))

    def deadline_requeue(self, status: dict) -> float | None:
        deadline = self.job.run_policy.active_deadline_seconds
        start = S.parse_time(status.get("startTime"))
        if deadline is None or start is None or self.job.suspended:
            return None
        return max((start + timedelta(seconds=deadline) - self.now).total_seconds(), 0.0) + 1.0

    # ---- the failure policy (restart.py) ----
    def sync_failures(self, policy: FailurePolicy) -> Plan | None:
        """A job with a failure policy: the old attempt's objects deleted before anything of the new one is made;
        else the current attempt's faults, and what the policy does about them. None: go on with the sync."""
        if self.restart_world():
            # Nothing of the new attempt until the old one is gone: its pods have the same names, and no old rank may
            # talk to a new one.
            return self.result(self.old_status, requeue=self.restart_requeue)
        launcher = self.world.launcher
        if self.job.suspended or (launcher is None and not self.worker_pods):
            return None
        if S.job_condition(launcher, "Complete") is not None:
            return None
        failed = S.job_condition(launcher, "Failed")
        if failed is not None and failed.get("reason") == "DeadlineExceeded" and not self.job.launcher_pod:
            return None  # activeDeadlineSeconds is the job's: it fails (live_status), no restart
        faults = self.faults(policy, failed)
        if not faults:
            return None
        decision = R.decide(self.job, policy, self.old_status, faults)
        self.events.append(S.Event("Warning", decision.reason, decision.message))
        if decision.kind == "fail":
            status = copy.deepcopy(self.old_status)
            self.api.given_up(status, decision.reason, S.truncate(decision.message), self.now_s)
            return self.finished(status)
        world = decision.kind == "restart"
        status = R.counted(self.old_status, decision.cause, world)
        at = len(self.actions)
        if world:
            self.api.restarting(status, decision.reason, S.truncate(decision.message), self.now_s)
            self.job = replace(self.job, attempt=R.restart_count(status))
            self.restart_world()
        else:
            pod = next((p for p in self.worker_pods if _name(p) == decision.fault.pod), None)
            if pod is not None:  # a worker that is gone already is made again by the next pass
                self.actions.append(_delete(pod, "Pod", decision.reason, "v1", force=self.node_lost(pod)))
        plan = self.result(status, requeue=self.restart_requeue, status_at=at)
        plan.restart = {"cause": decision.cause, "scope": "world" if world else "worker"}
        return plan

    def faults(self, policy: FailurePolicy, launcher_failed: dict | None) -> list[R.Fault]:
        """The faults of the current attempt's workers (index < replicas) and launcher pods; a launcher Job that failed
        without a pod to say why is a program failure of its own."""
        found = []
        pods = [(p, C.ROLE_WORKER) for i, p in sorted(self.workers_by_index().items()) if i < self.job.worker_replicas]
        pods += [(p, C.ROLE_LAUNCHER) for p in self.launcher_pods]
        waits = []
        for pod, role in pods:
            fault, wait = R.pod_fault(pod, role, policy, self.world.nodes, self.now)
            if fault is not None:
                found.append(fault)
            elif wait is not None:
                waits.append(wait)
        found += self.vanished_workers()
        if launcher_failed is not None and not any(f.role == C.ROLE_LAUNCHER for f in found):
            detail = f"failed ({launcher_failed.get('reason') or 'Failed'}: {launcher_failed.get('message') or ''})"
            found.append(R.Fault(K.launcher_name(self.job), C.ROLE_LAUNCHER, "", detail, C.ACTION_COUNT, kind="Job"))
        if waits:
            self.restart_requeue = max(min(waits), 0.0) + 1.0
        return found

    def vanished_workers(self) -> list[R.Fault]:
        """Workers of the running world that are gone (deleted by hand, by an eviction that finished, by the pod
        garbage collector with their node): a disruption. A worker the hostfile (as read) does not list yet is one a
        scale-up is adding, not a lost one. A job that replaces its workers (ReplaceWorker) has them made again."""
        launcher, policy = self.world.launcher, self.policy
        if launcher is None or S.launcher_finished(launcher) or policy is None:
            return []
        if R.worker_failure(self.job, policy) == C.REPLACE_WORKER:
            return []  # an elastic job carries on without it; the sync makes it again
        hostfile = ((self.world.config_map or {}).get("data") or {}).get(C.HOSTFILE) or ""
        listed = {line.split()[0].split(":")[0].split(".")[0] for line in hostfile.splitlines() if line.strip()}
        by_index = self.workers_by_index()
        return [
            R.Fault(name, C.ROLE_WORKER, "", "is gone: deleted while its world ran", C.ACTION_IGNORE)
            for i in range(self.job.worker_replicas)
            if i not in by_index and (name := K.worker_name(self.job, i)) in listed
        ]

    def node_lost(self, pod: dict) -> bool:
        """The pod's node has been down for nodeLostSeconds (or is gone): the pod cannot end gracefully."""
        down = R.node_down(pod, self.world.nodes, self.now)
        return down is not None and self.policy is not None and down[1] >= self.policy.node_lost_seconds

    def old_world(self) -> tuple[list[dict], dict | None]:
        """The pods and the launcher Job of attempts other than the current one."""
        attempt, uid = self.job.attempt, self.job.uid
        launcher_job = K.launcher_name(self.job)

        def ours(pod: dict) -> bool:
            refs = (pod.get("metadata") or {}).get("ownerReferences") or []
            return controlled_by(pod, uid) or any(
                r.get("controller") and r.get("kind") == "Job" and r.get("name") == launcher_job for r in refs
            )

        pods = [p for p in self.world.pods if ours(p) and R.attempt_of(p) != attempt]
        launcher = self.world.launcher
        old_job = (
            launcher
            if launcher is not None
            and not self.job.launcher_pod
            and controlled_by(launcher, uid)
            and R.attempt_of(launcher) != attempt
            else None
        )
        return pods, old_job

    def restart_world(self) -> bool:
        """Deletes every pod and the launcher Job of the attempts before the current one (the Service, the hostfile
        and the SSH Secret stay: their names are the world's); a pod whose node is lost is deleted at once, as the
        pod garbage collector does on an out-of-service node. True while any of them is left."""
        pods, old_job = self.old_world()
        for pod in pods:
            force = self.node_lost(pod)
            if not terminating(pod) or force:
                self.actions.append(_delete(pod, "Pod", "restart", "v1", force=force))
            elif (down := R.node_down(pod, self.world.nodes, self.now)) is not None and self.policy is not None:
                wait = self.policy.node_lost_seconds - down[1] + 1.0
                self.restart_requeue = min(wait, self.restart_requeue or wait)
        if old_job is not None and not terminating(old_job):
            self.actions.append(_delete(old_job, "Job", "restart", "batch/v1"))
        return bool(pods or old_job)

    def world_remade(self, workers: list[dict]) -> bool:
        """After a restart, the new launcher waits for every new worker to be Running (reachability is the launch
        gate's, as for any launcher)."""
        if self.job.attempt == 0:
            return True
        return len(workers) == self.job.worker_replicas and all(
            S.pod_phase(p) == "Running" and not terminating(p) for p in workers
        )

    # ---- finished jobs ----
    def finished(self, status: dict) -> Plan:
        """cleanPodPolicy and MPIJob TTL of a finished job. The status that says it finished is written before the
        clean-up (as Kubeflow does, which cleans up in the next sync): the outcome is not held back by the deletions,
        and a clean-up cut short is done again by the next pass (a settled job still comes here). With
        Options.cleanup_later, the pass in which the job finishes leaves the clean-up to the next one."""
        job = self.job
        cleanup_from = len(self.actions)
        policy = job.run_policy.clean_pod_policy
        why = "runPolicy.cleanUpWorkers" if policy == C.CLEAN_WORKERS else f"cleanPodPolicy={policy}"
        if policy in (C.CLEAN_ALL, C.CLEAN_RUNNING, C.CLEAN_WORKERS):

            def doomed(pod: dict) -> bool:
                return not terminating(pod) and (
                    policy != C.CLEAN_RUNNING or S.pod_phase(pod) in ("Running", "Pending")
                )

            for pod in sorted(self.worker_pods, key=_name):
                if doomed(pod) and not any(a.action == "delete" and a.name == _name(pod) for a in self.actions):
                    self.actions.append(_delete(pod, "Pod", why, "v1"))
            self.delete_pod_group(why)
            launcher = self.world.launcher
            if policy == C.CLEAN_WORKERS:
                pass  # T9k's cleanUpWorkers: the launcher's pod and its logs (the job's outcome) stay
            elif launcher is not None and not S.launcher_finished(launcher):
                # An evicted job's launcher still runs: suspending its Job stops its pods for good.
                if not (launcher.get("spec") or {}).get("suspend") and controlled_by(launcher, job.uid):
                    self.actions.append(
                        Action(
                            "patch",
                            "Job",
                            _name(launcher),
                            reason=why,
                            api_version="batch/v1",
                            body={"spec": {"suspend": True}},
                        )
                    )
            else:
                # Kubeflow never removes the launcher's pods (kubeflow/mpi-operator#643).
                for pod in self.launcher_pods:
                    if doomed(pod):
                        self.actions.append(_delete(pod, "Pod", why, "v1"))
            status = self.api.cleaned_status(job, status)
        ttl = job.run_policy.ttl_seconds_after_finished
        completed = S.parse_time(status.get("completionTime"))
        expiry = None if ttl is None or completed is None else completed + timedelta(seconds=ttl)
        if expiry is None or self.now < expiry:
            later = (
                self.opts.cleanup_later and len(self.actions) > cleanup_from and not self.api.settled(self.old_status)
            )
            if later:
                del self.actions[cleanup_from:]  # planned again, from what is then left, by the next pass
            # A clean-up left to the next pass records what it deletes then. What a failed job leaves (its launcher's
            # pod and log, its failed workers) is kept now, with the status that says it failed: the Job controller
            # may delete the launcher's pod before that next pass, and a reader of Failed finds the record.
            plan = self.result(
                status, requeue=None if expiry is None else (expiry - self.now).total_seconds(), status_at=cleanup_from
            )
            plan.cleanup_pending = later
            return plan
        # Kubeflow only hands the TTL to the launcher Job (kubeflow/mpi-operator#644): remove the MPIJob itself. Its
        # record goes with it (the job's owner reference), as the user asked: none is kept now.
        plan = self.result(status, record=False)
        plan.actions = [a for a in plan.actions if a.action == "event"]  # its children go with it (ownerRefs)
        plan.transitions = ()  # its status is not written
        plan.actions.append(
            _event(
                S.Event(
                    "Normal",
                    C.REASON_TTL,
                    f"MPIJob {job.namespace}/{job.name} finished more "
                    f"than {ttl}s ago (ttlSecondsAfterFinished): deleting it",
                )
            )
        )
        plan.actions.append(
            Action("delete-mpijob", C.KIND, job.name, reason=C.REASON_TTL, uid=job.uid, api_version=C.API_VERSION)
        )
        plan.outcome = Outcome.DELETED
        return plan
