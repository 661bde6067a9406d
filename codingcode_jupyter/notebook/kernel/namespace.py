"""The user's namespace, and the IPython shell behind it when there is one."""

from __future__ import annotations

from typing import Any, MutableMapping


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
