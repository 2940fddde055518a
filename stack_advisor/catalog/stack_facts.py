"""What a software stack can run, as published: CUDA toolkit releases and their drivers, the first
toolkit of each architecture (``cuda_toolkits.yaml``), MIG profiles per board
(``mig_profiles.yaml``), NGC container releases (``ngc_containers.yaml``) and the first runtime
release of each model family (``model_runtimes.yaml``).

Each answers "known and allowed", "known and not allowed" (with why), or "not known" (None):
unknown is never taken as broken.
"""

from __future__ import annotations

import re
from functools import lru_cache

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field

_VERSION = r"^\d+\.\d+$"


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    source: str = Field(pattern=r"^https://\S+$")


class CudaToolkit(_Entry):
    id: str = Field(pattern=_VERSION)  # major.minor
    driver: str = Field(pattern=r"^\d{3}\.\d+(\.\d+)?$")


class ArchitectureCuda(_Entry):
    id: str
    first_cuda: str = Field(pattern=_VERSION)


class MigBoard(_Entry):
    id: str
    profiles: list[str]


class NgcRelease(_Entry):
    id: str = Field(pattern=r"^\d{2}\.\d{2}$")
    cuda: str = Field(pattern=_VERSION)
    tensorrt: str | None = Field(default=None, pattern=_VERSION)
    pytorch: str | None = Field(default=None, pattern=_VERSION)


class ModelRuntimes(_Entry):
    id: str
    model: str
    runtimes: dict[str, str]
    note: str | None = None


def _version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(str(text).strip().lstrip("vV").split("+")[0].split("-")[0])
    except InvalidVersion:
        return None


def major_minor(text: str | None) -> str | None:
    v = _version(text)
    return f"{v.major}.{v.minor}" if v is not None else None


@lru_cache(maxsize=1)
def cuda_toolkits() -> tuple[CudaToolkit, ...]:
    from stack_advisor.catalog.resolve import load_entries

    return tuple(load_entries("cuda_toolkits.yaml", "toolkits", CudaToolkit))


@lru_cache(maxsize=1)
def _architectures() -> dict[str, ArchitectureCuda]:
    from stack_advisor.catalog.resolve import load_entries

    return {a.id: a for a in load_entries("cuda_toolkits.yaml", "architectures", ArchitectureCuda)}


def cuda_toolkit(version: str | None) -> CudaToolkit | str | None:
    """The toolkit release a CUDA version belongs to; a message when the version falls inside the
    catalogue's range but no such toolkit was released ("12.7"); None when unknown (unparseable,
    or newer than the newest listed)."""
    mm = major_minor(version)
    if mm is None:
        return None
    known = {t.id: t for t in cuda_toolkits()}
    if mm in known:
        return known[mm]
    ordered = sorted(known, key=lambda k: Version(k))
    if Version(ordered[0]) < Version(mm) < Version(ordered[-1]):
        return (
            f"CUDA {version} was never released as a toolkit (NVIDIA released "
            f"{_neighbours(ordered, mm)}); a preview submission's pre-release "
            "software cannot be installed"
        )
    return None


def cuda_past_every_release(version: str | None) -> str | None:
    """A note where a CUDA version is two or more major releases past the newest toolkit the
    catalogue lists (``99.9`` beside 13.0: not out yet, or a typo), else None. Such a version is
    not refused (``cuda_toolkit``: newer than listed is unknown here); it says so."""
    mm = major_minor(version)
    if mm is None:
        return None
    newest = max((t.id for t in cuda_toolkits()), key=Version)
    if Version(mm).major < Version(newest).major + 2:
        return None
    return (
        f"cuda: CUDA {version} is {Version(mm).major - Version(newest).major} major releases past "
        f"the newest toolkit the catalogue lists ({newest}): a release not out yet, or a typo?"
    )


def _neighbours(ordered: list[str], mm: str) -> str:
    below = [k for k in ordered if Version(k) < Version(mm)][-1]
    above = next(k for k in ordered if Version(k) > Version(mm))
    return f"{below}, then {above}"


def first_cuda(generation: str | None) -> ArchitectureCuda | None:
    """The first CUDA toolkit that compiles for an architecture generation (None: not known)."""
    return _architectures().get(generation or "")


@lru_cache(maxsize=1)
def mig_boards() -> dict[str, MigBoard]:
    from stack_advisor.catalog.resolve import load_entries

    return {b.id: b for b in load_entries("mig_profiles.yaml", "boards", MigBoard)}


_PROFILE = re.compile(r"^(\d+)g\.(\d+)gb$")


def mig_profile_memory(board: str, profile: str) -> tuple[float, str] | None:
    """(GB of one instance of ``profile`` on ``board``, how it is known); None for a name that is
    not a MIG profile. A profile the board's table lists says so; another is read from its name."""
    found = _PROFILE.match(profile.strip().lower())
    if not found:
        return None
    entry = mig_boards().get(board)
    if entry is not None and profile.lower() in entry.profiles:
        return float(found.group(2)), f"MIG profile {profile} of {board} ({entry.source})"
    return float(
        found.group(2)
    ), f"MIG profile {profile} (its name; not in the catalogue's table for {board})"


@lru_cache(maxsize=1)
def ngc_releases() -> dict[str, NgcRelease]:
    from stack_advisor.catalog.resolve import load_entries

    return {r.id: r for r in load_entries("ngc_containers.yaml", "releases", NgcRelease)}


NGC_TAG = re.compile(r"^(?P<release>(1[7-9]|2\d)\.(0[1-9]|1[0-2]))(?:[.-].*)?$")


def ngc_release_of(tag: str | None) -> str | None:
    """The YY.MM release an NGC container tag names ("23.09", "23.04-py3",
    "24.07-trtllm-python-py3"), else None: such a tag is a container release, never a framework
    version."""
    if not tag:
        return None
    found = NGC_TAG.match(str(tag).strip())
    return found.group("release") if found else None


@lru_cache(maxsize=1)
def _model_runtimes() -> tuple[ModelRuntimes, ...]:
    from stack_advisor.catalog.resolve import load_entries

    return tuple(load_entries("model_runtimes.yaml", "families", ModelRuntimes))


def runtime_too_old(model: str | None, components: dict[str, str]) -> str | None:
    """Why a stack's runtime (``components``: lower-case name → version) cannot run ``model`` (the
    benchmark catalogue's model name), or None (it can, or it is not known)."""
    if not model:
        return None
    for family in _model_runtimes():
        if not re.search(family.model, model):
            continue
        for runtime, spec in family.runtimes.items():
            have = _version(components.get(runtime))
            if (
                have is not None
                and ngc_release_of(components.get(runtime)) is None
                and not SpecifierSet(spec).contains(have, prereleases=True)
            ):
                return (
                    f"{runtime} {components[runtime]} cannot run {model}: needs {runtime} {spec} "
                    f"({family.note or family.source})"
                )
    return None


_NGC_IMAGE = re.compile(
    r"^(?:nvcr\.io/)?nvidia/(?P<repo>[a-z0-9._-]+(?:/[a-z0-9._-]+)?):(?P<tag>\S+)$"
)


def ngc_image(image: str) -> tuple[str, str, NgcRelease | None] | None:
    """(repository, YY.MM release, what the release ships or None when the catalogue does not list
    it) of an NGC image reference ("nvcr.io/nvidia/tensorrt:23.04-py3"); None for another image."""
    found = _NGC_IMAGE.match(image.strip())
    if not found:
        return None
    release = ngc_release_of(found.group("tag"))
    if release is None:
        return None
    return found.group("repo"), release, ngc_releases().get(release)
