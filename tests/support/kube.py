"""Kubernetes manifests in tests: kustomize builds, pinned stand-in digests, schema validation."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml

from tests.support.control_plane import cache_dir

REPO = Path(__file__).resolve().parents[2]
K8S_VERSION = "1.35.0"
# Custom resources have no schema in kubernetes-validate. Their pod templates are validated as
# core/v1 PodTemplates instead; the rest of them is checked by the rendering tests.
CRD_KINDS = {
    "PyTorchJob": "kubeflow.org CRD (Kubeflow training operator): no upstream OpenAPI schema",
    "MPIJob": "kubeflow.org CRD (Kubeflow MPI operator): no upstream OpenAPI schema",
    "PodGroup": "scheduling.volcano.sh CRD (Volcano): no upstream OpenAPI schema",
}


def kustomize_command() -> list[str] | None:
    """A real kustomize: ~/.cache/stack-advisor/bin/kustomize, kustomize on PATH, or kubectl's."""
    cached = cache_dir() / "bin" / "kustomize"
    if cached.is_file():
        return [str(cached), "build"]
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


PLACEHOLDER_DIGEST = "sha256:" + "0" * 64


def pin_stand_in_digests(kustomization: Path) -> None:
    """Replace the example's placeholder digests as an operator would pin theirs. Nothing is
    pulled here, so each stand-in is the SHA-256 of the image's name: well-formed, not zeros
    (the admission policy refuses those), and not claimed to be any registry's digest."""
    import hashlib

    data = yaml.safe_load(kustomization.read_text())
    for image in data["images"]:
        assert image["digest"] == PLACEHOLDER_DIGEST, image
        image["digest"] = "sha256:" + hashlib.sha256(image["name"].encode()).hexdigest()
    kustomization.write_text(yaml.safe_dump(data, sort_keys=False))


def kustomize_build(cmd: list[str], path: Path) -> str:
    proc = subprocess.run([*cmd, str(path)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} {path} failed:\n{proc.stderr}")
    return proc.stdout


def _pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj["spec"]
    replicas = spec.get("pytorchReplicaSpecs") or spec.get("mpiReplicaSpecs") or {}
    return [r["template"] for r in replicas.values()]


def validate_objects(objects: list[dict[str, Any]]) -> dict[str, int]:
    """Validate each object; CRDs are skipped by name with the reason, their pod templates
    validated. Returns counts per kind checked."""
    counts: dict[str, int] = {}
    errors = []
    for obj in objects:
        kind = obj["kind"]
        targets = [obj]
        if kind in CRD_KINDS:
            targets = [
                {
                    "apiVersion": "v1",
                    "kind": "PodTemplate",
                    "metadata": {"name": obj["metadata"]["name"]},
                    "template": t,
                }
                for t in _pod_templates(obj)
            ]
        for target in targets:
            try:
                kubernetes_validate.validate(target, K8S_VERSION, strict=True)
            except kubernetes_validate.ValidationError as exc:
                path = ".".join(str(p) for p in exc.path)
                errors.append(f"{kind} {obj['metadata'].get('name')}: {path}: {exc.message}")
            except kubernetes_validate.SchemaNotFoundError as exc:  # pragma: no cover - a new kind
                errors.append(f"{kind}: no schema and not a known CRD: {exc}")
            counts[target["kind"]] = counts.get(target["kind"], 0) + 1
    assert not errors, "\n".join(errors)
    return counts


def served_kind(group: str, version: str, kind: str) -> dict[str, Any]:
    """A CRD that only makes the apiserver serve the kind (the operators' own CRDs carry the
    schemas)."""
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
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


GANG_KINDS = (
    ("kubeflow.org", "v1", "PyTorchJob"),
    ("scheduling.volcano.sh", "v1beta1", "PodGroup"),
)


def gang_kinds_served(api_client: Any) -> Any:
    """The api client once the apiserver serves the gang kinds, else None."""
    from kubernetes import dynamic
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    dyn = dynamic.DynamicClient(api_client)
    try:
        for group, version, kind in GANG_KINDS:
            dyn.resources.get(api_version=f"{group}/{version}", kind=kind)
    except ResourceNotFoundError:
        return None
    return api_client
