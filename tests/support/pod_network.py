"""The test node's pod network: a Linux bridge whose address is the node's (``--node-ip``; the
kubelet refuses a loopback one), the CNI plugins of ``deploy/kube-local/cni-plugins.sh`` (bridge,
host-local, loopback, built from the Go module proxy) with a one-network config, and the one rule
kube-proxy would write for the ``kubernetes`` Service, so in-cluster clients (the planner) reach the
apiserver at the Service's ClusterIP.

With the network config loaded containerd reports the runtime network ready, the kubelet marks the
node Ready, the node lifecycle controller lifts its not-ready taint, and kube-scheduler places the
CronJob's pods there: ordinary pods in their own network namespaces (not ``hostNetwork``), reaching
the API and the apiserver through the bridge address as they would reach a Service.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.control_plane import SERVICE_IP, cache_dir

CNI_VERSION = os.environ.get("CNI_PLUGINS_VERSION", "v1.9.1")
PLUGINS = ("bridge", "host-local", "loopback")


def cni_bin_dir() -> Path | None:
    d = cache_dir() / "cni" / CNI_VERSION
    return d if all((d / p).is_file() for p in PLUGINS) else None


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False)


@dataclass
class PodNetwork:
    """One /24 on one bridge (named and numbered per test process, so parallel runs do not meet)."""

    workdir: Path
    index: int = 100 + os.getpid() % 100

    @property
    def bridge(self) -> str:
        return f"sa-br{self.index}"

    @property
    def gateway(self) -> str:
        return f"10.244.{self.index}.1"

    @property
    def subnet(self) -> str:
        return f"10.244.{self.index}.0/24"

    def up(self, conf_dir: Path) -> None:
        """The bridge with the node's address, and the CNI config containerd loads."""
        _run("ip", "link", "del", self.bridge)  # a previous run killed before its teardown
        for argv in (
            ("ip", "link", "add", self.bridge, "type", "bridge"),
            ("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge),
            ("ip", "link", "set", self.bridge, "up"),
        ):
            proc = _run(*argv)
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(argv)}: {proc.stderr.strip()}")
        conf_dir.mkdir(parents=True, exist_ok=True)
        (conf_dir / "10-sa-pods.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "1.0.0",
                    "name": "sa-pods",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": self.bridge,
                            "isGateway": True,
                            "ipMasq": False,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "dataDir": str(self.workdir / "ipam"),
                                "ranges": [[{"subnet": self.subnet, "gateway": self.gateway}]],
                                "routes": [{"dst": "0.0.0.0/0"}],
                            },
                        }
                    ],
                },
                indent=1,
            )
        )

    def service_rule(self, apiserver_port: int) -> list[str]:
        return [
            "PREROUTING",
            "-s",
            self.subnet,
            "-d",
            f"{SERVICE_IP}/32",
            "-p",
            "tcp",
            "--dport",
            "443",
            "-j",
            "DNAT",
            "--to-destination",
            f"{self.gateway}:{apiserver_port}",
        ]

    def route_service(self, apiserver_port: int) -> None:
        """kube-proxy's rule for the ``kubernetes`` Service, the only Service the pods use."""
        proc = _run("iptables", "-t", "nat", "-A", *self.service_rule(apiserver_port))
        if proc.returncode != 0:
            raise RuntimeError(f"iptables DNAT for {SERVICE_IP}:443: {proc.stderr.strip()}")

    def down(self, apiserver_port: int | None) -> None:
        if apiserver_port:
            _run("iptables", "-t", "nat", "-D", *self.service_rule(apiserver_port))
        _run("ip", "link", "del", self.bridge)
