"""What a turn's code did to the person's variables, so ``%agent undo`` can put them back.

Before each tool that runs code in the kernel (run_python in the kernel or in its confined fork,
run_cells), the turn's record takes what it does not have yet of the namespace as it was before
the turn: every user name's identity (a name→id map, cheap), and for each name the code could
reach a deep copy of its value and a digest of its pickled bytes. The copies are taken *before*
the code runs because an in-place change (``d['k'] = 1``, ``df['y'] = ...``) leaves nothing to
compare with afterwards. The confined fork changes the kernel only through the names it keeps,
so for it only those are copied.

When the turn ends (:func:`finish_turns`, called by the agent cell; lazily otherwise) each name is
classified: new (bound by the turn), rebound, deleted, changed in place (same object, other
digest), or untouched; copies of untouched names are dropped there, so what a record keeps
after its turn is only what undo needs. Undo then removes new names and puts back the others:
a rebound or deleted name gets its old object back (kept by reference) when that object is
unchanged, else the copy; a dict, list or set changed in place is restored in place (other
references to it see the old contents again), anything else is rebound to the copy.

What cannot be restored is said before the person confirms: a value that cannot be deep-copied
(a lock, a generator, a connection) or is larger than the budget, when the code named it (it may
have been changed in place). The budget is ``undo.namespaceMemoryMB`` (default 256 MB) of copies
per turn, estimated before copying (arrays and frames by their buffers, containers by a bounded
walk); values beyond it are not copied. A name changed again after the turn (rebound, or an
in-place change its digest shows) is a conflict, as a file is: undo stops unless forced.
Records live in the kernel's memory (a restart loses the variables anyway), the last
:data:`MAX_TURNS` turns.
"""

from __future__ import annotations

import copy
import hashlib
import io
import pickle
import re
import sys
import threading
import types
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, MutableMapping, Sequence

from pydantic import BaseModel, Field

__all__ = [
    "DEFAULT_BUDGET_MB",
    "MAX_TURNS",
    "NameRestore",
    "NamesPlan",
    "NamespaceJournal",
    "estimate_size",
    "finish_turns",
    "journal_for",
]

DEFAULT_BUDGET_MB = 256
MAX_TURNS = 10
# Sizes of large containers are estimated from a sample of their items; nesting deeper than this counts as flat.
_SAMPLE = 100
_SAMPLE_OVER = 1_000
_MAX_DEPTH = 30
_CODE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)

Kind = Literal["new", "rebound", "deleted", "mutated"]


class NameRestore(BaseModel):
    """What undo will do to one name, said before it happens."""

    name: str
    kind: Kind | Literal["uncertain"]
    action: Literal["remove", "restore", "not_restorable"]
    note: str = ""
    conflict: str | None = None


class NamesPlan(BaseModel):
    """The variables one turn changed and what undo does with each."""

    session_id: str
    turn_id: int
    names: list[NameRestore] = Field(default_factory=list)
    budget_mb: int = DEFAULT_BUDGET_MB

    @property
    def conflicts(self) -> list[NameRestore]:
        return [item for item in self.names if item.conflict]

    @property
    def not_restorable(self) -> list[NameRestore]:
        return [item for item in self.names if item.action == "not_restorable"]

    def render(self) -> str:
        if not self.names:
            return ""
        lines = [f"Variables ({len(self.names)}):"]
        for item in self.names:
            note = f" — {item.note}" if item.note else ""
            note += f" — CONFLICT: {item.conflict}" if item.conflict else ""
            lines.append(f"  {item.action.replace('_', ' '):<15} {item.name} ({item.kind}){note}")
        return "\n".join(lines)


class _HashWriter(io.RawIOBase):
    """A file that hashes what is written to it: a value's pickle digested without holding its bytes."""

    def __init__(self) -> None:
        self.digest = hashlib.blake2b(digest_size=20)

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.digest.update(view)
        return view.nbytes


def digest(value: Any) -> str | None:
    """A digest of ``value``'s pickled bytes (None: it does not pickle). The same object pickles to the
    same bytes while its state is the same, which is all this is used for."""
    writer = _HashWriter()
    try:
        pickle.Pickler(writer, protocol=5).dump(value)
    except Exception:  # noqa: BLE001 -- any object's __reduce__ may raise anything
        return None
    return writer.digest.hexdigest()


def estimate_size(value: Any, limit: int, _depth: int = 0, _seen: set[int] | None = None) -> int:
    """Bytes a deep copy of ``value`` will take, roughly; past ``limit`` it stops counting.

    Arrays and frames count their buffers; containers their items, all of them up to
    :data:`_SAMPLE_OVER` items, else a sample of :data:`_SAMPLE` spread over them, scaled up (a
    list of a million records is measured in microseconds, not by visiting each)."""
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    buffer = _buffer_size(value, limit)
    if buffer is not None:
        return buffer
    try:
        size = sys.getsizeof(value)
    except Exception:  # noqa: BLE001
        size = 64
    if _depth >= _MAX_DEPTH:
        return size
    items = _items(value)
    if not items:
        return size
    if len(items) > _SAMPLE_OVER:
        step = len(items) / _SAMPLE
        sampled = sum(estimate_size(items[int(i * step)], limit, _depth + 1, seen) for i in range(_SAMPLE))
        return size + int(sampled * len(items) / _SAMPLE)
    for item in items:
        size += estimate_size(item, limit - size, _depth + 1, seen)
        if size > limit:
            break
    return size


def _items(value: Any) -> Sequence[Any]:
    """What a value holds, for its size: a container's items (a dict's keys and values), an object's attributes."""
    if isinstance(value, (str, bytes, bytearray, int, float, complex, bool)) or value is None:
        return ()
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple)):
        return value
    if isinstance(value, (set, frozenset)):
        return list(value)
    state = getattr(value, "__dict__", None)
    return list(state.values()) if isinstance(state, dict) else ()


def _buffer_size(value: Any, limit: int) -> int | None:
    """A frame's or an array's own memory (their copies take as much), None for anything else."""
    module = type(value).__module__ or ""
    try:
        if module.startswith("pandas") and hasattr(value, "memory_usage"):
            # The shallow size first: the deep one reads every string of an object column.
            shallow = _total(value.memory_usage(index=True, deep=False))
            return shallow if shallow > limit else _total(value.memory_usage(index=True, deep=True))
        nbytes = getattr(type(value), "nbytes", None)
        if nbytes is not None and module.startswith(("numpy", "torch", "xarray")):
            return int(value.nbytes)
    except Exception:  # noqa: BLE001
        return None
    return None


def _total(usage: Any) -> int:
    return int(usage.sum()) if hasattr(usage, "sum") else int(usage)


@dataclass
class _Before:
    """One name as it was before the turn."""

    ref: Any
    copied: bool = False
    value: Any = None
    digest: str | None = None
    size: int = 0
    # Why there is no copy ("code": modules, functions and classes are kept by reference only).
    why_not: str | None = None


@dataclass
class _Change:
    kind: Kind
    after_id: int | None
    after_digest: str | None


@dataclass
class TurnNames:
    """One turn's record (see the module docstring)."""

    session_id: str
    turn_id: int
    budget: int
    ids: dict[str, int]
    before: dict[str, _Before] = field(default_factory=dict)
    # Names the code mentions: an uncopyable one may have been changed in place.
    reached: set[str] = field(default_factory=set)
    copied_bytes: int = 0
    # The shell's own names, as they were when the record was made.
    hidden: frozenset[str] = frozenset()
    finished: bool = False
    changes: dict[str, _Change] = field(default_factory=dict)
    undone: bool = False


def _user_names(namespace: MutableMapping[str, Any], hidden: Iterable[str]) -> dict[str, int]:
    skip = set(hidden)
    return {name: id(value) for name, value in list(namespace.items()) if not name.startswith("_") and name not in skip}


def _mentioned(code: str, names: Iterable[str]) -> set[str]:
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code))
    return {name for name in names if name in words}


class NamespaceJournal:
    """The records of one namespace (one kernel), newest last."""

    def __init__(self) -> None:
        self.turns: dict[tuple[str, int], TurnNames] = {}
        self._lock = threading.Lock()

    # -- before code runs ------------------------------------------------------------------------

    def before_code(
        self,
        namespace: MutableMapping[str, Any],
        session_id: str,
        turn_id: int,
        *,
        hidden: Iterable[str] = (),
        code: str = "",
        only: Iterable[str] | None = None,
        budget_mb: int = DEFAULT_BUDGET_MB,
    ) -> TurnNames:
        """Take what the turn's record lacks before code runs: ``only`` the names it may change (the
        fork's kept names), else every user name the turn has not changed yet."""
        with self._lock:
            key = (session_id, turn_id)
            for other_key, other in list(self.turns.items()):
                if other_key != key and not other.finished:
                    self._finish(namespace, other)
            record = self.turns.get(key)
            if record is None:
                record = TurnNames(
                    session_id,
                    turn_id,
                    max(0, budget_mb) * 1024 * 1024,
                    _user_names(namespace, hidden),
                    hidden=frozenset(hidden),
                )
                self.turns[key] = record
                while len(self.turns) > MAX_TURNS:
                    self.turns.pop(next(iter(self.turns)))
            wanted = set(record.ids) if only is None else set(only) & set(record.ids)
            record.reached |= _mentioned(code, record.ids)
            # One memo for the call's copies: two names bound to one object get one copy, as they had one object.
            memo: dict[int, Any] = {}
            for name in sorted(wanted - set(record.before)):
                value = namespace.get(name, _MISSING)
                if value is _MISSING or id(value) != record.ids[name]:
                    continue  # already changed by this turn (a kept name bound back): its before is gone
                record.before[name] = self._take(record, value, memo)
            return record

    def _take(self, record: TurnNames, value: Any, memo: dict[int, Any]) -> _Before:
        if isinstance(value, _CODE):
            return _Before(ref=value, why_not="code")
        remaining = record.budget - record.copied_bytes
        size = estimate_size(value, remaining)
        if size > remaining:
            return _Before(
                ref=value,
                size=size,
                why_not=f"larger than what is left of the undo budget "
                f"({_mb(size)} of {_mb(record.budget)}; undo.namespaceMemoryMB)",
            )
        try:
            kept = copy.deepcopy(value, memo)
        except Exception as error:  # noqa: BLE001 -- locks, generators, sockets... say why
            return _Before(ref=value, why_not=f"it cannot be copied ({type(error).__name__}: {error})"[:200])
        record.copied_bytes += size
        return _Before(ref=value, copied=True, value=kept, digest=digest(value), size=size)

    # -- when the turn ends ----------------------------------------------------------------------

    def finish(self, namespace: MutableMapping[str, Any], *, hidden: Iterable[str] = ()) -> None:
        """Classify what every open record's turn changed, dropping the copies of what it left alone."""
        with self._lock:
            for record in self.turns.values():
                if not record.finished:
                    self._finish(namespace, record, hidden)

    def _finish(self, namespace: MutableMapping[str, Any], record: TurnNames, hidden: Iterable[str] = ()) -> None:
        # The shell's own names (In, Out, get_ipython...) are never the turn's, whoever asks.
        now = _user_names(namespace, record.hidden | set(hidden))
        changes: dict[str, _Change] = {}
        for name in set(now) - set(record.ids):
            # Its digest too: a name the turn made and the person then changed is theirs, not undone silently.
            changes[name] = _Change("new", now[name], digest(namespace[name]))
        for name, before_id in record.ids.items():
            if name not in now:
                changes[name] = _Change("deleted", None, None)
            elif now[name] != before_id:
                changes[name] = _Change("rebound", now[name], digest(namespace[name]))
            else:
                before = record.before.get(name)
                if before is not None and before.copied and _changed_in_place(before, namespace[name]):
                    changes[name] = _Change("mutated", now[name], digest(namespace[name]))
        for name, before in list(record.before.items()):
            if name not in changes and (before.copied or name not in record.reached or before.why_not == "code"):
                del record.before[name]  # untouched: nothing to restore, the copy's memory is given back
        record.copied_bytes = sum(item.size for item in record.before.values() if item.copied)
        record.changes = changes
        record.finished = True

    # -- undo --------------------------------------------------------------------------------------

    def latest(self, session_id: str) -> TurnNames | None:
        """The newest record of the session with something to undo."""
        pending = [r for r in self.turns.values() if r.session_id == session_id and not r.undone]
        return pending[-1] if pending else None

    def plan(
        self, namespace: MutableMapping[str, Any], session_id: str, turn_id: int, *, hidden: Iterable[str] = ()
    ) -> NamesPlan | None:
        """What undoing the turn's variables will do; None when its code changed none (or there is no record)."""
        with self._lock:
            record = self.turns.get((session_id, turn_id))
            if record is None or record.undone:
                return None
            if not record.finished:
                self._finish(namespace, record, hidden)
            items = [self._planned(namespace, record, name, change) for name, change in sorted(record.changes.items())]
            for name, before in sorted(record.before.items()):
                if name not in record.changes and not before.copied and before.why_not != "code":
                    items.append(
                        NameRestore(
                            name=name,
                            kind="uncertain",
                            action="not_restorable",
                            note=f"the code used it and may have changed it in place; {before.why_not}",
                        )
                    )
            if not items:
                return None
            return NamesPlan(
                session_id=session_id, turn_id=turn_id, names=items, budget_mb=record.budget // (1024 * 1024)
            )

    def _planned(
        self, namespace: MutableMapping[str, Any], record: TurnNames, name: str, change: _Change
    ) -> NameRestore:
        current = namespace.get(name, _MISSING)
        conflict = None
        if (id(current) if current is not _MISSING else None) != change.after_id:
            conflict = "changed since the turn (rebound or deleted after it)"
        elif change.after_digest is not None and digest(current) != change.after_digest:
            conflict = "changed in place since the turn"
        if change.kind == "new":
            return NameRestore(name=name, kind="new", action="remove", note="the turn made it", conflict=conflict)
        before = record.before.get(name)
        if before is None:
            return NameRestore(
                name=name,
                kind=change.kind,
                action="not_restorable",
                conflict=conflict,
                note="its value before the turn was not recorded",
            )
        if change.kind == "mutated" or (
            before.ref is not None and before.copied and digest(before.ref) != before.digest
        ):
            # The old object itself was changed: only a copy can bring its contents back.
            if before.copied:
                return NameRestore(
                    name=name,
                    kind=change.kind,
                    action="restore",
                    conflict=conflict,
                    note=f"from a copy taken before the turn ({_mb(before.size)})",
                )
            return NameRestore(
                name=name, kind=change.kind, action="not_restorable", conflict=conflict, note=before.why_not or ""
            )
        note = (
            "its old value is back"
            if before.why_not in (None, "code")
            else (f"its old object is back, as it is now ({before.why_not})")
        )
        return NameRestore(name=name, kind=change.kind, action="restore", note=note, conflict=conflict)

    def restore(self, namespace: MutableMapping[str, Any], plan: NamesPlan) -> list[dict[str, Any]]:
        """Carry out ``plan``; what was done to each name (for the audit)."""
        with self._lock:
            record = self.turns.get((plan.session_id, plan.turn_id))
            if record is None or record.undone:
                return []
            done = []
            for item in plan.names:
                if item.action == "remove":
                    namespace.pop(item.name, None)
                elif item.action == "restore":
                    _put_back(namespace, item.name, record.before[item.name], item.kind)
                done.append(
                    {
                        "name": item.name,
                        "kind": item.kind,
                        "action": item.action,
                        **({"conflict": item.conflict} if item.conflict else {}),
                    }
                )
            record.undone = True
            record.before.clear()  # the copies are spent
            return done


_MISSING = object()


def _changed_in_place(before: _Before, current: Any) -> bool:
    if before.digest is not None:
        return digest(current) != before.digest
    # It copies but does not pickle: its own equality is the only test (an object without one
    # compares by identity, so counts as changed; restoring it from the copy is then harmless).
    try:
        return not bool(before.value == current)
    except Exception:  # noqa: BLE001
        return True


def _put_back(namespace: MutableMapping[str, Any], name: str, before: _Before, kind: str) -> None:
    ref_intact = before.copied and digest(before.ref) == before.digest and before.digest is not None
    if kind in ("rebound", "deleted") and (ref_intact or not before.copied):
        namespace[name] = before.ref
        return
    saved = before.value
    current = namespace.get(name, _MISSING)
    target = current if current is before.ref else before.ref
    # In place, so every other reference to the object sees its old contents again.
    if type(target) is dict and type(saved) is dict:
        target.clear()
        target.update(saved)
        namespace[name] = target
    elif type(target) is list and type(saved) is list:
        target[:] = saved
        namespace[name] = target
    elif type(target) is set and type(saved) is set:
        target.clear()
        target.update(saved)
        namespace[name] = target
    else:
        namespace[name] = saved


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


# One journal per namespace: a kernel has one, for its whole life (a dict cannot be weakly referenced).
_JOURNALS: dict[int, NamespaceJournal] = {}


def journal_for(namespace: MutableMapping[str, Any]) -> NamespaceJournal:
    """The journal of ``namespace`` (made on first use)."""
    return _JOURNALS.setdefault(id(namespace), NamespaceJournal())


def finish_turns(namespace: MutableMapping[str, Any], *, hidden: Iterable[str] = ()) -> None:
    """The turn ended: classify its records (see :meth:`NamespaceJournal.finish`)."""
    found = _JOURNALS.get(id(namespace))
    if found is not None:
        found.finish(namespace, hidden=hidden)
