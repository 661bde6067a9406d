"""Terminal IPython, as a person runs it: ``ipython`` with its stdin, the offline demo through the
real tools, the questions answered by typing. There is no kernel and no widget here, so nothing
it prints may speak of a "card" or show a rule's syntax before its words (issue 36, items 12 and 16).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


def _ipython(project: Path, typed: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "CODINGCODE_MODEL", "JPY_PARENT_PID")}
    done = subprocess.run([sys.executable, "-m", "IPython", "--no-banner", "--simple-prompt", "--colors=NoColor"],
                          input=typed, capture_output=True, text=True, cwd=project, env=env, timeout=180)
    return done.stdout + done.stderr


@pytest.mark.parametrize("request_text", ["add a docstring to main", "what is the meaning of life?"])
def test_the_terminal_never_speaks_of_a_card(tmp_path, request_text):
    (tmp_path / "cli.py").write_text("def main():\n    pass\n")
    # The blank line ends the cell; the first question takes it as no answer and asks again.
    shown = _ipython(tmp_path, f"%load_ext codingcode_jupyter\n%%agent --model demo\n{request_text}\n\ny\ny\n")
    assert "This is the offline demo" in shown, shown[-3000:]
    assert not re.search(r"\bcards?\b", shown, re.I), shown
    if request_text.startswith("add"):
        assert "Done. I wrote codingcode_demo.py" in shown, shown[-3000:]
        # The rule in words first; its syntax only as the note after them.
        assert "lets the agent write `codingcode_demo.py` from now on" in shown, shown
        assert (tmp_path / "codingcode_demo.py").exists()
