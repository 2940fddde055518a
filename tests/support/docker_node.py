"""A node of the test cluster whose pods run on the Docker engine: registered with the real
kube-apiserver, labelled as a pool; it binds the default scheduler's pods whose nodeSelector it
matches (a pod for another scheduler — Volcano's, a gang — stays Pending, as it would with no
Volcano), runs each pod's container with ``podspec`` (image, command, env from the Secret,
securityContext, volumes) and reports the pod's phase and exit code back, so the Job and CronJob
controllers see real completions. What a kubelet adds and this does not: cgroups and resource
limits, probes, restarts (the plans' pods use ``restartPolicy: Never``), log streaming.

The in-cluster client of a pod (the planner) reaches the apiserver through
KUBERNETES_SERVICE_HOST/PORT set to the apiserver's loopback address (what kube-proxy's ClusterIP
rule would give), with the service-account token from the TokenRequest API and the cluster CA
mounted where client libraries look."""

from __future__ import annotations

import contextlib
import datetime as dt
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.podspec import run_pod

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class DockerNode:
    def __init__(
        self,
        api_client: Any,
        name: str,
        labels: dict[str, str],
        *,
        apiserver_url: str,
        ca_file: Path,
        namespace: str,
    ) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(api_client)
        self.name, self.labels, self.namespace = name, labels, namespace
        self.host, self.port = apiserver_url.removeprefix("https://").rsplit(":", 1)
        self.ca = ca_file.read_text()
        self.logs: dict[str, str] = {}
        self.exit_codes: dict[str, int] = {}
        self.passed_over: set[str] = set()  # pods left Pending (another scheduler, no match)
        self._stop = threading.Event()
        self._running: set[str] = set()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> DockerNode:
        self.core.create_node({"metadata": {"name": self.name, "labels": self.labels}})
        self.core.patch_node_status(
            self.name,
            {
                "status": {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "DockerNode",
                            "lastHeartbeatTime": _now(),
                            "lastTransitionTime": _now(),
                        }
                    ],
                    "capacity": {"cpu": "2", "memory": "8Gi", "pods": "20"},
                    "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "20"},
                }
            },
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    # ---- the loop: schedule, run, report --------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # the apiserver is going away at teardown
                for pod in self.core.list_namespaced_pod(self.namespace).items:
                    self._consider(self.core.api_client.sanitize_for_serialization(pod))
            self._stop.wait(1.0)

    def _consider(self, pod: dict[str, Any]) -> None:
        name, spec = pod["metadata"]["name"], pod["spec"]
        if name in self._running or pod.get("status", {}).get("phase") not in (None, "Pending"):
            return
        if spec.get("nodeName") not in (None, self.name):
            return
        selector = spec.get("nodeSelector") or {}
        if spec.get("schedulerName", "default-scheduler") != "default-scheduler" or any(
            self.labels.get(k) != v for k, v in selector.items()
        ):
            self.passed_over.add(name)
            return
        if not spec.get("nodeName"):
            self.core.create_namespaced_binding(
                self.namespace,
                {"metadata": {"name": name}, "target": {"kind": "Node", "name": self.name}},
                _preload_content=False,
            )
            pod = self.core.api_client.sanitize_for_serialization(
                self.core.read_namespaced_pod(name, self.namespace)
            )
        self._running.add(name)
        threading.Thread(target=self._run, args=(pod,), daemon=True).start()

    def _run(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        started = _now()
        self._status(name, "Running", {"running": {"startedAt": started}}, pod)
        with tempfile.TemporaryDirectory(prefix="docker-node-") as tmp:
            try:
                extra = self._mounts(pod, Path(tmp))
                run = run_pod(pod, self.core, extra_volumes=extra, extra_env=self._service_env())
                code, log = run.code, run.logs
            except Exception as exc:
                code, log = 128, f"docker node: {type(exc).__name__}: {exc}"
        self.logs[name], self.exit_codes[name] = log, code
        terminated = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": started,
            "finishedAt": _now(),
        }
        self._status(name, "Succeeded" if code == 0 else "Failed", {"terminated": terminated}, pod)

    def _status(self, name: str, phase: str, state: dict[str, Any], pod: dict[str, Any]) -> None:
        [container] = pod["spec"]["containers"]
        ready = phase == "Running"
        self.core.patch_namespaced_pod_status(
            name,
            self.namespace,
            {
                "status": {
                    "phase": phase,
                    "hostIP": "127.0.0.1",
                    "podIP": "127.0.0.1",
                    "startTime": _now(),
                    "conditions": [
                        {"type": "Ready", "status": str(ready), "lastTransitionTime": _now()}
                    ],
                    "containerStatuses": [
                        {
                            "name": container["name"],
                            "image": container["image"],
                            "imageID": "",
                            "ready": ready,
                            "restartCount": 0,
                            "started": ready,
                            "state": state,
                        }
                    ],
                }
            },
        )

    # ---- what a kubelet mounts and injects ------------------------------------------------------
    def _service_env(self) -> dict[str, str]:
        return {"KUBERNETES_SERVICE_HOST": self.host, "KUBERNETES_SERVICE_PORT": self.port}

    def _mounts(self, pod: dict[str, Any], tmp: Path) -> dict[str, str]:
        """{volume name: host directory} for the configMap and projected service-account volumes."""
        out: dict[str, str] = {}
        for volume in pod["spec"].get("volumes", []):
            target = tmp / volume["name"]
            if "configMap" in volume:
                data = (
                    self.core.read_namespaced_config_map(
                        volume["configMap"]["name"], self.namespace
                    ).data
                    or {}
                )
                target.mkdir()
                for key, value in data.items():
                    (target / key).write_text(value)
                out[volume["name"]] = str(target)
            elif "projected" in volume and any(
                "serviceAccountToken" in s for s in volume["projected"]["sources"]
            ):
                token = self.core.create_namespaced_service_account_token(
                    pod["spec"]["serviceAccountName"],
                    self.namespace,
                    {"spec": {"audiences": [], "expirationSeconds": 3600}},
                ).status.token
                target.mkdir()
                (target / "token").write_text(token)
                (target / "ca.crt").write_text(self.ca)
                (target / "namespace").write_text(self.namespace)
                out[volume["name"]] = str(target)
        for path in tmp.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        tmp.chmod(0o755)
        return out


def wait_for(what: str, check: Any, timeout: float, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")
