"""How many approval cards a realistic session asks, and what the undo snapshots cost.

Cards: one scripted session in default mode — plan, search, read, edit three files, run the
tests twice, fix, run again, look at the diff — run twice through the real loop and approval
pipeline. "Before" answers every card as today's person could: "Always allow" saving the exact
call, and no read-only command layer (the calls that layer allowed are counted as the cards
they used to be). "After" picks the rule that fits (the broadest one offered). Nothing that
writes outside the project, reaches the network or runs arbitrary code is ever auto-allowed:
the session holds one such call (a `curl`), which must be asked in both runs.

Snapshots: the shadow repository's first snapshot of a 20,000-file project, a later one with
one file changed (target < 150 ms), and the undo of a turn that changed 100 files.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from common import Row, spread

SESSION = [
    ("todo_write", {"items": [{"step": "fix parse", "status": "in_progress"}]}),
    ("search_code", {"pattern": "def parse"}),
    ("read_file", {"path": "src/a.py"}),
    ("read_file", {"path": "src/b.py"}),
    ("read_file", {"path": "src/c.py"}),
    ("execute_command", {"command": "ls src"}),
    ("edit_file", {"path": "src/a.py", "old_string": "a = 1", "new_string": "a = 2"}),
    ("edit_file", {"path": "src/b.py", "old_string": "b = 1", "new_string": "b = 2"}),
    ("edit_file", {"path": "src/c.py", "old_string": "c = 1", "new_string": "c = 2"}),
    ("execute_command", {"command": "pytest -q tests/test_a.py"}),
    ("execute_command", {"command": "pytest -q tests/test_b.py"}),
    ("edit_file", {"path": "src/a.py", "old_string": "a = 2", "new_string": "a = 3"}),
    ("execute_command", {"command": "pytest -q"}),
    ("execute_command", {"command": "git diff"}),
    ("execute_command", {"command": "git status"}),
    ("execute_command", {"command": "curl -s https://example.com/?q=notes"}),
]


def _project(root: Path) -> Path:
    project = root / "project"
    (project / "src").mkdir(parents=True)
    (project / "tests").mkdir()
    for name in "abc":
        (project / "src" / f"{name}.py").write_text(f"def parse():\n    {name} = 1\n")
    return project


def _assumed(project: Path, backend: str):
    """A sandbox factory: bubblewrap or Landlock taken as available, or none ("off"), never probed."""
    from codingcode_jupyter.engine.sandbox import CommandSandbox

    def make(settings, allowed_env_files):
        return CommandSandbox(project, settings, bwrap="bwrap", allowed_env_files=allowed_env_files,
                              backend="landlock" if backend == "landlock" else "bwrap",
                              unavailable_reason="assumed unavailable" if backend == "off" else None)

    return make


async def _count(project: Path, pick: str, mode: str = "default", sandbox: str | None = None,
                 unconfined: str | None = None) -> tuple[int, int, bool]:
    """(cards, calls the read-only command layer allowed, was the curl asked). ``unconfined``: the
    answer to the once-per-session no-sandbox card (counted as a card); None: no front shows it,
    as before the card existed (every command that would run unconfined is asked)."""
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
    from codingcode_jupyter.engine.approval.types import Reply
    from codingcode_jupyter.engine.deps import SessionDeps
    from codingcode_jupyter.engine.project_settings import ProjectSettings
    from codingcode_jupyter.engine.state import SessionState
    from codingcode_jupyter.engine.tools.base import ToolCall, ToolContext
    from codingcode_jupyter.engine.tools.builtin import builtin_tools

    tools = {tool.name: tool for tool in builtin_tools()}
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    deps = SessionDeps(project=project, settings=ProjectSettings(project),
                       sandbox_factory=_assumed(project, sandbox) if sandbox else None)
    cards, read_only_commands, curl_asked = 0, 0, False
    front = None
    if unconfined is not None:
        from tests.fakes.front import ScriptedFront

        front = ScriptedFront(unconfined=unconfined)  # type: ignore[arg-type]
        deps.unconfined.attach(front)

    async def ask(request):
        nonlocal cards, curl_asked
        cards += 1
        if "curl" in str(request.input):
            curl_asked = True
            return "deny"
        choices = request.allow_choices
        return Reply(answer="always", rules=choices[0] if pick == "exact" else choices[-1]) if choices else "allow"

    for number, (name, tool_input) in enumerate(SESSION):
        ctx = ToolContext.standalone(project, session_id="bench", turn_id=1, tool_use_id=f"t{number}", deps=deps,
                          state=SessionState(), mode=mode)
        decision = await pipeline.decide(ToolCall(tool_use_id=f"t{number}", tool=tools[name], input=tool_input), ctx, ask)
        if decision.layer == "readonly" and name == "execute_command":
            read_only_commands += 1
    if front is not None:
        cards += len(front.unconfined_asked)
    return cards, read_only_commands, curl_asked


def _cards_by_sandbox() -> list[Row]:
    """The same session in bypass mode with bubblewrap, with Landlock, and with no sandbox at all:
    before the once-per-session card (nobody shows it: every command that would run unconfined is
    asked) and after it (answered "Run ordinary commands unconfined for this session")."""
    os.environ["CODINGCODE_TRUST"] = "1"
    counts = {}
    for label, backend, unconfined in (("bwrap", "bwrap", None), ("landlock", "landlock", None),
                                        ("off", "off", None), ("off+card", "off", "session"),
                                        ("off+each", "off", "ask_each")):
        with tempfile.TemporaryDirectory() as root:
            counts[label] = asyncio.run(_count(_project(Path(root)), "fitting", "bypass", backend, unconfined))[0]
    return [Row(
        "approval cards, the session in bypass mode, by sandbox", f"{counts['landlock']} cards with Landlock",
        f"{counts['bwrap']} with bubblewrap; no sandbox: {counts['off']} before the session card",
        f"{counts['off+card']} after it", "Landlock = bubblewrap; no sandbox asks only what could do harm", None,
        "The 16-call session through the real pipeline in bypass mode, the sandbox assumed available (each backend) "
        "or missing. With none, read-only commands (ls, git status, git diff) are never asked. Before the "
        "once-per-session card, each other command was (3 pytest runs and the curl). After it, answered 'Run "
        "ordinary commands unconfined for this session': that card, and the curl (a downloader: what the sandbox "
        f"would have kept in is still asked). Answered 'Ask for each command': {counts['off+each']} (the card and "
        "the four).",
    )]


def _cards() -> Row:
    os.environ["CODINGCODE_TRUST"] = "1"
    with tempfile.TemporaryDirectory() as before_dir, tempfile.TemporaryDirectory() as after_dir:
        before, layer, asked_before = asyncio.run(_count(_project(Path(before_dir)), "exact"))
        after, _, asked_after = asyncio.run(_count(_project(Path(after_dir)), "fitting"))
    before += layer  # what the read-only command layer allowed were cards before it existed
    kept = asked_before and asked_after
    return Row(
        "approval cards, a realistic session (default mode)", f"{after} cards", f"{before} cards (exact rules, no read-only commands)",
        f"{after / before:.2f}x", "<= 0.5x, the network call still asked", after <= before / 2 and kept,
        "One scripted session of 16 calls through the real pipeline, run twice side by side: 'Always allow' with "
        "the exact call vs with the rule that fits (the broadest offered).",
    )


async def _cards_in_mode(project: Path, mode: str) -> tuple[int, int, bool]:
    """(cards, calls the reviewer allowed, was the curl asked) answering each card "allow" once."""
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
    from codingcode_jupyter.engine.deps import SessionDeps
    from codingcode_jupyter.engine.project_settings import ProjectSettings
    from codingcode_jupyter.engine.state import SessionState
    from codingcode_jupyter.engine.tools.base import ToolCall, ToolContext
    from codingcode_jupyter.engine.tools.builtin import builtin_tools

    tools = {tool.name: tool for tool in builtin_tools()}
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    deps = SessionDeps(project=project, settings=ProjectSettings(project))
    cards, reviewed, curl_asked = 0, 0, False

    async def ask(request):
        nonlocal cards, curl_asked
        cards += 1
        curl_asked = curl_asked or "curl" in str(request.input)
        return "allow"

    for number, (name, tool_input) in enumerate(SESSION):
        ctx = ToolContext.standalone(project, session_id="bench", turn_id=1, tool_use_id=f"t{number}", deps=deps,
                          state=SessionState(), mode=mode)  # type: ignore[arg-type]
        decision = await pipeline.decide(ToolCall(tool_use_id=f"t{number}", tool=tools[name], input=tool_input), ctx, ask)
        reviewed += decision.layer == "reviewer"
    return cards, reviewed, curl_asked


def _modes() -> Row:
    """Cards of the same session under default, acceptEdits with the rules a person would write,
    and auto with the fake reviewer allowing all but the network call (mechanics, not quality)."""
    import json

    from tests.fakes.anthropic_server import FakeAnthropic, Review

    rules = {"permissions": {"allow": ["execute_command(pytest *)", "execute_command(git diff)"]}}
    counts: dict[str, tuple[int, int, bool]] = {}
    saved = {name: os.environ.get(name) for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}
    with FakeAnthropic() as fake:
        fake.review_default = lambda body: (Review("ask", "sends data to a host") if "curl" in body["messages"][0]["content"]
                                            else Review("allow", "ordinary work"))
        os.environ.update(ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY="bench-key")
        try:
            for label, mode, settings in (("default", "default", None), ("acceptEdits + rules", "acceptEdits", rules),
                                          ("auto (fake reviewer)", "auto", None)):
                with tempfile.TemporaryDirectory() as root:
                    project = _project(Path(root))
                    if settings:
                        (project / ".codingcode").mkdir()
                        (project / ".codingcode" / "settings.json").write_text(json.dumps(settings))
                    counts[label] = asyncio.run(_cards_in_mode(project, mode))
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        reviews = len(fake.review_requests)
    auto, default = counts["auto (fake reviewer)"], counts["default"]
    kept = all(asked for _, _, asked in counts.values())
    return Row(
        "approval cards by mode, the same session", f"auto {auto[0]} cards ({auto[1]} allowed by the reviewer, "
        f"{reviews} reviews)", f"default {default[0]}, acceptEdits + rules {counts['acceptEdits + rules'][0]}",
        f"{auto[0]} / {default[0]}", "auto: only the network call carded", auto[0] == 1 and kept,
        "The 16-call session through the real pipeline, each card answered 'allow' once; auto mode's reviewer is the "
        "fake Messages API scripted to allow all but the curl (the real SDK, the real request).",
    )


def _snapshots(quick: bool) -> list[Row]:
    from codingcode_jupyter.engine.checkpoints import CheckpointStore
    from codingcode_jupyter.engine.snapshots import ShadowRepo

    files = 2_000 if quick else 20_000
    with tempfile.TemporaryDirectory() as root:
        project = Path(root) / "project"
        for index in range(files):
            path = project / f"pkg{index % 200}" / f"mod{index}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"VALUE = {index}\n")
        repo = ShadowRepo(project)
        started = time.perf_counter()
        repo.snapshot()
        first = time.perf_counter() - started
        later = []
        for step in range(5):
            (project / "pkg0" / "mod0.py").write_text(f"VALUE = {step}\n")
            started = time.perf_counter()
            repo.snapshot()
            later.append(time.perf_counter() - started)
        store = CheckpointStore(project)
        store.before_call("bench", 1)
        for index in range(100):
            (project / f"pkg{index % 200}" / f"mod{index}.py").write_text("CHANGED = True\n")
        store.after_turn("bench", 1)
        started = time.perf_counter()
        store.undo(store.plan_undo())
        undo = time.perf_counter() - started
        restored = all((project / f"pkg{i % 200}" / f"mod{i}.py").read_text() == f"VALUE = {i}\n" for i in range(1, 100))
    return [
        Row(f"project snapshot, one file changed ({files} files)", spread(later), f"{first * 1000:.0f} ms first snapshot",
            f"{min(later) * 1000:.0f} ms", "< 150 ms", min(later) < 0.150,
            "ShadowRepo.snapshot (git add --all, write-tree, commit-tree in the shadow repository) after changing one file, "
            "5 times; the first snapshot of the same tree as the baseline."),
        Row("undo of a turn that changed 100 files", f"{undo * 1000:.0f} ms", f"{files} files in the project",
            "restored" if restored else "NOT restored", "every file back", restored,
            "CheckpointStore.plan_undo + undo after a turn rewrote 100 files (shadow snapshots before and after)."),
    ]


def measure(quick: bool) -> list[Row]:
    return [_cards(), _modes(), *_cards_by_sandbox(), *_snapshots(quick)]
