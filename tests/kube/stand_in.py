"""What the test cluster lacks: a Job controller and a kubelet.

There is no kubelet or container runtime on this machine (and kube-controller-manager is not
built), so the tests play their parts through the real API: ``JobDriver`` creates each Job's pod
the way the Job controller does (labels, owner reference, completion index), binds it to a node
and writes the pod's and the Job's status through their status subresources, the way the
kubelet and the Job controller do. ``KubeletLogs`` answers the one kubelet endpoint the
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
"""job → (container exit code, log text)."""


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
                        tail = dict(q.split("=", 1) for q in url.query.split("&") if "=" in q).get("tailLines")
                        lines = text.splitlines(keepends=True)
                        body = "".join(lines[-int(tail):] if tail else lines).encode()
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
    """Runs each Job of a selector once: one pod per completion, then the Job's status."""

    def __init__(self, api_client: Any, namespace: str, node: str, outcome: Outcome,
                 logs: KubeletLogs | None = None, selector: str = "") -> None:
        from kubernetes import client

        self.api = api_client
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.namespace, self.node, self.outcome, self.logs, self.selector = namespace, node, outcome, logs, selector
        self.seen: set[str] = set()
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
                jobs = self.batch.list_namespaced_job(self.namespace, label_selector=self.selector).items
                active = [j for j in jobs if not any(c.status == "True" and c.type in ("Complete", "Failed")
                                                     for c in (j.status.conditions or []))]
                self.max_active = max(self.max_active, len(active))
                for job in active:
                    if job.metadata.name not in self.seen:
                        self.seen.add(job.metadata.name)
                        time.sleep(0.3)  # let the planner see the Job running
                        self.run_job(self.api.sanitize_for_serialization(job))
            except BaseException as exc:  # noqa: BLE001 - surfaced by the test
                self.errors.append(exc)
                return
            time.sleep(0.2)

    def run_job(self, job: dict[str, Any]) -> None:
        name, uid = job["metadata"]["name"], job["metadata"]["uid"]
        template = job["spec"]["template"]
        start = _now()
        code, log_text = self.outcome(job)
        container = template["spec"]["containers"][0]["name"]
        pod_name = f"{name}-0-x{len(self.seen)}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": self.namespace,
                "labels": {**template["metadata"].get("labels", {}),
                           "batch.kubernetes.io/job-name": name, "job-name": name,
                           "batch.kubernetes.io/controller-uid": uid},
                "annotations": {**template["metadata"].get("annotations", {}),
                                "batch.kubernetes.io/job-completion-index": "0"},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid,
                                     "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": {**template["spec"], "nodeName": self.node},
        }
        self.core.create_namespaced_pod(self.namespace, pod)
        if self.logs is not None:
            self.logs.logs[(self.namespace, pod_name, container)] = log_text
        phase = "Succeeded" if code == 0 else "Failed"
        self.core.patch_namespaced_pod_status(pod_name, self.namespace, {"status": {
            "phase": phase,
            "startTime": start,
            "containerStatuses": [{
                "name": container, "image": container and template["spec"]["containers"][0]["image"],
                "imageID": "", "ready": False, "restartCount": 0,
                "state": {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                         "startedAt": start, "finishedAt": _now()}},
            }],
        }})
        done = _now()
        if code == 0:
            status = {
                "startTime": start, "completionTime": done, "succeeded": 1, "completedIndexes": "0",
                "conditions": [
                    {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods", "lastTransitionTime": done, "lastProbeTime": done},
                    {"type": "Complete", "status": "True", "reason": "CompletionsReached",
                     "message": "Reached expected number of succeeded pods", "lastTransitionTime": done, "lastProbeTime": done},
                ],
            }
        else:
            status = {
                "startTime": start, "failed": 1,
                "conditions": [
                    {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
                     "message": "Job has reached the specified backoff limit", "lastTransitionTime": done, "lastProbeTime": done},
                    {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                     "message": "Job has reached the specified backoff limit", "lastTransitionTime": done, "lastProbeTime": done},
                ],
            }
        self.batch.patch_namespaced_job_status(name, self.namespace, {"status": status})
