"""Offline structural validation of custom resources against their CRD ``openAPIV3Schema``.

The CRDs are the upstream files, unchanged (``crds/``, provenance in ``crds/PROVENANCE.md``). The checks
are made to behave like the API server rather than like plain JSON Schema:

- unknown fields are errors (``additionalProperties: false`` is added to every object node that lists
  ``properties``, unless it says ``x-kubernetes-preserve-unknown-fields``); the server would prune them
  silently, which is worse: the fault you wrote would not be the fault injected;
- types are strict: ``value: 1`` (an int) where the CRD says string fails, as it does on the server;
- ``nullable``, ``int32``/``int64`` ranges and ``x-kubernetes-int-or-string`` are honoured (OpenAPI 3.0
  validator with its format checker).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from chaosdb.core.errors import ChaosDBError

__all__ = ["CRD_DIR", "CustomResourceKind", "crd_kinds", "kind_of", "schema_errors", "SchemaUnavailable"]

CRD_DIR = Path(__file__).with_name("crds")


class SchemaUnavailable(ChaosDBError):
    """No CRD schema is known for this apiVersion/kind."""


@dataclass(frozen=True)
class CustomResourceKind:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    crd_file: str

    @property
    def api_version(self) -> str:
        """``group/version``."""
        return f"{self.group}/{self.version}"


def _load_yaml_documents(path: Path) -> Iterator[dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as f:
        for doc in yaml.load_all(f, Loader=loader):
            if isinstance(doc, dict):
                yield doc


@functools.lru_cache(maxsize=1)
def _index() -> dict[tuple[str, str], tuple[CustomResourceKind, Path, int]]:
    """(apiVersion, kind) -> (kind record, file, document number); reads only the CRD headers' index
    lines cheaply by loading each file once (the large Workflow/Schedule CRDs load in ~0.1 s with libyaml)."""
    index: dict[tuple[str, str], tuple[CustomResourceKind, Path, int]] = {}
    for path in sorted(CRD_DIR.rglob("*.yaml")):
        for n, doc in enumerate(_load_yaml_documents(path)):
            if doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc.get("spec") or {}
            for ver in spec.get("versions") or []:
                record = CustomResourceKind(
                    group=spec["group"], version=ver["name"], kind=spec["names"]["kind"],
                    plural=spec["names"]["plural"], namespaced=spec.get("scope") == "Namespaced",
                    crd_file=str(path.relative_to(CRD_DIR)))
                index[(record.api_version, record.kind)] = (record, path, n)
    return index


def crd_kinds() -> list[CustomResourceKind]:
    """Every custom resource kind we hold a schema for."""
    return sorted((v[0] for v in _index().values()), key=lambda k: (k.group, k.kind))


def kind_of(api_version: str, kind: str) -> CustomResourceKind:
    """The bundled CRD of *kind* in *api_version*; :class:`SchemaUnavailable` when none is bundled."""
    try:
        return _index()[(api_version, kind)][0]
    except KeyError:
        raise SchemaUnavailable(f"no CRD schema for {kind} in {api_version}") from None


def _strict(node: Any) -> Any:
    """Make a structural schema reject unknown fields, as ``kubectl apply --validate=strict`` does."""
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items() if k != "description"}
        if "properties" in out and not node.get("x-kubernetes-preserve-unknown-fields") \
                and "additionalProperties" not in out:
            out["additionalProperties"] = False
        if node.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
            out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


@functools.lru_cache(maxsize=None)
def _validator(api_version: str, kind: str):
    from openapi_schema_validator import OAS30Validator, oas30_format_checker  # noqa: PLC0415 - needs the k8s extra

    record, path, n = _index()[(api_version, kind)] if (api_version, kind) in _index() else (None, None, None)
    if record is None:
        raise SchemaUnavailable(f"no CRD schema for {kind} in {api_version}")
    assert path is not None and n is not None
    doc = list(_load_yaml_documents(path))[n]
    version = next(v for v in doc["spec"]["versions"] if v["name"] == record.version)
    schema = _strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
    # metadata is checked by the API server itself (see chaosdb.manifests.admission), not by the CRD schema.
    schema.setdefault("properties", {})["metadata"] = {"type": "object"}
    return OAS30Validator(schema, format_checker=oas30_format_checker)


def _path(error) -> str:
    parts = []
    for p in error.absolute_path:
        parts.append(f"[{p}]" if isinstance(p, int) else f".{p}")
    return "".join(parts).lstrip(".") or "(top level)"


def _message(error) -> str:
    if error.validator == "additionalProperties" and error.validator_value is False:
        allowed = sorted((error.schema.get("properties") or {}))
        extra = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        return (f"unknown field(s) {', '.join(map(repr, extra))} (the API server would drop them); "
                f"known: {', '.join(allowed)}")
    if error.validator == "type":
        return f"{error.instance!r} is a {type(error.instance).__name__}, the CRD wants {error.validator_value}" + (
            " (quote it in YAML)" if error.validator_value == "string" else "")
    return error.message


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Structural errors of one object against its CRD, each as ``path: message``; [] when valid.
    Raises :class:`SchemaUnavailable` for kinds we have no CRD for."""
    if not isinstance(obj, dict):
        return [f"(top level): a Kubernetes object is a mapping, got {type(obj).__name__}"]
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not api_version or not kind:
        return ["(top level): apiVersion and kind are required"]
    validator = _validator(str(api_version), str(kind))
    errors = sorted(validator.iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [f"{_path(e)}: {_message(e)}" for e in errors]
