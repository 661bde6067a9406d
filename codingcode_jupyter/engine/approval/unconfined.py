"""No sandbox here: the person's once-per-session choice about commands that would run unconfined.

Where neither bubblewrap nor Landlock can confine a command (macOS, an old kernel), the
``sandbox`` layer would ask about every command the mode or a rule allowed. Instead, the first
time that happens in a session the front shows one card (:meth:`~..front.Front.ask_unconfined`)
with three answers:

- ``ask_each``: every such command is asked, as before;
- ``session``: for this session, what the judge resolves as harmless follows the mode and the
  rules, unconfined. Still asked: what it cannot resolve (by the ``rules`` layer), and what it
  sees would cross what the sandbox keeps (:func:`beyond_confinement`: a program that reaches the
  network by its nature, a write outside the project, the temp directory and ``allowWrite``, a
  credential store of the home);
- ``never``: ``sandbox.failIfUnavailable: true`` is saved in the person's own user settings,
  so on this machine no command runs unconfined (read-only ones still run).

The answer lives with the session (:mod:`.unconfined_choice`). Where nobody can
answer (no front attached: ``--approval-policy``, a script; or a front that could not show it)
``ask_each`` applies and one line says so; a saved ``failIfUnavailable`` is said the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..settings import SettingsError

if TYPE_CHECKING:
    from ..project_settings import EffectiveSettings
    from .subject import Subject

__all__ = ["fail_closed_by", "save_never", "beyond_confinement"]

def fail_closed_by(settings: "EffectiveSettings") -> str | None:
    """The settings file that says ``sandbox.failIfUnavailable: true``, or None.

    Any file saying it holds (a stricter sandbox always applies): a project's ``false`` does not
    undo the person's "Never on this machine"."""
    for layer in settings.layers:
        if layer.settings.sandbox.failIfUnavailable:
            return str(layer.path)
    return None


def beyond_confinement(subject: "Subject", writable: list[Path]) -> str | None:
    """What the judge sees a command do that the sandbox would have stopped (None: nothing): such a
    command is asked even after "Run ordinary commands unconfined for this session"."""
    import tempfile

    from ..secret_files import credential_store
    from .program_traits import named

    downloaders = named("downloader")
    roots = [*writable, Path(tempfile.gettempdir()).resolve()]
    for part in [subject, *subject.inner]:
        command = part.command
        if command is None:
            continue
        if command.network:
            return f"it opens a network connection itself ({command.network[0]})"
        for simple in command.commands:
            reaching = sorted(simple.names & downloaders)
            if reaching:
                return f"{reaching[0]} reaches the network, which the sandbox keeps to the allowed domains"
        for ref in part.paths:
            path = ref.resolved
            if path is None:
                continue
            store = credential_store(path)
            if store is not None:
                return f"{ref.via} `{ref.raw}` reaches {store}, a credential store the sandbox hides"
            if ref.access in ("write", "unknown") and not any(path == r or r in path.parents for r in roots):
                return f"{ref.via} `{ref.raw}` writes outside the project ({path}), which the sandbox would refuse"
    return None


def save_never() -> Path:
    """Write ``sandbox.failIfUnavailable: true`` into the person's user settings (locked, atomic)."""
    from ..user_dir import user_dir
    from .amend import amend_settings

    def change(data: dict[str, object]) -> None:
        sandbox = data.setdefault("sandbox", {})
        if not isinstance(sandbox, dict):
            raise SettingsError("entry 'sandbox' must be an object, not overwriting it")
        sandbox["failIfUnavailable"] = True

    return amend_settings(user_dir() / "settings.json", change)


