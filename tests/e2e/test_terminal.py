"""Terminal IPython in tmux, typed into as a person would: `%%agent`, the request, a blank line, then `y`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text, tool_use
from tests.polling import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")]


class Terminal:
    """One tmux session running terminal IPython in ``project``."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.name = f"cc-{os.getpid()}-{int(time.time() * 1000) % 100000}"
        command = f"cd {project} && exec {sys.executable} -m IPython --no-banner --colors=NoColor --no-confirm-exit"
        environment = [f"{key}={value}" for key, value in env.items()]
        subprocess.run(["tmux", "new-session", "-d", "-s", self.name, "-x", "160", "-y", "60",
                        "env", *environment, "bash", "-c", command], check=True)

    def type(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-t", self.name, "-p", "-S", "-200"], capture_output=True,
                              text=True, check=True).stdout

    def wait_for(self, words: str, timeout: float = 30) -> str:
        def shown() -> str | None:
            screen = self.screen()
            return screen if words in screen else None

        return wait_until(shown, timeout, lambda: f"{words!r} on the screen:\n{self.screen()}", interval=0.2)

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def test_terminal_ipython_asks_and_a_y_runs_the_call(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    with FakeAnthropic() as api:
        api.add(
            Reply([text("I'll write **the notes**."), tool_use("write_file", {"path": "notes.txt", "content": "from the terminal\n"})]),
            Reply([text("Written.")]),
        )
        env = {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
               "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "HOME": str(tmp_path), "TERM": "xterm"}
        terminal = Terminal(project, env)
        try:
            terminal.wait_for("In [1]:")
            terminal.type("%load_ext codingcode_jupyter", "Enter")
            terminal.wait_for("In [2]:")
            terminal.type("%%agent", "Enter")
            terminal.type("write the notes", "Enter")
            terminal.type("Enter")  # the blank line that ends the cell, as IPython's cells end
            screen = terminal.wait_for("[y/n/a/v]")
            assert "create `notes.txt` (1 line)" in screen
            assert "**the notes**" not in screen and "the notes" in screen  # Markdown rendered, not raw
            time.sleep(0.5)
            assert not (project / "notes.txt").exists()  # the blank line was nobody's answer
            terminal.type("y", "Enter")
            screen = terminal.wait_for("Written.")
            assert "allowed by you" in screen
            terminal.wait_for("In [3]:")
        finally:
            terminal.close()
    assert (project / "notes.txt").read_text() == "from the terminal\n"
