"""Manifest templates (shipped in :mod:`chaosdb.shipped`, ``templates/``): list them, render them with every variable filled.

A template is a valid manifest as it is (its values are the defaults: ``kubectl apply -f`` and any validator
take it unchanged) with a header that documents each variable, and a marker comment on every line a variable
sets::

    # chaosdb-variables:
    #   NAME          name      cockroachdb-pod-kill   name of the chaos object
    #   GRACE_PERIOD  integer   0                      seconds the database gets to shut down
    # end-variables
    ...
      name: "cockroachdb-pod-kill"  # ${NAME}
      gracePeriod: 0  # ${GRACE_PERIOD}
      path: "/cockroach/cockroach-data/**/*"  # ${DATA_PATH}/**/*
      "cockroachdb":  # key: ${DB_NAMESPACE}

Header columns: name, type, default (``-`` = required), description. The marker gives the value's format; a
quoted value stays quoted (a string), a bare one stays bare (an integer). Values are checked against their
type before they are substituted, so a value can never change the YAML structure (no newlines, quotes or
``${``), and the rendered objects are validated (CRD schema + admission rules) before they are printed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from chaosdb import shipped
from chaosdb.core.errors import ChaosDBError
from chaosdb.core.settings import env_value
from chaosdb.core.timeutil import parse_go_duration

__all__ = ["Variable", "Template", "templates_dir", "list_templates", "load_template", "render", "RenderResult",
           "VARIABLE_TYPES", "check_value", "fill", "inline_defaults"]

_HEADER_START = "# chaosdb-variables:"
_HEADER_END = "# end-variables"
_ROW = re.compile(r"#\s+([A-Z][A-Z0-9_]*)\s+(\S+)\s+('[^']*'|\S+)\s*(.*)")
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_KEY = r'(?:"[^"]*"|[A-Za-z0-9_./-]+)'
_VALUE_MARK = re.compile(r'^(?P<head>\s*(?:-\s+)?(?:' + _KEY + r':\s+)?)(?P<value>"[^"]*"|[^\s#"][^#]*?)'
                         r'\s+#\s(?P<fmt>[^#]*\$\{[^#]*)$')
_KEY_MARK = re.compile(r'^(?P<head>\s*(?:-\s+)?)(?P<key>' + _KEY + r'):\s+#\skey:\s(?P<fmt>[^#]*\$\{[^#]*)$')
_MODES = ("one", "all", "fixed", "fixed-percent", "random-max-percent")


def _go_duration(v: str, signed: bool = False) -> bool:
    body = v[1:] if signed and v[:1] in "+-" else v
    return body == "0" or parse_go_duration(body) is not None


#: type -> (check, what a valid value looks like)
VARIABLE_TYPES: dict[str, tuple[Any, str]] = {
    "name": (lambda v: len(v) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", v),
             "a DNS-1123 name: lower case letters, digits, '-', '.', at most 63 characters"),
    "label": (lambda v: len(v) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", v),
              "a DNS-1123 label: lower case letters, digits and '-', at most 63 characters"),
    "labelkey": (lambda v: len(v) <= 316 and re.fullmatch(
        r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?",
        v), "a label key: [prefix/]name, e.g. app.kubernetes.io/name"),
    "labelvalue": (lambda v: len(v) <= 63 and re.fullmatch(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?", v),
                   "a label value: letters, digits, '-', '_', '.', at most 63 characters"),
    "integer": (lambda v: re.fullmatch(r"-?\d{1,18}", v), "an integer"),
    "duration": (_go_duration, "a Go duration such as 30s, 1m30s, 500ms"),
    "signed-duration": (lambda v: _go_duration(v, signed=True), "a Go duration, optionally negative: -250ms"),
    "address": (lambda v: len(v) < 254 and re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z.:-]*", v),
                "an IP address or host name (no spaces)"),
    "fraction": (lambda v: re.fullmatch(r"(0(\.\d+)?|1(\.0+)?)", v), "a fraction from 0 to 1, such as 0.3"),
    "percent": (lambda v: re.fullmatch(r"\d{1,3}(\.\d+)?", v) and float(v) <= 100, "a number from 0 to 100"),
    "size": (lambda v: re.fullmatch(r"(\d+(\.\d+)? ?[kKmMgGtT]?[iI]?[bB]?|\d{1,3}%)", v),
             "a size such as 256MB, 1GiB, or a percentage such as 50%"),
    "rate": (lambda v: re.fullmatch(r"\d+(bit|kbit|mbit|gbit|tbit|bps|kbps|mbps|gbps|tbps)", v),
             "a rate such as 10mbit or 1mbps (bps = bytes per second)"),
    "path": (lambda v: len(v) < 4096 and re.fullmatch(r"/[A-Za-z0-9._/@+=,:-]*", v), "an absolute path"),
    "cron": (lambda v: re.fullmatch(r"(@every \S+|@[a-z]+|[\d*/,?A-Za-z-]+( [\d*/,?A-Za-z-]+){4})", v),
             "a 5-field cron spec such as '0 3 * * 1', @hourly or '@every 6h'"),
    "image": (lambda v: re.fullmatch(r"[a-z0-9][a-z0-9._/:@-]*", v) and len(v) < 256,
              "a container image reference such as ghcr.io/org/chaosdb:0.1.0"),
    "string": (lambda v: re.fullmatch(r"[A-Za-z0-9 ._/:@%+=,-]*", v) and len(v) < 1024,
               "letters, digits, spaces and ._/:@%+=,- only"),
    "url": (lambda v: re.fullmatch(r"https?://[A-Za-z0-9._~:/?#@!&'()*+,;=%-]+", v) and len(v) < 2048,
            "an http(s) URL"),
    "mode": (lambda v: v in _MODES, "one of " + ", ".join(_MODES)),
}


@dataclass(frozen=True)
class Variable:
    name: str
    type: str
    default: str | None
    description: str

    @property
    def required(self) -> bool:
        """Whether the variable has no default."""
        return self.default is None

    def as_dict(self) -> dict[str, Any]:
        """The variable as JSON."""
        return {"name": self.name, "type": self.type, "default": self.default, "required": self.required,
                "description": self.description}


@dataclass
class Template:
    name: str
    path: Path
    summary: str
    variables: dict[str, Variable]
    body: str
    kinds: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The template as JSON: name, path, summary, kinds, variables."""
        return {"name": self.name, "path": str(self.path), "summary": self.summary, "kinds": self.kinds,
                "variables": [v.as_dict() for v in self.variables.values()]}


@dataclass
class RenderResult:
    template: str
    values: dict[str, str]
    text: str
    objects: list[dict[str, Any]]


def templates_dir(override: str | os.PathLike | None = None) -> Path:
    """``override`` (``--dir``), else ``$CHAOSDB_MANIFESTS``, else the templates shipped with the package.

    A folder that is named but does not exist is an error (never a silent fall-back to the shipped ones)."""
    for source, value in (("--dir", override), ("CHAOSDB_MANIFESTS", env_value("CHAOSDB_MANIFESTS"))):
        if value:
            if not Path(value).is_dir():
                raise ChaosDBError(f"template folder {value} ({source}) does not exist or is not a folder")
            return Path(value)
    return shipped.templates_dir()


def check_value(var: Variable, value: Any) -> str:
    """The value as text, or ChaosDBError naming the variable, the value and what is expected."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if var.type in VARIABLE_TYPES:
        check, expected = VARIABLE_TYPES[var.type]
    elif "|" in var.type:
        choices = var.type.split("|")
        check, expected = (lambda v: v in choices), "one of " + ", ".join(choices)
    else:
        raise ChaosDBError(f"template variable {var.name} has an unknown type {var.type!r}")
    if "\n" in text or "${" in text or '"' in text or "\\" in text or not check(text):
        raise ChaosDBError(f"{var.name}={text!r} is not valid: expected {expected}")
    return text


def _parse(name: str, path: Path) -> Template:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    variables: dict[str, Variable] = {}
    summary = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("#") else ""
    try:
        start = lines.index(_HEADER_START)
        end = lines.index(_HEADER_END, start)
    except ValueError:
        raise ChaosDBError(f"{path}: no '{_HEADER_START}' ... '{_HEADER_END}' block") from None
    for row in lines[start + 1:end]:
        m = _ROW.fullmatch(row.rstrip())
        if not m:
            raise ChaosDBError(f"{path}: cannot read variable row {row!r}")
        vname, vtype, default, desc = m.groups()
        if default.startswith("'"):
            default = default[1:-1]
        variables[vname] = Variable(vname, vtype, None if default == "-" else ("" if default == '""' else default),
                                    desc.strip())
    body = "\n".join(lines[end + 1:]) + "\n"
    used: set[str] = set()
    for n, line in enumerate(lines[end + 1:], start=end + 2):
        if "${" not in line:
            continue
        m = _KEY_MARK.match(line) or _VALUE_MARK.match(line)
        if not m:
            raise ChaosDBError(f"{path}:{n}: a ${{...}} outside a marker comment: {line.strip()!r}")
        used |= set(_PLACEHOLDER.findall(m.group("fmt")))
    if used - set(variables):
        raise ChaosDBError(f"{path}: placeholders without a documented variable: {sorted(used - set(variables))}")
    if set(variables) - used:
        raise ChaosDBError(f"{path}: documented variables that no line uses: {sorted(set(variables) - used)}")
    kinds = re.findall(r"^kind:\s*(\S+)", body, flags=re.M)
    return Template(name, path, summary, variables, body, kinds)


def fill(body: str, values: Mapping[str, str]) -> str:
    """Replace every marked value (or key) by its format with ``values`` substituted; drop the markers."""
    out = []
    for line in body.splitlines():
        if "${" in line:
            key = _KEY_MARK.match(line)
            m = key or _VALUE_MARK.match(line)
            if m is None:
                raise ChaosDBError(f"a ${{...}} outside a marker comment: {line.strip()!r}")
            new = _PLACEHOLDER.sub(lambda p: values[p.group(1)], m.group("fmt").strip())
            if key:
                line = f'{m.group("head")}"{new}":'
            else:
                quoted = m.group("value").startswith('"')
                line = m.group("head") + (f'"{new}"' if quoted else new)
        out.append(line)
    return "\n".join(out) + "\n"


def inline_defaults(text: str, defaults: Mapping[str, str]) -> str:
    """Turn ``key: "${VAR}"`` placeholder lines into ``key: "default"  # ${VAR}`` marker lines (generators)."""
    out = []
    for line in text.splitlines():
        if "${" in line and not line.lstrip().startswith("#"):
            sub = _PLACEHOLDER.sub(lambda p: defaults[p.group(1)], line)
            km = re.match(r'^(\s*(?:-\s+)?)"([^"]*)":\s*$', line)
            if km:
                line = f'{sub.rstrip()}  # key: {km.group(2)}'
            else:
                vm = re.match(r'^(\s*(?:-\s+)?(?:' + _KEY + r':\s+)?)("([^"]*)"|(\S+))\s*$', line)
                if not vm:
                    raise ValueError(f"cannot mark {line!r}")
                fmt = vm.group(3) if vm.group(3) is not None else vm.group(4)
                line = f"{sub.rstrip()}  # {fmt}"
        out.append(line)
    return "\n".join(out) + "\n"


def list_templates(directory: str | os.PathLike | None = None) -> list[Template]:
    """Every template in *directory* (the shipped ones by default), by name."""
    root = templates_dir(directory)
    out = []
    for path in sorted(root.rglob("*.yaml")):
        if _HEADER_START in path.read_text(encoding="utf-8"):
            out.append(_parse(str(path.relative_to(root).with_suffix("")), path))
    return out


def load_template(name: str, directory: str | os.PathLike | None = None) -> Template:
    """The template called *name*; refused with every known name when there is none (a name never reaches outside the
    folder)."""
    root = templates_dir(directory)
    clean = name.removesuffix(".yaml")
    path = (root / f"{clean}.yaml").resolve()
    if root.resolve() not in path.parents or not path.is_file():
        known = ", ".join(t.name for t in list_templates(directory))
        raise ChaosDBError(f"no template {name!r}; known: {known}")
    return _parse(clean, path)


def render(name: str, values: Mapping[str, Any] | None = None, directory: str | os.PathLike | None = None,
           validate: bool = True) -> RenderResult:
    """Fill every variable (defaults for the unset ones) and return the YAML text and the objects.

    Raises ChaosDBError for unknown variables, missing required ones, ill-typed values, and (``validate``)
    objects the API server or the Chaos Mesh webhook would refuse."""
    from chaosdb.manifests.validate import load_documents, validate_documents  # noqa: PLC0415 - needs the k8s extra

    template = load_template(name, directory)
    values = dict(values or {})
    unknown = sorted(set(values) - set(template.variables))
    if unknown:
        raise ChaosDBError(f"{template.name} has no variable(s) {', '.join(unknown)}; it has "
                           f"{', '.join(template.variables)}")
    filled: dict[str, str] = {}
    for var in template.variables.values():
        if var.name in values and values[var.name] is not None:
            filled[var.name] = check_value(var, values[var.name])
        elif var.required:
            raise ChaosDBError(f"{template.name} needs {var.name} ({var.description})")
        else:
            filled[var.name] = check_value(var, var.default) if var.default != "" else ""
    text = f"# rendered from chaosdb template {template.name}\n" + fill(template.body, filled)
    objects = load_documents(text, template.name)
    if validate:
        bad = [r for r in validate_documents(objects, template.name) if not r.ok]
        if bad:
            details = "\n".join(line for r in bad for line in r.lines())
            raise ChaosDBError(f"{template.name} rendered objects that would be refused:\n{details}")
    return RenderResult(template.name, filled, text, objects)
