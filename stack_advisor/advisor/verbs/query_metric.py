"""The metric a ``predict`` query answers in when it names none, and hints for a query's unknown
fields.

A query as users write it often names a benchmark and a scenario and leaves the metric out, as
``advisor predict --benchmark B --accelerator A --count N`` does: it is answered in the metric the
slice records (its only one; else its throughput, higher is better, the one most results record;
MLPerf Training: its time to train), and the answer says which. A query without a scenario, of a
benchmark that has several, is refused, naming them.
"""

from __future__ import annotations

import difflib

from stack_advisor.advisor.estimate.index import EvidenceIndex
from stack_advisor.advisor.results import PredictQuery
from stack_advisor.advisor.workload import TRAINING_METRICS

# fields users reach for, spelled as the CLI's flags or the published tables spell them
FIELD_ALIASES = {
    "count": "accelerator_count",
    "gpus": "accelerator_count",
    "accelerators": "accelerator_count",
    "n": "accelerator_count",
    "model": "benchmark",
    "runtime": "framework",
    "software": "framework",
    "stack": "framework",  # the CLI's --stack fills a query's framework
    "software_stack": "framework",
    "gpu": "accelerator",
    "device": "accelerator",
    "round": "as_of",
}


def field_hint(name: str) -> str | None:
    """The query field an unknown key most likely meant (``count`` → ``accelerator_count``)."""
    fields = PredictQuery.model_fields
    lowered = name.strip().lower()
    if lowered in fields:
        return lowered
    if lowered in FIELD_ALIASES:
        return FIELD_ALIASES[lowered]
    ending = [f for f in fields if f.endswith("_" + lowered) or f.startswith(lowered + "_")]
    if len(ending) == 1:
        return ending[0]
    close = difflib.get_close_matches(lowered, list(fields), n=1, cutoff=0.75)  # acclerator
    return close[0] if close else None


def default_metric(index: EvidenceIndex, q: PredictQuery) -> tuple[str | None, str]:
    """(the metric to answer ``q`` in, what the answer says of it), or (None, why not).

    ``q`` is in catalogue names (``names.canonical_query``); a benchmark or scenario the
    knowledge base does not hold is left to ``canonical_query`` to refuse (None, "")."""
    if q.benchmark not in index.benchmarks(q.family):
        return None, ""
    scenarios = index.scenarios(q.family, q.benchmark)
    asked = q.scenario if q.scenario is not None else q.parameters.get("scenario")
    if asked is None and scenarios != [""]:
        if len(scenarios) != 1:
            return None, (
                f"scenario needed: {q.benchmark} has several; name one of {', '.join(scenarios)}"
            )
        asked = scenarios[0]
    matched = [s for s in scenarios if s.lower() == str(asked or "").lower()]
    # a scenario with no results of its own (Interactive derived from Server) reads them all
    keys = [
        k
        for k in index.slices
        if k[0] == q.family and k[1] == q.benchmark and (not matched or k[2] == matched[0])
    ]
    if not keys:
        return None, ""
    size: dict[str, int] = {}
    for k in keys:
        size[k[3]] = size.get(k[3], 0) + sum(len(rows) for rows in index.slices[k].values())
    throughput = [m for m in size if any(index.higher_is_better(k) for k in keys if k[3] == m)]
    time = TRAINING_METRICS["time"]
    pool = throughput or ([time] if time in size else list(size))
    chosen = max(sorted(pool), key=lambda m: size[m])
    kind = (
        "its throughput" if throughput else "its time to train" if chosen == time else "its figure"
    )
    others = sorted(m for m in size if m != chosen)
    return chosen, (
        f"metric: none named; answered in {chosen}, {kind}"
        + (" the most results record" if len(pool) > 1 else "")
        + (f" (also recorded: {', '.join(others)})" if others else "")
    )
