"""Every manifest in deploy/ (kustomize-built) and everything `plan render` produces validates
against the Kubernetes OpenAPI schemas (kubernetes-validate, strict mode)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from stack_advisor.collectors.plan import expand_plan, load_plan
from stack_advisor.collectors.plan.render import render_plan
from tests.support.kube import K8S_VERSION, REPO, kustomize_build, validate_objects


def test_crd_kinds_have_no_upstream_schema() -> None:
    """The CRD skip list is honest: kubernetes-validate really has no schema for them."""
    for kind, api in (
        ("PyTorchJob", "kubeflow.org/v1"),
        ("PodGroup", "scheduling.volcano.sh/v1beta1"),
    ):
        with pytest.raises(kubernetes_validate.SchemaNotFoundError):
            kubernetes_validate.validate(
                {"apiVersion": api, "kind": kind, "metadata": {"name": "x"}},
                K8S_VERSION,
                strict=True,
            )


def test_strict_validation_catches_a_typo() -> None:
    """Strict mode is on: an unknown field fails (so passing tests mean something)."""
    plan = load_plan(REPO / "deploy" / "plans" / "sample-plan.yaml")
    job = render_plan(plan, expand_plan(plan))[0]
    job["spec"]["template"]["spec"]["containers"][0]["securityContxt"] = {}
    with pytest.raises(AssertionError, match="securityContxt"):
        validate_objects([job])


@pytest.mark.parametrize("distributed_kind", ["PyTorchJob", "MPIJob"])
def test_rendered_plan_validates(distributed_kind: str, tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "deploy" / "plans" / "sample-plan.yaml").read_text())
    data["benchmarks"][3]["distributed_kind"] = distributed_kind
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    plan = load_plan(path)
    counts = validate_objects(render_plan(plan, expand_plan(plan)))
    assert counts["Job"] == 12 and counts["CronJob"] == 1 and counts["ConfigMap"] == 1
    assert counts["PodTemplate"] >= 4


@pytest.mark.kube  # kustomize: installed by deploy/kube-local/build.sh with the kube binaries
def test_kustomize_base_validates(kustomize: list[str]) -> None:
    objects = [
        o for o in yaml.safe_load_all(kustomize_build(kustomize, REPO / "deploy" / "base")) if o
    ]
    counts = validate_objects(objects)
    for kind in (
        "Namespace",
        "StatefulSet",
        "Deployment",
        "Service",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
        "CronJob",
        "ConfigMap",
        "PodDisruptionBudget",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ):
        assert counts.get(kind), f"the base has no {kind}"
    assert not counts.get("Secret"), "the base must ship no Secret (no usable default)"


def _pod_specs(objects: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for o in objects:
        spec = o.get("spec", {})
        template = spec.get("template") or spec.get("jobTemplate", {}).get("spec", {}).get(
            "template"
        )
        if template:
            out.append((f"{o['kind']}/{o['metadata']['name']}", template["spec"]))
    return out


@pytest.mark.kube  # kustomize: installed by deploy/kube-local/build.sh with the kube binaries
def test_base_is_least_privilege(kustomize: list[str]) -> None:
    """Issue 18 item 4, checked on the built manifests."""
    objects = [
        o for o in yaml.safe_load_all(kustomize_build(kustomize, REPO / "deploy" / "base")) if o
    ]
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    for where, pod in _pod_specs(objects):
        for container in pod["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, where
            assert all(p["containerPort"] != 7474 for p in container.get("ports", [])), where
        for volume in pod.get("volumes", []):
            if "emptyDir" in volume:
                assert volume["emptyDir"].get("sizeLimit"), f"{where}: {volume['name']} unbounded"
    deny = by_name[("NetworkPolicy", "stack-advisor-default-deny")]["spec"]
    assert deny["podSelector"] == {} and set(deny["policyTypes"]) == {"Ingress", "Egress"}
    api_policy = by_name[("NetworkPolicy", "stack-advisor-api")]["spec"]
    sources = api_policy["ingress"][0]["from"]
    assert all(s for s in sources), "no empty peer (every pod of every namespace)"
    assert sources[0]["namespaceSelector"]["matchLabels"] == {"stack-advisor.io/api-access": "true"}
    egress_ports = {p["port"] for rule in api_policy["egress"] for p in rule["ports"]}
    assert egress_ports == {7687, 53}
    role = by_name[("Role", "stack-advisor-planner")]
    assert not any("secrets" in rule["resources"] for rule in role["rules"])
    cron = by_name[("CronJob", "sa-weekly-gpu")]
    env = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
    token = next(e for e in env if e["name"] == "ADVISOR_TOKEN")
    assert token["valueFrom"]["secretKeyRef"]["name"] == "stack-advisor-planner-token"
    api_env = {
        e["name"]: e.get("value")
        for e in by_name[("Deployment", "stack-advisor-api")]["spec"]["template"]["spec"][
            "containers"
        ][0]["env"]
    }
    assert api_env["ADVISOR_READ_AUTH"] == "token" and api_env["ADVISOR_METRICS_AUTH"] == "token"
    assert by_name[("PodDisruptionBudget", "stack-advisor-api")]["spec"]["maxUnavailable"] == 1


@pytest.mark.kube  # kustomize: installed by deploy/kube-local/build.sh with the kube binaries
def test_kustomize_example_overlay_validates(kustomize: list[str], overlay_tree: Path) -> None:
    text = kustomize_build(kustomize, overlay_tree / "overlays" / "example")
    objects = [o for o in yaml.safe_load_all(text) if o]
    validate_objects(objects)
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    api = by_name[("Deployment", "stack-advisor-api")]
    assert api["spec"]["replicas"] == 1
    container = api["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    neo4j = by_name[("StatefulSet", "stack-advisor-neo4j")]
    assert (
        neo4j["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"]
        == "50Gi"
    )
    secret = by_name[("Secret", "stack-advisor-collector-token")]
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert "replace-me" not in token and len(token) >= 16
    planner = base64.b64decode(
        by_name[("Secret", "stack-advisor-planner-token")]["data"]["token"]
    ).decode()
    assert planner != token
    for where, pod in _pod_specs(objects):
        for c in pod["containers"]:
            if c["image"].startswith(("ghcr.io/stack-advisor/api", "neo4j")):
                assert "@sha256:" in c["image"], f"{where}: {c['image']} is not pinned by digest"
    role = by_name[("Role", "stack-advisor-planner")]
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert resources == {"jobs", "pods", "pods/log", "persistentvolumeclaims"}  # claims: read only
    assert [r["verbs"] for r in role["rules"] if r["resources"] == ["persistentvolumeclaims"]] == [
        ["get"]
    ]
    cluster_scoped = {"Namespace", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    assert all(
        o["metadata"].get("namespace") == "stack-advisor"
        for o in objects
        if o["kind"] not in cluster_scoped
    )
