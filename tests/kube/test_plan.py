"""Collection plans: validation errors, the cell matrix, and the rendered objects."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from stack_advisor.collectors.plan import expand_plan, load_plan, parse_plan
from stack_advisor.collectors.plan.model import LABEL_VALUE
from stack_advisor.collectors.plan.render import (
    LABEL_CELL,
    LABEL_PLAN,
    render_cell,
    render_plan,
    render_schedule,
)
from stack_advisor.schema.errors import InvalidInput

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "deploy" / "plans" / "sample-plan.yaml"


@pytest.fixture()
def sample() -> dict:
    return yaml.safe_load(SAMPLE.read_text())


def test_sample_plan_expands_to_image_pool_benchmark_matrix(sample: dict) -> None:
    plan = parse_plan(sample)
    cells = expand_plan(plan)
    assert (
        len(cells) == len(sample["images"]) * len(sample["pools"]) * len(sample["benchmarks"]) == 16
    )
    assert len({c.cell_id for c in cells}) == 16
    assert len({c.job_name for c in cells}) == 16
    for cell in cells:
        assert LABEL_VALUE.match(cell.cell_id) and len(cell.cell_id) <= 63
        assert len(cell.job_name) <= 52  # CronJob-safe
    first = cells[0]
    assert (first.image.name, first.pool.name, first.benchmark.name) == (
        "torch-2-5-cu124",
        "a100-bare-metal",
        "pi-quick",
    )
    stack = first.stack()
    assert (stack.cuda, stack.cudnn, stack.framework, stack.framework_version) == (
        "12.4.1",
        "9.1.0",
        "torch",
        "2.5.1",
    )
    assert stack.image == sample["images"][0]["image"]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda p: p["pools"][1].update(placement="vm"), r"pools\.1\.placement: .*'vm'"),
        (
            lambda p: p["benchmarks"][0].update(runner="linpack"),
            r"benchmarks\.0\.runner: .*unknown runner 'linpack'",
        ),
        (lambda p: p["benchmarks"][0].update(profile="huge"), r"benchmarks\.0\.profile: .*'huge'"),
        (lambda p: p.update(schedule="every sunday"), r"schedule: .*five fields"),
        (lambda p: p.update(repeats=0), r"repeats: .*greater than or equal to 1"),
        (
            lambda p: p["pools"][0]["selector"].update({"bad key!": "x"}),
            r"pools\.0\.selector: .*'bad key!'",
        ),
        (lambda p: p["images"][0].pop("image"), r"images\.0\.image: Field required"),
        (
            lambda p: p["images"].append(copy.deepcopy(p["images"][0])),
            r"images: name 'torch-2-5-cu124' appears twice",
        ),
        (
            lambda p: p["benchmarks"][0].update(workers=4),
            r"workers > 1 is only for the allreduce runner",
        ),
        (lambda p: p.update(colour="blue"), r"colour: Extra inputs are not permitted"),
        (lambda p: p.update(name="Weekly_GPU"), r"name: .*lower-case"),
    ],
)
def test_invalid_plans_name_the_field(sample: dict, mutate, expected: str) -> None:
    mutate(sample)
    with pytest.raises(InvalidInput) as err:
        parse_plan(sample, "sample.yaml")
    assert re.search(expected, str(err.value)), str(err.value)


def test_more_gpus_than_the_pool_has_is_an_error(sample: dict) -> None:
    sample["benchmarks"][0]["gpus"] = 2  # the L4 pool has one GPU per node
    with pytest.raises(
        InvalidInput, match=r"benchmarks\.pi-quick\.gpus is 2 but pool 'l4-vgpu' has 1"
    ):
        expand_plan(parse_plan(sample))


def test_unreadable_and_non_mapping_plans(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot read plan file"):
        load_plan(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(InvalidInput, match="must be a YAML mapping"):
        load_plan(bad)


def test_job_carries_command_env_placement_and_security(sample: dict) -> None:
    plan = parse_plan(sample)
    cell = next(
        c
        for c in expand_plan(plan)
        if c.benchmark.name == "cnn-resnet50" and c.pool.name == "l4-vgpu"
    )
    (job,) = render_cell(plan, cell)
    assert job["apiVersion"] == "batch/v1" and job["kind"] == "Job"
    assert job["metadata"]["labels"][LABEL_PLAN] == "weekly-gpu"
    assert job["metadata"]["labels"][LABEL_CELL] == cell.cell_id
    spec = job["spec"]
    assert (
        spec["completions"] == 3
        and spec["parallelism"] == 1
        and spec["completionMode"] == "Indexed"
    )
    assert spec["backoffLimit"] == 0 and spec["ttlSecondsAfterFinished"] == 86400
    assert spec["activeDeadlineSeconds"] == 3600 * 3
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {
        "nvidia.com/gpu.product": "NVIDIA-L4",
        "nvidia.com/vgpu.present": "true",
    }
    assert pod["tolerations"] == [
        {"operator": "Exists", "key": "nvidia.com/gpu", "effect": "NoSchedule"}
    ]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["command"] == [
        "advisor",
        "collect",
        "--benchmark",
        "cnn",
        "--profile",
        "quick",
        "--run-id",
        "$(JOB_NAME)-r$(JOB_COMPLETION_INDEX)",
        "--option",
        "batch_size=64",
        "--option",
        "model=resnet50",
    ]
    sc = container["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    env = {e["name"]: e for e in container["env"]}
    assert env["ADVISOR_API"]["value"] == "http://stack-advisor-api.stack-advisor.svc:8000"
    assert env["ADVISOR_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "stack-advisor-collector-token",
        "key": "token",
    }
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert (
        env["ADVISOR_IMAGE"]["value"] == cell.image.image
    )  # recorded with the stack, for snippets
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    # The annotation keeps the stack, so a failure can be recorded without the plan file.
    assert json.loads(job["metadata"]["annotations"]["stack-advisor.io/stack"])["cudnn"] == "9.1.0"


def test_cpu_pool_gets_no_gpu_limit(sample: dict) -> None:
    sample["pools"].append(
        {"name": "cpu", "selector": {"kubernetes.io/arch": "amd64"}, "placement": "bare-metal"}
    )
    plan = parse_plan(sample)
    cell = next(
        c for c in expand_plan(plan) if c.pool.name == "cpu" and not c.benchmark.distributed
    )
    (job,) = render_cell(plan, cell)
    resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert "nvidia.com/gpu" not in resources.get("limits", {})
    assert cell.row()["accelerator"] == "cpu"


def test_distributed_cell_renders_pytorchjob_and_gang_podgroup(sample: dict) -> None:
    plan = parse_plan(sample)
    cell = next(c for c in expand_plan(plan) if c.benchmark.distributed and c.pool.gang_scheduling)
    podgroup, pytorchjob = render_cell(plan, cell)
    assert (
        podgroup["apiVersion"] == "scheduling.volcano.sh/v1beta1" and podgroup["kind"] == "PodGroup"
    )
    assert podgroup["spec"]["minMember"] == 2
    assert podgroup["spec"]["minResources"] == {"nvidia.com/gpu": "2"}
    assert pytorchjob["apiVersion"] == "kubeflow.org/v1" and pytorchjob["kind"] == "PyTorchJob"
    replicas = pytorchjob["spec"]["pytorchReplicaSpecs"]
    assert replicas["Master"]["replicas"] == 1 and replicas["Worker"]["replicas"] == 1
    template = replicas["Worker"]["template"]
    assert template["spec"]["schedulerName"] == "volcano"
    assert (
        template["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        == podgroup["metadata"]["name"]
    )
    assert template["spec"]["containers"][0]["name"] == "pytorch"
    assert "workers=2" in template["spec"]["containers"][0]["command"]
    # Without gang scheduling: no PodGroup, no Volcano scheduler.
    other = next(
        c for c in expand_plan(plan) if c.benchmark.distributed and not c.pool.gang_scheduling
    )
    (only,) = render_cell(plan, other)
    assert only["kind"] == "PyTorchJob"
    assert "schedulerName" not in only["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]


def test_mpijob_variant(sample: dict) -> None:
    sample["benchmarks"][3]["distributed_kind"] = "MPIJob"
    plan = parse_plan(sample)
    cell = next(
        c for c in expand_plan(plan) if c.benchmark.distributed and not c.pool.gang_scheduling
    )
    (mpijob,) = render_cell(plan, cell)
    assert mpijob["apiVersion"] == "kubeflow.org/v2beta1" and mpijob["kind"] == "MPIJob"
    assert mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2


def test_schedule_renders_configmap_and_planner_cronjob(sample: dict) -> None:
    plan = parse_plan(sample)
    configmap, cronjob, claim = render_schedule(plan)
    assert claim["kind"] == "PersistentVolumeClaim" and claim["spec"]["accessModes"] == [
        "ReadWriteMany"
    ]
    assert parse_plan(yaml.safe_load(configmap["data"]["plan.yaml"])) == plan  # round trip
    spec = cronjob["spec"]
    assert spec["schedule"] == "0 3 * * 0" and spec["concurrencyPolicy"] == "Forbid"
    pod = spec["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "stack-advisor-planner"
    command = pod["containers"][0]["command"]
    assert command[:4] == ["advisor", "plan", "submit", "/etc/stack-advisor/plan/plan.yaml"]
    assert "--skip-observed" in command
    sample.pop("schedule")
    assert render_schedule(parse_plan(sample)) == []


def test_cli_expand_json_and_render_files(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["plan", "expand", str(SAMPLE), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 16 and {"cell", "image", "pool", "benchmark", "runner"} <= set(rows[0])
    out = tmp_path / "rendered"
    result = runner.invoke(app, ["plan", "render", str(SAMPLE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in out.iterdir())
    assert "kustomization.yaml" in files
    kinds = [
        yaml.safe_load(p.read_text())["kind"]
        for p in out.iterdir()
        if p.name != "kustomization.yaml"
    ]
    assert (
        kinds.count("Job") == 12 and kinds.count("PyTorchJob") == 4 and kinds.count("PodGroup") == 2
    )
    assert (
        kinds.count("CronJob") == 1
        and kinds.count("ConfigMap") == 1
        and kinds.count("PersistentVolumeClaim") == 1
    )
    result = runner.invoke(app, ["plan", "expand", str(tmp_path / "nope.yaml")])
    assert result.exit_code != 0


def test_committed_collector_cronjob_matches_a_fresh_render(tmp_path: Path, monkeypatch) -> None:
    """deploy/base/collectors is `advisor plan render deploy/plans/sample-plan.yaml --only
    schedule`."""
    monkeypatch.chdir(REPO)
    out = tmp_path / "collectors"
    result = CliRunner().invoke(
        app,
        [
            "plan",
            "render",
            "deploy/plans/sample-plan.yaml",
            "--only",
            "schedule",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    committed = REPO / "deploy" / "base" / "collectors"
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in committed.iterdir())
    for path in out.iterdir():
        assert path.read_text() == (committed / path.name).read_text(), (
            f"{path.name} is stale: re-run `advisor plan render deploy/plans/sample-plan.yaml "
            "--only schedule --out deploy/base/collectors`"
        )


def test_render_plan_without_schedule_has_only_jobs(sample: dict) -> None:
    sample.pop("schedule")
    plan = parse_plan(sample)
    kinds = {o["kind"] for o in render_plan(plan, expand_plan(plan))}
    assert kinds == {"PersistentVolumeClaim", "Job", "PyTorchJob", "PodGroup"}


def test_collector_pods_spool_to_the_claim_that_outlives_them(sample: dict) -> None:
    """The spool (documents the API did not take, re-sent by the next run) is on the plan's
    PersistentVolumeClaim: each scheduled run is a new pod, and an emptyDir would go with it."""
    plan = parse_plan(sample)
    for cell in expand_plan(plan):
        for obj in render_cell(plan, cell):
            pods = [
                r["template"]["spec"] for r in obj["spec"].get("pytorchReplicaSpecs", {}).values()
            ] or ([obj["spec"]["template"]["spec"]] if obj["kind"] == "Job" else [])
            for pod in pods:
                claims = [
                    v["persistentVolumeClaim"]["claimName"]
                    for v in pod["volumes"]
                    if "persistentVolumeClaim" in v
                ]
                assert claims == ["stack-advisor-collector-spool"], obj["metadata"]["name"]
                container = pod["containers"][0]
                assert {"name": "spool", "mountPath": "/var/lib/stack-advisor"} in container[
                    "volumeMounts"
                ]
                assert {"name": "XDG_STATE_HOME", "value": "/var/lib/stack-advisor"} in container[
                    "env"
                ]
    sample.setdefault("job", {})["spool_claim"] = None
    plan = parse_plan(sample)
    configmap = render_schedule(plan)[0]  # what the scheduled planner reads keeps the null
    assert parse_plan(yaml.safe_load(configmap["data"]["plan.yaml"])).job.spool_claim is None
    objects = render_plan(plan, expand_plan(plan))
    assert "PersistentVolumeClaim" not in {o["kind"] for o in objects}
    job = next(o for o in objects if o["kind"] == "Job")
    assert [v["name"] for v in job["spec"]["template"]["spec"]["volumes"]] == ["tmp"]


def test_rendered_yaml_has_no_anchors_and_round_trips(sample: dict) -> None:
    from stack_advisor.collectors.plan.render import to_yaml

    plan = parse_plan(sample)
    objects = render_plan(plan, expand_plan(plan))
    text = to_yaml(objects)
    assert "&id" not in text and "*id" not in text
    assert list(yaml.safe_load_all(text)) == objects


def test_unreachable_cluster_is_a_cluster_error(sample: dict) -> None:
    """No apiserver on the port: a ClusterError naming what was being done, not a traceback."""
    import socket

    from kubernetes import client

    from stack_advisor.collectors.executors.kubernetes import (
        ClusterError,
        KubernetesExecutor,
        submit_plan,
    )

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = client.Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    cfg.retries = 0
    plan = parse_plan(sample)
    with pytest.raises(ClusterError, match=r"creating Job stack-advisor/sa-weekly-gpu-"):
        submit_plan(
            plan, expand_plan(plan)[:1], KubernetesExecutor(client.ApiClient(cfg), plan.namespace)
        )
