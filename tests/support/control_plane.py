"""A real kube-apiserver + etcd on loopback ports, started the way controller-runtime's envtest
does: self-signed CA and serving certificate, service-account signing keys, an admin client
certificate in ``system:masters``, and a kubeconfig written to a temporary directory.

The binaries come from ``deploy/kube-local/build.sh`` (kube-apiserver built from the Go module
proxy, cached under ~/.cache/stack-advisor/kube/<version>/; etcd from Debian's etcd-server).
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_VERSION = "v1.35.4"
SERVICE_IP = (
    "10.0.0.1"  # the `kubernetes` Service's ClusterIP: the first of --service-cluster-ip-range
)


def cache_dir() -> Path:
    return Path(os.environ.get("STACK_ADVISOR_CACHE", Path.home() / ".cache" / "stack-advisor"))


def find_controller_manager() -> Path | None:
    path = (
        cache_dir()
        / "kube"
        / os.environ.get("KUBE_VERSION", DEFAULT_VERSION)
        / "kube-controller-manager"
    )
    return path if path.is_file() else None


def find_binaries() -> tuple[Path | None, Path | None, str]:
    """(kube-apiserver, etcd, why missing)."""
    version = os.environ.get("KUBE_VERSION", DEFAULT_VERSION)
    apiserver = cache_dir() / "kube" / version / "kube-apiserver"
    etcd = shutil.which("etcd")
    missing = []
    if not apiserver.is_file():
        missing.append(f"{apiserver} (run deploy/kube-local/build.sh)")
    if not etcd:
        missing.append("etcd (Debian package etcd-server; deploy/kube-local/build.sh installs it)")
    return (
        apiserver if apiserver.is_file() else None,
        Path(etcd) if etcd else None,
        "; ".join(missing),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d: Path, extra_ips: tuple[str, ...] = ()) -> None:
    """CA, apiserver serving cert (127.0.0.1/localhost and ``extra_ips``), admin client cert, SA key
    pair."""
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=stack-advisor-test-ca",
        cwd=d,
    )
    (d / "serving.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"
        + "".join(f",IP:{ip}" for ip in extra_ips)
        + "\n"
        "extendedKeyUsage=serverAuth\n"
    )
    (d / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for name, subj, ext in (
        ("serving", "/CN=kube-apiserver", "serving.ext"),
        ("admin", "/O=system:masters/CN=stack-advisor-admin", "client.ext"),
    ):
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            subj,
            cwd=d,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "2",
            "-extfile",
            ext,
            cwd=d,
        )
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)


@dataclass
class ControlPlane:
    apiserver: Path
    etcd: Path
    workdir: Path
    controller_manager: Path | None = None
    # Only the controllers the tests need: Jobs → pods, and the default ServiceAccounts (the
    # container tier adds cronjob-controller).
    controllers: str = "job-controller,serviceaccount-controller"
    # A real node's pods reach the apiserver: it listens on every address and advertises this
    # one (the kubelet node's), its certificate also names it and the `kubernetes` Service's IP.
    advertise: str | None = None
    scheduler: Path | None = None  # kube-scheduler: binds pods to real nodes
    url: str = ""
    port: int = 0
    kubeconfig: Path = field(default_factory=Path)
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, timeout: float = 180.0) -> None:
        pki = self.workdir / "pki"
        pki.mkdir(parents=True)
        make_pki(pki, (self.advertise, SERVICE_IP) if self.advertise else ())
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._spawn(
            "etcd",
            [
                str(self.etcd),
                "--data-dir",
                str(self.workdir / "etcd"),
                "--listen-client-urls",
                etcd_url,
                "--advertise-client-urls",
                etcd_url,
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync",
                "--log-level",
                "error",
            ],
        )
        self._spawn(
            "kube-apiserver",
            [
                str(self.apiserver),
                f"--etcd-servers={etcd_url}",
                f"--bind-address={'0.0.0.0' if self.advertise else '127.0.0.1'}",
                f"--advertise-address={self.advertise or '127.0.0.1'}",
                f"--secure-port={api_port}",
                f"--cert-dir={pki}",
                f"--tls-cert-file={pki / 'serving.crt'}",
                f"--tls-private-key-file={pki / 'serving.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                # logs and exec through a real kubelet (it trusts client certificates of this CA)
                f"--kubelet-client-certificate={pki / 'admin.crt'}",
                f"--kubelet-client-key={pki / 'admin.key'}",
                # the node's name resolves nowhere here: reach the kubelet at its address
                "--kubelet-preferred-address-types=InternalIP,Hostname",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                "--enable-priority-and-fairness=false",
                "--v=0",
            ],
        )
        self.url = f"https://127.0.0.1:{api_port}"
        self._wait_ready(pki, timeout)
        self._write_kubeconfig(pki)
        self.port = api_port
        if self.scheduler is not None:
            self._spawn(
                "kube-scheduler",
                [
                    str(self.scheduler),
                    f"--kubeconfig={self.kubeconfig}",
                    "--leader-elect=false",
                    "--secure-port=0",
                    "--v=0",
                ],
            )
        if self.controller_manager is not None:
            self._spawn(
                "kube-controller-manager",
                [
                    str(self.controller_manager),
                    f"--kubeconfig={self.kubeconfig}",
                    f"--controllers={self.controllers}",
                    # what the root-ca-certificate-publisher-controller puts in every namespace's
                    # kube-root-ca.crt (the CA a pod's projected service-account volume carries)
                    f"--root-ca-file={pki / 'ca.crt'}",
                    "--leader-elect=false",
                    "--secure-port=0",
                    "--v=0",
                ],
            )
            time.sleep(1.0)
            proc = self._procs[-1]
            if proc.poll() is not None:
                tail = (self.workdir / "kube-controller-manager.log").read_text(errors="replace")[
                    -3000:
                ]
                raise RuntimeError(
                    f"kube-controller-manager exited with {proc.returncode}:\n{tail}"
                )

    @property
    def has_job_controller(self) -> bool:
        return self.controller_manager is not None

    def _write_kubeconfig(self, pki: Path) -> None:
        self.kubeconfig = self.workdir / "kubeconfig"
        self.kubeconfig.write_text(
            f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {self.url}
    certificate-authority: {pki / "ca.crt"}
users:
- name: admin
  user:
    client-certificate: {pki / "admin.crt"}
    client-key: {pki / "admin.key"}
contexts:
- name: test
  context: {{cluster: test, user: admin}}
current-context: test
"""
        )

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.workdir / f"{name}.log", "wb") as log:  # the child keeps its own handle
            self._procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

    def _wait_ready(self, pki: Path, timeout: float) -> None:
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for proc, name in zip(self._procs, ("etcd", "kube-apiserver"), strict=False):
                if proc.poll() is not None:
                    tail = (self.workdir / f"{name}.log").read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", context=ctx, timeout=5) as resp:
                    if resp.status == 200:
                        return
            except Exception as exc:
                last = str(exc)
            time.sleep(0.5)
        raise RuntimeError(f"kube-apiserver not ready after {timeout}s: {last}")

    def stop(self) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._procs.clear()
