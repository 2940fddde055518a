"""Every `advisor` command the README and docs/*.md show names commands and options that exist,
with no more arguments than the command takes (issue 43 item 7: docs/predict.md's
`advisor catalogue list benchmarks` was a usage error). Checked against the command tree itself,
in-process and without running anything: a fraction of a second for all of them.

Running them: the README's "Using it" block in tests/cli/test_readme.py (and the cluster ones in
tests/kube/test_readme_nodes.py); the docs' code blocks that run on a laptop in
``test_docs_code_blocks_run_as_written`` below; the rest need a cluster, a served API or a
GPU node, and each says so in ``ELSEWHERE``."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from typer.core import TyperArgument, TyperGroup, TyperOption

from stack_advisor.cli.main import app
from tests.support.cli import advisor, isolate_cli
from tests.support.readme_commands import REPO, DocCommand, documented_commands

# written in place of a value or of the rest of a command line
PLACEHOLDER = re.compile(r"^(\.\.\.|<[^>]+>|[A-Z][A-Z0-9_=.]*(\.\.\.)?|\$\S+)$")
TREE = typer.main.get_command(app)


def _option(command: Any, name: str) -> Any | None:
    for param in command.params:
        if isinstance(param, TyperOption) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def _takes_value(param: Any) -> bool:
    return not (isinstance(param, TyperOption) and (param.is_flag or param.count))


def _walk(tokens: list[str]) -> tuple[list[str], Any, list[str]]:
    """(the command path, the command, its tokens) of ``advisor TOKENS``; root options first."""
    command: Any = TREE
    path: list[str] = []
    rest = list(tokens)
    while rest:
        token = rest[0]
        if token.startswith("-"):
            param = _option(TREE, token.split("=")[0]) if not path else None
            if param is None:
                break
            rest = rest[(2 if _takes_value(param) and "=" not in token else 1) :]
            continue
        if not isinstance(command, TyperGroup) or PLACEHOLDER.match(token):
            break  # `advisor --api URL <command>`: any command
        sub = command.get_command(None, token)  # type: ignore[arg-type]
        assert sub is not None, f"no command {' '.join([*path, token])!r}"
        command, path, rest = sub, [*path, token], rest[1:]
    return path, command, rest


def _problems(doc: DocCommand) -> list[str]:
    """What in the documented command the command tree refuses."""
    # `[--placement vgpu]`: an optional part, written as it is typed
    tokens = [t.strip("[]") for t in shlex.split(doc.text.replace("|", " | "))][1:]
    tokens = tokens[: tokens.index("|")] if "|" in tokens else tokens  # `a | b` alternatives
    try:
        path, command, rest = _walk(tokens)
    except AssertionError as exc:
        return [str(exc)]
    if isinstance(command, TyperGroup) and rest and PLACEHOLDER.match(rest[0]):
        return []  # `advisor ... --format csv`: any command, nothing more to check
    problems, positional, i = [], 0, 0
    while i < len(rest):
        token = rest[i]
        i += 1
        if token in ("--help", "-h"):
            continue
        if token.startswith("-") and token != "-":
            param = _option(command, token.split("=")[0]) or _option(TREE, token.split("=")[0])
            if param is None:
                problems.append(f"advisor {' '.join(path)} has no option {token}")
            elif _takes_value(param) and "=" not in token:
                i += 1
        elif not PLACEHOLDER.match(token):
            positional += 1
    arguments = [p for p in command.params if isinstance(p, TyperArgument)]
    room = float("inf") if any(a.nargs == -1 for a in arguments) else len(arguments)
    if isinstance(command, TyperGroup) and rest and not rest[0].startswith("-"):
        room = 0  # a group's word must be one of its commands (_walk checked it)
    if positional > room:
        problems.append(
            f"advisor {' '.join(path)} takes {room} argument(s), the docs give {positional}"
        )
    return problems


def test_documented_commands_are_found_in_readme_and_docs() -> None:
    commands = documented_commands()
    files = {c.file for c in commands}
    assert {"README.md", "docs/predict.md", "docs/mlperf.md", "docs/deploy.md"} <= files
    assert any(c.text == "advisor catalogue list benchmarks" for c in commands)
    assert len([c for c in commands if not c.inline]) >= 40


def test_every_documented_command_names_real_commands_and_options() -> None:
    found = {str(c): _problems(c) for c in documented_commands()}
    wrong = {where: problems for where, problems in found.items() if problems}
    assert not wrong, json.dumps(wrong, indent=1)


def test_the_checker_refuses_what_a_user_would_be_refused() -> None:
    def check(text: str) -> list[str]:
        return _problems(DocCommand("x.md", 1, text, inline=False))

    assert check("advisor catalogue list benchmarks --vendor amd") == []
    assert check("advisor db bulk-import FILES... --neo4j-home HOME") == []
    assert check("advisor --api URL recommend --benchmark resnet50 --json") == []
    assert "has no option --no-such" in check("advisor recommend --no-such 3")[0]
    assert "takes 1 argument(s), the docs give 2" in check("advisor catalogue show a b")[0]
    assert typed(
        "advisor plot overhead [--accelerator A100] --component cuda|cudnn --out o.svg"
    ) == [
        "plot",
        "overhead",
        "--component",
        "cuda",
        "--out",
        "o.svg",
    ]
    assert "no command 'catalogue lists'" in check("advisor catalogue lists")[0]


# Docs code-block commands that need what a laptop lacks (each runs in the test named).
ELSEWHERE = {
    "advisor serve --host": "binds a system path; tests/cli/test_readme.py serves on loopback",
    "advisor plan submit": "a kube-apiserver: tests/kube/test_plan_submit.py",
    "advisor nodes list": "a kubeconfig: tests/kube/",
    "advisor nodes pools": "a kubeconfig: tests/kube/",
    "advisor nodes sync": "a kube-apiserver: tests/kube/test_readme_nodes.py",
    "advisor collect --profile quick --api": "a served API with a write token: tests/api/",
    "advisor --api": "a served API: tests/cli/test_remote_cli.py",
    "advisor plot throughput --benchmark cnn/": (
        "a served API's CNN runs: tests/cli/test_remote_cli.py"
    ),
    "advisor sweep": "uv environments from PyPI (and a GPU for torch-cuda): tests/collectors/",
    "advisor compare sweep": "a sweep's results in the store: tests/advisor/test_sweep*.py",
    "advisor plot sweep": "a sweep's results in the store: tests/cli/test_plot.py",
    "advisor nodes topology --host": (
        "a host a collector fingerprinted: tests/cli/test_topology_cli.py"
    ),
}


def typed(text: str) -> list[str]:
    """The arguments a user types for a documented synopsis: optional ``[...]`` parts left out,
    the first of ``a|b|c`` alternatives."""
    text = re.sub(r"\[[^\]]*\]", " ", text)
    return [token.split("|")[0] for token in shlex.split(text)][1:]


def _runnable() -> list[DocCommand]:
    return [
        c
        for c in documented_commands()
        if not c.inline
        and c.file != "README.md"  # tests/cli/test_readme.py runs the README's
        and not any(c.text.startswith(prefix) for prefix in ELSEWHERE)
    ]


def _models(work: Path) -> None:
    """The models docs/proxy.md describes, as a user would bring them: its short YAMLs (the
    fields its examples give) and Qwen3-30B-A3B's published config.json (as
    tests/advisor/proxy/data/published.yaml records it, with its source)."""
    (work / "my-run.yaml").write_text("parameters: 8e9\ntrain_tokens: 1.0e9\n")
    (work / "my-moe.yaml").write_text(
        "name: my-moe\narchitecture: moe\nparameters: 30B\nactive_parameters: 3B\nprecision: fp8\n"
    )
    published = yaml.safe_load(
        (REPO / "tests" / "advisor" / "proxy" / "data" / "published.yaml").read_text()
    )
    (qwen,) = [m for m in published["models"] if m["name"] == "Qwen3-30B-A3B"]
    (work / "Qwen3-30B-A3B").mkdir()
    (work / "Qwen3-30B-A3B" / "config.json").write_text(json.dumps(qwen["config"]))


@pytest.mark.slow
def test_docs_code_blocks_run_as_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    starter_kb: Path,
) -> None:
    """On the starter knowledge base, from a folder laid out as the docs assume (the plan the
    deploy guide writes as my-plan.yaml / cpu-plan.yaml: the sample plan; the proxy guide's
    models)."""
    from tests.support.starter_kb import copy_starter_kb

    commands = _runnable()
    assert len(commands) >= 10, [str(c) for c in commands]
    isolate_cli(monkeypatch, tmp_path)
    uri = copy_starter_kb(starter_kb, tmp_path / "kb")
    monkeypatch.setenv("ADVISOR_STORE", uri)
    work = tmp_path / "work"
    shutil.copytree(REPO / "docs" / "examples", work / "docs" / "examples")
    shutil.copytree(REPO / "tests" / "data" / "topology", work / "tests" / "data" / "topology")
    for plan in ("my-plan.yaml", "cpu-plan.yaml"):
        shutil.copy(REPO / "deploy" / "plans" / "sample-plan.yaml", work / plan)
    (work / "deploy" / "overlays" / "mycluster").mkdir(parents=True)
    _models(work)
    monkeypatch.chdir(work)
    failed: dict[str, Any] = {}
    for doc in commands:
        code, out, err = advisor(capsys, *typed(doc.text))
        if code != 0:
            failed[str(doc)] = (code, err[-400:])
        elif "--json" in doc.text:
            json.loads(out)
    assert not failed, json.dumps(failed, indent=1)
