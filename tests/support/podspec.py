"""Run a Pod spec (a Job's template, as `advisor plan render` writes it) on the Docker engine, the
way a kubelet would run its one container: the same image, command and args (``$(VAR)`` expanded
from the container's env, as the kubelet does), env with ``secretKeyRef`` read from the real
apiserver's Secret and ``fieldRef`` from the pod's metadata, the securityContext (user, group,
read-only root, dropped capabilities, no privilege escalation) and the volumes (an ``emptyDir``
becomes a tmpfs). Host networking: the only network there is here.

Refuses what it cannot honour (another volume type, an env source it does not know), naming it."""

from __future__ import annotations

import base64
import re
from typing import Any

VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def expand(text: str, env: dict[str, str]) -> str:
    """The kubelet's ``$(VAR)`` expansion: a known name is replaced, an unknown one kept, ``$$``
    escapes."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        match = VAR.match(text, i)
        if match and match.group(1) in env:
            out.append(env[match.group(1)])
            i = match.end()
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _field(path: str, pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "spec.nodeName": pod["spec"].get("nodeName", ""),
    }
    if path in simple:
        return simple[path]
    match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if match:
        return str(meta.get(match.group(1), {}).get(match.group(2), ""))
    raise ValueError(f"fieldRef {path!r} is not one this runner resolves")


def container_env(container: dict[str, Any], pod: dict[str, Any], core: Any) -> dict[str, str]:
    """The container's env, resolved in order (later entries may use earlier ones)."""
    env: dict[str, str] = {}
    namespace = pod["metadata"]["namespace"]
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = expand(item["value"], env)
            continue
        source = item.get("valueFrom", {})
        if "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            secret = core.read_namespaced_secret(ref["name"], namespace)
            env[item["name"]] = base64.b64decode(secret.data[ref["key"]]).decode()
        elif "fieldRef" in source:
            env[item["name"]] = _field(source["fieldRef"]["fieldPath"], pod)
        else:
            raise ValueError(
                f"env {item['name']!r}: valueFrom {sorted(source)} is not supported here"
            )
    return env


def docker_options(
    pod: dict[str, Any], container: dict[str, Any], host_dirs: dict[str, str] | None = None
) -> dict[str, Any]:
    """docker run options for the pod's securityContext and volumes (``host_dirs``: a host folder
    holding each configMap or service-account volume's files, as a kubelet writes them)."""
    spec = pod["spec"]
    pod_sc, sc = spec.get("securityContext", {}), container.get("securityContext", {})
    uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
    gid = sc.get("runAsGroup", pod_sc.get("runAsGroup"))
    options: dict[str, Any] = {"network_mode": "host", "tmpfs": {}}
    if uid is not None:
        options["user"] = f"{uid}:{gid if gid is not None else uid}"
    if pod_sc.get("fsGroup") is not None:
        options["group_add"] = [str(pod_sc["fsGroup"])]
    if sc.get("readOnlyRootFilesystem"):
        options["read_only"] = True
    if sc.get("capabilities", {}).get("drop"):
        options["cap_drop"] = sc["capabilities"]["drop"]
    if sc.get("allowPrivilegeEscalation") is False:
        options["security_opt"] = ["no-new-privileges"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    binds = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if mount["name"] in (host_dirs or {}):
            binds[host_dirs[mount["name"]]] = {"bind": mount["mountPath"], "mode": "ro"}  # type: ignore[index]
            continue
        if "emptyDir" not in volume:
            raise ValueError(
                f"volume {mount['name']!r}: only emptyDir, configMap and service-account "
                "volumes run here"
            )
        size = volume["emptyDir"].get("sizeLimit", "1Gi").replace("Gi", "g").replace("Mi", "m")
        options["tmpfs"][mount["mountPath"]] = f"size={size},mode=1777"
    if binds:
        options["volumes"] = binds
    return options


def run_pod(
    pod: dict[str, Any],
    core: Any,
    *,
    timeout: float = 600,
    extra_volumes: dict[str, str] | None = None,
    extra_env: dict[str, str] | None = None,
) -> Any:
    """Run the pod's single container to completion (a conftest.Run: exit code, log).
    ``extra_env`` comes first, as the kubelet's service variables do: the pod's own env wins."""
    from tests.support.containers import container, wait_exit

    [spec] = pod["spec"]["containers"]
    env = {**(extra_env or {}), **container_env(spec, pod, core)}
    argv = [expand(a, env) for a in spec.get("command", []) + spec.get("args", [])]
    runner = container(spec["image"], docker_options(pod, spec, extra_volumes)).with_command(argv)
    for key, value in env.items():
        runner = runner.with_env(key, value)
    return wait_exit(runner, timeout)
