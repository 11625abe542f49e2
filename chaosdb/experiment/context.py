"""One run context: the state of one ``chaos run``, in one object that the first control of the pack creates.

Controls and probes read it, never each other's module globals (the anchor is Patroni's ``Config``: built once,
handed down). It holds

* the load: its record, its (master) process, the worker processes started with it, the watcher of the database,
  its progress lines and the run's phase (written by :mod:`chaosdb.load.runner` and the load control, read through
  :mod:`chaosdb.load.state`);
* the refusals (:mod:`chaosdb.experiment.refusals`) and the input checks already made
  (:mod:`chaosdb.experiment.checks`);
* the fault scope (:class:`chaosdb.core.faultrecords.records.RunScope`: which fault records this run may touch);
* the output folders the run claimed (``report``, ``samples``);
* what the run may do to the cluster it started (the launcher's decision, e.g. the embedded cluster's ownership);
* the teardown: steps registered by name, run once, in the order of :data:`TEARDOWN_ORDER`.

Its life: :func:`run_context` with the experiment (a control's configure or before-experiment hook, whichever comes
first: get-or-create) binds it to the run; :func:`closes_run_context` on each control's after-experiment hook ends it
when the last of them has run (the rest of the teardown runs, and the holder is cleared); a ``cleanup_control`` ends
it too (:func:`end_run`), should an after-experiment hook not have run. The holder below is the only module-level
run state of the pack (``tests/unit/test_architecture.py`` holds that).
"""

from __future__ import annotations

import functools
import importlib
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar, cast

from chaosdb.core.errors import ChaosDBError
from chaosdb.core.faultrecords.records import RunScope

__all__ = ["RunContext", "LoadRun", "Refusal", "TEARDOWN_ORDER", "run_context", "active_run", "end_run",
           "closes_run_context"]

F = TypeVar("F", bound=Callable[..., Any])

#: the order in which a run's parts end (a step is registered under one of these names; a control asks for the steps
#: before the point it stands at): the load stops (and its record goes into the journal) before the report is written
#: from its samples, and before the database it loads goes down
TEARDOWN_ORDER: dict[str, int] = {"load": 10, "report": 20, "cluster": 30}


@dataclass
class LoadRun:
    """The load running in this process: its record (settings, times, the actions seen), its (master) process, the
    worker processes started here (master/worker mode), the watcher of the database (None: nothing watched) and
    its progress lines with the run's phase (:class:`chaosdb.load.progress.Progress`, made on first use)."""

    record: dict[str, Any] = field(default_factory=dict)
    process: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = field(default_factory=list)
    observer: Any = None
    progress: Any = None


@dataclass(frozen=True)
class Refusal:
    """Why a control stopped the run (*nothing_started*: the input was refused before anything started)."""

    message: str
    nothing_started: bool


@dataclass
class _Step:
    name: str
    action: Callable[[dict[str, Any] | None], None]
    done: bool = False


@dataclass
class RunContext:
    """The state of one ``chaos run`` (see the module's docstring)."""

    experiment_id: int | None = None
    load: LoadRun = field(default_factory=LoadRun)
    refusals: list[Refusal] = field(default_factory=list)
    #: id of the experiment object checked -> its problems (checked once per run)
    checks: dict[int, list[str]] = field(default_factory=dict)
    fault_scope: RunScope = field(default_factory=RunScope.this_run)
    #: what -> folder: ``report`` (the report control's out_dir), ``samples`` (the load's)
    output_folders: dict[str, str] = field(default_factory=dict)
    #: what this run may do to the cluster it started afterwards (None: it started none)
    cluster: Any = None
    #: this pack's controls of the experiment whose after-experiment hooks end the run, in Chaos Toolkit's order
    members: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    ended: bool = False
    _steps: dict[str, _Step] = field(default_factory=dict)

    def register_teardown(self, name: str, action: Callable[[dict[str, Any] | None], None],
                          replace: bool = True) -> None:
        """Register the teardown step *name* (one of :data:`TEARDOWN_ORDER`): *action(journal)* runs once, when a
        control asks for the steps up to a later point, or at the end of the run. Registered again, it replaces the
        step (unless *replace* is false) as long as it has not run."""
        if name not in TEARDOWN_ORDER:
            raise ChaosDBError(f"no teardown step {name!r}: one of {', '.join(TEARDOWN_ORDER)}")
        if name not in self._steps or (replace and not self._steps[name].done):
            self._steps[name] = _Step(name, action)

    def teardown_steps(self) -> list[str]:
        """The registered steps, in their order."""
        return sorted(self._steps, key=TEARDOWN_ORDER.__getitem__)

    def run_teardown(self, before: str | None = None, state: dict[str, Any] | None = None,
                     through: str | None = None) -> list[str]:
        """Run the steps not run yet that come before the point *before* (or up to *through*, included; every step
        when neither is given), in order, each once, handing them the journal *state*; the names of the steps run
        now. A step that fails has run (it is not tried again) and its error goes to the caller."""
        limit = (TEARDOWN_ORDER[before] if before is not None else TEARDOWN_ORDER[through] + 1
                 if through is not None else max(TEARDOWN_ORDER.values()) + 1)
        ran = []
        for name in self.teardown_steps():
            step = self._steps[name]
            if step.done or TEARDOWN_ORDER[name] >= limit:
                continue
            step.done = True  # once, even when it fails
            ran.append(name)
            step.action(state)
        return ran

    def leave(self, control: str, state: dict[str, Any] | None = None) -> None:
        """*control*'s after-experiment hook is over: after the last member's, the run ends (:func:`end_run`)."""
        if control not in self.left:
            self.left.append(control)
        if not self.members or all(m in self.left for m in self.members):
            end_run(state, self)


_lock = threading.Lock()
#: the run in progress (None between runs): the only module-level run state of the pack
_holder: list[RunContext] = []


def run_context(experiment: Any = None) -> RunContext:
    """The context of the run in progress, created when there is none (get-or-create). Given the *experiment* (a
    control's hook), the context is bound to it: a context left by another experiment's run is ended first (its
    teardown run: nothing it started is lost), one no run owned yet (a load started directly) is adopted."""
    with _lock:
        held = _holder[0] if _holder else None
    if held is not None and experiment is not None and held.experiment_id not in (None, id(experiment)):
        end_run(None, held)
        held = None
    if held is None:
        held = RunContext()
        with _lock:
            _holder[:] = [held]
    if experiment is not None and held.experiment_id is None:
        held.experiment_id = id(experiment)
        held.members = _members(experiment)
    return held


def active_run() -> RunContext | None:
    """The context of the run in progress, or None (readers: nothing is created)."""
    with _lock:
        return _holder[0] if _holder else None


def end_run(state: dict[str, Any] | None = None, context: RunContext | None = None) -> None:
    """End the run (*context*, else the one in progress): the teardown steps not run yet run now, in order, and the
    holder is cleared. Idempotent."""
    ctx = context or active_run()
    if ctx is None:
        return
    with _lock:
        if _holder and _holder[0] is ctx:
            _holder.clear()
    if not ctx.ended:
        ctx.ended = True
        ctx.run_teardown(None, state)


def closes_run_context(hook: F) -> F:
    """Decorate a control's after-experiment hook: when it is over (also when it failed), the control leaves the run
    context, and the last control of the experiment to leave ends the run."""

    @functools.wraps(hook)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return hook(*args, **kwargs)
        finally:
            ctx = active_run()
            if ctx is not None:
                state = kwargs.get("state", args[1] if len(args) > 1 else None)
                ctx.leave(hook.__module__, state if isinstance(state, dict) else None)

    wrapped.closes_run_context = True  # type: ignore[attr-defined]
    return cast(F, wrapped)


def _members(experiment: Any) -> list[str]:
    """The controls the experiment declares (this pack's, a plug-in's) whose after-experiment hook leaves the run
    context (:func:`closes_run_context`), in the order Chaos Toolkit runs them."""
    found: list[str] = []
    controls = experiment.get("controls") if isinstance(experiment, dict) else None
    for control in controls if isinstance(controls, list) else []:
        provider = control.get("provider") if isinstance(control, dict) else None
        module = str((provider or {}).get("module") or "") if isinstance(provider, dict) else ""
        if not module:
            continue
        try:
            hook = getattr(importlib.import_module(module), "after_experiment_control", None)
        except Exception:  # noqa: BLE001 - a control that cannot be imported is Chaos Toolkit's to report
            continue
        if getattr(hook, "closes_run_context", False) and hook.__module__ not in found:
            found.append(hook.__module__)  # where the hook lives (a module may re-export another's)
    return found
