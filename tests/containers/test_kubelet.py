"""A real node: kubelet v1.35.4 (built from the Go module proxy) on Debian's containerd, with a
bridge pod network (CNI plugins built from the Go module proxy: tests/support/pod_network.py),
joins a real kube-apiserver with kube-scheduler and kube-controller-manager (Job, CronJob, node
lifecycle and volume binding controllers). The node turns Ready, so the scheduler places pods on it.

1. the CPU collector image as a hostNetwork pod bound to the node by name (the smallest path);
2. the scheduled plan end to end: `advisor plan render --only schedule` (ConfigMap, CronJob, the
   collectors' spool claim); the CronJob fires; its planner pod (the API image: `advisor plan
   submit` as the planner ServiceAccount, reaching the apiserver at the `kubernetes` Service's IP)
   creates the collector Job; the scheduler places its pod on the node labelled as the pool; the
   pod, in its own network namespace, runs the CPU collector image and posts to the API image;
   `advisor nodes sync` records the node and `advisor recommend --cluster` labels that pool's figure
   `measured`.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from tests.support.containers import Api, Images
from tests.support.docker_node import wait_for
from tests.support.kubelet_cluster import (
    NODE,
    POOL,
    Cluster,
    default_service_account,
    finished_pod,
)
from tests.support.kubelet_cluster import ready_node as _ready
from tests.support.scheduled import (
    fire_once,
    planner_finished,
    recommend,
    render_plan,
    setup_namespace,
)

pytestmark = [pytest.mark.containers, pytest.mark.kube, pytest.mark.neo4j, pytest.mark.slow]
NAMESPACE = "stack-advisor-kubelet"  # deploy/base's own namespace is test_deploy_base.py's


@pytest.fixture(scope="module")
def cluster(kubelet_cluster: Cluster) -> Cluster:
    return kubelet_cluster


def test_the_node_turns_ready_with_the_pod_network(cluster: Cluster) -> None:
    from kubernetes import client

    core = client.CoreV1Api(cluster.client())
    try:
        node = wait_for("the node Ready and untainted", lambda: _ready(core), timeout=180, every=2)
    except AssertionError:
        raise AssertionError(f"{core.list_node().items}\n{cluster.node.log('kubelet')}") from None
    assert node.status.node_info.kubelet_version == "v1.35.4"
    assert node.metadata.labels["stack-advisor.io/pool"] == "cpu-pool"
    assert {a.address for a in node.status.addresses if a.type == "InternalIP"} == {
        cluster.net.gateway
    }


def _pod(images: Images, api: Api) -> dict[str, Any]:
    return {
        "metadata": {"name": "collector-on-kubelet"},
        "spec": {
            "nodeName": NODE,
            "hostNetwork": True,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 65532,
                "runAsGroup": 65532,
                "fsGroup": 65532,
            },
            "containers": [
                {
                    "name": "collector",
                    "image": images.collector,
                    "imagePullPolicy": "Never",
                    "command": [
                        "advisor",
                        "collect",
                        "--profile",
                        "quick",
                        "--option",
                        "pis=mem_triad",
                        "--run-id",
                        "kubelet-pod",
                    ],
                    "env": [
                        {"name": "ADVISOR_API", "value": api.url},
                        {
                            "name": "ADVISOR_TOKEN",
                            "valueFrom": {
                                "secretKeyRef": {"name": "collector-token", "key": "token"}
                            },
                        },
                        {"name": "HOME", "value": "/tmp"},
                    ],
                    "securityContext": {
                        "readOnlyRootFilesystem": True,
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                    },
                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                }
            ],
            "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}],
        },
    }


def test_kubelet_runs_the_collector_pod_and_its_figure_lands(
    images: Images, cluster: Cluster
) -> None:
    from kubernetes import client

    core = client.CoreV1Api(cluster.client())
    default_service_account(core)
    core.create_namespaced_secret(
        "default",
        {"metadata": {"name": "collector-token"}, "stringData": {"token": cluster.api.write_token}},
    )
    core.create_namespaced_pod("default", _pod(images, cluster.api))
    pod = finished_pod(core, "collector-on-kubelet")  # the hostNetwork pod
    terminated = pod.status.container_statuses[0].state.terminated
    assert pod.status.phase == "Succeeded" and terminated.exit_code == 0, (
        f"{pod.status}\n{cluster.node.log('kubelet')}"
    )
    rows = recommend(cluster.api, ["--family", "pi", "--benchmark", "mem_triad"])
    assert any(
        r["basis"] == "observed" and r["basis_note"].startswith("measured on") for r in rows
    ), rows


# ---- the scheduled plan
# ---------------------------------------------------------------------------
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
        "pools": [{"name": "cpu-pool", "selector": POOL, "placement": "unknown"}],
        "benchmarks": [
            {
                "name": "pi-triad",
                "runner": "pi",
                "profile": "quick",
                "options": {"pis": "mem_triad"},
            }
        ],
        "schedule": "* * * * *",
        # the node has 2 cores, and the planner's pod requests 100m of them while it waits
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "4Gi"}},
        "job": {"active_deadline_seconds": 900},
        "planner": {"image": images.api, "skip_observed": False},
    }


def _namespace(api_client: Any, api: Api, spool: Path) -> None:
    """The namespace as deploy/base makes it (RBAC, the two token Secrets), and a PersistentVolume
    for the spool claim: a directory of this machine (no provisioner here; a cluster's RWX class
    provisions it)."""
    from kubernetes import client

    setup_namespace(api_client, api, NAMESPACE)
    core = client.CoreV1Api(api_client)
    spool.mkdir(parents=True)
    os.chown(spool, 65532, 65532)  # a hostPath volume gets no fsGroup; an NFS/CephFS class maps it
    core.create_persistent_volume(
        {
            "metadata": {"name": "collector-spool"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": str(spool), "type": "Directory"},
            },
        }
    )


def _create(api_client: Any, objects: list[dict[str, Any]]) -> str:
    from kubernetes import client

    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    for obj in objects:
        if obj["kind"] == "ConfigMap":
            core.create_namespaced_config_map(NAMESPACE, obj)
        elif obj["kind"] == "PersistentVolumeClaim":
            core.create_namespaced_persistent_volume_claim(NAMESPACE, obj)
    for obj in objects:
        if obj["kind"] == "CronJob":
            batch.create_namespaced_cron_job(NAMESPACE, obj)
            return str(obj["metadata"]["name"])
    raise AssertionError(f"no CronJob rendered: {[o['kind'] for o in objects]}")


def _logs(core: Any) -> str:
    out = []
    for pod in core.list_namespaced_pod(NAMESPACE).items:
        try:
            log = core.read_namespaced_pod_log(pod.metadata.name, NAMESPACE)[-3000:]
        except Exception as exc:  # the kubelet may not serve it: say why
            log = f"(no log: {exc})"
        out.append(f"--- {pod.metadata.name} on {pod.spec.node_name}: {pod.status.phase}\n{log}")
    return "\n".join(out)


def _sync_nodes(cluster: Cluster, store: str) -> None:
    """`advisor nodes sync`: the node and its pool recorded as cluster ``kubelet-test``."""
    args = ["nodes", "sync", "--kubeconfig", str(cluster.cp.kubeconfig)]
    sync = CliRunner().invoke(app, [*args, "--cluster", "kubelet-test", "--store", store])
    assert sync.exit_code == 0, sync.output


def test_cronjob_pod_runs_on_the_kubelet_and_the_pool_is_measured(
    images: Images, cluster: Cluster, neo4j_uri: str, tmp_path: Path
) -> None:
    from kubernetes import client

    api_client = cluster.client()
    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    wait_for("the node Ready and untainted", lambda: _ready(core), timeout=180, every=2)
    _namespace(api_client, cluster.api, tmp_path / "spool")
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(_plan(cluster.api, images)))
    objects = render_plan(plan_file, "--only", "schedule", out=tmp_path / "rendered")
    assert sorted(o["kind"] for o in objects) == ["ConfigMap", "CronJob", "PersistentVolumeClaim"]

    created = dt.datetime.now(dt.UTC)
    start = time.monotonic()
    planner = fire_once(batch, NAMESPACE, _create(api_client, objects))
    job = planner_finished(batch, NAMESPACE, planner, timeout=420)
    elapsed = time.monotonic() - start
    logs = _logs(core)
    assert job.status.succeeded == 1, f"{logs}\n{cluster.node.log('kubelet')}"

    pods = {p.metadata.name: p for p in core.list_namespaced_pod(NAMESPACE).items}
    collectors = [p for n, p in pods.items() if not n.startswith(planner)]
    assert len(collectors) == 1, logs
    pod = collectors[0]
    # placed by kube-scheduler on the pool's node, in its own network namespace, the spool mounted
    assert pod.spec.node_name == NODE and not pod.spec.host_network, logs
    assert pod.status.pod_ip.startswith(cluster.net.subnet.rsplit(".", 2)[0]), pod.status.pod_ip
    assert any(v.persistent_volume_claim for v in pod.spec.volumes), pod.spec.volumes
    finished = pod.status.container_statuses[0].state.terminated
    assert pod.status.phase == "Succeeded" and finished.exit_code == 0, logs
    landed = (finished.finished_at - created).total_seconds()

    _sync_nodes(cluster, neo4j_uri)
    rows = recommend(
        cluster.api, ["--cluster", "kubelet-test", "--family", "pi", "--benchmark", "mem_triad"]
    )
    mine = [r for r in rows if r["pool"] == "cpu-pool"]
    assert mine and mine[0]["basis"] == "measured", rows
    assert NODE in mine[0]["evidence"]["submitters"], mine[0]  # measured on the pool's own node
    print(
        f"\n[kubelet] CronJob created -> collector pod done (its figure posted): {landed:.0f} s; "
        f"-> planner Job complete: {elapsed:.0f} s; recommend --cluster: cpu-pool "
        f"{mine[0]['value']:.3g} "
        f"{mine[0]['unit']} ({mine[0]['basis']})"
    )
    assert elapsed < 180, f"CronJob to a measured figure took {elapsed:.0f} s (goal: 3 minutes)"


# ---- the gang path
# ---------------------------------------------------------------------------------
def _claim_volume(core: Any, namespace: str, path: Path) -> None:
    """A claim of the plan's name in ``namespace``, bound to a directory of this machine."""
    path.mkdir(parents=True)
    os.chown(path, 65532, 65532)
    core.create_persistent_volume(
        {
            "metadata": {"name": f"spool-{namespace}"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"namespace": namespace, "name": "stack-advisor-collector-spool"},
                "hostPath": {"path": str(path), "type": "Directory"},
            },
        }
    )


def _gang_plan(namespace: str) -> dict[str, Any]:
    """One gang-scheduled pool and a two-worker allreduce: a PodGroup and a PyTorchJob."""
    return {
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
            {"name": "cpu-pool", "selector": POOL, "placement": "unknown", "gang_scheduling": True}
        ],
        "benchmarks": [
            {"name": "allreduce-2x", "runner": "allreduce", "profile": "quick", "workers": 2}
        ],
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
    }


def _gang_namespace(api_client: Any, namespace: str) -> None:
    """The Kubeflow and Volcano kinds served (as their operators' CRDs would be), the namespace
    and its collector ServiceAccount."""
    from kubernetes import client

    from tests.support.kube import GANG_KINDS, served_kind

    for group, version, kind in GANG_KINDS:
        client.ApiextensionsV1Api(api_client).create_custom_resource_definition(
            served_kind(group, version, kind)
        )
    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": namespace}})
    core.create_namespaced_service_account(
        namespace,
        {"metadata": {"name": "stack-advisor-collector"}, "automountServiceAccountToken": False},
    )


def test_gang_path_stops_at_the_volcano_scheduler(cluster: Cluster, tmp_path: Path) -> None:
    """How far a gang-scheduled (PodGroup) cell goes with a real scheduler and node: the PodGroup
    and PyTorchJob are created (their kinds served as the operators' CRDs would); nothing turns the
    PyTorchJob into pods (no Kubeflow training operator). A pod made from its Master template, as
    the operator would make it, names ``schedulerName: volcano``: kube-scheduler leaves it alone and
    it stays Pending, unbound. The same pod for the default scheduler is placed on the pool's node
    at once: Volcano's scheduler is the one missing piece."""
    from kubernetes import client, dynamic

    from tests.support.kube import gang_kinds_served

    api_client = cluster.client()
    core = client.CoreV1Api(api_client)
    wait_for("the node Ready and untainted", lambda: _ready(core), timeout=180, every=2)
    namespace = "gang"
    _gang_namespace(api_client, namespace)
    plan = _gang_plan(namespace)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    objects = render_plan(plan_file, "--only", "jobs")
    assert [o["kind"] for o in objects] == ["PersistentVolumeClaim", "PodGroup", "PyTorchJob"]
    _claim_volume(core, namespace, tmp_path / "spool")
    core.create_namespaced_persistent_volume_claim(namespace, objects[0])
    dyn = dynamic.DynamicClient(
        wait_for("CRDs served", lambda: gang_kinds_served(api_client), timeout=60)
    )
    for obj in objects[1:]:
        dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"]).create(
            body=obj, namespace=namespace
        )
    master = objects[2]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    core.create_namespaced_pod(
        namespace,
        {"metadata": {"name": "gang-master-0", **master["metadata"]}, "spec": master["spec"]},
    )
    time.sleep(15)  # kube-scheduler schedules a pod it owns within a second here
    seen = core.read_namespaced_pod("gang-master-0", namespace)
    assert seen.spec.scheduler_name == "volcano" and seen.spec.node_name is None
    assert seen.status.phase == "Pending"
    assert not core.list_namespaced_pod(
        namespace, label_selector="training.kubeflow.org/job-name"
    ).items

    spec = {**master["spec"], "schedulerName": "default-scheduler"}
    core.create_namespaced_pod(
        namespace, {"metadata": {"name": "gang-master-default", **master["metadata"]}, "spec": spec}
    )
    placed = wait_for(
        "kube-scheduler to place the same pod",
        lambda: core.read_namespaced_pod("gang-master-default", namespace).spec.node_name,
        timeout=60,
    )
    core.delete_namespaced_pod("gang-master-default", namespace, grace_period_seconds=0)
    assert placed == NODE
