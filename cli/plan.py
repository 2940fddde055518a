"""`advisor plan`: expand, render and submit collection plans."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from cli.options import JsonOpt, StoreOpt
from cli.render import info, print_json, render

plan_app = typer.Typer(help="Collection plans: cells, Kubernetes Jobs and CronJobs.", no_args_is_help=True)

PlanFile = Annotated[Path, typer.Argument(help="Plan YAML (see deploy/plans/sample-plan.yaml).")]
KubeconfigOpt = Annotated[
    Optional[str], typer.Option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig file (default: in-cluster).")
]


def open_store_uri(uri: str | None):  # -> Store
    from graph_schema.errors import StoreUnavailable

    try:
        from graph_schema.registry import open_store
    except ImportError:  # the registry is the foundation's; say so rather than crash
        raise StoreUnavailable("graph_schema.registry is not available in this build") from None
    return open_store(uri)


@plan_app.command("expand")
def expand(plan_file: PlanFile, as_json: JsonOpt = False) -> None:
    """Print the plan's cells: image × pool × benchmark."""
    from collectors.plan import expand_plan, load_plan

    plan = load_plan(plan_file)
    rows = [c.row() for c in expand_plan(plan)]
    render(
        rows,
        as_json=as_json,
        title=f"plan {plan.name}: {len(rows)} cells × {plan.repeats} repeat(s)",
        columns=["cell", "image", "pool", "benchmark", "runner", "profile", "accelerator", "placement", "gpus", "workers"],
    )


@plan_app.command("render")
def render_cmd(
    plan_file: PlanFile,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write one YAML file per object here.")] = None,
    only: Annotated[
        str, typer.Option("--only", help="all | jobs (one per cell) | schedule (ConfigMap + CronJob).")
    ] = "all",
) -> None:
    """Write the plan's Jobs (one per cell) and its CronJob as YAML (stdout, or files in --out)."""
    from collectors.plan import expand_plan, load_plan
    from collectors.plan.render import object_filename, render_cell, render_schedule, to_yaml
    from graph_schema.errors import InvalidInput

    if only not in ("all", "jobs", "schedule"):
        raise InvalidInput(f"--only must be all, jobs or schedule, got {only!r}")
    plan = load_plan(plan_file)
    objects = []
    if only in ("all", "jobs"):
        for cell in expand_plan(plan):
            objects.extend(render_cell(plan, cell))
    if only in ("all", "schedule"):
        if not plan.schedule and only == "schedule":
            raise InvalidInput(f"{plan_file}: schedule is not set, so there is no CronJob to render")
        objects.extend(render_schedule(plan))
    if out is None:
        typer.echo(to_yaml(objects), nl=False)
        return
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for obj in objects:
        name = object_filename(obj)
        (out / name).write_text(to_yaml([obj]))
        names.append(name)
    info(f"wrote {len(names)} object(s) to {out}")


@plan_app.command("submit")
def submit(
    plan_file: PlanFile,
    kubeconfig: KubeconfigOpt = None,
    namespace: Annotated[Optional[str], typer.Option("--namespace", "-n", help="Default: the plan's.")] = None,
    skip_observed: Annotated[
        bool, typer.Option("--skip-observed", help="Skip cells the knowledge base already has.")
    ] = False,
    store: StoreOpt = None,
    poll: Annotated[int, typer.Option("--poll", min=1, help="Seconds between status checks.")] = 5,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Give up waiting after this many seconds.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create the plan's Jobs, watch them to completion and record failures in the store."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from cli.render import stderr
    from collectors.executors.kubernetes import KubernetesExecutor, load_api_client, submit_plan
    from collectors.plan import expand_plan, load_plan
    from collectors.plan.observed import is_observed

    plan = load_plan(plan_file)
    if namespace:
        plan = plan.model_copy(update={"namespace": namespace})
    cells = expand_plan(plan)
    kb = open_store_uri(store)
    try:
        skipped = []
        if skip_observed:
            skipped = [c for c in cells if is_observed(kb, c)]
            cells = [c for c in cells if c not in skipped]
            if skipped:
                info(f"skipping {len(skipped)} cell(s) the knowledge base already has")
        executor = KubernetesExecutor(load_api_client(kubeconfig), plan.namespace)
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[state]}"),
            TimeElapsedColumn(),
            console=stderr,
            transient=as_json,
        ) as progress:
            task = progress.add_task(f"plan {plan.name}", total=len(cells), state="")
            counts = {"running": 0, "done": 0, "failed": 0}

            def on_change(outcome) -> None:  # type: ignore[no-untyped-def]
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

            def record(failures) -> None:  # type: ignore[no-untyped-def]
                kb.record_failures(failures)

            outcomes = submit_plan(
                plan, cells, executor, record=record, on_change=on_change, poll_seconds=poll, timeout_seconds=timeout
            )
    finally:
        kb.close()
    rows = [o.row() for o in outcomes] + [
        {"cell": c.cell_id, "job": None, "pool": c.pool.name, "image": c.image.name,
         "benchmark": c.benchmark.name, "status": "skipped", "reason": "already observed",
         "failures_recorded": 0, "seconds": None}
        for c in skipped
    ]
    if as_json:
        print_json(rows)
    else:
        render(rows, as_json=False, title=f"plan {plan.name}",
               columns=["cell", "job", "status", "reason", "failures_recorded", "seconds"])
    if any(o.status == "failed" for o in outcomes):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(plan_app, name="plan", rich_help_panel="Collect")
