"""``%agent login``: the API key goes into the kernel's memory, never into the notebook.

In a notebook a password field asks for it (the typed text never appears in any output,
and the field is emptied and closed once the key is taken); in a terminal ``getpass``
does. The key is kept in the kernel's ``os.environ`` — gone when the kernel stops — and,
with ``--keyring`` and the ``keyring`` package installed, in the person's keyring, from
where :func:`key_from_keyring` brings it back in a later kernel.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from . import async_cell, theme

__all__ = ["login", "LoginForm", "key_from_keyring", "KEY_NAME", "KEYRING_SERVICE"]

KEY_NAME = "ANTHROPIC_API_KEY"
KEYRING_SERVICE = "codingcode-jupyter"


def _keyring() -> Any | None:
    try:
        import keyring
    except ImportError:
        return None
    return keyring


def key_from_keyring() -> bool:
    """Put the key saved in the keyring into the environment, unless one is set; True if it did."""
    if os.environ.get(KEY_NAME):
        return False
    keyring = _keyring()
    if keyring is None:
        return False
    try:
        key = keyring.get_password(KEYRING_SERVICE, KEY_NAME)
    except Exception:  # a keyring backend that cannot be reached: as if nothing were saved
        return False
    if key:
        os.environ[KEY_NAME] = key
        return True
    return False


def _store(key: str, keyring: bool) -> str:
    """Keep ``key``; returns where, in words (never the key itself)."""
    os.environ[KEY_NAME] = key
    where = "in this kernel's memory (until it stops)"
    if keyring:
        module = _keyring()
        if module is None:
            return where + "; the keyring package is not installed, so it is not saved for later kernels"
        try:
            module.set_password(KEYRING_SERVICE, KEY_NAME, key)
        except Exception as error:
            return where + f"; the keyring refused it ({type(error).__name__})"
        where += " and in your keyring (later kernels read it from there)"
    return where


class LoginForm:
    """A password field and a button; the typed key reaches only the kernel's memory."""

    def __init__(self, *, keyring: bool = False, on_done: Callable[[str], None] | None = None) -> None:
        import ipywidgets as widgets

        self.keyring = keyring
        self.on_done = on_done
        self.field = widgets.Password(placeholder="sk-ant-…", description="API key", layout=widgets.Layout(width="32em"))
        self.button = widgets.Button(description="Use this key", button_style="primary")
        self.message = widgets.HTML(
            f'<span style="color:{theme.MUTED}">The key is kept in this kernel\'s memory'
            + (" and your keyring" if keyring else "") + "; it is never written into the notebook.</span>")
        self.button.on_click(lambda _b: self.submit())
        self.box = widgets.VBox([widgets.HBox([self.field, self.button]), self.message])
        self.box.add_class("codingcode-login")

    def submit(self) -> None:
        key = (self.field.value or "").strip()
        # The field is emptied at once so no widget state (saved with the notebook) holds the key.
        self.field.value = ""
        if not key:
            self.message.value = f'<span style="color:{theme.ROLE["warn"]}">Type or paste the key first.</span>'
            return
        where = _store(key, self.keyring)
        self.field.disabled = self.button.disabled = True
        self.message.value = f'<span style="color:{theme.ROLE["ok"]}">{theme.icon("check")} Key set, {where}.</span>'
        if self.on_done is not None:
            self.on_done(where)


def login(shell: Any, *, keyring: bool = False) -> Any:
    """Show the form (a notebook) or ask with getpass (a terminal); returns what to display."""
    if async_cell.kernel_of(shell) is None:
        import getpass

        key = getpass.getpass("API key (not shown): ").strip()
        if not key:
            return "no key given; nothing changed"
        return f"Key set, {_store(key, keyring)}."
    from IPython.display import display

    handle: list[Any] = []

    def done(where: str) -> None:
        # The form gives way to one line of text: the saved notebook says a key was set, not which.
        if handle:
            handle[0].update({"text/plain": f"API key set, {where}."}, raw=True)
        for widget in (form.field, form.button, form.message, *form.box.children, form.box):
            widget.close()

    form = LoginForm(keyring=keyring, on_done=done)
    handle.append(display(form.box, display_id=True))
    return None
