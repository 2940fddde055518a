"""What each cell of a sweep changed on one node: per benchmark, each cell's speed relative to a
baseline cell, with a 95% confidence interval, flagged only beyond the run-to-run spread.

Every cell of a sweep ran on the same node (accelerator, driver, placement), so the ratio isolates
the software stack. The ratio is that of the two cells' medians (the values each row shows). Its
interval is a percentile bootstrap over the cells' own measurements: each cell's runs (its repeats,
each a separate run of the collector) resampled, each run's median perturbed by its own sampling
error (from its coefficient of variation and sample count). With one run per cell only the
within-run part is left, and the row says so (``interval_from``), since within-run samples miss
what changes between runs.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from statistics import mean, median, stdev
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from stack_advisor.advisor.estimate.stack_effect import framework_id
from stack_advisor.schema.errors import InvalidInput, NotFound
from stack_advisor.schema.models import ObservationFilter, StoredObservation

SWEEP_SOURCE = "stack-advisor-collector"

BOOTSTRAP_DRAWS = 4000
MIN_RUNS_FOR_SPREAD = 3  # runs per cell before their own spread is trusted
# the standard error of a sample median is sqrt(pi/2) times that of the mean
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)


@dataclass
class CellRatio:
    benchmark: str
    parameters: str
    metric: str
    unit: str
    cell: str
    stack: str
    value: float
    baseline_value: float
    ratio: float  # speed relative to the baseline: > 1 is faster, whatever the metric's direction
    low: float
    high: float
    repeats: int
    baseline_repeats: int
    interval_from: str  # "repeats" | "samples within one run"
    spread: float  # the run-to-run (or within-run) relative spread the change must exceed
    flagged: bool
    verdict: str
    basis: str = "measured on this node"


def sweep_observations(
    store: Any, sweep: str, host: str | None = None
) -> tuple[str, list[StoredObservation]]:
    """(host, observations of the sweep on it). Without ``host``: the only host that ran it.

    Raises:
        NotFound: no observation of the sweep (on that host).
        InvalidInput: several hosts ran it and none was chosen (names them), or a host name
            no store can hold.
    """
    try:
        flt = ObservationFilter(source=SWEEP_SOURCE, host=host or None)
    except ValidationError as exc:  # a host name no store can hold (NUL, too long, ...)
        why = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise InvalidInput(f"host: {why} (got {host!r:.80})") from None
    rows = [o for o in store.iter_observations(flt) if o.provenance.details.get("sweep") == sweep]
    if not rows:
        where = f" on host {host!r}" if host else ""
        raise NotFound(
            f"sweep: no observations of sweep {sweep!r}{where}; run `advisor sweep "
            "MATRIX.yaml` first"
        )
    hosts = sorted({o.host.name for o in rows if o.host})
    if len(hosts) > 1:
        raise InvalidInput(
            f"sweep {sweep!r} ran on several hosts ({', '.join(hosts)}); choose one with --host"
        )
    return hosts[0] if hosts else (host or "?"), rows


FRAMEWORK_PARAMETERS = ("backend", "framework")
"""Parameters that name the framework a runner ran the work through (the PI suite's ``backend``,
the CNN benchmark's ``framework``): in a sweep that is the stack under test, not the work."""


def _work(obs: StoredObservation) -> dict[str, Any]:
    """The benchmark's parameters less the one naming the framework, where the cell's own framework
    ran it: the same work through each cell's stack compares (torch's GEMM against JAX's). A row a
    cell ran through another framework keeps it, and compares only with its like."""

    def spelled(name: str) -> str:  # the stored stack says ``pytorch``, the PI backend ``torch``
        return framework_id(name) or name.lower()

    own = spelled(obs.stack.framework or "")
    return {
        k: v
        for k, v in obs.benchmark.parameters.items()
        if not (k in FRAMEWORK_PARAMETERS and spelled(str(v)) == own)
    }


def _benchmark_label(obs: StoredObservation) -> tuple[str, str]:
    params = {k: v for k, v in sorted(_work(obs).items()) if k not in ("pi_version",)}
    return f"{obs.benchmark.family}/{obs.benchmark.name}", ", ".join(
        f"{k}={v}" for k, v in params.items()
    )


def compare_sweep(
    observations: list[StoredObservation], baseline: str | None = None
) -> list[CellRatio]:
    """Each cell against ``baseline`` (default: the matrix's first cell that was measured), per
    benchmark identity (less the parameter naming the cell's own framework: ``_work``) and metric.
    Raises NotFound when the baseline cell has no observations."""
    by_bench: dict[tuple[str, str, str, str], dict[str, list[StoredObservation]]] = defaultdict(
        lambda: defaultdict(list)
    )
    order: list[str] = []
    for obs in sorted(observations, key=lambda o: o.timestamp):
        cell = obs.provenance.details.get("sweep_cell", "?")
        if cell not in order:
            order.append(cell)
        work = json.dumps(sorted(_work(obs).items()), default=str)
        by_bench[(obs.benchmark.family, obs.benchmark.name, work, obs.metric)][cell].append(obs)
    base = baseline or (order[0] if order else None)
    if base not in order:
        raise NotFound(
            f"sweep: baseline cell {base!r} has no observations; cells measured: {', '.join(order)}"
        )
    out: list[CellRatio] = []
    for cells in by_bench.values():
        if base not in cells:
            continue
        for cell in order:
            if cell == base or cell not in cells:
                continue
            out.append(_ratio(cells[cell], cells[base], cell))
    out.sort(key=lambda r: (r.benchmark, r.parameters, r.metric, order.index(r.cell)))
    return out


def _run_median_draws(group: list[StoredObservation], rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws of the median over ``group``'s runs (shape ``BOOTSTRAP_DRAWS``): the runs
    resampled with replacement, and each drawn run's value perturbed (log-normally) by its own
    spread, so the draws carry both the run-to-run and the within-run variation. With three runs or
    more the perturbation is the sampling error of the run's median; with fewer, two runs cannot
    show how far runs move apart, so a run is taken to move as far as its own samples do (a
    machine whose samples spread by 100% has runs that differ by as much, and two runs that
    happened to agree do not prove a 60x change)."""
    values = np.array([o.value for o in group], dtype=float)
    sample_sd = np.array([math.sqrt(math.log1p((o.cv or 0.0) ** 2)) for o in group])
    if len(group) >= MIN_RUNS_FOR_SPREAD:
        sample_sd = sample_sd * MEDIAN_SE_FACTOR / np.sqrt([max(1, o.samples) for o in group])
    pick = rng.integers(0, len(group), size=(BOOTSTRAP_DRAWS, len(group)))
    noise = rng.standard_normal(pick.shape) * sample_sd[pick]
    draws: np.ndarray = np.median(values[pick] * np.exp(noise), axis=1)
    return draws


def _speed(cell_value: np.ndarray | float, base_value: np.ndarray | float, higher: bool) -> Any:
    return cell_value / base_value if higher else base_value / cell_value


def _spread(group: list[StoredObservation]) -> float:
    if len(group) >= 2:
        values = [o.value for o in group]
        return stdev(values) / mean(values)
    return group[0].cv or 0.0


def _ratio(
    cell_obs: list[StoredObservation], base_obs: list[StoredObservation], cell: str
) -> CellRatio:
    """The cell's speed relative to the baseline: the ratio of the two cells' medians (the values
    the row shows), with a 95% percentile-bootstrap interval over the cells' own measurements."""
    first = cell_obs[0]
    higher = first.higher_is_better
    value, base_value = median(o.value for o in cell_obs), median(o.value for o in base_obs)
    ratio = float(_speed(value, base_value, higher))
    # one seed per row: the same observations always give the same interval
    rng = np.random.default_rng(
        [len(cell_obs), len(base_obs), int(value * 1e6) % 2**32, int(base_value * 1e6) % 2**32]
    )
    draws = _speed(_run_median_draws(cell_obs, rng), _run_median_draws(base_obs, rng), higher)
    low, high = (float(q) for q in np.quantile(draws, (0.025, 0.975)))
    low, high = min(low, ratio), max(high, ratio)
    from_repeats = len(cell_obs) >= 2 and len(base_obs) >= 2
    spread = max(_spread(cell_obs), _spread(base_obs))
    flagged = abs(ratio - 1.0) > spread and (low > 1.0 or high < 1.0)
    verdict = (
        ("faster" if ratio > 1 else "slower")
        if flagged
        else "no change beyond the run-to-run spread"
    )
    bench, params = _benchmark_label(first)
    stack = first.stack
    stack_text = stack.label() + (f", python {stack.python}" if stack.python else "")
    return CellRatio(
        benchmark=bench,
        parameters=params,
        metric=first.metric,
        unit=first.unit,
        cell=cell,
        stack=stack_text,
        value=value,
        baseline_value=base_value,
        ratio=ratio,
        low=low,
        high=high,
        repeats=len(cell_obs),
        baseline_repeats=len(base_obs),
        interval_from="repeats" if from_repeats else "samples within one run",
        spread=spread,
        flagged=flagged,
        verdict=verdict,
    )


class SweepCell(BaseModel):
    cell: str
    stack: str
    stack_id: str
    runs: int
    requested: dict[str, Any] = Field(description="what the matrix asked this cell to install")
    lock: str = Field(description="what was installed (the environment's lock)")


class SweepComparison(BaseModel):
    """``advisor compare sweep NAME --json`` and ``GET /v1/compare/sweep``: the measured cells and
    each cell's speed relative to the baseline cell, per benchmark."""

    sweep: str
    host: str
    baseline: str
    cells: list[SweepCell]
    ratios: list[CellRatio]


def sweep_report(
    store: Any,
    sweep: str,
    *,
    host: str | None = None,
    baseline: str | None = None,
    cell: str | None = None,
    flagged_only: bool = False,
) -> SweepComparison:
    """The sweep's cells on its node, and each cell (or only ``cell``) against ``baseline``
    (default: the first cell measured); with ``flagged_only`` only changes beyond the spread.

    Raises:
        NotFound: no observation of the sweep (on that host), or a cell that was not measured
            (the measured ones are named).
        InvalidInput: several hosts ran the sweep and none was chosen.
    """
    node, observations = sweep_observations(store, sweep, host)
    cells = sweep_cells(observations)
    names = [c["cell"] for c in cells]
    for field, name in (("baseline", baseline), ("cell", cell)):
        if name is not None and name not in names:
            raise NotFound(
                f"{field}: sweep {sweep!r} has no measured cell {name!r}; cells "
                f"measured: {', '.join(names)}"
            )
    ratios = compare_sweep(observations, baseline)
    shown = [
        r for r in ratios if (cell is None or r.cell == cell) and (r.flagged or not flagged_only)
    ]
    first = min(observations, key=lambda o: o.timestamp)
    return SweepComparison(
        sweep=sweep,
        host=node,
        baseline=baseline or first.provenance.details.get("sweep_cell", "?"),
        cells=[SweepCell.model_validate(c) for c in cells],
        ratios=shown,
    )


def sweep_names(store: Any) -> list[str]:
    """The sweeps the knowledge base holds results of."""
    return sorted(
        {
            str(o.provenance.details["sweep"])
            for o in store.iter_observations(ObservationFilter(source=SWEEP_SOURCE))
            if o.provenance.details.get("sweep")
        }
    )


def sweep_cells(observations: list[StoredObservation]) -> list[dict[str, Any]]:
    """One row per measured cell: the stack it ran on (from its own fingerprint) and its lock."""
    cells: dict[str, dict[str, Any]] = {}
    for obs in observations:
        details = obs.provenance.details
        cell = details.get("sweep_cell", "?")
        row = cells.setdefault(
            cell,
            {
                "cell": cell,
                "stack": obs.stack.label(),
                "stack_id": obs.stack.stack_id,
                "runs": set(),
                "requested": json.loads(details.get("sweep_requested") or "{}"),
                "lock": details.get("lock", ""),
            },
        )
        row["runs"].add(obs.run_id)
    return [{**row, "runs": len(row["runs"])} for row in cells.values()]
