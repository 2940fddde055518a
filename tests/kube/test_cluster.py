"""Against a REAL kube-apiserver + etcd: apply deploy/, submit a plan, watch its Jobs, record
failures; list nodes labelled like GPU feature discovery does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from stack_advisor.collectors.executors.kubernetes import (
    ClusterError,
    KubernetesExecutor,
    submit_plan,
)
from stack_advisor.collectors.plan import expand_plan, parse_plan
from tests.support.control_plane import ControlPlane
from tests.support.gfd_nodes import A100_BARE_METAL, ALL_NODES, L4_VGPU
from tests.support.kube import REPO, kustomize_build
from tests.support.stand_in import JobDriver, KubeletLogs

pytestmark = pytest.mark.kube
NAMESPACE = "stack-advisor"
OOM_LOG = "".join(f"step {i}\n" for i in range(80)) + "RuntimeError: CUDA error: out of memory\n"


def _plan(**changes: Any) -> dict[str, Any]:
    plan = {
        "name": "kube-test",
        "namespace": NAMESPACE,
        "images": [
            {
                "name": "torch-2-5",
                "image": "ghcr.io/stack-advisor/collector:torch2.5.1-cuda12.4.1",
                "stack": {
                    "cuda": "12.4.1",
                    "cudnn": "9.1.0",
                    "framework": "torch",
                    "framework_version": "2.5.1",
                },
            }
        ],
        "pools": [
            {
                "name": "a100",
                "selector": {"stack-advisor.io/pool": "a100-bm"},
                "placement": "bare-metal",
                "accelerator": {"model": "NVIDIA-A100-SXM4-80GB", "count": 8},
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                ],
                "concurrency": 1,
            }
        ],
        "benchmarks": [
            {"name": "pi-quick", "runner": "pi", "profile": "quick"},
            {
                "name": "loadgen-offline",
                "runner": "loadgen",
                "profile": "quick",
                "options": {"scenario": "Offline"},
            },
        ],
        "repeats": 1,
        "job": {"active_deadline_seconds": 600},
    }
    plan.update(changes)
    return plan


def _outcome(job: dict[str, Any]) -> tuple[int, str]:
    """pi succeeds; loadgen runs out of GPU memory (exit code 3)."""
    if job["metadata"]["labels"]["stack-advisor.io/benchmark"] == "loadgen-offline":
        return 3, OOM_LOG
    return 0, "done\n"


@pytest.fixture(scope="module")
def kubelet(control_plane: ControlPlane) -> Iterator[KubeletLogs]:
    server = KubeletLogs(control_plane.workdir / "pki")
    yield server
    server.close()


@pytest.fixture(scope="module")
def cluster(
    control_plane: ControlPlane,
    api_client: Any,
    kustomize: list[str],
    overlay_tree: Path,
    kubelet: KubeletLogs,
) -> Any:
    """deploy/overlays/example server-side applied, and the GFD-labelled nodes registered."""
    from kubernetes import client, dynamic

    dyn = dynamic.DynamicClient(api_client)
    objects = [
        o
        for o in yaml.safe_load_all(
            kustomize_build(kustomize, overlay_tree / "overlays" / "example")
        )
        if o
    ]
    objects.sort(key=lambda o: o["kind"] != "Namespace")
    for obj in objects:
        resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        resource.server_side_apply(
            body=obj,
            name=obj["metadata"]["name"],
            namespace=obj["metadata"].get("namespace"),
            field_manager="stack-advisor-tests",
        )
    core = client.CoreV1Api(api_client)
    for node in ALL_NODES:
        created = {k: v for k, v in node.items() if k != "status"}
        core.create_node(created)
        status = {
            **node["status"],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}},
        }
        core.patch_node_status(node["metadata"]["name"], {"status": status})
    return objects


def test_deploy_objects_are_accepted_by_the_apiserver(
    cluster: list[dict[str, Any]], api_client: Any
) -> None:
    from kubernetes import client

    apps, batch, rbac = (
        client.AppsV1Api(api_client),
        client.BatchV1Api(api_client),
        client.RbacAuthorizationV1Api(api_client),
    )
    api = apps.read_namespaced_deployment("stack-advisor-api", NAMESPACE)
    container = api.spec.template.spec.containers[0]
    assert container.readiness_probe.http_get.path == "/readyz"
    assert container.security_context.read_only_root_filesystem is True
    neo4j = apps.read_namespaced_stateful_set("stack-advisor-neo4j", NAMESPACE)
    assert neo4j.spec.volume_claim_templates[0].spec.resources.requests["storage"] == "50Gi"
    cron = batch.read_namespaced_cron_job("sa-weekly-gpu", NAMESPACE)
    assert cron.spec.schedule == "0 3 * * 0"
    assert cron.spec.job_template.spec.template.spec.service_account_name == "stack-advisor-planner"
    role = rbac.read_namespaced_role("stack-advisor-planner", NAMESPACE)
    assert {r for rule in role.rules for r in rule.resources} == {
        "jobs",
        "pods",
        "pods/log",
        "persistentvolumeclaims",
    }
    # The planner may do what `plan submit` needs in its namespace, and nothing cluster-wide.
    authz = client.AuthorizationV1Api(api_client)
    planner = "system:serviceaccount:stack-advisor:stack-advisor-planner"

    def allowed(verb: str, resource: str, namespace: str | None, sub: str | None = None) -> bool:
        review = authz.create_subject_access_review(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": planner,
                    "groups": ["system:serviceaccounts"],
                    "resourceAttributes": {
                        "verb": verb,
                        "resource": resource,
                        "subresource": sub,
                        "namespace": namespace,
                        "group": "batch" if resource == "jobs" else "",
                    },
                },
            }
        )
        return bool(review.status.allowed)

    assert allowed("create", "jobs", NAMESPACE) and allowed("get", "pods", NAMESPACE, "log")
    assert not allowed("create", "jobs", "default") and not allowed("list", "nodes", None)


def test_nodes_list_parses_gfd_labels(cluster: Any, control_plane: ControlPlane) -> None:
    result = CliRunner().invoke(
        app, ["nodes", "list", "--kubeconfig", str(control_plane.kubeconfig), "--json"]
    )
    assert result.exit_code == 0, result.output
    nodes = {n["name"]: n for n in json.loads(result.stdout)}
    assert set(nodes) == {n["metadata"]["name"] for n in ALL_NODES}
    a100 = nodes["gpu-a100-0"]
    assert (
        a100["accelerator"]["model"] == "NVIDIA-A100-SXM4-80GB"
        and a100["accelerator"]["count"] == 8
    )
    assert a100["driver"] == "550.54.15" and a100["placement"]["kind"] == "bare-metal"
    assert a100["allocatable_gpus"] == 8 and a100["ready"] is True
    assert nodes["vm-l4-0"]["placement"]["kind"] == "vgpu"
    assert (
        nodes["vm-t4-0"]["placement"]["kind"] == "passthrough"
        and nodes["vm-t4-0"]["driver"] == "470.82.01"
    )
    assert nodes["cpu-0"]["placement"]["kind"] == "unknown"
    selected = CliRunner().invoke(
        app,
        [
            "nodes",
            "list",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--json",
            "-l",
            "nvidia.com/vgpu.present=true",
        ],
    )
    assert [n["name"] for n in json.loads(selected.stdout)] == [L4_VGPU["metadata"]["name"]]


def test_submit_watches_jobs_and_records_failures(
    cluster: Any, control_plane: ControlPlane, api_client: Any, kubelet: KubeletLogs
) -> None:
    from kubernetes import client, config

    plan = parse_plan(_plan())
    cells = expand_plan(plan)
    recorded: list[Any] = []
    executor = KubernetesExecutor(api_client, NAMESPACE)
    driver_client = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    node = A100_BARE_METAL["metadata"]["name"]
    with JobDriver(
        driver_client,
        NAMESPACE,
        node,
        _outcome,
        kubelet,
        selector="stack-advisor.io/plan=kube-test",
        controller=control_plane.has_job_controller,
    ) as driver:
        outcomes = submit_plan(
            plan,
            cells,
            executor,
            record=recorded.extend,
            poll_seconds=1,
            timeout_seconds=120,
            submission="t1",
        )
    assert not driver.errors, driver.errors
    assert driver.max_active == 1  # the pool's concurrency
    status = {o.cell.benchmark.name: o for o in outcomes}
    assert status["pi-quick"].status == "done"
    assert status["loadgen-offline"].status == "failed"
    assert "BackoffLimitExceeded" in (status["loadgen-offline"].reason or "")

    (failure,) = recorded
    assert failure.stage == "run" and failure.error_class == "Error"
    assert "exited with code 3" in failure.message
    assert failure.log_tail is not None and failure.log_tail.endswith(
        "RuntimeError: CUDA error: out of memory\n"
    )
    assert len(failure.log_tail.splitlines()) == 50  # the tail, through the apiserver's pods/log
    assert failure.host is not None and failure.host.name == node
    assert (
        failure.accelerator.model == "NVIDIA-A100-SXM4-80GB"
        and failure.placement.kind.value == "bare-metal"
    )
    assert (failure.stack.cuda, failure.stack.framework_version) == ("12.4.1", "2.5.1")
    assert failure.benchmark is not None and failure.benchmark.family == "mlperf"
    assert failure.run_id == f"{status['loadgen-offline'].job}-r0"

    # The Jobs as the apiserver stored them: selectors, resources, security settings.
    batch = client.BatchV1Api(api_client)
    jobs = batch.list_namespaced_job(
        NAMESPACE, label_selector="stack-advisor.io/submission=t1"
    ).items
    assert len(jobs) == 2
    for job in jobs:
        assert (
            job.spec.selector.match_labels["batch.kubernetes.io/controller-uid"] == job.metadata.uid
        )
        pod = job.spec.template.spec
        assert pod.node_selector == {"stack-advisor.io/pool": "a100-bm"}
        assert pod.tolerations[0].key == "nvidia.com/gpu"
        (c,) = pod.containers
        assert c.resources.limits["nvidia.com/gpu"] == "1"
        assert c.security_context.allow_privilege_escalation is False
        assert c.security_context.capabilities.drop == ["ALL"]
        assert pod.security_context.run_as_non_root is True
        assert pod.security_context.seccomp_profile.type == "RuntimeDefault"
        assert job.spec.backoff_limit == 0 and job.spec.active_deadline_seconds == 600
        assert job.metadata.labels["stack-advisor.io/plan"] == "kube-test"


def test_distributed_cell_without_the_operator_is_a_clear_error(
    cluster: Any, api_client: Any
) -> None:
    """Runs before the CRDs are installed (below). The Job cell comes first in the plan, yet
    nothing is created: every object is dry-run first."""
    from kubernetes import client

    plan = parse_plan(
        _plan(
            name="kube-nocrd",
            benchmarks=[
                {"name": "pi-quick", "runner": "pi"},
                {"name": "allreduce-2x", "runner": "allreduce", "workers": 2},
            ],
        )
    )
    with pytest.raises(ClusterError, match="PyTorchJob is not served by this cluster"):
        submit_plan(
            plan,
            expand_plan(plan),
            KubernetesExecutor(api_client, NAMESPACE),
            poll_seconds=1,
            timeout_seconds=30,
            submission="t2",
        )
    jobs = client.BatchV1Api(api_client).list_namespaced_job(
        NAMESPACE, label_selector="stack-advisor.io/plan=kube-nocrd"
    )
    assert jobs.items == []


def test_cli_submit_records_failures_and_skips_observed_cells(
    cluster: Any, control_plane: ControlPlane, kubelet: KubeletLogs, tmp_path: Path
) -> None:
    from kubernetes import config

    from stack_advisor.schema.models import EntityKind, Observation, Provenance, SourceKind
    from stack_advisor.store import registry

    plan = parse_plan(_plan(name="kube-cli"))
    pi_cell = next(c for c in expand_plan(plan) if c.benchmark.runner == "pi")
    uri = f"embedded:{tmp_path / 'kb'}"
    with registry.open_store(uri) as store:
        store.ensure_schema()
        # A prior observation of the pi cell (fixture data), so --skip-observed skips it.
        store.ingest_observations(
            [
                Observation(
                    stack=pi_cell.stack(),
                    accelerator=pi_cell.pool.accelerator_model(),
                    placement={"kind": "bare-metal"},
                    run_id="earlier-run",
                    provenance=Provenance(kind=SourceKind.MEASURED, source="test-fixture"),
                    benchmark={"family": "pi", "name": "gemm-fp32", "parameters": {}},
                    metric="throughput",
                    value=1.0,
                    unit="GFLOP/s",
                )
            ]
        )
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(_plan(name="kube-cli")))
    driver_client = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    with JobDriver(
        driver_client,
        NAMESPACE,
        "gpu-a100-0",
        _outcome,
        kubelet,
        selector="stack-advisor.io/plan=kube-cli",
        controller=control_plane.has_job_controller,
    ):
        result = CliRunner().invoke(
            app,
            [
                "plan",
                "submit",
                str(path),
                "--kubeconfig",
                str(control_plane.kubeconfig),
                "--store",
                uri,
                "--skip-observed",
                "--poll",
                "1",
                "--timeout",
                "120",
                "--json",
            ],
        )
    assert result.exit_code == 1 and result.stdout, (
        result.output,
        result.exception,
    )  # one cell failed
    rows = {r["benchmark"]: r for r in json.loads(result.stdout)}
    assert rows["pi-quick"]["status"] == "skipped"
    assert (
        rows["loadgen-offline"]["status"] == "failed"
        and rows["loadgen-offline"]["failures_recorded"] == 1
    )
    with registry.open_store(uri) as store:
        failures = store.list_entities(EntityKind.FAILURES)
    assert len(failures) == 1 and "exited with code 3" in failures[0]["message"]


def test_nodes_pools_names_the_pools_that_fit(cluster: Any, control_plane: ControlPlane) -> None:
    kubeconfig = str(control_plane.kubeconfig)
    result = CliRunner().invoke(
        app,
        [
            "nodes",
            "pools",
            "--kubeconfig",
            kubeconfig,
            "--placement",
            "bare-metal",
            "--min-driver",
            "545",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    (pool,) = json.loads(result.stdout)
    assert pool["pool"] == "a100-bm" and pool["node_selector"] == {
        "stack-advisor.io/pool": "a100-bm"
    }
    assert pool["drivers"] == ["550.54.15"] and pool["gpus_per_node"] == 8
    bad = CliRunner().invoke(
        app, ["nodes", "pools", "--kubeconfig", kubeconfig, "--placement", "vm"]
    )
    assert bad.exit_code != 0


def test_nodes_sync_into_the_store(
    cluster: Any, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """With a store that keeps an inventory the nodes round-trip; one that does not yet says so
    (naming its class) and exits 1 instead of pretending."""
    from stack_advisor.store import registry

    uri = f"embedded:{tmp_path / 'kb'}"
    result = CliRunner().invoke(
        app,
        [
            "nodes",
            "sync",
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--store",
            uri,
            "--cluster",
            "test",
            "--json",
        ],
    )
    with registry.open_store(uri) as store:
        try:
            stored = store.list_inventory("test")
        except NotImplementedError:
            assert result.exit_code == 1
            assert "does not keep a node inventory" in str(result.exception)
            return
    assert result.exit_code == 0, result.output
    assert {n["name"] for n in stored} == {n["metadata"]["name"] for n in ALL_NODES}


def _crd(group: str, version: str, kind: str, plural: str) -> dict[str, Any]:
    """A structural-minimum CRD (the operators' own CRDs carry full schemas; the apiserver only
    needs to serve the kind for `plan submit` to create and watch it)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def test_distributed_cell_creates_podgroup_and_pytorchjob(cluster: Any, api_client: Any) -> None:
    import threading
    import time

    from kubernetes import client

    ext = client.ApiextensionsV1Api(api_client)
    for crd in (
        _crd("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs"),
        _crd("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups"),
    ):
        ext.create_custom_resource_definition(crd)
    custom = client.CustomObjectsApi(api_client)
    deadline = time.monotonic() + 30
    while True:  # wait until the new kinds are served
        try:
            custom.list_namespaced_custom_object("kubeflow.org", "v1", NAMESPACE, "pytorchjobs")
            custom.list_namespaced_custom_object(
                "scheduling.volcano.sh", "v1beta1", NAMESPACE, "podgroups"
            )
            break
        except client.exceptions.ApiException:
            assert time.monotonic() < deadline, "CRDs not served after 30s"
            time.sleep(0.5)

    plan = parse_plan(
        _plan(
            name="kube-dist",
            pools=[{**_plan()["pools"][0], "gang_scheduling": True}],
            benchmarks=[{"name": "allreduce-4x", "runner": "allreduce", "workers": 4, "gpus": 2}],
        )
    )

    def operator() -> None:
        """Plays the training operator: marks the PyTorchJob Succeeded once it exists."""
        for _ in range(100):
            items = custom.list_namespaced_custom_object(
                "kubeflow.org",
                "v1",
                NAMESPACE,
                "pytorchjobs",
                label_selector="stack-advisor.io/plan=kube-dist",
            )["items"]
            if items:
                name = items[0]["metadata"]["name"]
                custom.patch_namespaced_custom_object_status(
                    "kubeflow.org",
                    "v1",
                    NAMESPACE,
                    "pytorchjobs",
                    name,
                    {
                        "status": {
                            "conditions": [
                                {
                                    "type": "Succeeded",
                                    "status": "True",
                                    "reason": "PyTorchJobSucceeded",
                                }
                            ]
                        }
                    },
                )
                return
            time.sleep(0.2)

    thread = threading.Thread(target=operator, daemon=True)
    thread.start()
    (outcome,) = submit_plan(
        plan,
        expand_plan(plan),
        KubernetesExecutor(api_client, NAMESPACE),
        poll_seconds=1,
        timeout_seconds=60,
        submission="t3",
    )
    thread.join(timeout=10)
    assert outcome.status == "done" and outcome.kind == "PyTorchJob"
    group = custom.get_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", NAMESPACE, "podgroups", outcome.job
    )
    assert group["spec"]["minMember"] == 4 and group["spec"]["minResources"] == {
        "nvidia.com/gpu": "8"
    }
    job = custom.get_namespaced_custom_object(
        "kubeflow.org", "v1", NAMESPACE, "pytorchjobs", outcome.job
    )
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 3
    assert (
        worker["template"]["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == outcome.job
    )
    assert job["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 4}


def test_a_plan_the_cluster_cannot_take_starts_nothing(cluster: Any, api_client: Any) -> None:
    """A missing namespace is caught by the dry run before any Job exists."""
    from kubernetes import client

    plan = parse_plan(_plan(name="kube-nons", namespace="does-not-exist"))
    with pytest.raises(ClusterError, match='namespaces "does-not-exist" not found'):
        submit_plan(
            plan,
            expand_plan(plan),
            KubernetesExecutor(api_client, "does-not-exist"),
            poll_seconds=1,
            timeout_seconds=30,
            submission="t4",
        )
    jobs = client.BatchV1Api(api_client).list_job_for_all_namespaces(
        label_selector="stack-advisor.io/plan=kube-nons"
    )
    assert jobs.items == []


def test_every_workload_passes_restricted_pod_security(
    cluster: list[dict[str, Any]], api_client: Any
) -> None:
    """The namespace enforces the restricted Pod Security Standard; the apiserver's PodSecurity
    admission judges a pod made from each workload's template (a dry run: nothing is stored)."""
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    plan = parse_plan(yaml.safe_load((REPO / "deploy" / "plans" / "sample-plan.yaml").read_text()))
    from stack_advisor.collectors.plan.render import render_plan

    templates: dict[str, dict[str, Any]] = {}
    for obj in [*cluster, *render_plan(plan, expand_plan(plan))]:
        spec = obj.get("spec") or {}
        if obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            template = json.loads(json.dumps(spec["template"]))
            for claim in spec.get(
                "volumeClaimTemplates", []
            ):  # as the StatefulSet controller adds them
                name = claim["metadata"]["name"]
                template["spec"].setdefault("volumes", []).append(
                    {
                        "name": name,
                        "persistentVolumeClaim": {
                            "claimName": f"{name}-{obj['metadata']['name']}-0"
                        },
                    }
                )
            templates[f"{obj['kind']}/{obj['metadata']['name']}"] = template
        elif obj["kind"] == "CronJob":
            templates[f"CronJob/{obj['metadata']['name']}"] = spec["jobTemplate"]["spec"][
                "template"
            ]
        elif obj["kind"] in ("PyTorchJob", "MPIJob"):
            replicas = spec.get("pytorchReplicaSpecs") or spec.get("mpiReplicaSpecs")
            for role, replica in replicas.items():
                templates[f"{obj['kind']}/{obj['metadata']['name']}/{role}"] = replica["template"]
    assert {
        "Deployment/stack-advisor-api",
        "StatefulSet/stack-advisor-neo4j",
        "CronJob/sa-weekly-gpu",
    } <= set(templates)
    for where, template in templates.items():
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": "psa-check-",
                "labels": template["metadata"].get("labels", {}),
            },
            "spec": template["spec"],
        }
        try:
            core.create_namespaced_pod(NAMESPACE, pod, dry_run="All")
        except client.exceptions.ApiException as exc:
            pytest.fail(f"{where} is refused: {json.loads(exc.body).get('message')}")
    # The control: the same check refuses a pod without the restricted settings.
    bare = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "psa-check-"},
        "spec": {
            "serviceAccountName": "stack-advisor-collector",
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }
    with pytest.raises(client.exceptions.ApiException) as refused:
        core.create_namespaced_pod(NAMESPACE, bare, dry_run="All")
    assert "violates PodSecurity" in json.loads(refused.value.body)["message"]


def test_cli_dry_run_validates_on_the_server_and_creates_nothing(
    cluster: Any, control_plane: ControlPlane, api_client: Any, tmp_path: Path
) -> None:
    from kubernetes import client

    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(_plan(name="kube-dry")))
    result = CliRunner().invoke(
        app,
        [
            "plan",
            "submit",
            str(path),
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--store",
            f"embedded:{tmp_path / 'kb'}",
            "--dry-run",
            "--json",
        ],
    )
    assert result.exit_code == 0, (result.output, result.exception)
    assert [r["benchmark"] for r in json.loads(result.stdout)] == ["pi-quick", "loadgen-offline"]
    jobs = client.BatchV1Api(api_client).list_namespaced_job(
        NAMESPACE, label_selector="stack-advisor.io/plan=kube-dry"
    )
    assert jobs.items == []


def test_repeats_run_one_pod_per_completion_index(
    cluster: Any, control_plane: ControlPlane, api_client: Any, kubelet: KubeletLogs
) -> None:
    """With kube-controller-manager's Job controller: repeats are Indexed completions, run one
    after another, each its own run id; a repeat that fails fails the cell (backoffLimit 0)."""
    if not control_plane.has_job_controller:
        pytest.skip("kube-controller-manager is not built (deploy/kube-local/build.sh builds it)")
    from kubernetes import client, config

    plan = parse_plan(_plan(name="kube-rep", repeats=3))
    recorded: list[Any] = []
    driver_client = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    with JobDriver(
        driver_client,
        NAMESPACE,
        "gpu-a100-0",
        _outcome,
        kubelet,
        selector="stack-advisor.io/plan=kube-rep",
        controller=True,
    ) as driver:
        outcomes = submit_plan(
            plan,
            expand_plan(plan),
            KubernetesExecutor(api_client, NAMESPACE),
            record=recorded.extend,
            poll_seconds=1,
            timeout_seconds=180,
            submission="t5",
        )
    assert not driver.errors, driver.errors
    status = {o.cell.benchmark.name: o for o in outcomes}
    assert status["pi-quick"].status == "done" and status["loadgen-offline"].status == "failed"
    core = client.CoreV1Api(api_client)
    pi_pods = core.list_namespaced_pod(
        NAMESPACE, label_selector=f"batch.kubernetes.io/job-name={status['pi-quick'].job}"
    )
    indexes = sorted(
        p.metadata.annotations["batch.kubernetes.io/job-completion-index"] for p in pi_pods.items
    )
    assert indexes == ["0", "1", "2"]  # three repeats, made by the real Job controller
    for pod in pi_pods.items:  # the pods carry what the collector needs to name its run
        env = {e.name: e for e in pod.spec.containers[0].env}
        assert env["JOB_COMPLETION_INDEX"].value_from.field_ref.field_path.endswith(
            "job-completion-index']"
        )
        assert pod.metadata.labels["batch.kubernetes.io/job-name"] == status["pi-quick"].job
    (failure,) = recorded  # the first failed repeat ends the cell
    assert (
        failure.run_id == f"{status['loadgen-offline'].job}-r0"
        and "exited with code 3" in failure.message
    )


def test_cli_timeout_says_where_the_running_jobs_are(
    cluster: Any, control_plane: ControlPlane, tmp_path: Path
) -> None:
    """Nobody runs the pods here, so the Jobs stay active past --timeout."""
    path = tmp_path / "plan.yaml"
    path.write_text(
        yaml.safe_dump(_plan(name="kube-slow", benchmarks=[{"name": "pi-quick", "runner": "pi"}]))
    )
    result = CliRunner().invoke(
        app,
        [
            "plan",
            "submit",
            str(path),
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "--store",
            f"embedded:{tmp_path / 'kb'}",
            "--poll",
            "1",
            "--timeout",
            "2",
        ],
    )
    assert result.exit_code == 1
    said = " ".join(result.output.split())  # Rich wraps long lines
    assert "still running after 2.0s" in said
    assert "kubectl -n stack-advisor get jobs -l stack-advisor.io/submission=" in said


def _as_planner(control_plane: ControlPlane) -> Any:
    """An API client that impersonates the planner's service account."""
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    client.set_default_header(
        "Impersonate-User", "system:serviceaccount:stack-advisor:stack-advisor-planner"
    )
    client.set_default_header("Impersonate-Group", "system:serviceaccounts")
    return client


def _job(
    name: str, *, secret: str, service_account: str = "stack-advisor-collector"
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": service_account,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 65532,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "c",
                            "image": "ghcr.io/stack-advisor/collector:x",
                            "env": [
                                {
                                    "name": "ADVISOR_TOKEN",
                                    "valueFrom": {"secretKeyRef": {"name": secret, "key": "token"}},
                                }
                            ],
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                }
            }
        },
    }


def test_the_planner_can_create_only_collector_jobs(
    cluster: Any, control_plane: ControlPlane
) -> None:
    """RBAC lets the planner create Jobs; the ValidatingAdmissionPolicy keeps those Jobs from
    mounting any Secret but the collectors' token or running as another service account, and
    the planner cannot read Secrets itself (all server-side dry runs: nothing is stored)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    planner = _as_planner(control_plane)
    try:
        batch, core = client.BatchV1Api(planner), client.CoreV1Api(planner)
        batch.create_namespaced_job(
            NAMESPACE, _job("ok", secret="stack-advisor-collector-token"), dry_run="All"
        )
        for name, job in (
            ("tokens", _job("steal", secret="stack-advisor-api-tokens")),
            ("neo4j", _job("steal", secret="stack-advisor-neo4j-auth")),
            (
                "sa",
                _job(
                    "steal",
                    secret="stack-advisor-collector-token",
                    service_account="stack-advisor-planner",
                ),
            ),
        ):
            with pytest.raises(ApiException) as err:
                batch.create_namespaced_job(NAMESPACE, job, dry_run="All")
            assert err.value.status in (403, 422), name
            assert (
                "stack-advisor-planner-jobs" in err.value.body or "planner Jobs" in err.value.body
            ), name
        with pytest.raises(ApiException) as err:
            core.read_namespaced_secret("stack-advisor-api-tokens", NAMESPACE)
        assert err.value.status == 403
    finally:
        planner.close()


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj["spec"]
    template = (
        spec["jobTemplate"]["spec"]["template"] if "jobTemplate" in spec else spec["template"]
    )
    return template["spec"]


def test_placeholder_digests_are_refused_saying_how_to_pin(
    cluster: list[dict[str, Any]], api_client: Any
) -> None:
    """The example overlay's all-zero digests, applied as they ship, are refused by the
    stack-advisor-pinned-images policy, naming the image and how to pin it; the same objects
    pinned are admitted (server-side apply dry runs: nothing is stored)."""
    import copy
    import time

    from kubernetes import dynamic
    from kubernetes.client.exceptions import ApiException

    from tests.support.kube import PLACEHOLDER_DIGEST

    example = yaml.safe_load(
        (REPO / "deploy" / "overlays" / "example" / "kustomization.yaml").read_text()
    )
    assert {i["digest"] for i in example["images"]} == {PLACEHOLDER_DIGEST}  # as shipped in git
    dyn = dynamic.DynamicClient(api_client)
    for kind, name in (
        ("Deployment", "stack-advisor-api"),
        ("StatefulSet", "stack-advisor-neo4j"),
        ("CronJob", "sa-weekly-gpu"),
    ):
        pinned = next(o for o in cluster if o["kind"] == kind and o["metadata"]["name"] == name)
        resource = dyn.resources.get(api_version=pinned["apiVersion"], kind=kind)

        def apply(obj: dict[str, Any], resource: Any = resource) -> None:
            resource.server_side_apply(
                body=obj,
                name=obj["metadata"]["name"],
                namespace=NAMESPACE,
                field_manager="stack-advisor-tests",
                dry_run="All",
            )

        apply(pinned)
        placeholder = copy.deepcopy(pinned)
        container = _pod_spec(placeholder)["containers"][0]
        image = container["image"].split("@")[0]
        assert "@sha256:" in _pod_spec(pinned)["containers"][0]["image"]
        container["image"] = f"{image}@{PLACEHOLDER_DIGEST}"
        deadline = time.monotonic() + 20  # the apiserver loads a new policy within a second or so
        while True:
            try:
                apply(placeholder)
            except ApiException as exc:
                message = json.loads(exc.body)["message"]
                break
            assert time.monotonic() < deadline, f"{kind} with a placeholder digest was admitted"
            time.sleep(0.5)
        assert "stack-advisor-pinned-images" in message, message
        assert f"image {image}@{PLACEHOLDER_DIGEST} is pinned by a placeholder digest" in message
        assert "imagetools inspect" in message, message
