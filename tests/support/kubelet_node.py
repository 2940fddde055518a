"""A real node for the test cluster: the kubelet built from the Go module proxy
(``KUBE_COMPONENTS="kubelet kube-scheduler" deploy/kube-local/build.sh``) on Debian's containerd,
both on a private socket and root under a temporary directory.

The settings this sandbox needs (see docs/deploy.md, "A real kubelet here"): containerd's CRI
``restrict_oom_score_adj`` (a lower oom_score_adj is refused: without it every sandbox fails with
"runc create failed: can't get final child's PID from pipe"), a local sandbox image; the kubelet on
cgroup v1 with cgroupfs, no QoS cgroups, no node-allocatable enforcement, swap allowed, no local
storage isolation. Without a pod network only ``hostNetwork: true`` pods run and the node stays
NotReady; with one (``node_ip`` and ``cni_bin``: tests/support/pod_network.py) it is an ordinary
node.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.control_plane import cache_dir, free_port

DEFAULT_VERSION = "v1.35.4"
PAUSE_IMAGE = "docker.io/stack-advisor/pause:local"


def kube_binary(name: str) -> Path | None:
    path = cache_dir() / "kube" / os.environ.get("KUBE_VERSION", DEFAULT_VERSION) / name
    return path if path.is_file() else None


def containerd_config(d: Path, sock: Path, cni_bin: Path | None = None) -> str:
    return f"""version = 2
root = "{d / "root"}"
state = "{d / "state"}"
[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin or d / "cni-bin"}"
    conf_dir = "{d / "cni-conf"}"
"""


def kubelet_config(
    sock: Path, ca: Path, port: int, healthz: int, address: str = "127.0.0.1"
) -> str:
    return f"""apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://{sock}
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
localStorageCapacityIsolation: false
address: {address}
port: {port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {healthz}
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: false}}
  x509: {{clientCAFile: {ca}}}
authorization: {{mode: AlwaysAllow}}
resolvConf: /etc/resolv.conf
makeIPTablesUtilChains: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {{memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%"}}
syncFrequency: 5s
fileCheckFrequency: 5s
nodeStatusUpdateFrequency: 5s
"""


@dataclass
class KubeletNode:
    kubelet: Path
    kubeconfig: Path
    ca: Path
    workdir: Path
    name: str
    labels: dict[str, str]
    node_ip: str | None = (
        None  # with a pod network (tests/support/pod_network.py): its bridge address
    )
    cni_bin: Path | None = None
    sock: Path = field(default_factory=Path)
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start_containerd(self) -> None:
        d = self.workdir / "containerd"
        for sub in ("root", "state", "cni-bin", "cni-conf"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        # unix socket paths are limited to 108 bytes: a short one under /run
        run = Path(f"/run/sa-node-{os.getpid()}")
        run.mkdir(exist_ok=True)
        self.sock = run / "containerd.sock"
        (d / "config.toml").write_text(containerd_config(d, self.sock, self.cni_bin))
        self._spawn("containerd", ["containerd", "--config", str(d / "config.toml")])
        self._wait(lambda: self.ctr("version").returncode == 0, 60, "containerd")

    def ctr(
        self, *args: str, stdin: object = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ctr", "--address", str(self.sock), "-n", "k8s.io", *args],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def import_image(self, *images: str) -> None:
        """`docker save` from our engine into this node's containerd (nothing is pulled)."""
        save = subprocess.Popen(["docker", "save", *images], stdout=subprocess.PIPE)
        proc = self.ctr("images", "import", "-", stdin=save.stdout, timeout=600)
        save.wait()
        if save.returncode != 0 or proc.returncode != 0:
            raise RuntimeError(f"importing {images} into containerd failed: {proc.stderr}")

    def start_kubelet(self) -> None:
        d = self.workdir / "kubelet"
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.yaml").write_text(
            kubelet_config(
                self.sock, self.ca, free_port(), free_port(), self.node_ip or "127.0.0.1"
            )
        )
        labels = ",".join(f"{k}={v}" for k, v in self.labels.items())
        self._spawn(
            "kubelet",
            [
                str(self.kubelet),
                f"--config={d / 'config.yaml'}",
                f"--kubeconfig={self.kubeconfig}",
                f"--root-dir={d / 'root'}",
                f"--cert-dir={d / 'pki'}",
                f"--hostname-override={self.name}",
                f"--node-labels={labels}",
                "--v=1",
                *([f"--node-ip={self.node_ip}"] if self.node_ip else []),
            ],
        )

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.workdir / f"{name}.log", "wb") as log:
            self._procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

    def log(self, name: str, tail: int = 4000) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-tail:] if path.exists() else "(no log)"

    def _wait(self, ready: object, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"{proc.args[0]} exited with "
                        f"{proc.returncode}:\n{self.log(Path(str(proc.args[0])).name)}"
                    )
            if ready():  # type: ignore[operator]
                return
            time.sleep(0.5)
        raise RuntimeError(f"{what} not ready in {timeout:.0f} s:\n{self.log(what)}")

    def stop(self) -> None:
        # the kubelet first: running, it restarts the containers whose tasks are killed below
        for proc in reversed(self._procs):
            if Path(str(proc.args[0])).name == "kubelet":
                _terminate(proc)
        if self.sock != Path() and self._procs:
            # sandboxes' shims outlive containerd: kill and delete the tasks first
            tasks = self.ctr("tasks", "ls", "-q").stdout.split()
            for task in tasks:
                self.ctr("tasks", "kill", "-s", "SIGKILL", task)
            for task in tasks:
                self.ctr("tasks", "delete", "--force", task)
        for proc in reversed(self._procs):
            _terminate(proc)
        self._procs.clear()
        self._kill_shims()
        # the kubelet bind-mounts its root dir (and pods' volumes under it), containerd its
        # sandboxes' shm, and both leave them mounted when stopped with pods still running
        roots = (str(self.workdir / "kubelet" / "root"), str(self.workdir / "containerd"))
        mounts = [
            line.split()[1]
            for line in Path("/proc/self/mounts").read_text().splitlines()
            if line.split()[1].startswith(roots)
        ]
        for mount in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", mount], capture_output=True, check=False)
        if self.sock != Path():
            # the sandboxes' and containers' shims outlive containerd: stop them by their tasks
            shutil.rmtree(self.sock.parent, ignore_errors=True)

    def _kill_shims(self) -> None:
        """Shims of this node's containerd left after it stopped (those of tasks created while
        it was stopping): each names its containerd's socket."""
        if self.sock == Path():
            return
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
            except OSError:
                continue
            if b"containerd-shim" in argv[0] and str(self.sock).encode() in argv:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(cmdline.parent.name), signal.SIGKILL)


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
