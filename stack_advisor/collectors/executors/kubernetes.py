"""Run a plan's cells on a cluster: create the Jobs, watch them to completion, explain failures.

Per pool at most ``concurrency`` cells run at once. Jobs are watched with list + watch on the
submission's label; a finished Job is ``done`` (every repeat completed) or ``failed``, and a
failure is turned into a ``schema.models.Failure``: the Job's condition, each failed pod's
phase and reason, the collector container's exit code, and the tail of its log when a kubelet
can serve it.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from stack_advisor.collectors.executors.job_failures import job_failures
from stack_advisor.collectors.plan.model import Cell, Plan
from stack_advisor.collectors.plan.render import LABEL_SUBMISSION, render_cell
from stack_advisor.schema.errors import AdvisorError, InvalidInput
from stack_advisor.schema.models import Failure

log = logging.getLogger(__name__)

LOG_TAIL_LINES = 50
_CUSTOM = {
    "PyTorchJob": ("kubeflow.org", "v1", "pytorchjobs"),
    "MPIJob": ("kubeflow.org", "v2beta1", "mpijobs"),
    "PodGroup": ("scheduling.volcano.sh", "v1beta1", "podgroups"),
}


class ClusterError(AdvisorError):
    """The cluster refused or could not be reached."""

    status_code = 502
    code = "cluster_error"


class SubmitTimeout(AdvisorError):
    """Cells were still running when the caller's time limit passed (they keep running)."""

    status_code = 504
    code = "timeout"


def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """An ApiClient from ``kubeconfig`` (or $KUBECONFIG / ~/.kube/config), else in-cluster."""
    import yaml
    from kubernetes import client, config

    try:
        if kubeconfig:
            return config.new_client_from_config(config_file=kubeconfig, context=context)
        try:
            return config.new_client_from_config(context=context)
        except config.ConfigException:
            config.load_incluster_config()
            return client.ApiClient()
    except (
        config.ConfigException,
        OSError,
        yaml.YAMLError,
        TypeError,
        ValueError,
        AttributeError,
    ) as exc:
        # malformed YAML or a kubeconfig of the wrong shape, as well as a missing one
        where = kubeconfig or "$KUBECONFIG, ~/.kube/config or the in-cluster service account"
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(exc, yaml.YAMLError):
            reason = f"not valid YAML ({reason})"
        raise ClusterError(
            f"cannot load a Kubernetes configuration from {where}: {reason}"
        ) from None


def api_error(exc: Exception, doing: str) -> ClusterError:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None) or type(exc).__name__
    body = getattr(exc, "body", None)
    detail = ""
    if body:
        try:
            import json

            detail = json.loads(body).get("message", "")
        except (ValueError, AttributeError):
            detail = str(body)[:300]
    text = f"{doing}: {status or ''} {reason}".strip()
    return ClusterError(f"{text}: {detail}" if detail else text)


@dataclass
class CellOutcome:
    cell: Cell
    job: str
    status: str  # pending | skipped | running | done | failed
    kind: str = "Job"
    reason: str | None = None
    failures: list[Failure] = field(default_factory=list)
    started: float | None = None
    finished: float | None = None

    def row(self) -> dict[str, Any]:
        return {
            "cell": self.cell.cell_id,
            "job": self.job,
            "pool": self.cell.pool.name,
            "image": self.cell.image.name,
            "benchmark": self.cell.benchmark.name,
            "status": self.status,
            "reason": self.reason,
            "failures_recorded": len(self.failures),
            "seconds": round(self.finished - self.started, 1)
            if self.started and self.finished
            else None,
        }


def job_state(job: dict[str, Any]) -> tuple[str, str | None]:
    """``running`` | ``done`` | ``failed`` with the reason, from a Job's (or a Kubeflow job's)
    status conditions."""
    conditions = (job.get("status") or {}).get("conditions") or []
    for cond in conditions:
        if cond.get("status") != "True":
            continue
        if cond.get("type") in ("Complete", "Succeeded"):
            return "done", cond.get("reason")
        if cond.get("type") == "Failed":
            why = cond.get("reason") or "Failed"
            if cond.get("message"):
                why = f"{why}: {cond['message']}"
            return "failed", why
    return "running", None


def new_submission_id() -> str:
    """Short, label- and name-safe, unique enough per plan: ``<base36 time><random>``."""
    stamp = int(time.time()) % (36**4)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    for _ in range(4):
        stamp, r = divmod(stamp, 36)
        text = digits[r] + text
    return text + secrets.token_hex(1)


class KubernetesExecutor:
    """Creates and watches one submission's objects in one namespace."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        from kubernetes import client

        self.api_client = api_client
        self.namespace = namespace
        self.batch = client.BatchV1Api(api_client)
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    # ---- objects ---------------------------------------------------------------------------
    def create(self, obj: dict[str, Any], *, dry_run: bool = False) -> None:
        """Create one object; ``dry_run`` has the apiserver validate and admit it (namespace,
        kind served, schema, admission, RBAC) without storing it."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        kind = obj["kind"]
        name = obj["metadata"]["name"]
        extra = {"dry_run": "All"} if dry_run else {}
        try:
            if kind == "Job":
                self.batch.create_namespaced_job(self.namespace, obj, **extra)
            elif kind in _CUSTOM:
                group, version, plural = _CUSTOM[kind]
                self.custom.create_namespaced_custom_object(
                    group, version, self.namespace, plural, obj, **extra
                )
            else:
                raise InvalidInput(f"cannot submit objects of kind {kind!r}")
        except (ApiException, HTTPError) as exc:
            if getattr(exc, "status", None) == 404 and kind in _CUSTOM:
                group, version, _ = _CUSTOM[kind]
                raise ClusterError(
                    f"{group}/{version} {kind} is not served by this cluster: install its operator "
                    f"(Kubeflow training operator for PyTorchJob/MPIJob, Volcano for PodGroup)"
                ) from None
            raise api_error(exc, f"creating {kind} {self.namespace}/{name}") from None

    def check_claim(self, claim: str | None) -> None:
        """The collectors' spool claim must exist, or every pod would wait for it (Pending).

        Raises:
            ClusterError: no such PersistentVolumeClaim in the namespace, with the fix.
        """
        from kubernetes.client.exceptions import ApiException

        if not claim:
            return
        try:
            self.core.read_namespaced_persistent_volume_claim(claim, self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                raise ClusterError(
                    f"the collectors' spool claim {self.namespace}/{claim} does not exist: "
                    "apply the PersistentVolumeClaim `advisor plan render` writes (or set "
                    "job.spool_claim: null to spool in the pod's /tmp, lost with the pod)"
                ) from None
            if exc.status != 403:  # a caller who may not read claims: the pods will say
                doing = f"reading PersistentVolumeClaim {self.namespace}/{claim}"
                raise api_error(exc, doing) from None

    def get_job(self, kind: str, name: str) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            if kind == "Job":
                raw = self.batch.read_namespaced_job(name, self.namespace)
                job: dict[str, Any] = self.api_client.sanitize_for_serialization(raw)
                return job
            group, version, plural = _CUSTOM[kind]
            custom: dict[str, Any] = self.custom.get_namespaced_custom_object(
                group, version, self.namespace, plural, name
            )
            return custom
        except (ApiException, HTTPError) as exc:
            raise api_error(exc, f"reading {kind} {self.namespace}/{name}") from None

    def list_jobs(self, selector: str) -> tuple[list[dict[str, Any]], str]:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            raw = self.batch.list_namespaced_job(self.namespace, label_selector=selector)
        except (ApiException, HTTPError) as exc:
            raise api_error(exc, f"listing Jobs in {self.namespace}") from None
        data = self.api_client.sanitize_for_serialization(raw)
        return data.get("items") or [], (data.get("metadata") or {}).get("resourceVersion", "")

    def watch_jobs(
        self, selector: str, resource_version: str, seconds: int
    ) -> Iterable[dict[str, Any]]:
        """Job objects as they change, for up to ``seconds``."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        w = watch.Watch()
        try:
            for event in w.stream(
                self.batch.list_namespaced_job,
                self.namespace,
                label_selector=selector,
                resource_version=resource_version,
                timeout_seconds=max(1, seconds),
                allow_watch_bookmarks=False,
            ):
                if event.get("type") == "ERROR":
                    return
                yield self.api_client.sanitize_for_serialization(event["object"])
        except HTTPError:  # a dropped watch connection: the caller relists
            return
        except ApiException as exc:
            if exc.status == 410:  # resource version too old: the caller relists
                return
            raise api_error(exc, f"watching Jobs in {self.namespace}") from None
        finally:
            w.stop()

    # ---- failures --------------------------------------------------------------------------
    def pods_of(self, job: str, kind: str = "Job") -> list[dict[str, Any]]:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        # The Job controller and the Kubeflow operators label their pods differently.
        label = (
            "batch.kubernetes.io/job-name" if kind == "Job" else "training.kubeflow.org/job-name"
        )
        try:
            raw = self.core.list_namespaced_pod(self.namespace, label_selector=f"{label}={job}")
        except (ApiException, HTTPError) as exc:
            raise api_error(exc, f"listing pods of Job {job}") from None
        return self.api_client.sanitize_for_serialization(raw).get("items") or []

    def log_tail(self, pod: str, container: str) -> tuple[str | None, str | None]:
        """(log tail, None) or (None, why not): pods/log goes through the node's kubelet."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            text = self.core.read_namespaced_pod_log(
                pod, self.namespace, container=container, tail_lines=LOG_TAIL_LINES
            )
            return text, None
        except (ApiException, HTTPError) as exc:
            return None, str(api_error(exc, "log unavailable"))
        except Exception as exc:
            return None, f"log unavailable: {exc}"

    def explain_failure(self, cell: Cell, job: dict[str, Any], reason: str | None) -> list[Failure]:
        """One Failure per failed pod (or one for the Job when no pod ran)."""
        name = job["metadata"]["name"]
        pods = self.pods_of(name, job.get("kind") or "Job")
        return job_failures(cell, job, reason, pods, self.namespace, self.log_tail)


ProgressHook = Callable[[CellOutcome], None]


def preflight(plan: Plan, cells: list[Cell], executor: KubernetesExecutor, submission: str) -> int:
    """Dry-run every object of the cells (namespace, kinds served, schema, admission, RBAC).

    Returns:
        How many objects the cluster would accept.
    Raises:
        ClusterError: the first object the cluster refuses.
    """
    count = 0
    for cell in cells:
        for obj in render_cell(plan, cell, submission):
            executor.create(obj, dry_run=True)
            count += 1
    executor.check_claim(plan.job.spool_claim)
    return count


class _Submission:
    """The cells of one submission: queued per pool, running (by Job name), and their outcomes."""

    def __init__(
        self,
        plan: Plan,
        cells: list[Cell],
        executor: KubernetesExecutor,
        submission: str,
        hooks: tuple[Callable[[list[Failure]], None] | None, ProgressHook | None],
    ) -> None:
        self.plan, self.executor, self.submission = plan, executor, submission
        self.record, self.on_change = hooks
        self.outcomes = {c.cell_id: CellOutcome(c, "", "pending") for c in cells}
        self.queue: dict[str, list[Cell]] = {}
        for cell in cells:
            self.queue.setdefault(cell.pool.name, []).append(cell)
        self.running: dict[str, CellOutcome] = {}  # job name -> outcome

    def notify(self, outcome: CellOutcome) -> None:
        if self.on_change:
            self.on_change(outcome)

    def start_more(self) -> None:
        """Start queued cells while their pool runs fewer than its concurrency."""
        for pool in self.plan.pools:
            active = sum(1 for o in self.running.values() if o.cell.pool.name == pool.name)
            waiting = self.queue.get(pool.name, [])
            while waiting and active < pool.concurrency:
                cell = waiting.pop(0)
                objects = render_cell(self.plan, cell, self.submission)
                for obj in objects:
                    self.executor.create(obj)
                main = objects[-1]
                out = self.outcomes[cell.cell_id]
                out.job, out.status, out.started = (
                    main["metadata"]["name"],
                    "running",
                    time.monotonic(),
                )
                out.kind = main["kind"]
                self.running[out.job] = out
                active += 1
                self.notify(out)

    def settle(self, job: dict[str, Any]) -> None:
        """A running Job that finished: its outcome, and its failures explained and recorded."""
        name = job["metadata"]["name"]
        out = self.running.get(name)
        if out is None:
            return
        state, reason = job_state(job)
        if state == "running":
            return
        out.status, out.reason, out.finished = state, reason, time.monotonic()
        if state == "failed":
            out.failures = self.executor.explain_failure(out.cell, job, reason)
            if self.record:
                self.record(out.failures)
        del self.running[name]
        self.notify(out)

    @property
    def busy(self) -> bool:
        return bool(self.running) or any(self.queue.values())


def submit_plan(
    plan: Plan,
    cells: list[Cell],
    executor: KubernetesExecutor,
    *,
    record: Callable[[list[Failure]], None] | None = None,
    on_change: ProgressHook | None = None,
    submission: str | None = None,
    poll_seconds: int = 5,
    timeout_seconds: float | None = None,
) -> list[CellOutcome]:
    """Create the cells' Jobs, at most ``pool.concurrency`` at once per pool, and wait until
    each has finished. Failures go to ``record`` as they happen. Non-distributed cells are
    watched; distributed ones (Kubeflow jobs) are polled.

    Raises:
        ClusterError: the cluster refused to create or list the objects. Every object is
            first created as a dry run, so a plan the cluster cannot take starts nothing.
        SubmitTimeout: ``timeout_seconds`` passed with cells still running (they keep running).
    """
    submission = submission or new_submission_id()
    selector = f"{LABEL_SUBMISSION}={submission}"
    run = _Submission(plan, cells, executor, submission, (record, on_change))
    deadline = time.monotonic() + timeout_seconds if timeout_seconds else None
    preflight(plan, cells, executor, submission)
    run.start_more()
    while run.busy:
        if deadline and time.monotonic() > deadline:
            names = ", ".join(sorted(run.running))
            raise SubmitTimeout(
                f"plan {plan.name}: still running after {timeout_seconds}s: {names}"
            )
        jobs, rv = executor.list_jobs(selector)
        for job in jobs:
            run.settle(job)
        for out in [o for o in run.running.values() if o.kind != "Job"]:
            run.settle(executor.get_job(out.kind, out.job))
        run.start_more()
        if not run.running:
            continue
        for job in executor.watch_jobs(selector, rv, poll_seconds):
            run.settle(job)
            if not run.running or any(run.queue.values()):
                break
        run.start_more()
    return [run.outcomes[c.cell_id] for c in cells]
