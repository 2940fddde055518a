"""CustomResourceDefinitions the snippet targets need, as their projects publish them: the CRD YAML
inside each project's Go module, fetched through the Go module proxy (``go mod download``, cached
in GOMODCACHE); KubeVirt's VirtualMachineInstance from the OpenAPI schema its module generates
for virt-operator. A kind whose project publishes no schema there is served schema-less
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
# KubeVirt publishes no CRD YAML: virt-operator builds its CRDs at install from the OpenAPI v3
# schemas generated into the kubevirt.io/kubevirt module (a Go map of YAML texts by singular
# name), which the Go module proxy serves; the CRD is assembled here as virt-operator's
# NewVirtualMachineInstanceCrd does (group kubevirt.io, version v1, that schema).
KUBEVIRT = (
    "kubevirt.io/kubevirt",
    "v1.6.0",
    "pkg/virt-operator/resource/generate/components/validations_generated.go",
)
# kind -> (group, version, why no published schema)
SCHEMALESS = {
    "PyTorchJob": ("kubeflow.org", "v1", "Kubeflow training operator v1: no CRD in our registries"),
}


def _module_dir(kind: str, module: str, version: str) -> tuple[Path | None, str]:
    """(the module's directory in GOMODCACHE, "") or (None, why it could not be had)."""
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
    return Path(info["Dir"]), ""


def published_crd(kind: str) -> tuple[dict[str, Any] | None, str]:
    """(the CRD, where it came from), or (None, why it could not be had)."""
    module, version, path = PUBLISHED[kind]
    found, why = _module_dir(kind, module, version)
    if found is None:
        return None, why
    return yaml.safe_load((found / path).read_text()), f"{module}@{version}/{path}"


def kubevirt_vmi_crd() -> tuple[dict[str, Any] | None, str]:
    """(KubeVirt's VirtualMachineInstance CRD with its published schema, where it came from), or
    (None, why it could not be had)."""
    module, version, path = KUBEVIRT
    found, why = _module_dir("VirtualMachineInstance", module, version)
    if found is None:
        return None, why
    text = (found / path).read_text()
    start = text.find('"virtualmachineinstance": `')
    if start < 0:
        return None, f"{module}@{version}/{path}: no virtualmachineinstance schema"
    start += len('"virtualmachineinstance": `')
    schema = yaml.safe_load(text[start : text.index("`", start)])  # a Go raw string
    crd = served_kind("kubevirt.io", "v1", "VirtualMachineInstance")
    crd["spec"]["versions"][0]["schema"] = schema
    return crd, f"{module}@{version}/{path} (virtualmachineinstance)"


def crds_for_targets() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """(CRDs to install, kind -> where its schema came from or why it has none)."""
    crds, origin = [], {}
    for kind in PUBLISHED:
        crd, where = published_crd(kind)
        if crd is None:
            raise RuntimeError(where)
        crds.append(crd)
        origin[kind] = where
    vmi, where = kubevirt_vmi_crd()
    if vmi is None:
        raise RuntimeError(where)
    crds.append(vmi)
    origin["VirtualMachineInstance"] = where
    for kind, (group, version, why) in SCHEMALESS.items():
        crds.append(served_kind(group, version, kind))
        origin[kind] = why
    return crds, origin
