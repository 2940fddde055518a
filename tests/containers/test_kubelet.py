"""A real kubelet (v1.35.4, built from the Go module proxy) on Debian's containerd joins a real
kube-apiserver and runs the collector image as a pod (hostNetwork; nodeName set: no scheduler, and
the node stays NotReady without a CNI), which posts to the API image; `advisor recommend` shows the
figure measured. What stops the scheduled plan from running on it here: docs/deploy.md."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.containers.conftest import Api, Images, docker, tier_missing
from tests.containers.kubelet_node import PAUSE_IMAGE, KubeletNode, kube_binary
from tests.support.control_plane import ControlPlane, find_binaries

pytestmark = [pytest.mark.containers, pytest.mark.kube, pytest.mark.neo4j, pytest.mark.slow]
NODE = "kubelet-node-1"


@pytest.fixture(scope="module")
def node(images: Images, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ControlPlane, KubeletNode]]:
    apiserver, etcd, why = find_binaries()
    kubelet = kube_binary("kubelet")
    if apiserver is None or etcd is None or kubelet is None:
        tier_missing(f"no kube-apiserver/etcd/kubelet: {why or 'run KUBE_COMPONENTS=kubelet deploy/kube-local/build.sh'}")
    assert apiserver is not None and etcd is not None and kubelet is not None
    base = next(line.split()[2].rstrip(":") for line in images.build_log.splitlines() if line.startswith("[images] base "))
    created = docker("create", base).stdout.strip()
    docker("commit", "--change", 'CMD ["/usr/bin/tini", "--", "/bin/sleep", "infinity"]', created, PAUSE_IMAGE)
    docker("rm", created)
    work = tmp_path_factory.mktemp("kubelet")
    (work / "cp").mkdir()
    cp = ControlPlane(apiserver=apiserver, etcd=etcd, workdir=work / "cp")
    kn = KubeletNode(kubelet=kubelet, kubeconfig=work / "cp" / "kubeconfig", ca=work / "cp" / "pki" / "ca.crt",
                     workdir=work, name=NODE, labels={"stack-advisor.io/pool": "cpu-pool"})
    try:
        cp.start()
        kn.start_containerd()
        for image in (PAUSE_IMAGE, images.collector):
            kn.import_image(image)
        kn.start_kubelet()
        yield cp, kn
    finally:
        kn.stop()
        cp.stop()


def _pod(images: Images, api: Api) -> dict[str, Any]:
    return {"metadata": {"name": "collector-on-kubelet"}, "spec": {
        "nodeName": NODE, "hostNetwork": True, "restartPolicy": "Never", "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532},
        "containers": [{
            "name": "collector", "image": images.collector, "imagePullPolicy": "Never",
            "command": ["advisor", "collect", "--profile", "quick", "--option", "pis=mem_triad", "--run-id", "kubelet-pod"],
            "env": [{"name": "ADVISOR_API", "value": api.url},
                    {"name": "ADVISOR_TOKEN", "valueFrom": {"secretKeyRef": {"name": "collector-token", "key": "token"}}},
                    {"name": "HOME", "value": "/tmp"}],
            "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}]}],
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}]}}


def test_kubelet_runs_the_collector_pod_and_its_figure_lands(images: Images, api: Api, node: Any) -> None:
    from kubernetes import client, config

    cp, kn = node
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(cp.kubeconfig)))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not core.list_node().items:
        time.sleep(2)
    [registered] = core.list_node().items
    assert registered.status.node_info.kubelet_version == "v1.35.4", kn.log("kubelet")
    assert registered.metadata.labels["stack-advisor.io/pool"] == "cpu-pool"
    core.create_namespaced_service_account("default", {"metadata": {"name": "default"}})
    core.create_namespaced_secret("default", {"metadata": {"name": "collector-token"},
                                              "stringData": {"token": api.write_token}})
    core.create_namespaced_pod("default", _pod(images, api))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        pod = core.read_namespaced_pod("collector-on-kubelet", "default")
        if pod.status.phase in ("Succeeded", "Failed"):
            break
        time.sleep(2)
    terminated = pod.status.container_statuses[0].state.terminated
    assert pod.status.phase == "Succeeded" and terminated.exit_code == 0, f"{pod.status}\n{kn.log('kubelet')}"

    result = CliRunner().invoke(app, ["--api", api.url, "recommend", "--family", "pi", "--benchmark", "mem_triad",
                                      "--json"], env={"ADVISOR_TOKEN": api.read_token})
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["recommendations"]
    assert rows and all(r["basis"] == "observed" and r["basis_note"].startswith("measured on") for r in rows), rows
