"""deploy/base as pods on the real kubelet (deploy/overlays/test-tier; docs/deploy.md, "deploy/base
as pods"): the Neo4j StatefulSet, the API Deployment behind its Service, and the collector CronJob
delivering through that Service; an API pod killed while a collector's POST is in flight loses
nothing and stores nothing twice; a refused delivery fails its Job; a snippet the advisor writes
runs to completion on the node.

No kube-proxy and no cluster DNS here: tests/support/service_proxy.py writes the DNAT rules
kube-proxy would from the Services' EndpointSlices, and the overlay names the Services by their
pinned ClusterIPs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from tests.support.containers import Images
from tests.support.deploy_tier import (
    API_URL,
    NAMESPACE,
    NEO4J_IP,
    Credentials,
    container_id,
    create_all,
    established,
    hex_to_address,
    new_credentials,
    overlay_objects,
    secret_objects,
    task_pid,
    volume_objects,
)
from tests.support.docker_node import wait_for
from tests.support.kubelet_cluster import (
    Cluster,
    default_service_account,
    finished_pod,
    ready_node,
)
from tests.support.service_proxy import ServiceProxy

pytestmark = [pytest.mark.containers, pytest.mark.kube, pytest.mark.neo4j, pytest.mark.slow]
COLLECTOR = "app.kubernetes.io/component=collector"
API_PODS = "app.kubernetes.io/component=api"


@dataclass
class Deployed:
    cluster: Cluster
    creds: Credentials
    work: Path
    api_client: Any
    images: Images


def _ready_counts(api_client: Any) -> tuple[int, int]:
    from kubernetes import client

    apps = client.AppsV1Api(api_client)
    neo4j = apps.read_namespaced_stateful_set("stack-advisor-neo4j", NAMESPACE).status
    api = apps.read_namespaced_deployment("stack-advisor-api", NAMESPACE).status
    return neo4j.ready_replicas or 0, api.ready_replicas or 0


def _scale_down(api_client: Any) -> None:
    """No garbage collector runs here: scaling to zero is what removes the pods."""
    from kubernetes import client

    apps = client.AppsV1Api(api_client)
    apps.patch_namespaced_deployment("stack-advisor-api", NAMESPACE, {"spec": {"replicas": 0}})
    apps.patch_namespaced_stateful_set("stack-advisor-neo4j", NAMESPACE, {"spec": {"replicas": 0}})


@pytest.fixture(scope="module")
def deployed(
    kubelet_cluster: Cluster, images: Images, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployed]:
    from kubernetes import client

    api_client = kubelet_cluster.client()
    core = client.CoreV1Api(api_client)
    wait_for("the node Ready and untainted", lambda: ready_node(core), timeout=180, every=2)
    work = tmp_path_factory.mktemp("deploy-base")
    creds = new_credentials()
    start = time.monotonic()
    create_all(api_client, volume_objects(work) + overlay_objects() + secret_objects(creds))
    proxy = ServiceProxy(api_client, NAMESPACE, f"SA-SVC-{kubelet_cluster.net.index}")
    proxy.start()
    try:
        wait_for(
            "Neo4j and both API pods ready", lambda: _ready_counts(api_client) == (1, 2), 420, 2
        )
    except AssertionError:
        proxy.stop()
        raise AssertionError(f"{_ready_counts(api_client)}\n{_logs(core)}") from None
    print(
        f"\n[deploy/base] applied -> Neo4j and 2 API pods ready: {time.monotonic() - start:.0f} s"
    )
    try:
        yield Deployed(kubelet_cluster, creds, work, api_client, images)
    finally:
        _scale_down(api_client)
        proxy.stop()


def _logs(core: Any, selector: str = "") -> str:
    out = []
    for pod in core.list_namespaced_pod(NAMESPACE, label_selector=selector).items:
        try:
            log = core.read_namespaced_pod_log(pod.metadata.name, NAMESPACE)[-2500:]
        except Exception as exc:  # the kubelet may not serve it: say why
            log = f"(no log: {exc})"
        out.append(f"--- {pod.metadata.name}: {pod.status.phase}\n{log}")
    return "\n".join(out)


def test_the_base_runs_as_pods_behind_its_services(deployed: Deployed) -> None:
    from kubernetes import client

    core = client.CoreV1Api(deployed.api_client)
    pods = core.list_namespaced_pod(NAMESPACE).items
    running = {p.metadata.labels["app.kubernetes.io/component"]: p for p in pods}
    neo4j = core.read_namespaced_pod("stack-advisor-neo4j-0", NAMESPACE)
    assert neo4j.spec.containers[0].image == "stack-advisor/debian-base:local"
    assert (
        neo4j.status.phase == "Running" and neo4j.spec.node_name == ready_node(core).metadata.name
    )
    assert set(running) >= {"neo4j", "api"}, running
    # through the API Service (its ClusterIP), the API answers ready: it reached Neo4j's Service
    ready = httpx.get(f"{API_URL}/readyz", timeout=10)
    assert ready.status_code == 200, ready.text
    refused = httpx.get(f"{API_URL}/v1/observations", timeout=10)
    assert refused.status_code == 401, refused.text  # reads need the read token in production
    import neo4j as driver

    auth = ("neo4j", deployed.creds.neo4j_password)
    with driver.GraphDatabase.driver(f"bolt://{NEO4J_IP}:7687", auth=auth) as db:
        records, _, _ = db.execute_query("CALL dbms.components() YIELD versions RETURN versions")
    assert records[0]["versions"] == ["5.26.0"] or records[0]["versions"][0].startswith("5.26")


# ---- the CronJob through the Service, an API pod killed mid-delivery
# ------------------------------------------------------------------------------------------------
def _job_from_cronjob(api_client: Any, suffix: str) -> str:
    """`kubectl create job --from=cronjob/sa-weekly-gpu`: a Job of the CronJob's template."""
    from kubernetes import client

    batch = client.BatchV1Api(api_client)
    cron = batch.read_namespaced_cron_job("sa-weekly-gpu", NAMESPACE)
    template = api_client.sanitize_for_serialization(cron.spec.job_template)
    name = f"sa-weekly-gpu-{suffix}"
    metadata = {"name": name, "labels": template["metadata"].get("labels", {})}
    batch.create_namespaced_job(NAMESPACE, {"metadata": metadata, "spec": template["spec"]})
    return name


def _collector_pods(core: Any, known: set[str]) -> list[Any]:
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=COLLECTOR).items
    return [p for p in pods if p.metadata.name not in known]


def _running(pod: Any) -> bool:
    statuses = pod.status.container_statuses or []
    return bool(statuses and statuses[0].state.running)


def _terminated(core: Any, name: str) -> Any:
    pod = core.read_namespaced_pod(name, NAMESPACE)
    statuses = pod.status.container_statuses or []
    return statuses[0].state.terminated if statuses and statuses[0].state.terminated else None


def _kill_the_api_pod_mid_post(deployed: Deployed, collector: Any) -> str:
    """Freeze both API pods, wait for the collector's POST to the Service to be in flight (an
    established connection, no answer), SIGKILL the API pod that holds it, thaw the other.
    Returns the killed pod's name."""
    from kubernetes import client

    node = deployed.cluster.node
    core = client.CoreV1Api(deployed.api_client)
    apis = {
        container_id(p): p.metadata.name
        for p in core.list_namespaced_pod(NAMESPACE, label_selector=API_PODS).items
    }
    for cid in apis:
        assert node.ctr("tasks", "pause", cid).returncode == 0
    try:
        pid = task_pid(node, container_id(collector))
        posting = wait_for(
            "the collector's POST in flight",
            lambda: established(pid, remote=("10.0.0.80", 8000)),
            timeout=240,
            every=0.2,
        )
        source = hex_to_address(posting[0][0])
        holders = [
            cid for cid in apis if established(task_pid(node, cid), remote=source, local_port=8000)
        ]
        assert len(holders) == 1, (source, holders)
        assert node.ctr("tasks", "kill", "-a", "-s", "SIGKILL", holders[0]).returncode == 0
    finally:
        for cid in apis:
            node.ctr("tasks", "resume", cid)
    return apis[holders[0]]


def _spooled(work: Path) -> list[Path]:
    return [p for p in (work / "spool").rglob("*.json") if "rejected" not in p.parts]


def _landed(creds: Credentials, run_id: str) -> tuple[int, int]:
    """(observations, distinct keys) stored for ``run_id``, read from Neo4j through its Service."""
    import neo4j as driver

    query = (
        "MATCH (o:Observation)-[:MEASURED_IN]->(c:Context {run_id: $run}) "
        "RETURN count(o) AS n, count(DISTINCT o.key) AS keys"
    )
    with driver.GraphDatabase.driver(
        f"bolt://{NEO4J_IP}:7687", auth=("neo4j", creds.neo4j_password)
    ) as db:
        records, _, _ = db.execute_query(query, run=run_id, database_="neo4j")
    return int(records[0]["n"]), int(records[0]["keys"])


def test_cronjob_delivers_through_the_service_and_a_killed_api_pod_loses_nothing(
    deployed: Deployed,
) -> None:
    from kubernetes import client

    core = client.CoreV1Api(deployed.api_client)
    start = time.monotonic()
    _job_from_cronjob(deployed.api_client, "first")
    first = wait_for(
        "the planner's collector pod running",
        lambda: [p for p in _collector_pods(core, set()) if _running(p)],
        300,
        0.5,
    )[0]
    killed = _kill_the_api_pod_mid_post(deployed, first)
    done = wait_for(
        "the first collector's exit", lambda: _terminated(core, first.metadata.name), 180
    )
    log = core.read_namespaced_pod_log(first.metadata.name, NAMESPACE)
    assert done.exit_code == 75 and "spooled" in log, (done, log[-3000:])
    files = _spooled(deployed.work)
    assert len(files) == 1, files
    document = json.loads(files[0].read_text())
    run_id, measured = document["run"]["run_id"], len(document["measurements"])
    assert _landed(deployed.creds, run_id) == (0, 0)  # nothing stored from the lost POST
    took = time.monotonic() - start
    print(f"\n[deploy/base] {killed} killed mid-POST; the collector exited 75 at {took:.0f} s")

    _job_from_cronjob(deployed.api_client, "second")
    second = wait_for(
        "the second collector's exit",
        lambda: [
            p
            for p in _collector_pods(core, {first.metadata.name})
            if _terminated(core, p.metadata.name)
        ],
        300,
        1,
    )[0]
    log = core.read_namespaced_pod_log(second.metadata.name, NAMESPACE)
    assert _terminated(core, second.metadata.name).exit_code == 0, log[-3000:]
    assert "spool: sent 1" in log and not _spooled(deployed.work), log[-3000:]
    assert _landed(deployed.creds, run_id) == (measured, measured)
    again = httpx.post(
        f"{API_URL}/v1/observations",
        json=document,
        headers={"Authorization": f"Bearer {deployed.creds.write}"},
        timeout=60,
    )
    assert again.status_code < 300 and again.json()["observations_new"] == 0, again.text
    assert _landed(deployed.creds, run_id) == (measured, measured)
    took = time.monotonic() - start
    print(f"[deploy/base] run {run_id}: {measured} observation(s) landed once ({took:.0f} s)")


# ---- a refused delivery fails its Job; a recommended snippet runs to completion
# ------------------------------------------------------------------------------------------------
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}
RESTRICTED_POD = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "runAsGroup": 65532,
    "seccompProfile": {"type": "RuntimeDefault"},
}


MEASURE = ["advisor", "collect", "--profile", "quick", "--option", "pis=mem_triad"]
# A document the API will never take (no run, no provenance, ...), left in the spool by an
# earlier run, then sent by `advisor collect --flush`.
FLUSH_INVALID = [
    "/bin/sh",
    "-c",
    "mkdir -p /tmp/state/stack-advisor/spool && "
    "echo '{\"document_version\": 1}' > /tmp/state/stack-advisor/spool/0001-invalid.json && "
    "exec advisor collect --flush",
]


def _collect_job(name: str, image: str, token: str, command: list[str] = MEASURE) -> dict[str, Any]:
    """A collector Job as the plan renders one, posting to the API Service with ``token``."""
    env = {
        "ADVISOR_API": API_URL,
        "ADVISOR_TOKEN": token,
        "HOME": "/tmp",
        "XDG_STATE_HOME": "/tmp/state",
    }
    container = {
        "name": "collector",
        "image": image,
        "imagePullPolicy": "Never",
        "command": command,
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
        "securityContext": RESTRICTED_CONTAINER,
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    spec = {
        "restartPolicy": "Never",
        "serviceAccountName": "stack-advisor-collector",
        "automountServiceAccountToken": False,
        "securityContext": RESTRICTED_POD,
        "containers": [container],
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}],
    }
    return {
        "metadata": {"name": name, "labels": {"app.kubernetes.io/component": "collector"}},
        "spec": {"backoffLimit": 0, "template": {"metadata": {}, "spec": spec}},
    }


def _job_failed(batch: Any, name: str) -> Any:
    job = batch.read_namespaced_job(name, NAMESPACE)
    conditions = {c.type: c.status for c in job.status.conditions or []}
    return (
        job if conditions.get("Failed") == "True" or conditions.get("Complete") == "True" else None
    )


def test_a_refused_delivery_fails_its_job(deployed: Deployed) -> None:
    """401 (an unknown token), 403 (a read-only token) and 422 (a spooled document the API will
    never take, sent by `advisor collect --flush`): the pod exits 1 with the reason, so the Job
    is Failed, not Succeeded with nothing stored."""
    from kubernetes import client

    batch = client.BatchV1Api(deployed.api_client)
    core = client.CoreV1Api(deployed.api_client)
    image = deployed.images.collector
    write = deployed.creds.write
    cases = {
        "refused-401": (
            "not-a-token",
            MEASURE,
            "delivery refused for 1 of 1 document(s): HTTP 401",
        ),
        "refused-403": (
            deployed.creds.read,
            MEASURE,
            "delivery refused for 1 of 1 document(s): HTTP 403",
        ),
        "refused-422": (write, FLUSH_INVALID, "0 document(s) still spooled, 1 rejected"),
    }
    for name, (token, command, _) in cases.items():
        batch.create_namespaced_job(NAMESPACE, _collect_job(name, image, token, command))
    for name, (_, _, reason) in cases.items():
        job = wait_for(f"Job {name} finished", lambda n=name: _job_failed(batch, n), 300, 2)
        pod = core.list_namespaced_pod(
            NAMESPACE, label_selector=f"batch.kubernetes.io/job-name={name}"
        ).items[0]
        log = core.read_namespaced_pod_log(pod.metadata.name, NAMESPACE)
        assert (job.status.failed, job.status.succeeded) == (1, None), (job.status, log[-2000:])
        assert pod.status.container_statuses[0].state.terminated.exit_code == 1, log[-2000:]
        assert reason in log and f"HTTP {name.rsplit('-', 1)[1]}" in log, log[-2000:]


def _recommended_pod(image: str, read_token: str) -> dict[str, Any]:
    """`advisor recommend --target pod --image IMAGE --json` against the deployed API."""
    result = CliRunner().invoke(
        app,
        [
            "--api",
            API_URL,
            "recommend",
            "--family",
            "pi",
            "--benchmark",
            "mem_triad",
            "--target",
            "pod",
            "--image",
            image,
            "--json",
        ],
        env={"ADVISOR_TOKEN": read_token},
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    rows = answer["recommendations"] if isinstance(answer, dict) else answer
    snippets = [r["snippet"] for r in rows if r.get("snippet")]
    assert snippets, json.dumps(answer, indent=1)[:4000]
    return dict(snippets[0])


def test_a_recommended_snippet_runs_to_completion(deployed: Deployed) -> None:
    """The Pod `advisor recommend --target pod` writes for the CPU row the collectors measured,
    created as written (in ``default``: it sets no securityContext, which the namespace's
    restricted standard would refuse): it names the image recorded with the stack and no
    command, so the image's own (``advisor collect --help``) runs. The same Pod with the
    benchmark's command, the one thing a user adds, measures on the node."""
    from kubernetes import client

    core = client.CoreV1Api(deployed.api_client)
    snippet = _recommended_pod(deployed.images.collector, deployed.creds.read)
    assert snippet["spec"]["containers"][0]["image"] == deployed.images.collector, snippet
    default_service_account(core)
    measuring = json.loads(json.dumps(snippet))
    measuring["metadata"]["name"] = snippet["metadata"]["name"] + "-measure"
    measuring["spec"]["containers"][0]["command"] = [
        "advisor",
        "collect",
        "--profile",
        "quick",
        "--option",
        "pis=mem_triad",
    ]
    for pod in (snippet, measuring):
        core.create_namespaced_pod("default", pod)
    for pod, expected in ((snippet, "Usage"), (measuring, "mem_triad")):
        name = pod["metadata"]["name"]
        done = finished_pod(core, name)
        log = core.read_namespaced_pod_log(name, "default")
        assert done.status.phase == "Succeeded", (done.status, log[-2000:])
        assert done.spec.node_name == ready_node(core).metadata.name
        assert expected in log, log[-2000:]
