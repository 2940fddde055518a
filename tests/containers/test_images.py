"""The images built here (deploy/docker/build.sh) run as the manifests run them: non-root, read-only
root filesystem, /tmp a tmpfs, host networking; the version inside is the checkout's; the CPU
collector stays under 1.5 GB."""

from __future__ import annotations

import json
import tomllib

import pytest

from tests.support.containers import HARDENED, REPO, Images, docker

pytestmark = [pytest.mark.containers, pytest.mark.slow]
MAX_COLLECTOR_BYTES = 1.5e9


def _checkout_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def _run_hardened(image: str, *cmd: str) -> str:
    proc = docker(
        "run",
        "--rm",
        "--network",
        "host",
        "--read-only",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--tmpfs",
        "/tmp:" + HARDENED["tmpfs"]["/tmp"],
        image,
        *cmd,
    )
    assert proc.returncode == 0, f"{image} {' '.join(cmd)}: {proc.stderr}"
    return proc.stdout


@pytest.mark.parametrize("which", ["api", "collector"])
def test_image_runs_non_root_read_only_with_the_checkouts_version(
    images: Images, which: str
) -> None:
    image = getattr(images, which)
    assert (
        _run_hardened(image, "advisor", "--version").strip()
        == f"advisor (stack-advisor) {_checkout_version()}"
    )
    assert _run_hardened(image, "id", "-u").strip() == "65532"  # the image's own user, not root
    config = json.loads(docker("image", "inspect", image).stdout)[0]["Config"]
    assert config["User"] == "65532:65532"
    # the root filesystem is read-only; HOME (/tmp, an emptyDir in the manifests) is where writes go
    out = _run_hardened(
        image, "sh", "-c", "touch /x 2>/dev/null || echo ro; touch $HOME/x && echo home-ok"
    )
    assert out.split() == ["ro", "home-ok"]


def test_collector_image_size_and_no_cuda(images: Images) -> None:
    size = int(docker("image", "inspect", "--format", "{{.Size}}", images.collector).stdout)
    print(f"collector image {images.collector}: {size / 1e6:.0f} MB")
    assert size <= MAX_COLLECTOR_BYTES, f"{images.collector} is {size / 1e9:.2f} GB (limit 1.5 GB)"
    listing = _run_hardened(images.collector, "sh", "-c", "ls /opt/venv/lib/python3*/site-packages")
    assert "nvidia" not in listing.split(), "CUDA wheels in the CPU collector image"
