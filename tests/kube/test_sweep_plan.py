"""A plan's sweep section: one Job per (sweep cell, pool) in the generic collector image, each
carrying only its own cell's matrix, accepted by a real kube-apiserver (server-side dry run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from stack_advisor.collectors.plan import expand_plan, parse_plan
from stack_advisor.collectors.plan.render import SWEEP_MATRIX_ENV, render_plan
from stack_advisor.collectors.sweep.matrix import parse_matrix
from stack_advisor.schema.errors import InvalidInput
from tests.support.kube import validate_objects

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "deploy" / "plans" / "sample-sweep-plan.yaml"


@pytest.fixture()
def sample() -> dict:
    return yaml.safe_load(SAMPLE.read_text())


def _env(job: dict[str, Any]) -> dict[str, Any]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value") for e in container["env"]}


def test_sweep_expands_to_one_job_per_cell_and_pool(sample: dict) -> None:
    sample["pools"].append({"name": "cpu-pool", "selector": {"kubernetes.io/arch": "amd64"}})
    plan = parse_plan(sample)
    cells = expand_plan(plan)
    matrix = sample["sweep"]["matrix"]
    assert len(cells) == len(matrix["cells"]) * 2
    assert {c.sweep_cell for c in cells} == {f"torch-{c['version']}" for c in matrix["cells"]}
    objects = render_plan(plan, cells)
    jobs = [o for o in objects if o["kind"] == "Job"]
    assert len(jobs) == len(cells)
    for job, cell in zip(jobs, cells):
        (container,) = job["spec"]["template"]["spec"]["containers"]
        assert container["image"] == sample["sweep"]["image"]
        assert (
            container["command"][:2] == ["advisor", "sweep"] and "--force" in container["command"]
        )
        assert container["command"][2] == f"env:{SWEEP_MATRIX_ENV}"
        one = parse_matrix(
            json.loads(_env(job)[SWEEP_MATRIX_ENV])
        )  # the Job's matrix: its cell only
        assert [c.id for c in one.cells] == [cell.sweep_cell] and one.repeats == matrix["repeats"]
        assert job["spec"]["completions"] == 1  # the repeats run inside, in one environment
        volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
        assert volumes["tmp"]["emptyDir"]["sizeLimit"] == sample["sweep"]["disk"]
        gpus = container["resources"].get("limits", {}).get("nvidia.com/gpu")
        assert gpus == ("1" if cell.pool.name != "cpu-pool" else None)
    # weekly re-runs; the collectors' spool claim
    assert {o["kind"] for o in objects} == {"Job", "ConfigMap", "CronJob", "PersistentVolumeClaim"}
    validate_objects(objects)


def test_a_plan_needs_images_or_a_sweep(sample: dict) -> None:
    del sample["sweep"]
    with pytest.raises(InvalidInput, match="needs images and benchmarks, or a sweep"):
        parse_plan(sample)
    bad = yaml.safe_load(SAMPLE.read_text())
    bad["sweep"]["matrix"]["cells"][0]["framework"] = "pytorch"
    with pytest.raises(InvalidInput, match=r"sweep\.matrix\.cells\.0\.framework"):
        parse_plan(bad)


@pytest.mark.kube
def test_sweep_jobs_are_accepted_by_the_apiserver(sample: dict, api_client: Any) -> None:
    from kubernetes import client

    plan = parse_plan(sample)
    objects = render_plan(plan, expand_plan(plan))
    core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
    namespace = plan.namespace
    try:
        core.create_namespace({"metadata": {"name": namespace}})
    except client.ApiException as exc:
        if exc.status != 409:  # already there from another test
            raise
    created = []
    for obj in objects:
        if obj["kind"] == "Job":
            created.append(batch.create_namespaced_job(namespace, obj, dry_run="All"))
        elif obj["kind"] == "CronJob":
            created.append(batch.create_namespaced_cron_job(namespace, obj, dry_run="All"))
        elif (
            obj["kind"] == "PersistentVolumeClaim"
        ):  # the spool claim: another test may have made it for real
            unique = {
                **obj,
                "metadata": {**obj["metadata"], "name": f"{obj['metadata']['name']}-dry-run"},
            }
            created.append(
                core.create_namespaced_persistent_volume_claim(namespace, unique, dry_run="All")
            )
        else:
            created.append(core.create_namespaced_config_map(namespace, obj, dry_run="All"))
    jobs = [j for j in created if j.kind == "Job"]
    assert len(jobs) == len(sample["sweep"]["matrix"]["cells"])
    env = {e.name: e.value for e in jobs[0].spec.template.spec.containers[0].env}
    assert json.loads(env[SWEEP_MATRIX_ENV])["name"] == "torch-cuda"
