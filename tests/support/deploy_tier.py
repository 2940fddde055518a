"""deploy/base as pods on the container tier's kubelet (deploy/overlays/test-tier): the overlay
built by kustomize and created object by object, the Secrets a platform team writes (random
tokens and password), the PersistentVolumes a cluster would provision (directories of this
machine: the Neo4j data, the spool, and the server's classpath and JRE read-only), and the
container-level tools the kill test needs (containerd tasks, a process's TCP sockets)."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.containers import tier_missing
from tests.support.kube import REPO, kustomize_build, kustomize_command
from tests.support.kubelet_node import KubeletNode
from tests.support.neo4j_server import Neo4jUnavailable, ensure_lib

NAMESPACE = "stack-advisor"
OVERLAY = REPO / "deploy" / "overlays" / "test-tier"
API_IP = "10.0.0.80"  # the overlay's pinned ClusterIPs
NEO4J_IP = "10.0.0.87"
API_URL = f"http://{API_IP}:8000"
JRE = Path("/usr/lib/jvm/java-17-openjdk-amd64")  # the overlay's mount points
JRE_CONF = Path("/etc/java-17-openjdk")


@dataclass(frozen=True)
class Credentials:
    write: str
    read: str
    neo4j_password: str


def overlay_objects() -> list[dict[str, Any]]:
    cmd = kustomize_command()
    if cmd is None:
        tier_missing("no kustomize (kustomize, kubectl, or ~/.cache/stack-advisor/bin/kustomize)")
    assert cmd is not None
    return [o for o in yaml.safe_load_all(kustomize_build(cmd, OVERLAY)) if o]


def secret_objects(creds: Credentials) -> list[dict[str, Any]]:
    def secret(name: str, data: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "stringData": data,
        }

    return [
        secret(
            "stack-advisor-neo4j-auth",
            {
                "NEO4J_AUTH": f"neo4j/{creds.neo4j_password}",
                "NEO4J_USER": "neo4j",
                "NEO4J_PASSWORD": creds.neo4j_password,
            },
        ),
        secret(
            "stack-advisor-api-tokens",
            {"tokens": f"{creds.write} write collector\n{creds.read} read reader\n"},
        ),
        secret("stack-advisor-collector-token", {"token": creds.write}),
        secret("stack-advisor-planner-token", {"token": creds.read}),
    ]


def new_credentials() -> Credentials:
    """Random tokens; the password starts with "-" (a random one may: neo4j-start.sh must not
    take it for an option)."""
    write, read, password = (secrets.token_urlsafe(24) for _ in range(3))
    return Credentials(write, read, "-" + password)


def _volume(name: str, claim: str, path: Path, size: str, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": [mode],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "claimRef": {"namespace": NAMESPACE, "name": claim},
            "hostPath": {"path": str(path), "type": "Directory"},
        },
    }


def volume_objects(work: Path) -> list[dict[str, Any]]:
    """The claims' volumes; the data and spool directories owned by the pods' users (a hostPath
    volume gets no fsGroup)."""
    try:
        lib = ensure_lib()
    except Neo4jUnavailable as exc:
        tier_missing(f"no Neo4j server classpath for the Neo4j pod: {exc}")
    java = shutil.which("java")
    if java is None or Path(java).resolve().parents[1] != JRE or not JRE_CONF.is_dir():
        tier_missing(f"the overlay mounts the JRE of {JRE} and {JRE_CONF}; java here is {java}")
    owned = {"neo4j-data": 7474, "spool": 65532}
    for sub, uid in owned.items():
        (work / sub).mkdir(parents=True)
        os.chown(work / sub, uid, uid)
    return [
        _volume("sa-neo4j-server", "stack-advisor-neo4j-server", lib, "1Gi", "ReadOnlyMany"),
        _volume("sa-neo4j-jre", "stack-advisor-neo4j-jre", JRE, "1Gi", "ReadOnlyMany"),
        _volume(
            "sa-neo4j-jre-conf", "stack-advisor-neo4j-jre-conf", JRE_CONF, "1Mi", "ReadOnlyMany"
        ),
        _volume(
            "sa-neo4j-data",
            "data-stack-advisor-neo4j-0",
            work / "neo4j-data",
            "20Gi",
            "ReadWriteOnce",
        ),
        _volume(
            "sa-collector-spool",
            "stack-advisor-collector-spool",
            work / "spool",
            "1Gi",
            "ReadWriteMany",
        ),
    ]


def create_all(api_client: Any, objects: list[dict[str, Any]]) -> None:
    """Create each object as `kubectl create -f` would, namespaces first."""
    from kubernetes import dynamic

    dyn = dynamic.DynamicClient(api_client)
    ordered = sorted(objects, key=lambda o: o["kind"] != "Namespace")
    for obj in ordered:
        resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        namespace = obj["metadata"].get("namespace") if resource.namespaced else None
        resource.create(body=obj, namespace=namespace)


# ---- containers and sockets, as the node sees them
# -----------------------------------------------------------------
def container_id(pod: Any) -> str:
    return str(pod.status.container_statuses[0].container_id).split("://", 1)[1]


def task_pid(node: KubeletNode, container: str) -> int:
    """The host PID of a container's first process (`ctr tasks ls`)."""
    for line in node.ctr("tasks", "ls").stdout.splitlines()[1:]:
        fields = line.split()
        if fields and fields[0] == container:
            return int(fields[1])
    raise AssertionError(f"no containerd task {container}")


def _hex_address(ip: str, port: int) -> str:
    return f"{socket.inet_aton(ip)[::-1].hex().upper()}:{port:04X}"


def established(
    pid: int, remote: tuple[str, int] | None = None, local_port: int | None = None
) -> list[tuple[str, str]]:
    """(local, remote) hex addresses of the ESTABLISHED TCP sockets in the network namespace of
    ``pid`` (its /proc/PID/net/tcp), filtered by remote address or local port."""
    found = []
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        local, rem, state = line.split()[1:4]
        if state != "01":
            continue
        if remote is not None and rem != _hex_address(*remote):
            continue
        if local_port is not None and not local.endswith(f":{local_port:04X}"):
            continue
        found.append((local, rem))
    return found


def hex_to_address(text: str) -> tuple[str, int]:
    host, port = text.split(":")
    return socket.inet_ntoa(bytes.fromhex(host)[::-1]), int(port, 16)
