"""Does a container image run the stack a row ranks? An NGC image's tag names a monthly release
whose CUDA and TensorRT (and the PyTorch container's PyTorch) the catalogue records
(``stack_advisor.catalog.stack_facts``); a difference in major.minor from the row's stack is a
warning, since the snippet would run another stack than the one whose figure is shown."""

from __future__ import annotations

from stack_advisor.catalog.stack_facts import major_minor, ngc_image, ngc_release_of
from stack_advisor.schema.models import SoftwareStack


def image_stack(image: str) -> dict[str, str] | None:
    """The component versions (major.minor) an NGC image ships, None when not known."""
    parsed = ngc_image(image)
    if parsed is None or parsed[2] is None:
        return None
    repo, _, release = parsed
    assert release is not None
    out = {"cuda": release.cuda}
    if release.tensorrt:
        out["tensorrt"] = release.tensorrt
    if release.pytorch and repo.split("/")[-1] == "pytorch":
        out["pytorch"] = release.pytorch
    return out


def image_mismatch(image: str, stack: SoftwareStack) -> str | None:
    """Why ``image`` does not run ``stack`` (a component both name at another major.minor), or
    None."""
    ships = image_stack(image)
    if ships is None:
        return None
    have = {
        "cuda": stack.cuda,
        "tensorrt": stack.tensorrt
        or (stack.framework_version if stack.framework == "tensorrt" else None),
    }
    if stack.framework in ("pytorch", "torch"):
        have["pytorch"] = stack.framework_version
    differ = []
    for name, version in ships.items():
        mine = have.get(name)
        if mine and ngc_release_of(mine) is None and major_minor(mine) not in (None, version):
            differ.append(f"{name} {version} (the row's stack has {mine})")
    if not differ:
        return None
    release = ngc_image(image)
    assert release is not None
    return (
        f"image {image} (NGC {release[1]}) ships {', '.join(differ)}: the snippet would "
        "run another "
        "stack than the one ranked; pick an image of the ranked stack's release"
    )
