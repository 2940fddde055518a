"""Does a container image run the stack a row ranks? An NGC image's tag names a monthly release
whose CUDA and TensorRT (and the PyTorch container's PyTorch) the catalogue records
(``stack_advisor.catalog.stack_facts``); a difference in major.minor from the row's stack is a
warning, since the snippet would run another stack than the one whose figure is shown. So is an
image named after another LLM serving engine than the row's (a TensorRT-LLM image for a vLLM
row): the engines and their spellings are the catalogue's (``frameworks.yaml``)."""

from __future__ import annotations

import re
from functools import lru_cache

from stack_advisor.catalog.loading import load_catalog
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


@lru_cache(maxsize=1)
def _engine_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each LLM serving engine of the catalogue and a pattern of its spellings as a word of an
    image reference (separators ``-``, ``_`` or none: ``trtllm``, ``tensorrt-llm``)."""
    out = []
    for entry in load_catalog().frameworks.values():
        if not entry.llm_engine:
            continue
        spellings = sorted({entry.id, *entry.aliases}, key=len, reverse=True)
        words = "|".join(
            r"[-_ ]?".join(re.escape(part) for part in re.split(r"[-_ ]+", name))
            for name in spellings
        )
        out.append((entry.id, re.compile(rf"(?<![a-z0-9])(?:{words})(?![a-z0-9])")))
    return tuple(out)


def image_engines(image: str) -> frozenset[str]:
    """The LLM serving engines an image reference is named after (its repository or tag); a
    serving layer named alone (``ai-dynamo``) stands for every engine it runs through
    (``serves_through``); empty when it names none."""
    text = image.strip().lower()
    named = {engine for engine, pattern in _engine_patterns() if pattern.search(text)}
    frameworks = load_catalog().frameworks
    layers = {n for n in named if frameworks[n].serves_through}
    if named - layers:  # the engine the layer runs is named too (ai-dynamo/vllm-runtime)
        return frozenset(named)
    return frozenset(named | {e for n in layers for e in frameworks[n].serves_through})


def stack_engines(stack: SoftwareStack) -> frozenset[str]:
    """The LLM serving engines a stack runs: its framework where that is one, and those its
    published text names (NVIDIA's LLM results are stored as TensorRT, their text naming
    TensorRT-LLM)."""
    frameworks = load_catalog().frameworks
    text = " ".join(filter(None, [stack.framework, stack.raw])).lower()
    named = {engine for engine, pattern in _engine_patterns() if pattern.search(text)}
    mine = stack.framework
    if mine in frameworks and frameworks[mine].llm_engine:
        named.add(mine)
    return frozenset(named)


def engine_mismatch(image: str, stack: SoftwareStack) -> str | None:
    """Why ``image`` runs another LLM serving engine than ``stack``'s, or None (the image names
    no engine, the stack none, or one of the image's is the stack's)."""
    engines, mine = image_engines(image), stack_engines(stack)
    if not engines or not mine or engines & mine:
        return None
    runs = ", ".join(sorted(mine))
    return (
        f"image {image} is named after {', '.join(sorted(engines))}; the row's stack runs "
        f"{runs}: the snippet would run another serving engine than the one ranked; pick an "
        f"image of {runs}"
    )


def image_mismatch(image: str, stack: SoftwareStack) -> str | None:
    """Why ``image`` does not run ``stack`` (another LLM serving engine, a component both name at
    another major.minor), or None."""
    engine = engine_mismatch(image, stack)
    if engine:
        return engine
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
