"""Parse free-text system descriptions: software versions and how the accelerator is placed.

MLPerf system descriptions (and hand-written notes elsewhere) state their stack as free text:
``"TensorRT 8.6.0, CUDA 12.0, cuDNN 8.8.0, Driver 525.85.12"``, ``"Python: 3.10.6, CUDA: 11.8"``,
a JSON object, or a JSON list of objects. Versions are kept exactly as written (typos included,
``Driver 5252.85.12`` exists); nothing is guessed.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from stack_advisor.catalog import resolve_accelerator
from stack_advisor.catalog.resolve import MLPERF_INFERENCE, normalize
from stack_advisor.catalog.software import software_class
from stack_advisor.catalog.stack_facts import first_cuda, major_minor, ngc_release_of, ngc_releases
from stack_advisor.catalog.stack_runtime import attribute, version_after
from stack_advisor.schema.models import NGC_FRAMEWORKS, PlacementKind, SoftwareStack

_VERSION = r"v?(\d+(?:\.\d+)*[a-z0-9]*)"

# a component's name as a word of its own: not inside a build tag ("vLLM 0.4.3+rocm614",
# "...d20250730.rocm641" name the ROCm they were built for in a tag, not as a version)
_NAMED = r"(?<![\w.+])"
# name → pattern; the version is group 1. The word must be followed by an optional ':' and the
# version, so "CUDA-X AI" or "OpenCL driver OpenCL 2.1" yield nothing.
_COMPONENT_PATTERNS: dict[str, re.Pattern[str]] = {
    "driver": re.compile(_NAMED + r"driver\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
    "cuda": re.compile(_NAMED + r"cuda\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
    "cudnn": re.compile(_NAMED + r"cudnn\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
    "tensorrt": re.compile(_NAMED + r"tensorrt\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
    "nccl": re.compile(_NAMED + r"nccl\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
    "python": re.compile(_NAMED + r"python\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
}
_EXTRA_PATTERNS: dict[str, re.Pattern[str]] = {
    "dali": re.compile(_NAMED + r"dali\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
    "triton": re.compile(_NAMED + r"triton\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
    "jetpack": re.compile(_NAMED + r"jetpack\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
    "rocm": re.compile(_NAMED + r"rocm\s*[:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
    "gcc": re.compile(_NAMED + r"gcc\s*[-:=]?\s*" + _VERSION + r"\b", re.IGNORECASE),
}
# components a result's text names beside its framework, kept in a stack's ``extra`` (an extra
# not named here, such as a collector's other installed frameworks, is not one the stack ran on)
SYSTEM_COMPONENTS = tuple(_EXTRA_PATTERNS)


def system_components(components: dict[str, str]) -> dict[str, str]:
    """Those of ``components`` (a text's parsed components, or a stack's ``extra``) that are
    ``SYSTEM_COMPONENTS`` and name a version."""
    return {k: str(v) for k, v in components.items() if k in SYSTEM_COMPONENTS and v}


# Keys used by JSON-shaped stacks (``[{"cuda_version": "12.0", "cuda_driver_version": ...}]``).
_JSON_KEYS: dict[str, str] = {
    "cuda_version": "cuda",
    "cuda": "cuda",
    "cuda_driver_version": "driver",
    "driver_version": "driver",
    "driver": "driver",
    "cudnn_version": "cudnn",
    "cudnn": "cudnn",
    "tensorrt_version": "tensorrt",
    "tensorrt": "tensorrt",
    "nccl_version": "nccl",
    "python_version": "python",
    "python": "python",
    "rocm_version": "rocm",
}
# a version only a build tag gives, where no text names it as a word ("PyTorch 2.3.0+rocm5.7"):
# dotted only (a tag's "rocm641" could be 6.4.1 or 6.41)
_TAGGED: dict[str, re.Pattern[str]] = {
    "rocm": re.compile(r"[+.]rocm(\d+\.\d+(?:\.\d+)?)\b", re.IGNORECASE),
}

# Framework names as they appear in descriptions → canonical name. Searched in this order, so
# "Triton ... TensorRT" is a Triton stack and "ArmNN TFLite" an ArmNN one.
FRAMEWORK_ORDER: tuple[tuple[str, re.Pattern[str]], ...] = (
    # LLM serving engines run on a framework they name after themselves ("vLLM 0.4.3, PyTorch
    # 2.3.0"): the engine is the framework of the stack.
    ("vllm", re.compile(r"\bvllm\b", re.IGNORECASE)),
    ("tensorrt-llm", re.compile(r"tensor\s*rt[\s_-]*llm|\btrt[\s_-]*llm", re.IGNORECASE)),
    ("pytorch", re.compile(r"py\s*torch", re.IGNORECASE)),
    ("tensorflow", re.compile(r"tensor\s*flow", re.IGNORECASE)),
    ("armnn", re.compile(r"arm\s*nn", re.IGNORECASE)),
    ("tflite", re.compile(r"tf\s*lite|tensorflow\s*lite", re.IGNORECASE)),
    ("onnxruntime", re.compile(r"onnx\s*(?:run[\s-]*time)|onnxruntime", re.IGNORECASE)),
    ("openvino", re.compile(r"openvino", re.IGNORECASE)),
    ("deepsparse", re.compile(r"deep\s*sparse", re.IGNORECASE)),
    ("tvm", re.compile(r"\btvm\b", re.IGNORECASE)),
    ("triton", re.compile(r"\btriton\b", re.IGNORECASE)),
    ("tensorrt", re.compile(r"tensor\s*rt", re.IGNORECASE)),
    ("qualcomm-cloud-ai-sdk", re.compile(r"qualcomm\s+cloud\s+ai\s+sdk", re.IGNORECASE)),
    # a serving layer over the engines above: the framework only where it names none of them
    ("dynamo", re.compile(r"\bdynamo\b", re.IGNORECASE)),
)


def flatten_text(value: Any) -> str:
    """A string, JSON object or list (or a string holding JSON) as one line of text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return ", ".join(f"{k}: {flatten_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(flatten_text(v) for v in value)
    return str(value)


def _json_components(value: Any) -> dict[str, str]:
    """Components from a JSON-shaped description (dict, list of dicts, or a string of either)."""
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith(("{", "[")):
            return {}
        try:
            value = json.loads(text)
        except ValueError:
            return {}
    items = value if isinstance(value, list) else [value]
    out: dict[str, str] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        for key, raw in item.items():
            name = _JSON_KEYS.get(str(key).strip().lower())
            if name and raw not in (None, "") and name not in out:
                out[name] = str(raw).strip()
    return out


def parse_components(value: Any) -> dict[str, str]:
    """Component versions named in one description: driver, cuda, cudnn, tensorrt, nccl, python
    plus extras (dali, triton, jetpack, rocm, gcc). The first mention of each wins."""
    out = _json_components(value)
    text = flatten_text(value)
    for name, pattern in {**_COMPONENT_PATTERNS, **_EXTRA_PATTERNS}.items():
        if name in out:
            continue
        match = pattern.search(text)
        if match:
            out[name] = match.group(1)
    for name, pattern in _TAGGED.items():
        tagged = pattern.search(text) if name not in out else None
        if tagged:
            out[name] = tagged.group(1)
    return out


def parse_framework(
    value: Any, benchmark: str | None = None, family: str = MLPERF_INFERENCE
) -> tuple[str | None, str | None]:
    """(canonical framework name, version) from a ``framework`` field; (None, None) when empty.

    With ``benchmark`` (a catalogue id of ``family``), the runtime of that benchmark where the
    text lists several (``stack_runtime.attribute``); without, the engine the text names first
    in ``FRAMEWORK_ORDER``. The version is a version-shaped word after the name in the same
    comma/semicolon-separated part, never a branch or tag (``feat/1.2-mlpinf``,
    ``CentML:mlperf-inf-...-v6.0``); a name we do not know is kept as written (lower-cased,
    version removed)."""
    text = flatten_text(value)
    if not text:
        return None, None
    if benchmark:
        found = attribute(text, benchmark, FRAMEWORK_ORDER, family)
        if found is not None:
            return found.runtime, found.version
    parts = [p.strip() for p in re.split(r"[,;]", text) if p.strip()]
    for name, pattern in FRAMEWORK_ORDER:
        for part in parts:
            match = pattern.search(part)
            if match:
                return name, version_after(part[match.end() :].split())[0]
    words = (parts[0] if parts else text).split()
    lead = list(itertools.takewhile(lambda w: not _VERSION_OR_REF.search(w), words))
    name = re.sub(r"\s+", "-", " ".join(lead).strip(" -:").lower()) or words[0].lower()
    return name, version_after(words[len(lead) :])[0]


_VERSION_OR_REF = re.compile(r"^[(\[-]?v?\d|[/:=]")


def implementation_evidence(
    framework: str | None, division: str | None, submitter: str | None, vendor: str | None
) -> str | None:
    """ "vendor" where a closed-division result on a framework the catalogue calls a reference
    one (PyTorch, TensorFlow, ONNX Runtime) was submitted by the accelerator's own vendor (AMD's
    ``PyTorch 2.10.0+git..., ROCm 7.2.2`` LLM results: AMD's optimised stack, not MLCommons'
    reference code); None otherwise. The word "pytorch" alone decides nothing."""
    cls = software_class(framework) if framework else None
    if cls is None or cls.software_class != "reference":
        return None
    if (division or "").strip().lower() != "closed" or not vendor or not submitter:
        return None
    return "vendor" if normalize(vendor) and normalize(vendor) in normalize(submitter) else None


def benchmark_stack(
    stack: SoftwareStack,
    framework_text: str | None,
    benchmark: str,
    *,
    division: str | None = None,
    submitter: str | None = None,
    vendor: str | None = None,
    family: str = MLPERF_INFERENCE,
    round_name: str | None = None,
) -> SoftwareStack:
    """A system's stack as one of its results ran it: the runtime (and version) that ran
    ``benchmark`` where the framework text lists several (``parse_framework``), and the
    ``implementation`` evidence of ``implementation_evidence`` where the system folder gave
    none. The stack itself when nothing changes (importers share one stack per system). A
    version written as the result's own round (``TensorRT-LLM v6.0`` in round v6.0) is the
    round's name, not the runtime's version: no version then."""
    name, version = (
        parse_framework(framework_text, benchmark, family)
        if framework_text
        else (stack.framework, stack.framework_version)
    )
    if version and framework_text and is_round_tag(framework_text, version, round_name):
        version = None
    update: dict[str, Any] = {}
    if (name, version) != (stack.framework, stack.framework_version):
        update = {"framework": name, "framework_version": version}
    evidence = implementation_evidence(name, division, submitter, vendor)
    if evidence and "implementation" not in stack.extra:
        update["extra"] = {**stack.extra, "implementation": evidence}
    return stack.model_copy(update=update) if update else stack


def is_round_tag(text: str, version: str, round_name: str | None) -> bool:
    """Whether ``version`` is written in ``text`` only as the round's own name ("v6.0" in round
    v6.0), which names the submission, not a release of the runtime."""
    if not round_name:
        return False
    tag = round_name.strip().lower()
    if not tag.startswith("v") or tag[1:] != version.lower():
        return False
    words = re.findall(r"[\w.]+", text.lower())
    return tag in words and version.lower() not in words


@dataclass
class ParsedStack:
    components: dict[str, str]
    conflicts: list[str] = field(default_factory=list)


def merge_stack_texts(framework: Any, software_stack: Any) -> ParsedStack:
    """Versions from the ``framework`` and ``other_software_stack`` fields of one system.

    The software-stack field is the detailed one and wins; a framework-field version that
    disagrees (and is not a shorter form of it: ``8.6`` vs ``8.6.0``) is noted as a conflict."""
    from_framework = parse_components(framework)
    from_stack = parse_components(software_stack)
    merged = dict(from_framework)
    conflicts: list[str] = []
    for name, version in from_stack.items():
        other = from_framework.get(name)
        if (
            other is not None
            and other != version
            and not (version.startswith(other) or other.startswith(version))
        ):
            conflicts.append(f"{name}: framework={other} stack={version}")
        merged[name] = version
    return ParsedStack(components=merged, conflicts=conflicts)


# MLCommons' automation names a result's system folder
# <system>-<implementation>-<device>-<framework>- <config> (v5.1:
# "GATEOverflow_Intel_SPR_i9-reference-gpu-vllm-default_config"); "reference" is
# MLCommons' own reference code, whatever framework it runs on.
_IMPLEMENTATION = re.compile(r"-(reference)-(?:gpu|cpu|cuda|rocm|tpu|npu)-", re.IGNORECASE)


def implementation_of(system_id: str | None) -> str | None:
    """ "reference" where a published system folder says the MLCommons reference implementation
    ran (``_IMPLEMENTATION``); None where it says nothing (a vendor's own system names)."""
    match = _IMPLEMENTATION.search(system_id or "")
    return match.group(1).lower() if match else None


def container_cuda(
    framework: str | None, version: str | None, published: str | None, accelerator: str | None
) -> tuple[str | None, str | None]:
    """(the CUDA to record, a note or None) for a system whose framework version is an NGC container
    release ("PyTorch NVIDIA Release 25.04") that the catalogue lists (``ngc_containers.yaml``).

    A published CUDA whose major.minor contradicts what the release ships is noted. It is replaced
    by the release's only when it predates the accelerator's architecture (it cannot have run
    there) and the release's does not: a submitter's stale template, CUDA 12.2.1 beside a 25.04
    container on a B200. When both could have run (or the tag is the stale part), which one did is
    not known, so the published one stays, noted."""
    tag = ngc_release_of(version) if (framework or "").lower() in NGC_FRAMEWORKS else None
    release = ngc_releases().get(tag) if tag else None
    if release is None or not published or major_minor(published) in (None, release.cuda):
        return published, None
    note = (
        f"cuda: published {published}, but NGC {tag} ships CUDA {release.cuda} ({release.source})"
    )
    entry = resolve_accelerator(accelerator).entry if accelerator else None
    arch = first_cuda(str(getattr(entry, "generation", "") or ""))
    if (
        arch is not None
        and _older(published, arch.first_cuda)
        and not _older(release.cuda, arch.first_cuda)
    ):
        return release.cuda, (
            f"{note}; {published} predates {arch.id} (first CUDA {arch.first_cuda}), so "
            "the container's is recorded"
        )
    return published, note


def _older(version: str, than: str) -> bool:
    """Whether ``version``'s major.minor is below ``than`` (False when unreadable)."""
    mm = major_minor(version)
    return mm is not None and Version(mm) < Version(than)


# ---- placement -------------------------------------------------------------------------------

# NVIDIA vGPU profiles: A100-40C, A100-SXM-80C, H100-80C, A10-24Q, T4-16Q, L40-48Q ...
_VGPU_PROFILE = re.compile(
    r"\b((?:[AHLTVM]\d{1,3}[A-Za-z]?)(?:-(?:SXM\d?|PCIE|PCIe))?-\d{1,3}[CQAB])\b"
)
_VGPU_WORDS = re.compile(r"\bv\s?GPU\b|\bGRID\b", re.IGNORECASE)
_PASSTHROUGH = re.compile(r"pass[\s-]?through|direct\s?path|\bDDA\b|vfio", re.IGNORECASE)
# Most specific first: "VMware vSphere 8.0.1" names the hypervisor better than "ESXi".
_HYPERVISORS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(VMware\s+vSphere(?:\s+\d+(?:\.\d+)*)?)", re.IGNORECASE),
    re.compile(r"(VMware\s+ESXi(?:,?\s+\d+(?:\.\d+)*)?)", re.IGNORECASE),
    re.compile(r"(vSphere(?:\s+\d+(?:\.\d+)*)?|ESXi(?:\s+\d+(?:\.\d+)*)?)", re.IGNORECASE),
    re.compile(r"\b(VMware|KVM|Hyper-V|Xen)\b", re.IGNORECASE),
)
# "Virtualized NVIDIA H200-SXM-141GB" (later rounds): a VM that does not say how the GPU reaches it.
_VIRTUALIZED = re.compile(r"\bvirtuali[sz]ed\b", re.IGNORECASE)
_CLOUDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("AWS", re.compile(r"\baws|amazon", re.IGNORECASE)),
    ("Azure", re.compile(r"azure", re.IGNORECASE)),
    ("Google Cloud", re.compile(r"google\s+cloud|\bgcp", re.IGNORECASE)),
    ("Alibaba Cloud", re.compile(r"alibaba\s+cloud|aliyun", re.IGNORECASE)),
    ("Oracle Cloud (OCI)", re.compile(r"oracle\s+cloud|\boci\b|^oracle$", re.IGNORECASE)),
    # Google's own submissions run on Google Cloud (TPUs exist nowhere else).
    ("Google Cloud", re.compile(r"^google$", re.IGNORECASE)),
    ("Crusoe Cloud", re.compile(r"\bcrusoe\b", re.IGNORECASE)),
    ("Sustainable Metal Cloud", re.compile(r"sustainable[\s_]+metal[\s_]+cloud", re.IGNORECASE)),
)
_VCPU = re.compile(r"\bvCPUs?\b", re.IGNORECASE)


@dataclass
class PlacementEvidence:
    kind: PlacementKind
    basis: str
    evidence: list[str]
    hypervisor: str | None = None
    vgpu_profile: str | None = None
    cloud_provider: str | None = None


def _snippet(field_name: str, text: str, match: re.Match[str], width: int = 40) -> str:
    start = max(0, match.start() - width)
    end = min(len(text), match.end() + width)
    return (
        f"{field_name}: …{text[start:end]}…"
        if (start or end < len(text))
        else f"{field_name}: {text}"
    )


_Hit = tuple[str, str, re.Match[str]]


def _first(texts: dict[str, str], pattern: re.Pattern[str]) -> _Hit | None:
    """(field, its text, the match) of the first field ``pattern`` matches."""
    for name, text in texts.items():
        match = pattern.search(text)
        if match:
            return name, text, match
    return None


def classify_placement(
    fields: dict[str, Any], *, has_accelerator: bool = True
) -> PlacementEvidence:
    """How the accelerator reaches the workload, from a system description's fields.

    vGPU profile or the words vGPU/GRID → vgpu; passthrough/DirectPath → passthrough; a named
    hypervisor or a cloud VM that states no mode → unknown; nothing said → bare-metal (which for
    most descriptions only means that they say nothing about virtualization)."""
    texts = {name: flatten_text(value) for name, value in fields.items() if value not in (None, "")}
    hyper = None
    for pattern in _HYPERVISORS:
        hyper = _first(texts, pattern)
        if hyper:
            break
    hypervisor = hyper[2].group(1).strip().rstrip(",") if hyper else None
    cloud = None
    cloud_hit = None
    for provider, pattern in _CLOUDS:
        cloud_hit = _first(texts, pattern)
        if cloud_hit:
            cloud = provider
            break
    stated = _mode_stated(texts, hyper, hypervisor, cloud)
    if stated is not None:
        return stated
    return _unstated(texts, hyper, hypervisor, cloud, cloud_hit, has_accelerator)


def _mode_stated(
    texts: dict[str, str], hyper: _Hit | None, hypervisor: str | None, cloud: str | None
) -> PlacementEvidence | None:
    """vgpu (a vGPU profile or the words) or passthrough, where the description says so."""
    profile = _first(texts, _VGPU_PROFILE)
    words = _first(texts, _VGPU_WORDS)
    if profile or words:
        evidence = [_snippet(*hit) for hit in (profile, words, hyper) if hit]
        return PlacementEvidence(
            PlacementKind.VGPU,
            "explicit",
            evidence,
            hypervisor=hypervisor,
            vgpu_profile=profile[2].group(1) if profile else None,
            cloud_provider=cloud,
        )
    passthrough = _first(texts, _PASSTHROUGH)
    if passthrough:
        evidence = [_snippet(*hit) for hit in (passthrough, hyper) if hit]
        return PlacementEvidence(
            PlacementKind.PASSTHROUGH,
            "explicit",
            evidence,
            hypervisor=hypervisor,
            cloud_provider=cloud,
        )
    return None


def _unstated(
    texts: dict[str, str],
    hyper: _Hit | None,
    hypervisor: str | None,
    cloud: str | None,
    cloud_hit: _Hit | None,
    has_accelerator: bool,
) -> PlacementEvidence:
    """No mode stated: unknown behind a named hypervisor, a VM or a cloud; else bare-metal."""
    if hyper:
        return PlacementEvidence(
            PlacementKind.UNKNOWN,
            "hypervisor-unstated",
            [_snippet(*hyper)],
            hypervisor=hypervisor,
            cloud_provider=cloud,
        )
    virtualized = _first(texts, _VIRTUALIZED)
    if virtualized:
        return PlacementEvidence(
            PlacementKind.UNKNOWN,
            "virtualized-unstated",
            [_snippet(*virtualized)],
            hypervisor="VM (unnamed hypervisor)",
            cloud_provider=cloud,
        )
    if cloud_hit:
        vcpu = _first(texts, _VCPU)
        if vcpu and not has_accelerator:
            return PlacementEvidence(
                PlacementKind.UNKNOWN,
                "vm-no-accelerator",
                [_snippet(*cloud_hit), _snippet(*vcpu)],
                hypervisor="VM (unnamed hypervisor)",
                cloud_provider=cloud,
            )
        return PlacementEvidence(
            PlacementKind.UNKNOWN, "cloud-unstated", [_snippet(*cloud_hit)], cloud_provider=cloud
        )
    return PlacementEvidence(PlacementKind.BARE_METAL, "default-no-mention", [])
