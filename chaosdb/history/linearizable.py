"""Is a recorded history of register operations linearizable?

:func:`check_register` reads a history in Jepsen's form (as elle-cli reads it from JSON): a list of events, each a
dict with ``type`` (``invoke``, ``ok``, ``fail`` or ``info``), ``process``, ``f`` (``read``, ``write`` or ``cas``),
``value``, and optionally ``index`` (the event's position when absent) and ``time``. Real time is the order of the
list (as Jepsen records it); ``index`` only names events in messages, and ``time`` is not read.

The history comes in one of two forms, told apart by the values of its invocations and ``ok`` completions (the
values of ``fail`` and ``info`` completions are not looked at: the invocation says what was attempted):

* keyed, when every one of those values is a two-element list ``[key, v]`` and, for a cas, ``v`` is itself a
  two-element list: a read is ``[k, null]`` then ``[k, v]``, a write ``[k, v]``, a cas ``[k, [old, new]]``
  (the tuples of jepsen.independent, and what the etcd workload records);
* single register otherwise: a read is ``null`` then the value read, a write ``v``, a cas ``[old, new]``.

A history where some reads or writes are keyed and other events are not is refused (mixed forms), so a single
register cannot hold two-element lists unless only cas operations write them.

What each completion means: ``ok`` took effect at one instant between its invocation and its completion; ``fail``
did not take effect (dropped); ``info`` may or may not have taken effect, at any instant after its invocation (a
read that ended ``info`` tells nothing and is dropped). A read that returned ``null`` says the register held
``null`` (Knossos's models instead let a ``null`` read match any value). An invocation with no completion counts as
``info``. A history without any invocation is read as one whose ``ok`` events each took effect at their own
position. Events of process ``"nemesis"`` (Jepsen's faults) are skipped.

The search is Wing & Gong's, with Lowe's memoisation as Knossos (``knossos.wgl``) and Porcupine do it: the calls and
returns of one key's operations in a doubly linked list (arrays here), a stack to backtrack, and a cache of
configurations (the set of linearized operations as an integer bitset, the register's value) never explored twice.
Keys are checked one at a time (P-compositionality: a history of independent registers is linearizable exactly when
each register's is). A key whose search passes ``max_states`` configurations or the time limit is ``unknown``.

When a key is not linearizable, its example says where the search got furthest: the acknowledged operation that no
order consistent with real time could place, the register values found there instead, how long the longest
linearization was and how it ended, and a few operations still pending at that point.
"""

from __future__ import annotations

import json
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from chaosdb.core.errors import ChaosDBError

__all__ = ["check_register", "MODELS"]

#: the models a history can be checked against: a register knows reads and writes, a cas-register also cas
MODELS = ("register", "cas-register")

_TYPES = ("invoke", "ok", "fail", "info")
_FUNCTIONS = ("read", "write", "cas")
_READ, _WRITE, _CAS = 0, 1, 2
_CODES = {"read": _READ, "write": _WRITE, "cas": _CAS}
#: how many configurations are explored (or backtracked from) between two looks at the clock
_CLOCK_EVERY = 2048
#: at most this many operations and register values are shown around a failure
_CONTEXT = 4


@dataclass(frozen=True, slots=True)
class _Operation:
    """One operation of one key, as the search sees it."""

    key: Any  # the key as the history spells it (None in the single-register form)
    f: str
    value: Any  # the value as the history spells it: read -> value read, write -> written, cas -> [old, new]
    process: Any
    invoke_index: Any
    complete_index: Any  # None for an operation that never completed (info)
    invoke_position: int
    complete_position: int | None  # None when the operation may take effect any time after its invocation

    @property
    def definite(self) -> bool:
        """Whether the operation surely took effect (it completed ``ok``)."""
        return self.complete_position is not None


@dataclass
class _Parsed:
    """A history read into operations per key, with the counts the result reports."""

    form: str
    operations: dict[Hashable, list[_Operation]] = field(default_factory=dict)
    ok: int = 0
    info: int = 0
    fail: int = 0


@dataclass
class _KeyVerdict:
    """What the search of one key found."""

    valid: bool | str
    states_explored: int
    example: dict[str, Any] | None = None


def check_register(history: list[dict], *, model: str = "cas-register", initial: Any = None,
                   max_states: int = 5_000_000, time_limit_s: float = 60.0) -> dict:
    """Check that a history of register operations (one register, or many told apart by key) is linearizable.

    ``model`` is ``"cas-register"`` (read, write, cas) or ``"register"`` (read and write; a cas is an error).
    ``initial`` is every register's value before the history. Each key is searched alone; a key whose search
    explores more than ``max_states`` configurations, or that is still being searched when ``time_limit_s``
    (for the whole check) runs out, is ``unknown``. Returns a JSON-serialisable verdict: ``valid`` is False when a
    key is not linearizable, ``"unknown"`` when none is invalid but some key ran out of budget, True otherwise;
    ``anomalies["nonlinearizable"]`` explains each invalid key. Malformed histories raise :class:`ChaosDBError`.
    """
    if model not in MODELS:
        raise ChaosDBError(f"Unknown model {model!r}: check a history against one of {', '.join(MODELS)}.")
    parsed = _parse(history, model)
    deadline = time.monotonic() + time_limit_s
    examples: list[dict[str, Any]] = []
    unknown_keys: list[Any] = []
    explored = 0
    for operations in parsed.operations.values():
        verdict = _check_key(operations, _frozen(initial), max_states, deadline)
        explored += verdict.states_explored
        if verdict.valid == "unknown":
            unknown_keys.append(operations[0].key)
        elif verdict.example is not None:
            examples.append(verdict.example)
    valid: bool | str = False if examples else "unknown" if unknown_keys else True
    return {
        "valid": valid,
        "anomaly_types": ["nonlinearizable"] if examples else [],
        "anomalies": {"nonlinearizable": examples} if examples else {},
        "model": model,
        "form": parsed.form,
        "keys": len(parsed.operations),
        "operations": parsed.ok,
        "info": parsed.info,
        "fail": parsed.fail,
        "unknown_keys": unknown_keys,
        "budget": {"max_states": max_states, "time_limit_s": time_limit_s, "states_explored": explored},
    }


# --- reading the history -------------------------------------------------------------------------------------


def _frozen(value: Any) -> Hashable:
    """A hashable stand-in for a value read from JSON (lists become tuples, objects frozen sets of items)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return frozenset((k, _frozen(v)) for k, v in value.items())
    return value


def _thawed(value: Any) -> Any:
    """The JSON-serialisable form of a value :func:`_frozen` made."""
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    if isinstance(value, frozenset):
        return {k: _thawed(v) for k, v in value}
    return value


def _is_pair(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2


def _index(event: dict, position: int) -> Any:
    return event.get("index", position)


def _checked_events(history: list[dict], model: str) -> list[dict]:
    """The history's events, each checked for a known type and function (and no cas against a plain register)."""
    if not isinstance(history, list):
        raise ChaosDBError(f"A history is a list of events; got {type(history).__name__}.")
    for position, event in enumerate(history):
        if not isinstance(event, dict):
            raise ChaosDBError(f"The event at position {position} is not an object with type, process, f and value.")
        if not _is_client(event):
            continue
        index = _index(event, position)
        if event.get("type") not in _TYPES:
            raise ChaosDBError(f"The event at index {index} has type {event.get('type')!r}; "
                               f"a history's events are one of {', '.join(_TYPES)}.")
        if event.get("f") not in _FUNCTIONS:
            raise ChaosDBError(f"The event at index {index} has f {event.get('f')!r}; "
                               f"a register history knows {', '.join(_FUNCTIONS)}.")
        if event["f"] == "cas" and model == "register":
            raise ChaosDBError(f"The event at index {index} is a cas, which the 'register' model does not know; "
                               "check the history with model='cas-register'.")
    return history


def _is_client(event: dict) -> bool:
    """Whether an event is a client's (Jepsen records its fault injections as process ``nemesis``)."""
    return event.get("process") != "nemesis"


def _looks_keyed(event: dict) -> bool:
    value: Any = event.get("value")
    return _is_pair(value) and (event["f"] != "cas" or _is_pair(value[1]))


def _form(events: list[dict]) -> str:
    """``keyed`` or ``single`` (see the module's docstring); raises on a history that mixes the two."""
    telling = [(position, event) for position, event in enumerate(events)
               if _is_client(event) and event["type"] in ("invoke", "ok")]
    if telling and all(_looks_keyed(event) for _, event in telling):
        return "keyed"
    keyed_reads_or_writes = [(p, e) for p, e in telling if e["f"] != "cas" and _looks_keyed(e)]
    if keyed_reads_or_writes:
        position, event = next((p, e) for p, e in telling if not _looks_keyed(e))
        first_keyed, _ = keyed_reads_or_writes[0]
        if event["f"] == "cas" and _is_pair(event.get("value")):
            raise ChaosDBError(f"The cas at index {_index(event, position)} has value {event.get('value')!r}; "
                               "in a keyed history a cas's value is [key, [old, new]].")
        raise ChaosDBError(f"The event at index {_index(event, position)} (value {event.get('value')!r}) is not "
                           f"in the keyed form [key, value] of the event at index "
                           f"{_index(events[first_keyed], first_keyed)}: a history is keyed or single, not both.")
    return "single"


def _key_and_value(event: dict, position: int, form: str) -> tuple[Any, Any]:
    """The key (None for a single register) and the register value of an event, its cas checked as a pair."""
    if form == "keyed" and not _is_pair(event.get("value")):
        raise ChaosDBError(f"The {event['type']} at index {_index(event, position)} has value "
                           f"{event.get('value')!r}; in a keyed history every value is [key, value].")
    key, value = (event["value"][0], event["value"][1]) if form == "keyed" else (None, event.get("value"))
    if event["f"] == "cas" and not _is_pair(value):
        raise ChaosDBError(f"The cas at index {_index(event, position)} has value {event.get('value')!r}; "
                           "a cas's value is [old, new] (keyed: [key, [old, new]]).")
    return key, value


class _Pairing:
    """Matches each process's completion with its invocation, building the operations per key."""

    def __init__(self, events: list[dict], form: str) -> None:
        self.events = events
        self.form = form
        self.parsed = _Parsed(form)
        self.pending: dict[Any, int] = {}  # process -> position of its invocation not yet completed
        self.sequential = not any(event["type"] == "invoke" and _is_client(event) for event in events)

    def run(self) -> _Parsed:
        """Every event folded in, the invocations left open counted as info."""
        for position, event in enumerate(self.events):
            if not _is_client(event):
                continue
            if event["type"] == "invoke":
                self._invoke(position, event)
            elif self.sequential:
                self._alone(position, event)
            else:
                self._complete(position, event)
        for position in sorted(self.pending.values()):
            self._add(position, None, "info")
        return self.parsed

    def _invoke(self, position: int, event: dict) -> None:
        process = event.get("process")
        if process in self.pending:
            earlier = self.pending[process]
            raise ChaosDBError(f"Process {process!r} invoked at index {_index(event, position)} while its "
                               f"invocation at index {_index(self.events[earlier], earlier)} had not completed.")
        _key_and_value(event, position, self.form)
        self.pending[process] = position

    def _complete(self, position: int, event: dict) -> None:
        process = event.get("process")
        if process not in self.pending:
            raise ChaosDBError(f"The {event['type']} at index {_index(event, position)} completes nothing: "
                               f"process {process!r} has no invocation open there.")
        invoked = self.pending.pop(process)
        invocation = self.events[invoked]
        if invocation["f"] != event["f"]:
            raise ChaosDBError(f"The {event['type']} at index {_index(event, position)} is a {event['f']} but "
                               f"completes the {invocation['f']} invoked at index {_index(invocation, invoked)}.")
        self._add(invoked, position, event["type"])

    def _alone(self, position: int, event: dict) -> None:
        """An event of a history without invocations: an ok took effect at its position, an info after it."""
        self._add(position, position if event["type"] == "ok" else None, event["type"])

    def _add(self, invoked: int, completed: int | None, kind: str) -> None:
        parsed = self.parsed
        if kind == "fail":
            parsed.fail += 1
            return
        if kind == "info":
            parsed.info += 1
        else:
            parsed.ok += 1
        invocation = self.events[invoked]
        key, value = _key_and_value(invocation, invoked, self.form)
        if kind == "ok" and completed is not None and completed != invoked:
            value = self._completed_value(invocation, invoked, completed, key, value)
        if invocation["f"] == "read" and kind != "ok":
            parsed.operations.setdefault(_frozen(key), [])  # tells nothing, but the key was touched
            return
        parsed.operations.setdefault(_frozen(key), []).append(_Operation(
            key=key, f=invocation["f"], value=value, process=invocation.get("process"),
            invoke_index=_index(invocation, invoked),
            complete_index=None if completed is None else _index(self.events[completed], completed),
            invoke_position=invoked, complete_position=completed if kind == "ok" else None))

    def _completed_value(self, invocation: dict, invoked: int, completed: int, key: Any, value: Any) -> Any:
        """The value an ok completion reports (a read's result), its key checked against the invocation's."""
        event = self.events[completed]
        if event.get("value") is None and invocation["f"] != "read":
            return value
        done_key, done_value = _key_and_value(event, completed, self.form)
        if _frozen(done_key) != _frozen(key):
            raise ChaosDBError(f"The ok at index {_index(event, completed)} is for key {done_key!r} but completes "
                               f"the {invocation['f']} of key {key!r} invoked at index {_index(invocation, invoked)}.")
        return done_value


def _parse(history: list[dict], model: str) -> _Parsed:
    events = _checked_events(history, model)
    return _Pairing(events, _form(events)).run()


# --- the search ----------------------------------------------------------------------------------------------


class _Search:
    """Wing & Gong's search over one key's operations, with Lowe's cache of configurations.

    Entries 1..n of the linked list are calls and returns in history order (0 and n+1 are the head and tail
    sentinels); an operation that may never have taken effect (info) has a call and no return."""

    def __init__(self, operations: list[_Operation], initial: Hashable, max_states: int, deadline: float) -> None:
        self.operations = operations
        self.initial = initial
        self.max_states = max_states
        self.deadline = deadline
        self.kinds = [_CODES[op.f] for op in operations]
        self.arguments = [self._argument(op) for op in operations]
        self.definite = [op.definite for op in operations]
        # each operation's bit: acknowledged and info operations apart, each numbered in the order they were invoked
        self.bits = [0] * len(operations)
        for acknowledged in (True, False):
            in_order = sorted((op.invoke_position, i) for i, op in enumerate(operations) if op.definite is acknowledged)
            for bit, (_, i) in enumerate(in_order):
                self.bits[i] = 1 << bit
        timeline = sorted([(op.invoke_position, 0, i) for i, op in enumerate(operations)]
                          + [(op.complete_position, 1, i) for i, op in enumerate(operations) if op.definite])
        size = len(timeline)
        self.tail = size + 1
        self.entry_operation = [-1] + [i for _, _, i in timeline] + [-1]
        self.entry_is_call = [False] + [kind == 0 for _, kind, _ in timeline] + [False]
        self.match = [0] * (size + 2)  # call entry -> its return entry (0: none)
        calls: dict[int, int] = {}
        for entry, (_, kind, i) in enumerate(timeline, start=1):
            if kind == 0:
                calls[i] = entry
            else:
                self.match[calls[i]] = entry
        self.next = list(range(1, size + 2)) + [size + 1]
        self.prev = [0] + list(range(0, size + 1))
        self.states_explored = 0
        self.backtracks = 0
        # the furthest point the search reached: the return no configuration could get past
        self.blocked_at = -1
        self.blocked_states: list[Hashable] = []
        self.blocked_prefix: list[int] = []
        self.blocked_prefix_length = 0
        self.blocked_pending: list[int] = []
        self.blocked_operation = -1
        self.blocked_state: Hashable = initial

    @staticmethod
    def _argument(op: _Operation) -> Any:
        if op.f == "cas":
            return (_frozen(op.value[0]), _frozen(op.value[1]))
        return _frozen(op.value)

    def _lift(self, entry: int) -> None:
        nxt, prv = self.next, self.prev
        nxt[prv[entry]], prv[nxt[entry]] = nxt[entry], prv[entry]
        done = self.match[entry]
        if done:
            nxt[prv[done]], prv[nxt[done]] = nxt[done], prv[done]

    def _unlift(self, entry: int) -> None:
        nxt, prv = self.next, self.prev
        done = self.match[entry]
        if done:
            nxt[prv[done]] = prv[nxt[done]] = done
        nxt[prv[entry]] = prv[nxt[entry]] = entry

    def _step(self, state: Hashable, operation: int) -> tuple[bool, Hashable]:
        kind, argument = self.kinds[operation], self.arguments[operation]
        if kind == _READ:
            return state == argument, state
        if kind == _WRITE:
            return True, argument
        return state == argument[0], argument[1]

    def _note_block(self, entry: int, state: Hashable, stack: list[tuple[int, Hashable]]) -> None:
        """Remember where the search got stuck when it is at least as far as ever."""
        operation = self.entry_operation[entry]
        position = self.operations[operation].complete_position or 0
        if position < self.blocked_at:
            return
        if position > self.blocked_at:
            self.blocked_at, self.blocked_states, self.blocked_prefix_length = position, [], -1
            self.blocked_operation = operation
        if state not in self.blocked_states:
            self.blocked_states.append(state)
        if len(stack) > self.blocked_prefix_length:
            self.blocked_prefix_length = len(stack)
            self.blocked_prefix = [self.entry_operation[e] for e, _ in stack[-_CONTEXT:]]
            self.blocked_state = state
            self.blocked_pending = self._pending_before(entry)

    def _pending_before(self, entry: int) -> list[int]:
        """The operations invoked and not linearized before ``entry`` (a return) in the current list."""
        found: list[int] = []
        at, blocker = self.next[0], self.entry_operation[entry]
        while at != entry and len(found) < _CONTEXT:
            if self.entry_operation[at] != blocker:
                found.append(self.entry_operation[at])
            at = self.next[at]
        return found

    def run(self) -> bool | str:
        """True when the operations linearize, False when they cannot, ``"unknown"`` when the budget ran out."""
        remaining = sum(op.definite for op in self.operations)
        state, entry = self.initial, self.next[0]
        done_bits, maybe_bits = 0, 0  # the linearized operations: acknowledged ones, and info ones
        stack: list[tuple[int, Hashable]] = []
        cache: set[tuple[int, int, int, Hashable]] = set()
        nxt, is_call, entry_operation = self.next, self.entry_is_call, self.entry_operation
        definite, bits = self.definite, self.bits
        while remaining:
            if is_call[entry]:
                operation = entry_operation[entry]
                legal, after = self._step(state, operation)
                if legal:
                    if definite[operation]:
                        done_after, maybe_after = done_bits | bits[operation], maybe_bits
                    else:
                        done_after, maybe_after = done_bits, maybe_bits | bits[operation]
                    configuration = _configuration(done_after, maybe_after, after)
                    if configuration not in cache:
                        cache.add(configuration)
                        self.states_explored += 1
                        if self._out_of_budget():
                            return "unknown"
                        stack.append((entry, state))
                        done_bits, maybe_bits, state = done_after, maybe_after, after
                        self._lift(entry)
                        remaining -= definite[operation]
                        entry = nxt[0]
                        continue
                entry = nxt[entry]
                continue
            self._note_block(entry, state, stack)
            if not stack:
                return False
            self.backtracks += 1
            if self.backtracks % _CLOCK_EVERY == 0 and time.monotonic() > self.deadline:
                return "unknown"
            entry, state = stack.pop()
            operation = entry_operation[entry]
            if definite[operation]:
                done_bits ^= bits[operation]
            else:
                maybe_bits ^= bits[operation]
            self._unlift(entry)
            remaining += definite[operation]
            entry = nxt[entry]
        return True

    def _out_of_budget(self) -> bool:
        if self.states_explored > self.max_states:
            return True
        return self.states_explored % _CLOCK_EVERY == 0 and time.monotonic() > self.deadline


def _configuration(done_bits: int, maybe_bits: int, state: Hashable) -> tuple[int, int, int, Hashable]:
    """A cache key for a configuration, small in memory: the acknowledged operations linearized are those below
    the first one that is not (a count) and a few bits above it; the info ones are few."""
    below = (~done_bits & (done_bits + 1)).bit_length() - 1
    return below, done_bits >> below, maybe_bits, state


def _check_key(operations: list[_Operation], initial: Hashable, max_states: int, deadline: float) -> _KeyVerdict:
    """Search one key's operations; explain the failure when there is one."""
    if time.monotonic() > deadline and any(op.definite for op in operations):
        return _KeyVerdict("unknown", 0)
    search = _Search(operations, initial, max_states, deadline)
    valid = search.run()
    if valid is False:
        return _KeyVerdict(False, search.states_explored, _example(search))
    return _KeyVerdict(valid, search.states_explored)


# --- explaining a failure ------------------------------------------------------------------------------------


def _shown(value: Any) -> str:
    """A value as the history's JSON spells it (``null``, ``"a"``, ``[1, 2]``)."""
    return json.dumps(_thawed(value), default=repr)


def _describe(op: _Operation) -> str:
    """An operation in plain words: ``read of key 3 by process 5 returned 2 (index 41)``."""
    of_key = "" if op.key is None else f" of key {_shown(op.key)}"
    if op.f == "read":
        what = f"read{of_key} by process {_shown(op.process)} returned {_shown(op.value)}"
    elif op.f == "write":
        to_key = "" if op.key is None else f" to key {_shown(op.key)}"
        what = f"write of {_shown(op.value)}{to_key} by process {_shown(op.process)}"
    else:
        what = f"cas{of_key} from {_shown(op.value[0])} to {_shown(op.value[1])} by process {_shown(op.process)}"
    if op.definite:
        return f"{what} (index {_shown(op.complete_index)})"
    return f"{what} (index {_shown(op.invoke_index)}, never acknowledged: it may or may not have taken effect)"


def _as_dict(op: _Operation) -> dict[str, Any]:
    return {"process": op.process, "f": op.f, "value": op.value, "type": "ok" if op.definite else "info",
            "invoke_index": op.invoke_index, "index": op.complete_index}


def _values(states: list[Hashable]) -> str:
    shown = [_shown(s) for s in states[:_CONTEXT]]
    more = f" (or {len(states) - _CONTEXT} other values)" if len(states) > _CONTEXT else ""
    return (", ".join(shown[:-1]) + " or " + shown[-1] if len(shown) > 1 else shown[0]) + more


def _example(search: _Search) -> dict[str, Any]:
    """The nonlinearizable example of a key, in Knossos's spirit: how far the search got, and what blocked it."""
    operations = search.operations
    blocker = operations[search.blocked_operation]
    prefix = [operations[i] for i in search.blocked_prefix]
    pending = [operations[i] for i in search.blocked_pending]
    explanation = (f"{_describe(blocker)}, but every order of the operations consistent with real time leaves the "
                   f"register at {_values(search.blocked_states)} where it must take effect")
    if prefix:
        length = search.blocked_prefix_length
        explanation += (f"; the longest linearization found has {length} operation{'' if length == 1 else 's'} "
                        f"and ends with {_describe(prefix[-1])}")
    else:
        explanation += f"; no operation could be linearized before it (the register starts at {_shown(search.initial)})"
    if pending:
        explanation += f"; also pending then: {'; '.join(_describe(op) for op in pending)}"
    return {
        "key": blocker.key,
        "explanation": explanation + ".",
        "ops": [_as_dict(blocker)] + [_as_dict(op) for op in pending],
        "last_linearizable_prefix": {"length": search.blocked_prefix_length,
                                     "ends_with": [_as_dict(op) for op in prefix]},
        "final_state": _thawed(search.blocked_state),
    }
