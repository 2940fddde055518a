"""A scheduled plan end to end on the real kube-apiserver and kube-controller-manager (Job and
CronJob controllers): `advisor plan render` writes the ConfigMap and CronJob; the CronJob fires; its
planner pod (the API image: `advisor plan submit` as the planner ServiceAccount of deploy/base's
RBAC) creates the collector Job; that pod runs the CPU collector image on the node labelled as the
pool, posts to the API image (on the real Neo4j), and `advisor recommend` shows the figure measured.

The pods run on tests/support/docker_node.py (the Docker engine): the path for a machine where
a kubelet cannot run. The same plan on a real kubelet, kube-scheduler and pod network, with the
spool claim and `recommend --cluster`: test_kubelet.py (docs/deploy.md, "A real kubelet")."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.containers import Api, Images
from tests.support.control_plane import ControlPlane, find_binaries, find_controller_manager
from tests.support.docker_node import DockerNode, wait_for
from tests.support.kube import GANG_KINDS, gang_kinds_served, served_kind
from tests.support.scheduled import (
    fire_once,
    planner_finished,
    recommend,
    render_plan,
    setup_namespace,
)

pytestmark = [pytest.mark.containers, pytest.mark.kube, pytest.mark.neo4j, pytest.mark.slow]
NAMESPACE = "stack-advisor"
POOL_LABEL = {"stack-advisor.io/pool": "cpu-pool"}
CONTROLLERS = "job-controller,cronjob-controller,serviceaccount-controller"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of this module's own, with the CronJob controller too."""
    apiserver, etcd, why = find_binaries()
    manager = find_controller_manager()
    if apiserver is None or etcd is None or manager is None:
        from tests.support.containers import tier_missing

        tier_missing(
            "no kube-apiserver/etcd/kube-controller-manager: "
            f"{why or 'run deploy/kube-local/build.sh'}"
        )
    assert apiserver is not None and etcd is not None
    cp = ControlPlane(
        apiserver=apiserver,
        etcd=etcd,
        controller_manager=manager,
        controllers=CONTROLLERS,
        workdir=tmp_path_factory.mktemp("kube-containers"),
    )
    try:
        cp.start()
        yield cp
    finally:
        cp.stop()


def _plan(api: Api, images: Images) -> dict[str, Any]:
    return {
        "name": "cpu-minutely",
        "namespace": NAMESPACE,
        "api": {
            "url": api.url,
            "token_secret": "stack-advisor-collector-token",
            "token_key": "token",
        },
        "images": [
            {
                "name": "numpy-cpu",
                "image": images.collector,
                "pull_policy": "Never",
                "stack": {"framework": "numpy", "python": "3.11"},
            }
        ],
        "pools": [{"name": "cpu-pool", "selector": POOL_LABEL, "placement": "bare-metal"}],
        "benchmarks": [
            {
                "name": "pi-triad",
                "runner": "pi",
                "profile": "quick",
                "options": {"pis": "mem_triad"},
            }
        ],
        "schedule": "* * * * *",
        # the Docker node runs emptyDir, configMap and service-account volumes only; the spool claim
        # runs on the real kubelet (test_kubelet.py)
        "job": {"active_deadline_seconds": 900, "spool_claim": None},
        "planner": {"image": images.api},
    }


def test_cronjob_fires_and_its_collector_pod_lands_a_measured_figure(
    images: Images, api: Api, cluster: ControlPlane, tmp_path: Path
) -> None:
    from kubernetes import client, config

    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    batch = client.BatchV1Api(api_client)
    setup_namespace(api_client, api, NAMESPACE)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(_plan(api, images)))
    objects = render_plan(plan_file, "--only", "schedule", out=tmp_path / "rendered")
    assert sorted(o["kind"] for o in objects) == ["ConfigMap", "CronJob"]

    start = time.monotonic()
    with DockerNode(
        api_client,
        "cpu-node-1",
        {**POOL_LABEL, "kubernetes.io/hostname": "cpu-node-1"},
        apiserver_url=cluster.url,
        ca_file=cluster.workdir / "pki" / "ca.crt",
        namespace=NAMESPACE,
    ) as node:
        for obj in objects:
            if obj["kind"] == "ConfigMap":
                client.CoreV1Api(api_client).create_namespaced_config_map(NAMESPACE, obj)
            else:
                batch.create_namespaced_cron_job(NAMESPACE, obj)
        name = next(o["metadata"]["name"] for o in objects if o["kind"] == "CronJob")
        planner_job = fire_once(batch, NAMESPACE, name)
        job = planner_finished(batch, NAMESPACE, planner_job, timeout=600)
        elapsed = time.monotonic() - start
        logs = "\n".join(
            f"--- {pod}: exit {node.exit_codes.get(pod)}\n{log[-3000:]}"
            for pod, log in node.logs.items()
        )
        assert job.status.succeeded == 1, logs
    print(f"\nCronJob created -> collector figure stored, planner Job complete: {elapsed:.0f} s")
    collector_pods = [p for p in node.logs if not p.startswith(planner_job)]
    assert len(collector_pods) == 1 and node.exit_codes[collector_pods[0]] == 0, logs
    assert "delivered" in node.logs[collector_pods[0]], logs

    answer = recommend(api, ["--family", "pi", "--benchmark", "mem_triad"])
    rows = [r for r in answer if images.collector in json.dumps(r)]
    assert rows, answer  # the plan's image, recorded with the figure (ADVISOR_IMAGE)
    assert all(
        r["basis"] == "observed" and r["basis_note"].startswith("measured on") for r in rows
    ), rows
    assert elapsed < 180, f"CronJob to a measured figure took {elapsed:.0f} s (goal: 3 minutes)"


def test_gang_path_stops_at_the_volcano_scheduler(cluster: ControlPlane, tmp_path: Path) -> None:
    """How far a gang-scheduled (PodGroup) cell goes here: the PodGroup and PyTorchJob are
    created (their CRDs registered as the operators would); nothing turns the PyTorchJob into pods
    (no Kubeflow training operator), and a pod made from its template, as the operator would,
    names `schedulerName: volcano`, so no node takes it: it stays Pending, unbound."""
    from kubernetes import client, config, dynamic

    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    ext = client.ApiextensionsV1Api(api_client)
    for group, version, kind in GANG_KINDS:
        ext.create_custom_resource_definition(served_kind(group, version, kind))
    namespace = "gang"
    client.CoreV1Api(api_client).create_namespace({"metadata": {"name": namespace}})
    client.CoreV1Api(api_client).create_namespaced_service_account(
        namespace,
        {"metadata": {"name": "stack-advisor-collector"}, "automountServiceAccountToken": False},
    )
    plan = {
        "name": "gang",
        "namespace": namespace,
        "images": [
            {
                "name": "numpy-cpu",
                "image": "stack-advisor/collector:cpu-dev",
                "pull_policy": "Never",
            }
        ],
        "pools": [
            {
                "name": "cpu-pool",
                "selector": POOL_LABEL,
                "placement": "bare-metal",
                "gang_scheduling": True,
            }
        ],
        "benchmarks": [
            {"name": "allreduce-2x", "runner": "allreduce", "profile": "quick", "workers": 2}
        ],
    }
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    objects = render_plan(plan_file, "--only", "jobs")
    assert [o["kind"] for o in objects] == ["PersistentVolumeClaim", "PodGroup", "PyTorchJob"]
    objects = objects[1:]  # the collectors' spool claim: not part of the gang
    dyn = dynamic.DynamicClient(
        wait_for("CRDs served", lambda: gang_kinds_served(api_client), timeout=60)
    )
    for obj in objects:
        dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"]).create(
            body=obj, namespace=namespace
        )
    master = objects[1]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    pod = {"metadata": {"name": "gang-master-0", **master["metadata"]}, "spec": master["spec"]}
    with DockerNode(
        api_client,
        "gang-node",
        POOL_LABEL,
        apiserver_url=cluster.url,
        ca_file=cluster.workdir / "pki" / "ca.crt",
        namespace=namespace,
    ) as node:
        client.CoreV1Api(api_client).create_namespaced_pod(namespace, pod)
        wait_for(
            "the node to look at the pod", lambda: "gang-master-0" in node.passed_over, timeout=30
        )
        time.sleep(3)
        seen = client.CoreV1Api(api_client).read_namespaced_pod("gang-master-0", namespace)
    assert seen.spec.scheduler_name == "volcano" and seen.spec.node_name is None
    assert seen.status.phase == "Pending"
    assert "gang-master-0" not in node.logs  # never run
