"""The rules kube-proxy (iptables mode) would write for one namespace's ClusterIP Services, kept in
step with their EndpointSlices: the test cluster has no kube-proxy. A thread polls the apiserver
every ``every`` seconds and rewrites one nat chain (``SA-SVC-<n>``, jumped to from PREROUTING for
pods and from OUTPUT for this machine) when the ready endpoints change: each Service port DNATs to
one of its ready endpoints, spread like kube-proxy's (``statistic --mode random``). Replies on the
bridge go back through conntrack (``bridge-nf-call-iptables``), as with kube-proxy."""

from __future__ import annotations

import logging
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

Rules = list[list[str]]


def _iptables(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["iptables", "-w", "-t", "nat", *argv], capture_output=True, text=True, check=False
    )


def service_rules(chain: str, services: list[Any], slices: list[Any]) -> Rules:
    """One DNAT rule per (Service port, ready endpoint), from the objects as listed."""
    rules: Rules = []
    for svc in services:
        ip = svc.spec.cluster_ip
        if not ip or ip == "None":
            continue
        mine = [
            s
            for s in slices
            if s.metadata.labels.get("kubernetes.io/service-name") == svc.metadata.name
        ]
        for port in svc.spec.ports or []:
            targets = sorted(
                f"{address}:{p.port}"
                for s in mine
                for p in s.ports or []
                if p.name == (port.name or "")
                for e in s.endpoints or []
                if e.conditions is None or e.conditions.ready is not False
                for address in e.addresses
            )
            for i, target in enumerate(targets):
                spread = (
                    [
                        "-m",
                        "statistic",
                        "--mode",
                        "random",
                        "--probability",
                        f"{1 / (len(targets) - i):.5f}",
                    ]
                    if i < len(targets) - 1
                    else []
                )
                rules.append(
                    [
                        "-A",
                        chain,
                        "-d",
                        f"{ip}/32",
                        "-p",
                        "tcp",
                        "--dport",
                        str(port.port),
                        *spread,
                        "-j",
                        "DNAT",
                        "--to-destination",
                        target,
                    ]
                )
    return rules


@dataclass
class ServiceProxy:
    api_client: Any
    namespace: str
    chain: str
    every: float = 1.0
    rules: Rules = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        _iptables("-N", self.chain)
        for hook in ("PREROUTING", "OUTPUT"):
            proc = _iptables("-I", hook, "-j", self.chain)
            if proc.returncode != 0:
                raise RuntimeError(f"iptables -t nat -I {hook} -j {self.chain}: {proc.stderr}")
        self.sync()
        self._thread = threading.Thread(target=self._loop, name=self.chain, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.sync()
            except Exception as exc:  # the apiserver busy a moment: the next round retries
                log.warning("service proxy %s: %s", self.chain, exc)

    def sync(self) -> None:
        from kubernetes import client

        core = client.CoreV1Api(self.api_client)
        discovery = client.DiscoveryV1Api(self.api_client)
        rules = service_rules(
            self.chain,
            core.list_namespaced_service(self.namespace).items,
            discovery.list_namespaced_endpoint_slice(self.namespace).items,
        )
        if rules == self.rules:
            return
        _iptables("-F", self.chain)
        for rule in rules:
            proc = _iptables(*rule)
            if proc.returncode != 0:
                raise RuntimeError(f"iptables {' '.join(rule)}: {proc.stderr}")
        self.rules = rules

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for hook in ("PREROUTING", "OUTPUT"):
            _iptables("-D", hook, "-j", self.chain)
        _iptables("-F", self.chain)
        _iptables("-X", self.chain)
