"""How long a turn's request waits for MCP servers that are still starting.

Servers start with the session's loading, so by the first cell they are usually ready; one
that is not yet is waited for, up to a bound, so that the tools the person configured are in
the model's request. The bound comes from, most specific first:

* ``mcpStartupWaitSeconds`` in the settings (ours: seconds, 0 does not wait);
* Claude Code's ``MCP_TIMEOUT`` (milliseconds, its server start-up timeout), from the
  settings' ``env`` (as Claude Code applies its settings' ``env`` to itself) or the kernel's
  environment;
* :data:`DEFAULT_WAIT_S`.

A value that cannot be read is said once (``problem``) and the default applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

__all__ = ["DEFAULT_WAIT_S", "ENV_VAR", "StartupWait", "startup_wait"]

DEFAULT_WAIT_S = 5.0
# Claude Code's variable: the MCP server start-up timeout, in milliseconds.
ENV_VAR = "MCP_TIMEOUT"


@dataclass(frozen=True)
class StartupWait:
    """The bound, in seconds, where it comes from (for the cell's line), and what was wrong with a value."""

    seconds: float
    source: str
    problem: str | None = None


def startup_wait(setting: float | None, settings_env: Mapping[str, str], environ: Mapping[str, str]) -> StartupWait:
    """The bound for these settings and this environment (see the module docstring)."""
    if setting is not None:
        return StartupWait(float(setting), "mcpStartupWaitSeconds")
    for where, env in (("the settings' env", settings_env), ("the environment", environ)):
        raw = env.get(ENV_VAR)
        if raw is None or not raw.strip():
            continue
        try:
            millis = float(raw)
        except ValueError:
            millis = math.nan
        if not math.isfinite(millis) or millis < 0:
            return StartupWait(DEFAULT_WAIT_S, "default", f"{ENV_VAR}={raw!r} in {where} is not a number of "
                                                          f"milliseconds; MCP servers are waited for {DEFAULT_WAIT_S:g} s")
        return StartupWait(millis / 1000, ENV_VAR)
    return StartupWait(DEFAULT_WAIT_S, "default")
