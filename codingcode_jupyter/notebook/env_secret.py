"""``%env NAME=value`` of a key or a token: set, never echoed.

IPython's ``%env NAME=value`` prints ``env: NAME=value``, which puts an API key into the cell's
output (and so into the saved notebook and every export). This wraps the ``env`` line magic
(chosen over an input transformer: the magic is where the echo happens, and ``%env`` with no
``=`` or with an ordinary name keeps IPython's own behaviour): when the name looks like a
secret, the value is set without being shown and the person is told what happened, including
that the value is still in the cell's own source.
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["install_env_guard", "looks_secret"]

# Names that hold credentials by convention: ANTHROPIC_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD...
_SECRET_NAME = re.compile(r"(^|_)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|APIKEY|PAT)(_|$)", re.I)
_ASSIGN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=|\s)\s*(.*)$", re.S)


def looks_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def install_env_guard(ip: Any) -> None:
    """Replace ``%env`` with a wrapper that sets secret-looking variables without echoing them."""
    # find_line_magic resolves a lazily loaded magic to IPython's own method (the table may hold a
    # lazy entry that would look the name up again, and so find this wrapper).
    original = ip.find_line_magic("env")
    if original is None or getattr(original, "_codingcode_guard", False):
        return

    def env(line: str = "") -> Any:
        alone = (line or "").strip()
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", alone) and looks_secret(alone):
            # Reading a key back would print it into the output just the same.
            return print(f"env: {alone} is {'set (value hidden)' if os.environ.get(alone) else 'not set'}.")
        found = _ASSIGN.match(line or "")
        if found is None or not looks_secret(found.group(1)) or (found.group(2) != "=" and not found.group(3)):
            return original(line)
        name, value = found.group(1), found.group(3).strip()
        if not value:
            return original(line)
        os.environ[name] = value
        print(f"env: {name} set for this kernel (value hidden). It is still in this cell's source: delete the "
              "cell or the value from it before saving or sharing the notebook"
              + ("; `%agent login` asks for the API key without it reaching the notebook." if "ANTHROPIC" in name.upper()
                 else "."))
        return None

    env._codingcode_guard = True  # type: ignore[attr-defined]
    env.__doc__ = original.__doc__
    ip.register_magic_function(env, "line", "env")
    # A lazily registered %env keeps its table entry through register_magic_function: set it directly.
    ip.magics_manager.magics["line"]["env"] = env
