"""What the two scheduled-plan tests share: test_scheduled_plan.py (pods on the Docker-backed node)
and test_kubelet.py (a real kubelet). The plan rendered as `advisor plan render` writes it, the
namespace as deploy/base makes it, the CronJob fired once and its planner Job awaited, and the
answer asked of the API as a user asks it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from stack_advisor.cli.main import app
from tests.support.containers import Api
from tests.support.docker_node import wait_for
from tests.support.kube import REPO


def render_plan(plan_file: Path, *options: str, out: Path | None = None) -> list[dict[str, Any]]:
    """The objects `advisor plan render PLAN OPTIONS` writes: to ``out`` (its kustomization.yaml
    left out), else as JSON on stdout."""
    args = [
        "plan",
        "render",
        str(plan_file),
        *options,
        *(["--out", str(out)] if out else ["--json"]),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    if out is None:
        return list(json.loads(result.stdout))
    objects = [yaml.safe_load(p.read_text()) for p in sorted(out.glob("*.yaml"))]
    return [o for o in objects if o["kind"] != "Kustomization"]


def setup_namespace(api_client: Any, api: Api, namespace: str) -> None:
    """The namespace as deploy/base makes it: its RBAC and the collector's and planner's token
    Secrets."""
    from kubernetes import client, dynamic

    core = client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": namespace}})
    dyn = dynamic.DynamicClient(api_client)
    for obj in yaml.safe_load_all((REPO / "deploy" / "base" / "rbac.yaml").read_text()):
        dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"]).create(
            body=obj, namespace=namespace
        )
    for name, token in (
        ("stack-advisor-collector-token", api.write_token),
        ("stack-advisor-planner-token", api.read_token),
    ):
        core.create_namespaced_secret(
            namespace, {"metadata": {"name": name}, "stringData": {"token": token}}
        )


def fire_once(batch: Any, namespace: str, cronjob: str) -> str:
    """Wait for the CronJob's first Job, then suspend the CronJob (one run is enough); the name of
    that Job, the planner's."""
    fired = wait_for(
        "the CronJob's first Job",
        lambda: [
            j
            for j in batch.list_namespaced_job(namespace).items
            if any(r.kind == "CronJob" for r in j.metadata.owner_references or [])
        ],
        timeout=90,
    )
    batch.patch_namespaced_cron_job(cronjob, namespace, {"spec": {"suspend": True}})
    return str(fired[0].metadata.name)


def planner_finished(batch: Any, namespace: str, planner: str, timeout: float) -> Any:
    """The planner Job once it has succeeded or failed."""

    def done() -> Any:
        job = batch.read_namespaced_job(planner, namespace)
        return job if (job.status.succeeded or job.status.failed) else None

    return wait_for("the planner Job", done, timeout=timeout, every=2)


def recommend(api: Api, args: list[str]) -> list[dict[str, Any]]:
    """`advisor --api URL recommend ARGS --json`'s rows, with the read token."""
    result = CliRunner().invoke(
        app, ["--api", api.url, "recommend", *args, "--json"], env={"ADVISOR_TOKEN": api.read_token}
    )
    assert result.exit_code == 0, result.output
    return list(json.loads(result.stdout)["recommendations"])
