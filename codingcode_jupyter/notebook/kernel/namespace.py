"""The user's namespace, and the IPython shell behind it when there is one."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, MutableMapping

if TYPE_CHECKING:
    from ...engine.tools.access import LiveName


class KernelAccess:
    """The user's namespace, and the IPython shell behind it when there is one."""

    def __init__(self, shell: Any = None, namespace: MutableMapping[str, Any] | None = None) -> None:
        if shell is None and namespace is None:
            raise ValueError("KernelAccess needs an IPython shell or a namespace dict")
        self.shell = shell
        self._namespace = namespace

    @property
    def user_ns(self) -> MutableMapping[str, Any]:
        return self._namespace if self._namespace is not None else self.shell.user_ns

    def hidden(self) -> set[str]:
        """Names the shell put there itself (In, Out, get_ipython...), not the user's."""
        names = {"__builtins__", "__builtin__", "__name__", "__doc__", "__spec__", "__loader__", "__package__"}
        if self.shell is not None:
            names |= set(getattr(self.shell, "user_ns_hidden", {}) or {})
        return names

    def live_name(self, name: str) -> LiveName | None:
        """What ``name`` is bound to in the namespace, as the Python judge understands it."""
        try:
            value = self.user_ns[name]
        except KeyError:
            return None
        try:
            return describe(value)
        except Exception:  # an object whose attributes raise: not understood, so asked
            from ...engine.tools.access import LiveName

            return LiveName("object", "unknown")


# The C modules behind standard modules, by the name code imports them as.
_PUBLIC = {"posix": "os", "nt": "os", "_io": "io", "_socket": "socket", "_thread": "threading", "_signal": "signal"}


def _data_module(module: str) -> bool:
    """Objects of types from ``module`` are data the judge understands: builtin types, the
    person's own classes, the data libraries (their methods compute, plot, and read or write
    paths the judge collects from the code)."""
    from ...engine.approval.python_proof import PURE_MODULES

    module = _PUBLIC.get(module, module)
    return module in ("builtins", "__main__") or any(
        module == pure or module.startswith(pure + ".") for pure in PURE_MODULES)


def describe(value: Any) -> "LiveName":
    """A live value as the judge sees it: a module or function by its importable name, plain data,
    or an object of a type the judge does not understand (its methods may reach anything)."""
    from ...engine.tools.access import LiveName

    if isinstance(value, types.ModuleType):
        return LiveName("module", value.__name__)
    owner = getattr(value, "__self__", None)
    if isinstance(value, (types.MethodType, types.BuiltinFunctionType)) and owner is not None \
            and not isinstance(owner, types.ModuleType):
        # A bound method: as its object (a class's: the class's name and the method's).
        described = describe(owner)
        if described.kind in ("callable", "module"):
            return LiveName("callable", f"{described.qualified}.{value.__name__}")
        return described
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)):
        module = getattr(value, "__module__", None) or ""
        if module == "__main__":
            return LiveName("data")  # the person's own function or class: its code was judged when written
        qualname = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
        return LiveName("callable", f"{_PUBLIC.get(module, module)}.{qualname}")
    module = getattr(type(value), "__module__", "") or ""
    if _data_module(module):
        return LiveName("data")
    return LiveName("object", f"{module}.{type(value).__qualname__}")
