"""The background loading that ``%load_ext`` starts: its steps, how it gives way to the
person's cells, and how ``%%agent`` waits for it.

The unit tests drive a :class:`Prewarm` with steps of their own that block on events, so
what runs when is decided by the test, not by the clock. The kernel tests run the real
steps in a real kernel, sending what a browser sends.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from IPython.core.events import EventManager, available_events

from codingcode_jupyter.notebook import prewarm as prewarm_module
from codingcode_jupyter.notebook.failures import AgentInterrupted
from codingcode_jupyter.notebook.prewarm import WAITING_TEXT, Prewarm
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text
from tests.notebook.kernel_harness import Kernel
from tests.notebook.test_kernel import _pythons
from tests.polling import wait_until


class FakeShell:
    def __init__(self) -> None:
        self.events = EventManager(self, available_events)


class Recorder:
    """Steps that record when they ran, and can be held until the test lets them go."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []
        self.entered = {name: threading.Event() for name in ("one", "two", "three")}
        self.release = {name: threading.Event() for name in ("one", "two", "three")}

    def step(self, name: str, *, hold: bool = False, fail: bool = False):
        def run() -> None:
            self.entered[name].set()
            if hold:
                assert self.release[name].wait(30), f"step {name} was never released"
            self.ran.append((name, threading.current_thread().name))
            if fail:
                raise RuntimeError(f"step {name} broke")

        return name, run


def test_steps_run_in_order_off_the_main_thread_and_a_failing_step_does_not_stop_the_rest():
    steps = Recorder()
    prewarm = Prewarm([steps.step("one"), steps.step("two", fail=True), steps.step("three")]).start()
    assert prewarm.wait(timeout=30)
    assert [name for name, _ in steps.ran] == ["one", "two", "three"]
    assert {thread for _, thread in steps.ran} == {"codingcode-prewarm"}
    assert list(prewarm.errors) == ["two"] and "broke" in str(prewarm.errors["two"])
    assert set(prewarm.timings) == {"one", "two", "three"}


def test_what_the_steps_loaded_is_left_out_of_later_collections():
    loaded: list[list[object]] = []
    prewarm = Prewarm([("load", lambda: loaded.append([object()]))]).start()
    try:
        assert prewarm.wait(timeout=30)
        # Frozen: a full collection (0.1 s and more after the engine loaded) no longer walks it.
        assert gc.get_freeze_count() > 0
        assert not any(obj is loaded[0] for obj in gc.get_objects())
    finally:
        gc.unfreeze()


def test_the_collector_rests_during_a_step_nobody_runs_beside_and_a_cell_turns_it_back_on():
    seen: dict[str, bool] = {}
    entered, release = threading.Event(), threading.Event()

    def alone() -> None:
        seen["alone"] = gc.isenabled()

    def beside_a_cell() -> None:
        seen["before the cell"] = gc.isenabled()
        entered.set()
        assert release.wait(30)
        seen["once the cell started"] = gc.isenabled()

    shell = FakeShell()
    prewarm = Prewarm([("alone", alone), ("beside", beside_a_cell)])
    prewarm.attach(shell)
    assert gc.isenabled()
    try:
        prewarm.start()
        assert entered.wait(10)
        shell.events.trigger("pre_run_cell", None)  # the person's cell starts in the middle of a step
        release.set()
        assert prewarm.wait(timeout=30)
        assert seen == {"alone": False, "before the cell": False, "once the cell started": True}
        assert gc.isenabled()  # and on after every step, whatever ran beside it
        shell.events.trigger("post_run_cell", None)
    finally:
        gc.enable()
        gc.unfreeze()


def test_a_running_cell_holds_the_next_step_back_until_the_kernel_is_quiet_again():
    steps = Recorder()
    shell = FakeShell()
    prewarm = Prewarm([steps.step("one", hold=True), steps.step("two")])
    prewarm.attach(shell)
    prewarm.start()
    assert steps.entered["one"].wait(10)
    shell.events.trigger("pre_run_cell", None)  # the person runs a cell while step one runs
    steps.release["one"].set()  # a step in progress is never stopped halfway
    wait_until(lambda: len(steps.ran) == 1, what="step one to finish", interval=0.01)
    time.sleep(0.5)
    assert not steps.entered["two"].is_set(), "step two started while the person's cell ran"
    shell.events.trigger("post_run_cell", None)
    wait_until(lambda: prewarm.done, what="the rest of the steps once the cell ended", interval=0.01)
    assert [name for name, _ in steps.ran] == ["one", "two"]
    # Done: it stops listening to the shell at the next cell's end.
    shell.events.trigger("post_run_cell", None)
    assert prewarm.cell_started not in shell.events.callbacks["pre_run_cell"]


needs_thread_clock = pytest.mark.skipif(not hasattr(time, "pthread_getcpuclockid"),
                                        reason="a thread's CPU clock is what tells a computing cell (Linux)")


def _slow_package(root: Path, name: str, modules: int, seconds: float) -> list[float]:
    """A package whose import is one long step, as the SDK's is: ``modules`` submodules, each
    computing for ``seconds``; returns the list each appends its end time to."""
    package = root / name
    package.mkdir()
    body = ("import sys, time\nstart = time.perf_counter()\nwhile time.perf_counter() - start < {s}:\n    pass\n"
            "sys.modules[{n!r}].done.append(time.monotonic())\n").format(s=seconds, n=name)
    for index in range(modules):
        (package / f"m{index}.py").write_text(body)
    (package / "__init__.py").write_text("done = []\n" + "".join(f"from . import m{i}\n" for i in range(modules)))
    return []


def _busy(seconds: float) -> None:
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        pass


@pytest.fixture
def on_path(tmp_path: Path):
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in set(sys.modules) - before:
        if name.startswith("slowpkg"):
            del sys.modules[name]


@needs_thread_clock
def test_inside_a_step_the_thread_gives_way_while_a_cell_computes_and_goes_on_while_it_waits(on_path: Path):
    import builtins

    _slow_package(on_path, "slowpkg_a", modules=300, seconds=0.005)
    original_import = builtins.__import__
    shell = FakeShell()
    prewarm = Prewarm([("one long import", lambda: __import__("slowpkg_a"))])
    prewarm.attach(shell)
    prewarm.start()
    wait_until(lambda: "slowpkg_a" in sys.modules and len(sys.modules["slowpkg_a"].done) >= 3, what="the import to start", interval=0.01)
    done = sys.modules["slowpkg_a"].done
    shell.events.trigger("pre_run_cell", None)  # the person's cell, computing in pure Python
    _busy(0.15)  # the thread looks at most every CHECK_EVERY_S whether to give way
    computing_from = len(done)
    _busy(0.5)
    computed_beside = len(done) - computing_from
    waiting_from = len(done)
    time.sleep(0.5)  # the same cell now waits (I/O, a sleep): it does not need the interpreter
    waited_beside = len(done) - waiting_from
    shell.events.trigger("post_run_cell", None)
    assert prewarm.wait(timeout=60)
    # Left to share the interpreter, the step gets through dozens of its 5 ms modules in 0.5 s.
    assert computed_beside <= 2, f"{computed_beside} modules imported beside a computing cell"
    assert waited_beside >= 20, f"only {waited_beside} modules imported beside a waiting cell"
    assert builtins.__import__ is original_import  # the hook is gone with the loading


@needs_thread_clock
def test_a_cell_that_imports_what_the_paused_step_is_importing_is_not_left_waiting(on_path: Path):
    _slow_package(on_path, "slowpkg_b", modules=200, seconds=0.005)
    shell = FakeShell()
    prewarm = Prewarm([("one long import", lambda: __import__("slowpkg_b"))])
    prewarm.attach(shell)
    prewarm.start()
    wait_until(lambda: "slowpkg_b" in sys.modules and len(sys.modules["slowpkg_b"].done) >= 3, what="the import to start", interval=0.01)
    seen: dict[str, int] = {}

    def cell() -> None:  # on a thread of its own, so that a cell left waiting fails the test, not hangs it
        shell.events.trigger("pre_run_cell", None)
        _busy(0.3)  # the step has given way by now, holding the package's import lock
        seen["before"] = len(sys.modules["slowpkg_b"].done)
        import slowpkg_b  # waits for the package's lock: the cell no longer computes, the step goes on

        seen["after"] = len(slowpkg_b.done)
        shell.events.trigger("post_run_cell", None)

    thread = threading.Thread(target=cell, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "the cell waited for the paused step for good"
    assert seen["before"] < 200 and seen["after"] == 200
    assert prewarm.wait(timeout=60)


def test_whoever_needs_the_engine_overrides_the_pause():
    steps = Recorder()
    shell = FakeShell()
    prewarm = Prewarm([steps.step("one"), steps.step("two")])
    prewarm.attach(shell)
    shell.events.trigger("pre_run_cell", None)  # e.g. the %%agent cell itself
    prewarm.start()
    time.sleep(0.3)
    assert steps.ran == []
    assert prewarm.wait(timeout=30)  # the cell is still running, yet every step ran
    assert [name for name, _ in steps.ran] == ["one", "two"]


def test_later_steps_wait_for_nobody_and_never_run_beside_a_cell_even_a_wanted_one():
    steps = Recorder()
    shell = FakeShell()
    prewarm = Prewarm([steps.step("one")], [steps.step("two"), steps.step("three")])
    prewarm.attach(shell)
    shell.events.trigger("pre_run_cell", None)  # the first %%agent cell, which wants the engine
    prewarm.start()
    assert prewarm.wait(timeout=30) and prewarm.done  # it waited for step one only
    time.sleep(0.3)
    assert [name for name, _ in steps.ran] == ["one"] and not prewarm.all_done
    shell.events.trigger("post_run_cell", None)
    wait_until(lambda: prewarm.all_done, what="the later steps once no cell runs", interval=0.01)
    assert [name for name, _ in steps.ran] == ["one", "two", "three"]
    shell.events.trigger("post_run_cell", None)
    assert prewarm.cell_started not in shell.events.callbacks["pre_run_cell"]


def test_the_default_later_steps_hold_the_command_parser_and_the_engine_loads_without_it():
    assert [label for label, _ in prewarm_module.later_steps()] == ["bashlex", "approval tables' examples"]
    code = ("import json, sys\nfrom codingcode_jupyter.notebook.prewarm import default_steps\n"
            "for label, step in default_steps():\n    step()\nprint(json.dumps('bashlex' in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "ANTHROPIC_API_KEY": ""}).stdout
    assert json.loads(out.strip().splitlines()[-1]) is False


def test_load_ext_itself_imports_neither_the_engine_nor_pydantic():
    # Everything heavy is the background loading's (turned off here, to see %load_ext alone);
    # the output recorders it installs must not pull in the kernel tools.
    code = ("import json, sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
            "ip = InteractiveShell.instance()\nbefore = set(sys.modules)\n"
            "ip.run_line_magic('load_ext', 'codingcode_jupyter')\n"
            "assert 'agent' in ip.magics_manager.magics['cell']\n"
            "print(json.dumps(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "CODINGCODE_PREWARM": "0"}).stdout
    loaded = json.loads(out.strip().splitlines()[-1])
    heavy = [name for name in loaded if name.split(".")[0] in ("pydantic", "anthropic", "ipywidgets", "yaml")
             or name.startswith("codingcode_jupyter.engine")]
    assert heavy == []


def test_a_step_that_asks_for_the_engine_itself_does_not_wait_for_itself():
    # The kernel-tools step goes through the same entry point as a cell, which waits first.
    answers = []
    holder: list[Prewarm] = []
    prewarm = Prewarm([("asks", lambda: answers.append(holder[0].wait()))])
    holder.append(prewarm)
    prewarm.start()
    assert prewarm.wait(timeout=10)
    assert answers == [True]


async def test_ready_shows_a_line_for_a_wait_worth_showing_and_clears_it():
    steps = Recorder()
    prewarm = Prewarm([steps.step("one", hold=True)]).start()
    shown, cleared = [], []

    def on_wait():
        shown.append(True)
        steps.release["one"].set()  # the wait ends soon after the line appears
        return lambda: cleared.append(True)

    await asyncio.wait_for(prewarm.ready(on_wait), 30)
    assert prewarm.done and shown == [True] and cleared == [True]


async def test_ready_shows_nothing_once_everything_is_loaded():
    prewarm = Prewarm([("nothing", lambda: None)]).start()
    assert prewarm.wait(timeout=30)
    shown = []
    await prewarm.ready(lambda: shown.append(True) or (lambda: None))
    assert shown == []


async def test_the_interrupt_button_stops_the_wait_as_it_stops_a_turn(monkeypatch: pytest.MonkeyPatch):
    steps = Recorder()
    prewarm = Prewarm([steps.step("one", hold=True)]).start()
    monkeypatch.setattr(prewarm_module, "_CURRENT", prewarm)
    monkeypatch.setattr(prewarm_module, "QUIET_WAIT_S", 10.0)  # no line in the cell (there is no cell)
    sigint_before = signal.getsignal(signal.SIGINT)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(AgentInterrupted):
            await asyncio.wait_for(prewarm_module.ready(show=False), 30)
    finally:
        timer.cancel()
        steps.release["one"].set()
    assert signal.getsignal(signal.SIGINT) is sigint_before
    assert prewarm.wait(timeout=30)  # the thread went on regardless


# -- in a real kernel ------------------------------------------------------------------


@pytest.fixture(params=_pythons())
def fresh_kernel(request, tmp_path: Path):
    python = request.param
    if "ipykernel6" in request.node.callspec.id:
        version = subprocess.run([python, "-c", "import ipykernel; print(ipykernel.__version__)"],
                                 capture_output=True, text=True).stdout.strip()
        if not version.startswith("6."):
            pytest.skip(f"{python} has ipykernel {version or 'missing'}, not 6.x")
    fake = FakeAnthropic().start()
    project = tmp_path / "project"
    project.mkdir()
    env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test"}
    kernel = Kernel(python, project, env, tmp_path / "jupyter")
    kernel.fake = fake
    try:
        yield kernel
    finally:
        kernel.close()
        fake.stop()


STATE = (
    "import json\nfrom codingcode_jupyter.notebook import prewarm as _p\n"
    "print(json.dumps([sorted(_p.current().timings), sorted(_p.current().errors), _p.current().done]))"
)


@pytest.mark.kernel
def test_run_all_the_first_agent_cell_says_it_waits_then_answers(fresh_kernel: Kernel):
    k = fresh_kernel
    k.fake.add(Reply([text("The answer after the wait.")]))
    load_id = k.execute("%load_ext codingcode_jupyter")
    cell_id = k.execute("%%agent\nhello")  # queued at once, as Run All does
    assert k.reply(cell_id, timeout=120)["status"] == "ok", k.text_output(cell_id)
    assert k.reply(load_id)["status"] == "ok"
    cell = [m for m in k.messages if m["parent_header"].get("msg_id") == cell_id]
    waiting = [m for m in cell if m["msg_type"] == "display_data" and m["content"]["data"].get("text/plain") == WAITING_TEXT]
    assert len(waiting) == 1, [m["msg_type"] for m in cell]
    display_id = waiting[0]["content"]["transient"]["display_id"]
    updates = [m["content"]["data"] for m in cell if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == display_id]
    # The line goes once the engine is there, and the cell's own view takes its place (no empty output is left).
    assert updates and updates[0].get("text/plain") == ""
    assert any("application/vnd.jupyter.widget-view+json" in data for data in updates[1:])
    assert not any(m["msg_type"] == "display_data" and "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
                   for m in cell)
    assert "The answer after the wait." in str([k.widgets[c].get("value") for c in k.with_class("codingcode-text")])
    state_id = k.execute(STATE)
    k.reply(state_id)
    labels, errors, done = json.loads(k.text_output(state_id).strip())
    assert done is True and errors == []
    assert "anthropic SDK" in labels and "codingcode_jupyter.engine.runtime" in labels


@pytest.mark.kernel
def test_a_cell_run_right_after_load_ext_holds_the_loading_back(fresh_kernel: Kernel):
    k = fresh_kernel
    load_id = k.execute("%load_ext codingcode_jupyter")
    cell_id = k.execute(
        "import time\nfrom codingcode_jupyter.notebook import prewarm as _p\n"
        "before = len(_p.current().timings)\ntime.sleep(2.0)\nprint(before, len(_p.current().timings))"
    )
    assert k.reply(load_id)["status"] == "ok"
    assert k.reply(cell_id)["status"] == "ok", k.text_output(cell_id)
    before, after = map(int, k.text_output(cell_id).split())
    # At most the step that was under way when the cell started finished during it; left
    # alone, the thread gets through several steps in two seconds.
    assert after <= before + 1
    k.fake.add(Reply([text("loaded now")]))
    agent_id = k.execute("%%agent\nhello")
    assert k.reply(agent_id, timeout=120)["status"] == "ok", k.text_output(agent_id)


@pytest.mark.kernel
def test_the_first_turn_sends_on_the_connection_opened_while_the_person_typed(fresh_kernel: Kernel):
    k = fresh_kernel
    assert k.reply(k.execute("%load_ext codingcode_jupyter"))["status"] == "ok"
    # The connection opens on the kernel's loop once the loading is over and no cell runs.
    wait_until(lambda: k.fake.ports("HEAD"), 60, "the connection opened ahead of the first cell", interval=0.01)
    k.fake.add(Reply([text("on the warm connection")]))
    cell_id = k.execute("%%agent\nhello")
    assert k.reply(cell_id, timeout=120)["status"] == "ok", k.text_output(cell_id)
    assert k.fake.ports("HEAD") == k.fake.ports("POST")  # one of each, on one connection


@pytest.mark.kernel
def test_preconnect_off_leaves_the_connection_to_the_first_turn(tmp_path: Path):
    with FakeAnthropic() as fake:
        project = tmp_path / "project"
        project.mkdir()
        env = {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key", "CODINGCODE_MODEL": "claude-test",
               prewarm_module.PRECONNECT_ENV_VAR: "0"}
        k = Kernel(sys.executable, project, env, tmp_path / "jupyter")
        k.fake = fake
        try:
            assert k.reply(k.execute("%load_ext codingcode_jupyter"))["status"] == "ok"
            assert k.reply(k.execute("from codingcode_jupyter.notebook import prewarm as _p\n_p.wait()"))["status"] == "ok"
            time.sleep(0.5)  # as long as the connection took above, with room to spare
            fake.add(Reply([text("on a new connection")]))
            cell_id = k.execute("%%agent\nhello")
            assert k.reply(cell_id, timeout=120)["status"] == "ok", k.text_output(cell_id)
        finally:
            k.close()
    assert k.fake.ports("HEAD") == [] and len(k.fake.ports("POST")) == 1


async def test_a_step_that_hangs_does_not_hang_the_cell(monkeypatch: pytest.MonkeyPatch):
    steps = Recorder()
    prewarm = Prewarm([steps.step("one", hold=True)]).start()
    monkeypatch.setattr(prewarm_module, "MAX_WAIT_S", 0.5)
    cleared = []
    try:
        await asyncio.wait_for(prewarm.ready(lambda: lambda: cleared.append(True)), 30)
        assert not prewarm.done and cleared == [True]  # gave up, and took its line away
        assert prewarm.wait(timeout=0.2) is False
    finally:
        steps.release["one"].set()
    assert prewarm.wait(timeout=30)
