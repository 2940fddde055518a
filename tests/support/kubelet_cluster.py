"""The container tier's one-node cluster, shared by its modules (one start, one image import per
session): kubelet v1.35.4 (built from the Go module proxy) on Debian's containerd, with a bridge
pod network (tests/support/pod_network.py), joined to a real kube-apiserver with kube-scheduler and
kube-controller-manager (Job, CronJob, Deployment, ReplicaSet, StatefulSet, EndpointSlice, node
lifecycle and volume binding controllers); the API image serving on the session's Neo4j at the
bridge address."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.containers import Api, Images, docker, start_api, tier_missing
from tests.support.control_plane import ControlPlane, find_binaries, find_controller_manager
from tests.support.docker_node import wait_for
from tests.support.kubelet_node import PAUSE_IMAGE, KubeletNode, kube_binary
from tests.support.pod_network import PodNetwork, cni_bin_dir

NODE = "kubelet-node-1"
POOL = {"stack-advisor.io/pool": "cpu-pool"}
# The Debian base of our images as an image of its own (deploy/overlays/test-tier runs Neo4j on it).
BASE_IMAGE = "docker.io/stack-advisor/debian-base:local"
CONTROLLERS = (
    "job-controller,cronjob-controller,serviceaccount-controller,node-lifecycle-controller,"
    "persistentvolume-binder-controller,root-ca-certificate-publisher-controller,"
    "deployment-controller,replicaset-controller,statefulset-controller,endpointslice-controller"
)


@dataclass
class Cluster:
    cp: ControlPlane
    node: KubeletNode
    net: PodNetwork
    api: Api  # the API image on the bridge address: reachable from pods and from here

    def client(self) -> Any:
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.cp.kubeconfig))


def binaries() -> tuple[Path, Path, Path, Path, Path, Path]:
    apiserver, etcd, why = find_binaries()
    found = {
        "kubelet": kube_binary("kubelet"),
        "kube-scheduler": kube_binary("kube-scheduler"),
        "kube-controller-manager": find_controller_manager(),
    }
    cni = cni_bin_dir()
    missing = [name for name, path in found.items() if path is None] + (
        [] if cni else ["CNI plugins"]
    )
    if apiserver is None or etcd is None or missing:
        tier_missing(
            f"missing {', '.join(missing) or why}: run KUBE_COMPONENTS='kubelet kube-scheduler' "
            "deploy/kube-local/build.sh and deploy/kube-local/cni-plugins.sh"
        )
    assert apiserver and etcd and cni and all(found.values())
    return (
        apiserver,
        etcd,
        found["kubelet"],
        found["kube-scheduler"],  # type: ignore[return-value]
        found["kube-controller-manager"],
        cni,
    )


def _base_images(images: Images) -> None:
    """The pause image (the Debian base running ``tini -- sleep infinity``) and the base itself."""
    base = next(
        line.split()[2].rstrip(":")
        for line in images.build_log.splitlines()
        if line.startswith("[images] base ")
    )
    docker("tag", base, BASE_IMAGE)
    created = docker("create", base).stdout.strip()
    docker(
        "commit",
        "--change",
        'CMD ["/usr/bin/tini", "--", "/bin/sleep", "infinity"]',
        created,
        PAUSE_IMAGE,
    )
    docker("rm", created)


@contextmanager
def kubelet_cluster(images: Images, neo4j_uri: str, work: Path) -> Iterator[Cluster]:
    from stack_advisor.store.registry import open_store

    apiserver, etcd, kubelet, scheduler, manager, cni = binaries()
    _base_images(images)
    net = PodNetwork(work)
    cp = ControlPlane(
        apiserver=apiserver,
        etcd=etcd,
        workdir=work / "cp",
        controller_manager=manager,
        controllers=CONTROLLERS,
        advertise=net.gateway,
        scheduler=scheduler,
    )
    (work / "cp").mkdir()
    kn = KubeletNode(
        kubelet=kubelet,
        kubeconfig=work / "cp" / "kubeconfig",
        ca=work / "cp" / "pki" / "ca.crt",
        workdir=work,
        name=NODE,
        labels=POOL,
        node_ip=net.gateway,
        cni_bin=cni,
    )
    api = None
    try:
        net.up(work / "containerd" / "cni-conf")
        cp.start()
        net.route_service(cp.port)
        with open_store(neo4j_uri, migrate=False) as store:
            store.ensure_schema()
        api = start_api(images, neo4j_uri, work / "api-tokens", host=net.gateway)
        kn.start_containerd()
        start = time.monotonic()
        # one archive for the base's two names and both images built on it: the base's layers
        # (most of each image) are saved, streamed and digested once, not three times
        kn.import_image(PAUSE_IMAGE, BASE_IMAGE, images.collector, images.api)
        print(f"\n[kubelet] images imported into containerd in {time.monotonic() - start:.0f} s")
        kn.start_kubelet()
        yield Cluster(cp, kn, net, api)
    finally:
        kn.stop()
        if api is not None:
            api.container.stop()
        cp.stop()
        net.down(cp.port)


def ready_node(core: Any) -> Any:
    """The node once Ready and untainted, else None."""
    nodes = core.list_node().items
    if not nodes:
        return None
    ready = [c for c in nodes[0].status.conditions or [] if c.type == "Ready"]
    taints = [t.key for t in nodes[0].spec.taints or []]
    return nodes[0] if ready and ready[0].status == "True" and not taints else None


def default_service_account(core: Any) -> None:
    """Wait (60 s at most) for the ``default`` namespace's ServiceAccount, which the controller
    manager makes after the cluster starts: a Pod created before it is refused."""
    wait_for(
        "the default ServiceAccount",
        lambda: (
            core.list_namespaced_service_account(
                "default", field_selector="metadata.name=default"
            ).items
        ),
        timeout=60,
    )


def finished_pod(core: Any, name: str, namespace: str = "default", timeout: float = 300) -> Any:
    """The Pod ``name`` once it has Succeeded or Failed (polled every 2 s, ``timeout`` s at
    most)."""

    def done() -> Any:
        pod = core.read_namespaced_pod(name, namespace)
        return pod if pod.status.phase in ("Succeeded", "Failed") else None

    return wait_for(f"pod {namespace}/{name} finished", done, timeout, 2)
