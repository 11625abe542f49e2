"""``chaosdb manifests validate``: every object of a manifest checked offline before anything is applied.

- Chaos Mesh and Litmus kinds: the upstream CRD ``openAPIV3Schema`` (strict: unknown fields and wrong
  scalar types are errors, see :mod:`chaosdb.manifests.schema`) plus what the API server and the Chaos Mesh
  webhook check on top (:mod:`chaosdb.manifests.admission`).
- Built-in kinds (ServiceAccount, Role, RoleBinding, CronJob, ConfigMap, ...): the Kubernetes OpenAPI schemas
  bundled by ``kubernetes-validate`` (strict mode), when it is installed.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from chaosdb.core.errors import ChaosDBError
from chaosdb.manifests.admission import admission_errors, advice, metadata_errors
from chaosdb.manifests.schema import SchemaUnavailable, schema_errors

__all__ = ["ObjectReport", "validate_object", "validate_documents", "validate_text", "validate_file",
           "load_documents", "KUBERNETES_VERSION", "require_valid"]

#: Kubernetes version whose built-in schemas check built-in kinds (kubernetes-validate's newest by default).
KUBERNETES_VERSION: str | None = None


@dataclass
class ObjectReport:
    """The verdict on one object: ``errors`` mean the API server or a webhook would refuse it."""
    source: str
    index: int
    kind: str
    name: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    checked_with: str = ""

    @property
    def ok(self) -> bool:
        """Whether nothing would refuse the object."""
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON."""
        return {"source": self.source, "index": self.index, "kind": self.kind, "name": self.name, "ok": self.ok,
                "errors": list(self.errors), "warnings": list(self.warnings), "checked_with": self.checked_with}

    def lines(self) -> list[str]:
        """The report as text lines: ok, or each error and warning."""
        head = f"{self.source}#{self.index} {self.kind}/{self.name}"
        if self.ok:
            out = [f"ok    {head} ({self.checked_with})"]
        else:
            out = [f"FAIL  {head} ({self.checked_with})"] + [f"      error: {e}" for e in self.errors]
        return out + [f"      warning: {w}" for w in self.warnings]


def _builtin_errors(obj: dict[str, Any]) -> tuple[list[str], str]:
    try:
        import kubernetes_validate  # noqa: PLC0415 - needs the k8s extra
        from kubernetes_validate.utils import SchemaNotFoundError, ValidationError, latest_version  # noqa: PLC0415 - needs the k8s extra
    except ImportError:
        return ([f"no schema for {obj.get('kind')} in {obj.get('apiVersion')}: install kubernetes-validate "
                 "(pip install 'chaostoolkit-db[k8s]') to check built-in kinds"], "unchecked")
    version = KUBERNETES_VERSION or latest_version()
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except SchemaNotFoundError:
        return [f"unknown kind {obj.get('kind')} in {obj.get('apiVersion')}: neither a CRD we hold nor a built-in "
                f"kind of Kubernetes {version}"], "unknown kind"
    except ValidationError as e:
        path = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        return [f"{path}: {str(e.message).splitlines()[0]}"], f"Kubernetes {version} schema"
    return [], f"Kubernetes {version} schema"


def validate_object(obj: Any, source: str = "<object>", index: int = 0) -> ObjectReport:
    """Check one object; never raises for bad input (the report says what is wrong)."""
    if not isinstance(obj, dict):
        return ObjectReport(source, index, "?", "?", [f"a Kubernetes object is a mapping, got {type(obj).__name__}"])
    meta: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    report = ObjectReport(source, index, str(obj.get("kind") or "?"), str(meta.get("name") or "?"))
    try:
        report.errors = schema_errors(obj)
        report.checked_with = "CRD schema + admission rules"
        report.errors += admission_errors(obj)
    except SchemaUnavailable:
        builtin, how = _builtin_errors(obj)
        report.errors = builtin + metadata_errors(obj)
        report.checked_with = how
    report.warnings = advice(obj)
    return report


def load_documents(text: str, source: str = "<text>") -> list[Any]:
    """YAML (or JSON) documents, skipping empty ones; a clear error for broken YAML."""
    try:
        return [d for d in yaml.safe_load_all(io.StringIO(text)) if d is not None]
    except yaml.YAMLError as e:
        raise ValueError(f"{source}: not valid YAML: {e}") from None


def validate_documents(docs: Iterable[Any], source: str = "<text>") -> list[ObjectReport]:
    """A report per object of *docs* (the items of a ``List`` one by one)."""
    reports = []
    for i, doc in enumerate(docs):
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            reports += [validate_object(item, f"{source}#{i}.items", j) for j, item in enumerate(doc["items"])]
        else:
            reports.append(validate_object(doc, source, i))
    return reports


def validate_text(text: str, source: str = "<text>") -> list[ObjectReport]:
    """A report per object of a YAML or JSON text."""
    return validate_documents(load_documents(text, source), source)


def validate_file(path: str | Path) -> list[ObjectReport]:
    """A report per object of a YAML or JSON file."""
    p = Path(path)
    return validate_text(p.read_text(encoding="utf-8"), str(path))


def require_valid(obj: dict[str, Any], what: str = "object") -> None:
    """Raise :class:`chaosdb.core.errors.ChaosDBError` listing every error, before anything is sent."""

    report = validate_object(obj, what)
    if not report.ok:
        raise ChaosDBError(f"{report.kind}/{report.name} would be refused, nothing was created:\n  "
                           + "\n  ".join(report.errors))
