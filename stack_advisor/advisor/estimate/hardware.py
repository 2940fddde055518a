"""The catalogue figures a transfer scales by (issue 28, new hardware): an accelerator's dense
peak at the precision a benchmark runs at, its memory bandwidth counted in operands of that
precision, its memory and scale-up interconnect; and what to fall back to where the catalogue
leaves a figure empty (never guessed).

Which precision a benchmark runs at is not published per result, so it is a *policy* chosen per
benchmark slice by leaving each accelerator out
(``stack_advisor.advisor.estimate.transfer.learn_blend``), among the three below. Only parts whose
figures move against the others' between two policies can tell them apart (one fp4 part among Hopper
parts); where fewer than two do, the choice is not determined (``transfer.choose_policy``) and a
transfer's interval spans what each policy gives
(``stack_advisor.advisor.estimate.transferred.policy_spread``), saying so in a ``precision`` factor:

- ``8-bit``: the quantised numerics of the closed division (int8 or fp8), else fp16/bf16, else fp32;
- ``4-bit``: fp4 (then fp6) where the part has it (Blackwell, MI355X), else as ``8-bit``;
- ``16-bit``: fp16/bf16, else fp32.

Under a policy, an accelerator's figures are (peak at the first precision of the ladder it
publishes, memory bandwidth x 8 / that precision's bits): a part that runs a model at 4 bits reads
half the bytes per weight of one at 8 bits. Where the ladder would reach only the vector units'
fp32 (or nothing) and the part publishes a matrix peak at fewer bits, the ladder's precision is
read off that one at half the rate per doubling of bits (``matrix_rate``: RTX PRO 6000 Blackwell
publishes fp4 and fp32 only, so its 8-bit peak is its fp4 / 2, not its fp32; until 2026-11-29
the fp32 answered, a 4-8x understatement against parts read at their matrix peaks), the answer
saying so. A part whose catalogue entry has no compute figure
at all (or none on the ladder) transfers by bandwidth alone (``BANDWIDTH_ONLY``), calibrated
apart with its own (wider) residuals. A CPU's figures are per socket, derived by the catalogue
(``stack_advisor.catalog.cpu_models``); they are read on the same ladders (int8 from AMX or VNNI,
bf16/fp16 from AMX, else fp32) and used only by the CPU transfer
(``stack_advisor.advisor.estimate.cpu_transfer``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from stack_advisor.advisor.knowledge.specs import resolve_accelerator
from stack_advisor.catalog import load_catalog
from stack_advisor.catalog.cpu_models import cpu_figures

POLICIES = ("8-bit", "4-bit", "16-bit")  # the first is the default (fewer than 3 references)
DEFAULT_POLICY = POLICIES[0]
LADDERS: dict[str, tuple[str, ...]] = {
    "8-bit": ("int8", "fp8", "fp16", "bf16", "fp32"),
    "4-bit": ("fp4", "fp6", "int8", "fp8", "fp16", "bf16", "fp32"),
    "16-bit": ("fp16", "bf16", "fp32"),
}
BITS = {"fp4": 4, "fp6": 6, "fp8": 8, "int8": 8, "fp16": 16, "bf16": 16, "fp32": 32}
# the matrix units' precisions (an fp32 figure is the vector units', another kind of peak)
MATRIX = ("fp4", "fp6", "int8", "fp8", "fp16", "bf16")
BANDWIDTH_ONLY = "bandwidth only"  # how a part with no published compute figure transfers


@dataclass(frozen=True)
class Figures:
    """An accelerator's published figures under one precision policy (None: not published)."""

    name: str
    precision: str | None  # the ladder's first precision the part has a peak for (published,
    # or read off a published one at fewer bits: ``derived_from``)
    compute: float | None  # dense peak at ``precision``, TFLOP/s (TOPS for int8)
    bandwidth_gbs: float | None
    memory_gb: float | None
    interconnect_gbs: float | None
    # where ``compute`` is read off the part's published peak at fewer bits (``matrix_rate``):
    # that precision and figure
    derived_from: tuple[str, float] | None = None

    @property
    def effective_bandwidth(self) -> float | None:
        """Memory bandwidth in 8-bit operands: x 8 / bits of the precision it runs at."""
        if self.bandwidth_gbs is None:
            return None
        return (
            self.bandwidth_gbs * 8 / BITS[self.precision] if self.precision else self.bandwidth_gbs
        )

    def scaling(self) -> tuple[float, float] | None:
        """(peak compute, effective bandwidth) to scale by; None without both."""
        bandwidth = self.effective_bandwidth
        return (self.compute, bandwidth) if self.compute and bandwidth else None

    def describe(self) -> str:
        at = f"{self.compute:g} T at {self.precision}" if self.compute else "compute unpublished"
        if self.derived_from:
            source, peak = self.derived_from
            at += f" (from its {source} {peak:g} T: the rate halves as operand bits double)"
        parts = [
            at,
            f"{self.bandwidth_gbs:g} GB/s" if self.bandwidth_gbs else "bandwidth unpublished",
        ]
        if self.memory_gb:
            parts.append(f"{self.memory_gb:g} GB")
        if self.interconnect_gbs:
            parts.append(f"scale-up {self.interconnect_gbs:g} GB/s")
        return f"{self.name} ({', '.join(parts)})"


@lru_cache(maxsize=16384)
def figures(name: str, policy: str = DEFAULT_POLICY) -> Figures:
    """``name``'s catalogue figures under ``policy`` (MIG/vGPU share applied by the resolver).

    Raises:
        ValueError: an unknown policy.
    """
    if policy not in LADDERS:
        raise ValueError(f"precision policy: {policy!r} is not one of {', '.join(POLICIES)}")
    resolved = resolve_accelerator(name)
    if resolved.match.kind == "cpu":
        return cpu_scaling(resolved.key, resolved.match.cpu if resolved.resolved else None, policy)
    precision, compute, derived = None, None, None
    for candidate in LADDERS[policy]:
        value = resolved.match.figure(candidate) if resolved.spec is not None else None
        if value:
            precision, compute = candidate, value
            break
    if precision in (None, "fp32") and resolved.spec is not None:
        # no matrix figure on the ladder: read one off the part's peak at fewer bits, not the
        # vector units' fp32 (RTX PRO 6000 Blackwell publishes fp4 and fp32 only)
        published = {p: v for p in MATRIX if (v := resolved.match.figure(p))}
        kept = tuple(p for p in LADDERS[policy] if p not in resolved.spec.not_derived)
        found = matrix_rate(published, kept)
        if found is not None:
            precision, compute, derived = found
    spec = resolved.spec
    link = spec.interconnect_gbs if spec is not None else None
    return Figures(
        resolved.key,
        precision,
        compute,
        resolved.figure("memory_bw_gbs"),
        resolved.figure("memory_gb"),
        float(link) if link else None,
        derived,
    )


def matrix_rate(
    published: dict[str, float], ladder: tuple[str, ...]
) -> tuple[str, float, tuple[str, float]] | None:
    """The ladder's first matrix precision at the rate a published peak at fewer bits implies
    (precision, peak, (the published precision, its peak)), or None where the part publishes
    none at fewer bits. A matrix unit's dense rate halves as its operands' bits double (NVIDIA
    Hopper, Ada and Blackwell tensor cores: fp4 = 2x fp8 = 4x fp16; AMD CDNA 3/4: fp8 = 2x
    fp16; Intel Xe2 XMX: int8 = 2x fp16), so a part's peak at more bits is read off its
    nearest published one below (of two at the same bits, the lower); never towards fewer bits
    (a part without fp4 units has no fp4 rate). A part whose figures do not follow the rule
    leaves those precisions out of ``ladder`` (the catalogue's ``not_derived``)."""
    for target in ladder:
        if target not in MATRIX:
            continue
        below = [p for p in published if BITS[p] <= BITS[target]]
        if below:
            bits = max(BITS[p] for p in below)
            source = min((p for p in below if BITS[p] == bits), key=lambda p: published[p])
            peak = published[source]
            return target, peak * BITS[source] / BITS[target], (source, peak)
    return None


def cpu_scaling(key: str, cpu_id: str | None, policy: str) -> Figures:
    """A CPU's per-socket figures under ``policy`` (``stack_advisor.catalog.cpu_models``: peaks
    derived from cores x base clock x the core's ops per cycle); empty where the catalogue has no
    entry for the model."""
    found = cpu_figures(cpu_id) if cpu_id else None
    if found is None:
        return Figures(key, None, None, None, None, None)
    bandwidth = found.bandwidth.value if found.bandwidth else None
    precision = next((c for c in LADDERS[policy] if found.peak(c)), None)
    return Figures(
        key, precision, found.peak(precision) if precision else None, bandwidth, None, None
    )


def scaling_figures(name: str, policy: str = DEFAULT_POLICY) -> tuple[float, float] | None:
    """(peak compute, effective bandwidth) of ``name`` under ``policy``; None without both."""
    return figures(name, policy).scaling()


def bandwidth_figures(name: str, policy: str = DEFAULT_POLICY) -> tuple[float, float] | None:
    """(1, bandwidth): what a transfer by bandwidth alone scales by (compute left out), in 8-bit
    operands, or in 4-bit ones under the ``4-bit`` policy where the part runs fp4
    (``runs_fp4``): a part that reads half the bytes per weight moves twice the operands."""
    bandwidth = figures(name).bandwidth_gbs
    if not bandwidth:
        return None
    return (1.0, bandwidth * 2 if policy == "4-bit" and runs_fp4(name) else bandwidth)


@lru_cache(maxsize=4096)
def siblings(name: str) -> tuple[str, ...]:
    """The parts closest in design to ``name`` (the catalogue's ``siblings``, nearest first):
    what a transfer to it prefers to draw on; () for a part the catalogue does not know."""
    spec = resolve_accelerator(name).spec
    return tuple(spec.siblings) if spec is not None else ()


@lru_cache(maxsize=4096)
def runs_fp4(name: str) -> bool:
    """Whether the part has fp4: its own catalogue entry publishes an fp4 peak, or, where its
    entry publishes no compute figure at all, another part of its generation (the same tensor
    cores: RTX PRO 6000 Blackwell Server Edition, whose datasheet gives no peak, and the
    Workstation Edition, whose does)."""
    spec = resolve_accelerator(name).spec
    if spec is None:
        return False
    if spec.peak_tflops.fp4:
        return True
    if any(getattr(spec.peak_tflops, p) for p in BITS) or not spec.generation:
        return False
    return any(
        e.generation == spec.generation and e.peak_tflops.fp4
        for e in load_catalog().accelerators.values()
    )


def replicas_per_node(weights_gb: float, memory_gb: float, count: int) -> int:
    """How many copies of a model of ``weights_gb`` fit on ``count`` parts of ``memory_gb`` each,
    counting whole parts per copy (weights only: a lower bound on what a replica needs)."""
    if weights_gb <= 0 or memory_gb <= 0 or count <= 0:
        return 0
    per_copy = max(
        1, -(-int(weights_gb * 1000) // int(memory_gb * 1000))
    )  # parts per copy, rounded up
    return count // per_copy
