"""Compatibility rules: data (``stack_advisor/advisor/knowledge/rules/*.yaml``), validated when
loaded.

A rule says: when a configuration's components match ``when`` (PEP 440 specifiers per
component), they must also match ``require`` (and, with ``same_major``, two components must share
a major version). A component the configuration does not know makes the rule not apply (or, for
``require``, leaves it undecided): unknown is never treated as broken.

Components: driver, cuda, cudnn, tensorrt, nccl, python, any framework by name (tensorflow,
pytorch, ...), and ``framework_build_cuda`` — the CUDA a framework wheel was built for, read from
its local version tag (``2.1.0+cu121`` → 12.1). A wheel bundles its CUDA runtime, so when the
stack names no CUDA the build's CUDA stands in for it.
"""

from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stack_advisor.schema.errors import InvalidInput
from stack_advisor.schema.models import SoftwareStack
from stack_advisor.store.base import validation_message

_LOCAL_CUDA = re.compile(r"\+cu(\d{2,3})\b")


class Severity(str, Enum):
    ERROR = "error"  # the combination does not work: excluded from candidates
    WARNING = "warning"  # works with limitations: kept, with a warning


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    description: str = Field(min_length=1)
    when: dict[str, str] = Field(min_length=1)
    require: dict[str, str] = Field(default_factory=dict)
    same_major: list[str] | None = Field(default=None, min_length=2, max_length=2)
    severity: Severity = Severity.ERROR
    source: str = Field(pattern=r"^https://")

    @field_validator("when", "require")
    @classmethod
    def _specifiers(cls, value: dict[str, str]) -> dict[str, str]:
        for component, spec in value.items():
            try:
                SpecifierSet(spec)
            except InvalidSpecifier:
                raise ValueError(f"{component}: not a PEP 440 specifier: {spec!r}") from None
        return value

    @model_validator(mode="after")
    def _something_required(self) -> Rule:
        if not self.require and not self.same_major:
            raise ValueError(f"rule {self.id}: needs 'require' or 'same_major'")
        return self

    def applies(self, components: dict[str, Version]) -> bool:
        """True when every ``when`` component is known and matches."""
        for name, spec in self.when.items():
            version = components.get(name)
            if version is None or not satisfies(spec, version):
                return False
        return True

    def check(
        self, components: dict[str, Version], written: dict[str, str] | None = None
    ) -> str | None:
        """A violation message, or None (satisfied, undecided, or not applicable). Versions are
        named as ``written`` (their published form: driver "515.65.01", not "515.65.1")."""
        if not self.applies(components):
            return None
        shown = {k: (written or {}).get(k) or str(v) for k, v in components.items()}
        for name, spec in self.require.items():
            version = components.get(name)
            if version is not None and not satisfies(spec, version):
                cond = ", ".join(f"{k} {v}" for k, v in self.when.items())
                return (
                    f"{self.id}: {name} {shown[name]} does not satisfy {spec} (needed for "
                    f"{cond}): {self.description}"
                )
        if self.same_major:
            a, b = (components.get(n) for n in self.same_major)
            if a is not None and b is not None and a.major != b.major:
                a, b = (shown[n] for n in self.same_major)  # type: ignore[assignment]
                return (
                    f"{self.id}: {self.same_major[0]} {a} and {self.same_major[1]} {b} "
                    f"differ in major version: {self.description}"
                )
        return None


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's safe loader: 10x faster


@lru_cache(maxsize=65536)
def satisfies(spec: str, version: Version) -> bool:
    """``version`` matches the PEP 440 ``spec`` (prereleases included); memoised: a
    recommendation checks every candidate stack against every rule, and parsing a specifier
    costs more than the comparison."""
    return SpecifierSet(spec).contains(version, prereleases=True)


class RuleFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    rules: list[Rule]


class Violation(BaseModel):
    rule: str
    severity: Severity
    message: str


def parse_version(text: str | None) -> Version | None:
    if not text:
        return None
    text = text.strip().lstrip("vV")
    text = text.split("+")[0]
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _cudnn_integer(text: str) -> Version | None:
    """cuDNN's CUDNN_VERSION integer as some tools report it: 91900 → 9.19.0, 8902 → 8.9.2."""
    text = text.strip()
    if not text.isdigit() or len(text) < 4:
        return None
    n = int(text)
    if n >= 9 * 10000:  # cuDNN 9+: major*10000 + minor*100 + patch
        return Version(f"{n // 10000}.{(n % 10000) // 100}.{n % 100}")
    return Version(
        f"{n // 1000}.{(n % 1000) // 100}.{n % 100}"
    )  # cuDNN <= 8: major*1000 + minor*100 + patch


def component_versions(components: dict[str, str | None]) -> dict[str, Version]:
    """Component name → parsed version (unparseable ones left out), with
    ``framework_build_cuda``."""
    out: dict[str, Version] = {}
    for name, text in components.items():
        if not text:
            continue
        key = name.lower()
        match = _LOCAL_CUDA.search(text)
        if match:
            digits = match.group(1)
            build = parse_version(f"{digits[:-1]}.{digits[-1]}")
            if build is not None:
                out["framework_build_cuda"] = build
        version = _cudnn_integer(text) if key == "cudnn" else None
        version = version or parse_version(text)
        if version is not None:
            out[key] = version
    if "cuda" not in out and "framework_build_cuda" in out:
        out["cuda"] = out["framework_build_cuda"]
    return out


def stack_components(stack: SoftwareStack) -> dict[str, str | None]:
    comps: dict[str, str | None] = {
        "driver": stack.driver,
        "cuda": stack.cuda,
        "cudnn": stack.cudnn,
        "tensorrt": stack.tensorrt,
        "nccl": stack.nccl,
        "python": stack.python,
    }
    if stack.framework and stack.framework_version:
        comps.setdefault(stack.framework.lower(), stack.framework_version)
        if comps.get(stack.framework.lower()) is None:
            comps[stack.framework.lower()] = stack.framework_version
    return comps


class RuleSet:
    """All loaded rules; ``check`` a stack or a component dict."""

    def __init__(self, rules: list[Rule]) -> None:
        ids = [r.id for r in rules]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise InvalidInput(f"compatibility rules: duplicate rule ids {dupes}")
        self.rules = rules
        self._checked: dict[tuple[tuple[str, str | None], ...], list[Violation]] = {}

    def __len__(self) -> int:
        return len(self.rules)

    def check_components(self, components: dict[str, str | None]) -> list[Violation]:
        # Rules do not change once loaded and specifier matching is slow: memoise per input.
        key = tuple(sorted(components.items()))
        hit = self._checked.get(key)
        if hit is None:
            if len(self._checked) > 65536:
                self._checked.clear()
            hit = self._checked[key] = self._check_components(components)
        return list(hit)

    def _check_components(self, components: dict[str, str | None]) -> list[Violation]:
        versions = component_versions(components)
        written = {k.lower(): str(v).strip() for k, v in components.items() if v}
        out = []
        for rule in self.rules:
            message = rule.check(versions, written)
            if message:
                out.append(Violation(rule=rule.id, severity=rule.severity, message=message))
        return out

    def check_stack(self, stack: SoftwareStack) -> list[Violation]:
        return self.check_components(stack_components(stack))


def _validate(data: Any, where: str) -> list[Rule]:
    try:
        return RuleFile.model_validate(data).rules
    except ValidationError as exc:
        raise InvalidInput(f"compatibility rules {where}: {validation_message(exc)}") from None


def load_rules(source: str | Path | list[dict[str, Any]] | RuleSet | None = None) -> RuleSet:
    """The packaged rules (every ``*.yaml`` here), or those of a directory/file/list.

    Raises:
        InvalidInput: a malformed rule; the message names the file, rule index and field.
    """
    if isinstance(source, RuleSet):
        return source
    if isinstance(source, list):
        return RuleSet(_validate({"rules": source}, "(given)"))
    if source is None:
        return _packaged_rules()
    path = Path(source)
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    rules: list[Rule] = []
    for file in files:
        try:
            data = yaml.load(file.read_text(encoding="utf-8"), Loader=_LOADER)
        except (OSError, yaml.YAMLError) as exc:
            raise InvalidInput(f"compatibility rules {file}: unreadable: {exc}") from None
        rules.extend(_validate(data, str(file)))
    return RuleSet(rules)


@lru_cache(maxsize=1)
def _packaged_rules() -> RuleSet:
    rules: list[Rule] = []
    folder = resources.files("stack_advisor.advisor.knowledge.rules")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            try:
                data = yaml.load(entry.read_text(encoding="utf-8"), Loader=_LOADER)
            except yaml.YAMLError as exc:
                raise InvalidInput(f"compatibility rules {entry.name}: {exc}") from None
            rules.extend(_validate(data, entry.name))
    return RuleSet(rules)
