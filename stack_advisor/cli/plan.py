"""`advisor plan`: expand, render and submit collection plans."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from stack_advisor.cli.options import FormatOpt, JsonOpt, StoreOpt
from stack_advisor.cli.render import OutputFormat, info, output_format, print_json, render

if TYPE_CHECKING:
    from stack_advisor.store.base import Store

plan_app = typer.Typer(
    help="Collection plans: cells, Kubernetes Jobs and CronJobs.", no_args_is_help=True
)

PlanFile = Annotated[Path, typer.Argument(help="Plan YAML (see deploy/plans/sample-plan.yaml).")]
KubeconfigOpt = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig file (default: in-cluster)."
    ),
]


def open_store_uri(uri: str | None) -> Store:
    from stack_advisor.cli.stores import open_store

    return open_store(uri)


@plan_app.command("expand")
def expand(plan_file: PlanFile, as_json: JsonOpt = False, fmt: FormatOpt = None) -> None:
    """Print the plan's cells: image × pool × benchmark."""
    from stack_advisor.collectors.plan import expand_plan, load_plan

    chosen = output_format(fmt, as_json)
    plan = load_plan(plan_file)
    rows = [c.row() for c in expand_plan(plan)]
    render(
        rows,
        fmt=chosen,
        title=f"plan {plan.name}: {len(rows)} cells × {plan.repeats} repeat(s)",
        columns=["cell", "benchmark", "gpus"],
        inline=["image", "pool", "runner", "profile", "accelerator", "placement", "workers"],
    )


# ``render_cmd``'s options
OutOpt = Annotated[Path | None, typer.Option("--out", help="Write one YAML file per object here.")]
OnlyOpt = Annotated[
    str,
    typer.Option("--only", help="all | jobs (one per cell) | schedule (ConfigMap + CronJob)."),
]
AsJsonOpt = Annotated[
    bool,
    typer.Option("--json", help="The objects as JSON (or, with --out, the files written)."),
]
ForceOpt = Annotated[
    bool,
    typer.Option("--force", help="With --out: replace files there that plan render did not write."),
]


def _plan_objects(plan_file: Path, only: str) -> list[dict[str, Any]]:
    """The plan's objects ``--only`` asks for: the Jobs (one per cell), the CronJob, and the
    collectors' spool claim (with the schedule when there is one, else with the jobs)."""
    from stack_advisor.collectors.plan import expand_plan, load_plan
    from stack_advisor.collectors.plan.render import (
        render_cell,
        render_schedule,
        render_spool_claim,
    )
    from stack_advisor.schema.errors import InvalidInput

    if only not in ("all", "jobs", "schedule"):
        raise InvalidInput(f"--only must be all, jobs or schedule, got {only!r}")
    plan = load_plan(plan_file)
    objects = render_spool_claim(plan) if only in ("all", "jobs") and not plan.schedule else []
    if only in ("all", "jobs"):
        for cell in expand_plan(plan):
            objects.extend(render_cell(plan, cell))
    if only in ("all", "schedule"):
        if not plan.schedule and only == "schedule":
            raise InvalidInput(
                f"{plan_file}: schedule is not set, so there is no CronJob to render"
            )
        objects.extend(render_schedule(plan))
    return objects


def _write_files(out: Path, files: dict[str, str], force: bool) -> None:
    """Write the rendered files into ``out``; refused (nothing written) where a file of the same
    name that no render wrote is there, unless ``force``."""
    from stack_advisor.cli.guard import CannotWrite, os_error_message
    from stack_advisor.collectors.plan.render import foreign_files

    foreign = [] if force else foreign_files(out, list(files))
    if foreign:
        raise CannotWrite(
            f"--out {out}: {', '.join(foreign)} exist(s) there and were not written "
            "by plan render; "
            "nothing was written. Choose another folder, move them away, or pass "
            "--force to replace them"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text)
    except OSError as exc:
        raise CannotWrite(f"--out {out}: cannot write there: {os_error_message(exc)}") from None


@plan_app.command("render")
def render_cmd(
    plan_file: PlanFile,
    out: OutOpt = None,
    only: OnlyOpt = "all",
    as_json: AsJsonOpt = False,
    force: ForceOpt = False,
) -> None:
    """Write the plan's Jobs (one per cell) and its CronJob as YAML (stdout, or files in --out).
    With --out, files that an earlier render wrote are replaced; any other file of the same name
    (a hand-written kustomization.yaml) is left alone and the render refused, unless --force."""
    import yaml

    from stack_advisor.collectors.plan.render import generated_header, object_filename, to_yaml

    objects = _plan_objects(plan_file, only)
    if out is None:
        if as_json:
            print_json(objects)
        else:
            typer.echo(to_yaml(objects), nl=False)
        return
    header = generated_header(f"advisor plan render {plan_file} --only {only}")
    files = {object_filename(obj): header + to_yaml([obj]) for obj in objects}
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(files),
    }
    files["kustomization.yaml"] = header + yaml.safe_dump(kustomization, sort_keys=False)
    _write_files(out, files, force)
    names = list(files)[:-1]
    if as_json:
        print_json({"out": str(out), "files": list(files)})
        return
    info(f"wrote {len(names)} object(s) and a kustomization.yaml to {out}")


# ``submit``'s options
NamespaceOpt = Annotated[str | None, typer.Option("--namespace", "-n", help="Default: the plan's.")]
SkipObservedOpt = Annotated[
    bool, typer.Option("--skip-observed", help="Skip cells the knowledge base already has.")
]
TimeoutOpt = Annotated[
    float | None, typer.Option("--timeout", help="Give up waiting after this many seconds.")
]
DryRunOpt = Annotated[
    bool,
    typer.Option("--dry-run", help="Have the cluster validate every object; create nothing."),
]


@plan_app.command("submit")
def submit(
    plan_file: PlanFile,
    kubeconfig: KubeconfigOpt = None,
    namespace: NamespaceOpt = None,
    skip_observed: SkipObservedOpt = False,
    store: StoreOpt = None,
    poll: Annotated[int, typer.Option("--poll", min=1, help="Seconds between status checks.")] = 5,
    timeout: TimeoutOpt = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
    fmt: FormatOpt = None,
) -> None:
    """Create the plan's Jobs, watch them to completion and record failures in the store."""
    from stack_advisor.collectors.executors.kubernetes import KubernetesExecutor, load_api_client
    from stack_advisor.collectors.plan import expand_plan, load_plan

    chosen = output_format(fmt, as_json)
    plan = load_plan(plan_file)
    if namespace:
        plan = plan.model_copy(update={"namespace": namespace})
    cells = expand_plan(plan)
    kb = open_store_uri(store)
    try:
        kb.ensure_schema()
        skipped = _observed_cells(kb, cells) if skip_observed else []
        cells = [c for c in cells if c not in skipped]
        executor = KubernetesExecutor(load_api_client(kubeconfig), plan.namespace)
        if dry_run:
            _dry_run(plan, cells, executor, chosen)
            return
        outcomes = _watch(
            plan,
            cells,
            executor,
            kb,
            poll=poll,
            timeout=timeout,
            transient=chosen is OutputFormat.json,
        )
    finally:
        kb.close()
    _report(plan, outcomes, skipped, chosen)
    if any(o.status == "failed" for o in outcomes):
        raise typer.Exit(1)


def _dry_run(plan: Any, cells: list[Any], executor: Any, chosen: OutputFormat) -> None:
    """Have the cluster validate every object of the cells (creating nothing) and list them."""
    from stack_advisor.collectors.executors.kubernetes import new_submission_id, preflight

    count = preflight(plan, cells, executor, new_submission_id())
    info(
        f"the cluster accepts all {count} object(s) of {len(cells)} cell(s) "
        "(dry run; nothing created)"
    )
    render(
        [c.row() for c in cells],
        fmt=chosen,
        title=f"plan {plan.name}: would submit",
        columns=["cell", "image", "pool", "benchmark", "gpus", "workers"],
    )


def _report(plan: Any, outcomes: list[Any], skipped: list[Any], chosen: OutputFormat) -> None:
    """One row per cell: its Job's outcome, or skipped as already observed."""
    rows = [o.row() for o in outcomes] + [
        {
            "cell": c.cell_id,
            "job": None,
            "pool": c.pool.name,
            "image": c.image.name,
            "benchmark": c.benchmark.name,
            "status": "skipped",
            "reason": "already observed",
            "failures_recorded": 0,
            "seconds": None,
        }
        for c in skipped
    ]
    render(
        rows,
        fmt=chosen,
        title=f"plan {plan.name}",
        columns=["cell", "job", "status", "failures_recorded", "seconds"],
        details=["reason"],
    )


def _observed_cells(kb: Any, cells: list[Any]) -> list[Any]:
    """The cells the knowledge base already has (``--skip-observed``), said on stderr."""
    from stack_advisor.collectors.plan.observed import is_observed

    skipped = [c for c in cells if is_observed(kb, c)]
    if skipped:
        info(f"skipping {len(skipped)} cell(s) the knowledge base already has")
    return skipped


def _watch(plan, cells, executor, kb, *, poll: int, timeout: float | None, transient: bool):  # type: ignore[no-untyped-def]
    """Submit the cells and watch their Jobs to the end with a progress bar on stderr, recording
    failures as they come; the outcomes. Interrupted or timed out, says how to find the Jobs
    (they keep running) and exits 130 or 1."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from stack_advisor.cli.render import stderr
    from stack_advisor.collectors.executors.kubernetes import (
        SubmitTimeout,
        new_submission_id,
        submit_plan,
    )

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
        console=stderr,
        transient=transient,
    ) as progress:
        on_change = _progress_updater(
            progress, progress.add_task(f"plan {plan.name}", total=len(cells), state="")
        )
        submission = new_submission_id()
        try:
            return submit_plan(
                plan,
                cells,
                executor,
                record=_failure_recorder(kb, progress),
                on_change=on_change,
                poll_seconds=poll,
                timeout_seconds=timeout,
                submission=submission,
            )
        except (KeyboardInterrupt, SubmitTimeout) as exc:
            # The Jobs are the cluster's now; say how to find (or delete) them.
            info(
                f"{'interrupted' if isinstance(exc, KeyboardInterrupt) else exc}; the Jobs already "
                f"created keep running: kubectl -n {plan.namespace} get jobs "
                f"-l stack-advisor.io/submission={submission}"
            )
            raise typer.Exit(130 if isinstance(exc, KeyboardInterrupt) else 1) from None


def _progress_updater(progress: Any, task: Any) -> Callable[[Any], None]:
    """``submit_plan``'s on_change: counts running, done and failed cells; a failure is printed."""
    counts = {"running": 0, "done": 0, "failed": 0}

    def on_change(outcome: Any) -> None:
        if outcome.status == "running":
            counts["running"] += 1
        else:
            counts["running"] -= 1
            counts[outcome.status] += 1
            progress.advance(task)
            if outcome.status == "failed":
                progress.console.print(f"[red]failed[/] {outcome.cell.cell_id}: {outcome.reason}")
        state = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        progress.update(task, state=state)

    return on_change


def _failure_recorder(kb: Any, progress: Any) -> Callable[[Any], None]:
    """``submit_plan``'s record: failures to the store; one that cannot be written is said, and
    the watch goes on (the table still shows the failure)."""
    from stack_advisor.schema.errors import AdvisorError

    def record(failures: Any) -> None:
        try:
            kb.record_failures(failures)
        except AdvisorError as exc:
            progress.console.print(f"[yellow]could not record {len(failures)} failure(s):[/] {exc}")

    return record


def register(app: typer.Typer) -> None:
    app.add_typer(plan_app, name="plan", rich_help_panel="Collect")
