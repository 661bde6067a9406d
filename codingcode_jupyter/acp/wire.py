"""What the ACP process and the kernel say to each other over their comm.

The ACP process opens a comm on :data:`TARGET` (after :data:`SETUP_CODE` registered it) and
sends requests ``{"op", "id", ...}``; the kernel answers each with ``{"type": "reply", "id",
"ok", "result" | "error"}``. A turn is a cell: the process stages the prompt (op ``stage``)
and executes :func:`turn_code`, so the turn runs as ``%%agent`` cells do (the kernel busy, the
person's own cells queued behind it, Stop and the interrupt ending it). While it runs the
kernel sends ``{"type": "event"}`` (an engine event as JSON, with what the ACP side needs to
show it) and ``{"type": "question"}`` (an approval, trust or no-sandbox question), which the
process answers with op ``answer``; op ``cancel`` is Stop. Both halves import only this
module of each other, so the messages are named once.
"""

from __future__ import annotations

__all__ = ["TARGET", "PROTOCOL", "SETUP_CODE", "turn_code", "OPS", "ANSWERS", "PREVIEW", "TRUST_ANSWERS",
           "UNCONFINED_ANSWERS"]

TARGET = "codingcode.acp"
PROTOCOL = 1

# Run once per kernel (awaited, so the bridge knows the kernel's event loop): loads the extension
# (magics, recorders, the engine in the background) and registers the comm target.
SETUP_CODE = (
    "from codingcode_jupyter.acp.kernel_side import install as __codingcode_acp_install__\n"
    "await __codingcode_acp_install__(get_ipython())\n"
    "del __codingcode_acp_install__\n"
)

OPS = ("open", "stage", "mode", "cancel", "answer", "close", "auth")
ANSWERS = ("allow", "deny", "always", "never")
# Not an answer: the command's card asks for its preview, then the same question comes again with it.
PREVIEW = "preview"
TRUST_ANSWERS = ("trust", "not_now")
UNCONFINED_ANSWERS = ("ask_each", "session", "never")


def turn_code(token: str) -> str:
    """The cell that runs the staged turn ``token``: it names nothing in the person's namespace, so a
    ``%reset`` there does not break it, and leaves nothing in it."""
    return f"await __import__('codingcode_jupyter.acp.kernel_side', fromlist=['turn']).turn({token!r})\n"
