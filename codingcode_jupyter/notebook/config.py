"""The notebook front's settings: ``%config CodingCode.model = "..."`` or ipython_config.py."""

from __future__ import annotations

from typing import Any

from traitlets import Float, Unicode, validate
from traitlets.config import Configurable

__all__ = ["CodingCode"]


class CodingCode(Configurable):
    """Settings of the notebook front (``%config CodingCode.model = "..."`` or ipython_config.py)."""

    model = Unicode("", help="Model for new turns ('' = the settings' model, CODINGCODE_MODEL, Claude if a key is set, else the demo).").tag(config=True)
    mode = Unicode("", help="Permission mode of new sessions: default, acceptEdits, plan, bypass or auto ('' = settings.json).").tag(config=True)
    approval_timeout = Float(
        None, allow_none=True,
        help="Seconds to wait for an approval before denying it (None: as long as a frontend can answer).",
    ).tag(config=True)
    project = Unicode("", help="Project directory ('' = the kernel's working directory).").tag(config=True)
    max_updates_per_second = Float(20.0, help="At most this many display updates a second for streamed text.").tag(config=True)
    frontend_wait = Float(3.0, help="Seconds to wait for a widget view to render before asking on stdin instead.").tag(config=True)
    headless_timeout = Float(
        10.0, help="With no widget frontend and no stdin (nbconvert, papermill): deny an approval after this many seconds.",
    ).tag(config=True)

    @validate("mode")
    def _valid_mode(self, proposal: Any) -> str:
        from ..engine.settings import MODES  # the engine's list; loaded when a mode is set, not at %load_ext

        if proposal["value"] not in ("", *MODES):
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        return str(proposal["value"])
