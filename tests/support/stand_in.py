"""What the test cluster lacks: a scheduler and a kubelet (and, without the build, the Job
controller).

There is no kubelet or container runtime on this machine, so the tests play their parts through
the real API. With kube-controller-manager built, its real Job controller creates the pods and
writes the Jobs' status; ``JobDriver`` binds each pod to a node (a Binding, as the scheduler
does) and writes its terminal status with the container's exit code (as the kubelet does).
Without kube-controller-manager (outside CI), ``JobDriver`` also creates one pod per Job and
writes the Job's status conditions itself. ``KubeletLogs`` answers the one kubelet endpoint the
apiserver proxies ``pods/log`` to (``/containerLogs/<ns>/<pod>/<container>``), on the port the
Node object advertises, so log tails travel the real apiserver path.
"""

from __future__ import annotations

import http.server
import ssl
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

Outcome = Callable[[dict[str, Any]], tuple[int, str]]
"""pod (or Job: both carry the cell's labels) → (container exit code, log text)."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class KubeletLogs:
    def __init__(self, pki: Path) -> None:
        self.logs: dict[tuple[str, str, str], str] = {}
        self.requests: list[str] = []
        logs, requests = self.logs, self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                requests.append(self.path)
                parts = [unquote(p) for p in url.path.strip("/").split("/")]
                if len(parts) == 4 and parts[0] == "containerLogs":
                    text = logs.get((parts[1], parts[2], parts[3]))
                    if text is not None:
                        tail = dict(q.split("=", 1) for q in url.query.split("&") if "=" in q).get(
                            "tailLines"
                        )
                        lines = text.splitlines(keepends=True)
                        body = "".join(lines[-int(tail) :] if tail else lines).encode()
                        self.send_response(200)
                        self.send_header("Content-Type", "text/plain")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                        return
                self.send_error(404)

            def log_message(self, *args: object) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(pki / "serving.crt"), str(pki / "serving.key"))
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class JobDriver:
    """Plays the missing parts for each Job of a selector, once.

    With ``controller=True`` kube-controller-manager's real Job controller creates the pods and
    writes the Jobs' status; this plays the scheduler (a Binding to ``node``) and the kubelet
    (the pod's terminal status, with the container's exit code). Without it, this also plays the
    Job controller: one pod per Job and the Job's status conditions.
    """

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        node: str,
        outcome: Outcome,
        logs: KubeletLogs | None = None,
        selector: str = "",
        controller: bool = False,
    ) -> None:
        from kubernetes import client

        self.api = api_client
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.namespace, self.node, self.outcome, self.logs, self.selector = (
            namespace,
            node,
            outcome,
            logs,
            selector,
        )
        self.controller = controller
        self.seen: set[str] = set()
        self.pods_run: list[str] = []
        self.max_active = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> JobDriver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                jobs = self.batch.list_namespaced_job(
                    self.namespace, label_selector=self.selector
                ).items
                active = [
                    j
                    for j in jobs
                    if not any(
                        c.status == "True" and c.type in ("Complete", "Failed")
                        for c in (j.status.conditions or [])
                    )
                ]
                self.max_active = max(self.max_active, len(active))
                if self.controller:
                    self._run_pods()
                else:
                    for job in active:
                        if job.metadata.name not in self.seen:
                            self.seen.add(job.metadata.name)
                            time.sleep(0.3)  # let the planner see the Job running
                            self._stand_in_job(self.api.sanitize_for_serialization(job))
            except BaseException as exc:
                self.errors.append(exc)
                return
            time.sleep(0.2)

    # ---- scheduler + kubelet (the real Job controller made the pods) ------------------------
    def _run_pods(self) -> None:
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector).items
        for pod in pods:
            name = pod.metadata.name
            if name in self.seen or pod.status.phase not in (None, "Pending"):
                continue
            self.seen.add(name)
            if not pod.spec.node_name:
                binding = {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": self.node},
                }
                # The generated client cannot deserialise the Status a Binding returns.
                self.core.create_namespaced_pod_binding(
                    name, self.namespace, binding, _preload_content=False
                )
            self._finish_pod(self.api.sanitize_for_serialization(pod))

    def _finish_pod(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        container = pod["spec"]["containers"][0]
        start = _now()
        code, log_text = self.outcome(pod)
        if self.logs is not None:
            self.logs.logs[(self.namespace, name, container["name"])] = log_text
        self.core.patch_namespaced_pod_status(
            name,
            self.namespace,
            {
                "status": {
                    "phase": "Succeeded" if code == 0 else "Failed",
                    "startTime": start,
                    "conditions": [{"type": "Ready", "status": "False", "reason": "PodCompleted"}],
                    "containerStatuses": [
                        {
                            "name": container["name"],
                            "image": container["image"],
                            "imageID": "",
                            "ready": False,
                            "restartCount": 0,
                            "state": {
                                "terminated": {
                                    "exitCode": code,
                                    "reason": "Completed" if code == 0 else "Error",
                                    "startedAt": start,
                                    "finishedAt": _now(),
                                }
                            },
                        }
                    ],
                }
            },
        )
        self.pods_run.append(name)

    # ---- the Job controller's part, when kube-controller-manager is not built ----------------
    def _stand_in_job(self, job: dict[str, Any]) -> None:
        name, uid = job["metadata"]["name"], job["metadata"]["uid"]
        template = job["spec"]["template"]
        start = _now()
        pod_name = f"{name}-0-x{len(self.seen)}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": self.namespace,
                "labels": {
                    **template["metadata"].get("labels", {}),
                    "batch.kubernetes.io/job-name": name,
                    "job-name": name,
                    "batch.kubernetes.io/controller-uid": uid,
                },
                "annotations": {
                    **template["metadata"].get("annotations", {}),
                    "batch.kubernetes.io/job-completion-index": "0",
                },
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": name,
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {**template["spec"], "nodeName": self.node},
        }
        created = self.core.create_namespaced_pod(self.namespace, pod)
        self._finish_pod(self.api.sanitize_for_serialization(created))
        code = 0 if self.outcome(pod)[0] == 0 else 1
        done = _now()
        if code == 0:
            status = {
                "startTime": start,
                "completionTime": done,
                "succeeded": 1,
                "completedIndexes": "0",
                "conditions": [
                    {
                        "type": "SuccessCriteriaMet",
                        "status": "True",
                        "reason": "CompletionsReached",
                        "message": "Reached expected number of succeeded pods",
                        "lastTransitionTime": done,
                        "lastProbeTime": done,
                    },
                    {
                        "type": "Complete",
                        "status": "True",
                        "reason": "CompletionsReached",
                        "message": "Reached expected number of succeeded pods",
                        "lastTransitionTime": done,
                        "lastProbeTime": done,
                    },
                ],
            }
        else:
            status = {
                "startTime": start,
                "failed": 1,
                "conditions": [
                    {
                        "type": "FailureTarget",
                        "status": "True",
                        "reason": "BackoffLimitExceeded",
                        "message": "Job has reached the specified backoff limit",
                        "lastTransitionTime": done,
                        "lastProbeTime": done,
                    },
                    {
                        "type": "Failed",
                        "status": "True",
                        "reason": "BackoffLimitExceeded",
                        "message": "Job has reached the specified backoff limit",
                        "lastTransitionTime": done,
                        "lastProbeTime": done,
                    },
                ],
            }
        self.batch.patch_namespaced_job_status(name, self.namespace, {"status": status})
