"""A command's preview as data: whether a card may offer one, and what the throwaway run changed.

The run itself is :mod:`.sandbox.preview`; the offer (is a preview faithful for this command?)
is :mod:`.approval.dry_run`; a front shows :class:`CommandPreview` under the card's command.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["PreviewOffer", "PreviewedFile", "CommandPreview"]


class PreviewOffer(BaseModel):
    """Whether the card's Preview button works, and in words why not (or how it runs)."""

    available: bool
    reason: str = ""


class PreviewedFile(BaseModel):
    """One file the command would change."""

    path: str
    change: Literal["created", "modified", "deleted"]
    # A unified diff for text; a line of sizes for binary or large content; "" for a deletion's body.
    diff: str = ""


class CommandPreview(BaseModel):
    """What the command did in a throwaway copy of the project (nothing of it reached the project)."""

    # Why it could not run at all (the copy failed, the sandbox refused): then nothing else is set.
    error: str | None = None
    exit_code: int | None = None
    timed_out: bool = False
    files: list[PreviewedFile] = Field(default_factory=list)
    # More changed files than are listed (the list is bounded).
    more_files: int = 0
    output_tail: str = ""
    # "overlay" (bubblewrap over the project itself) or "copy" (a copy of the project; reflinked where
    # the filesystem can).
    method: str = ""
    seconds: float = 0.0

    def summary(self) -> str:
        """One line: the exit and the counts of files created, modified and deleted."""
        if self.error is not None:
            return f"preview failed: {self.error}"
        counts = {kind: sum(1 for f in self.files if f.change == kind) for kind in ("created", "modified", "deleted")}
        exit_text = "timed out" if self.timed_out else f"exit code {self.exit_code}"
        changed = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "no file changed"
        more = f" (+{self.more_files} more)" if self.more_files else ""
        return f"{exit_text}; {changed}{more}"

    def render(self) -> str:
        """The preview as text (a terminal): the summary, each file and its diff, the output's tail."""
        lines = [
            f"Preview ({self.method or 'copy'} of the project, no network; the project is untouched): {self.summary()}"
        ]
        lines += [f"  {f.change:<8} {f.path}" for f in self.files]
        if self.more_files:
            lines.append(f"  ... and {self.more_files} more")
        text = "\n".join(lines)
        diffs = "".join(f.diff for f in self.files if f.diff)
        if diffs:
            text += "\n\n" + diffs.rstrip("\n")
        if self.output_tail:
            text += "\n\nOutput (its end):\n" + self.output_tail
        return text
