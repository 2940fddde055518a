"""CustomResourceDefinitions the snippet targets need, as their projects publish them: the CRD YAML
inside each project's Go module, fetched through the Go module proxy (``go mod download``, cached
in GOMODCACHE). A kind whose project publishes no CRD YAML there is served schema-less
(``tests.support.kube.served_kind``) and the reason is kept for the test to say."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.kube import served_kind

# kind -> (module, version, the CRD file inside the module)
PUBLISHED = {
    "LeaderWorkerSet": (
        "sigs.k8s.io/lws",
        "v0.7.0",
        "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    ),
    "JobSet": (
        "sigs.k8s.io/jobset",
        "v0.10.1",
        "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",
    ),
    "TrainJob": (
        "github.com/kubeflow/trainer/v2",
        "v2.0.0",
        "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml",
    ),
}
# kind -> (group, version, why no published schema)
SCHEMALESS = {
    "VirtualMachineInstance": (
        "kubevirt.io",
        "v1",
        "kubevirt.io/api (the Go module proxy) carries KubeVirt's Go types, not CRD YAML: "
        "virt-operator generates the CRDs at install, so the kind is served without a schema",
    ),
    "PyTorchJob": ("kubeflow.org", "v1", "Kubeflow training operator v1: no CRD in our registries"),
}


def published_crd(kind: str) -> tuple[dict[str, Any] | None, str]:
    """(the CRD, where it came from), or (None, why it could not be had)."""
    module, version, path = PUBLISHED[kind]
    if shutil.which("go") is None:
        return None, f"{kind}: no go on PATH to fetch {module}@{version} from the module proxy"
    proc = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return None, f"{kind}: go mod download {module}@{version} failed: {proc.stderr.strip()}"
    if "Dir" not in info:
        return None, f"{kind}: {module}@{version}: {info.get('Error', 'no module directory')}"
    return yaml.safe_load((Path(info["Dir"]) / path).read_text()), f"{module}@{version}/{path}"


def crds_for_targets() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(CRDs to install, kind -> where its schema came from or why it has none)."""
    crds, origin = [], {}
    for kind in PUBLISHED:
        crd, where = published_crd(kind)
        if crd is None:
            raise RuntimeError(where)
        crds.append(crd)
        origin[kind] = where
    for kind, (group, version, why) in SCHEMALESS.items():
        crds.append(served_kind(group, version, kind))
        origin[kind] = why
    return crds, origin
