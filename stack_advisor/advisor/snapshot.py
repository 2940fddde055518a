"""``Knowledge``: an immutable snapshot of what the advisor knows at one store generation.

Every verb (``recommend``, ``predict``, ``evaluate``, ``compare``) is a function of a snapshot
and a typed request; the engine only builds snapshots and caches them per generation
(scikit-learn's estimator apart from its data: evaluation builds ``Knowledge.from_table`` over a
training split instead of swapping an engine's table).

The fields never change after construction. Facts derived from them on demand (the image index,
the rule checks of a stack, a CUDA release's minimum driver) are memoised inside the snapshot:
functions of its fields, so a memo never outlives the data it was computed from.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from stack_advisor.advisor.estimate.analysis import placement_overheads
from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.knowledge.rules import (
    RuleSet,
    Violation,
    load_rules,
    parse_version,
    stack_components,
)
from stack_advisor.advisor.knowledge.specs import PriceTable, load_prices
from stack_advisor.advisor.knowledge.table import ObservationTable
from stack_advisor.advisor.manifests.pod import image_index
from stack_advisor.advisor.results import PlacementOverhead
from stack_advisor.schema.models import FailureClass, PlacementKind, SoftwareStack, failure_class

# (stack id, published accelerator, placement kind, benchmark id or None): a run that failed
Failure = tuple[str, str, str, str | None]


@dataclass(frozen=True, eq=False)
class Knowledge:
    """One generation's table, evidence index (with its calibration and placement overheads),
    compatibility rules, prices and known failures.

    Build one with ``Knowledge.from_table`` (a table in hand), or let
    ``stack_advisor.advisor.engine.Advisor`` build it from a store.
    """

    table: ObservationTable
    index: EvidenceIndex
    rules: RuleSet
    prices: PriceTable
    failures: frozenset[Failure] = frozenset()
    _memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_table(
        cls,
        table: ObservationTable,
        *,
        rules: Any = None,
        prices: Any = None,
        transfer_method: str = "roofline",
        failures: Iterable[Failure] = (),
    ) -> Knowledge:
        """A snapshot over ``table`` whose index calibrates in memory on first use.

        Args:
            table: the observations (e.g. an evaluation's training split).
            rules, prices: anything ``load_rules``/``load_prices`` take; default: packaged.
            transfer_method: ``stack_advisor.advisor.estimate.transfer.METHODS``.
            failures: known failed runs; default none.
        """
        index = EvidenceIndex(table, placement_overheads(table), transfer_method)
        return cls(
            table=table,
            index=index,
            rules=load_rules(rules),
            prices=load_prices(prices),
            failures=frozenset(failures),
        )

    @property
    def generation(self) -> int:
        return self.table.generation

    @property
    def overheads(self) -> dict[tuple[str, str], PlacementOverhead]:
        """(canonical accelerator, placement) → overhead against bare metal."""
        return self.index.overheads

    @cached_property
    def images(self) -> dict[tuple[str | None, ...], str]:
        """Container images the knowledge base records, by the components they ship."""
        return image_index(self.table.stacks.values())

    def stack_violations(
        self, stack_id: str, stack: SoftwareStack, driver: str | None
    ) -> list[Violation]:
        """The compatibility rules the stack breaks (with the nodes' driver when given)."""
        key = ("violations", stack_id, driver)
        hit = self._memo.get(key)
        if hit is None:
            comps = stack_components(stack)
            if driver:
                comps["driver"] = driver
            hit = self._memo[key] = self.rules.check_components(comps)
        return list(hit)

    def min_driver(self, stack: SoftwareStack) -> str | None:
        """The per-release minimum driver for the stack's CUDA (from the rules), if any."""
        key = ("min_driver", stack.cuda)
        if key not in self._memo:
            self._memo[key] = min_driver_for_cuda(self.rules, stack.cuda)
        found: str | None = self._memo[key]
        return found


def min_driver_for_cuda(rules: RuleSet, cuda_text: str | None) -> str | None:
    """The highest ``driver >= X`` the rules require of exactly this CUDA release."""
    cuda = parse_version(cuda_text)
    if cuda is None:
        return None
    best: str | None = None
    for rule in rules.rules:
        if set(rule.when) == {"cuda"} and "driver" in rule.require and rule.applies({"cuda": cuda}):
            spec = rule.require["driver"]
            if spec.startswith(">="):
                candidate = spec[2:]
                if best is None or _version_key(candidate) > _version_key(best):
                    best = candidate
    return best


def _version_key(text: str) -> Any:
    return parse_version(text) or parse_version("0")


def known_failures(rows: Iterable[dict[str, Any]]) -> frozenset[Failure]:
    """The failures that rule a stack out: a store's ``failures`` entities that are stack failures
    (not harness limitations nor what the node lacked:
    ``stack_advisor.schema.models.failure_class``)."""
    out = set()
    for f in rows:
        if failure_class(f.get("stage"), f.get("error_class")) is not FailureClass.STACK:
            continue
        place = str(f.get("placement_id") or "").split("|")[0] or PlacementKind.UNKNOWN.value
        out.add((str(f.get("stack_id")), str(f.get("accelerator")), place, f.get("benchmark_id")))
    return frozenset(out)
