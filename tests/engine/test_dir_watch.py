"""The project walk's inotify watch (engine/sandbox/dir_watch.py): a warm walk stats no directory, and
still sees every change, whatever made it and whenever. Each rule has its control: the same sequence
with the watch off (the stat walk) sees the change too, and with the queue left unread (or the rule's
step taken out) it is missed, so the test is exercising inotify, not the stats."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import dir_watch, landlock
from codingcode_jupyter.engine.sandbox.dir_watch import DirWatch, fs_type, mount_table
from codingcode_jupyter.engine.sandbox.project_scan import ProjectScan
from codingcode_jupyter.engine.settings import SandboxSettings
from tests.engine.sandbox_helpers import BWRAP_PROBLEM, SECRET, make_home, make_sandbox, run


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    for top in range(4):
        for mid in range(3):
            (root / f"t{top}" / f"m{mid}" / "leaf").mkdir(parents=True)
            (root / f"t{top}" / f"m{mid}" / "leaf" / "a.txt").write_text("a\n")
    (root / ".env").write_text(f"KEY={SECRET}\n")
    probe = DirWatch.open(str(root))
    if probe is None:
        pytest.skip("no inotify on this filesystem (the stat walk is the path here)")
    probe.close()
    return Path(os.path.realpath(root))


def _scan(project: Path, watch: bool = True) -> ProjectScan:
    scan = ProjectScan(project, [], watch_directories=watch)
    scan.env_files()
    if watch:
        assert scan._watch is not None and scan._watch.usable()
    return scan


def _no_drain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DirWatch, "drain", lambda self: None)


def _stats_of_directories(monkeypatch: pytest.MonkeyPatch, scan: ProjectScan) -> list[str]:
    """The walk's directories os.stat is called on from now (the project's root aside: its identity
    is compared once per use)."""
    directories = set(scan.directories()) - {str(scan.project)}
    seen: list[str] = []
    real = os.stat

    def counting(path, *args, **kwargs):
        if str(path) in directories:
            seen.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting)
    return seen


# ----- the point: no stat per directory ------------------------------------------------------------


def test_warm_walk_stats_no_directory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = _scan(project)
    generation = scan.generation
    seen = _stats_of_directories(monkeypatch, scan)
    assert scan.env_files() == [project / ".env"]
    assert seen == []
    assert scan.generation == generation


def test_the_directories_are_not_copied_again_while_nothing_changed(project: Path) -> None:
    # HostWatch takes them before every command: the same set while the walk's generation holds.
    scan = _scan(project)
    first = scan.directories()
    scan.env_files()
    assert scan.directories() is first
    (project / "t0" / "more").mkdir()
    scan.env_files()
    assert str(project / "t0" / "more") in scan.directories() and str(project / "t0" / "more") not in first


def test_warm_walk_without_the_watch_stats_every_directory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = _scan(project, watch=False)
    assert scan._watch is None
    seen = _stats_of_directories(monkeypatch, scan)
    scan.env_files()
    assert sorted(seen) == sorted(set(scan.directories()) - {str(project)})


# ----- changes between two walks, as a person's or a command's ------------------------------------


def _dotenv_deep(project: Path) -> Path:
    (project / "t1" / "m2" / "leaf" / ".env.local").write_text(f"KEY={SECRET}\n")
    return project / "t1" / "m2" / "leaf" / ".env.local"


def _rename_directory(project: Path) -> Path:
    (project / "t2" / "m0" / "old").rename(project / "t2" / "m0" / "leaf")
    return project / "t2" / "m0" / "leaf" / ".env"


def _touch_back(project: Path) -> Path:
    leaf = project / "t3" / "m1" / "leaf"
    st = os.stat(leaf)
    (leaf / ".env").write_text(f"KEY={SECRET}\n")
    os.utime(leaf, ns=(st.st_atime_ns, st.st_mtime_ns))  # touch -r: the mtime as it was
    return leaf / ".env"


def _hard_link(project: Path) -> Path:
    os.link(project / ".env", project / "t0" / "m0" / "leaf" / "notes")
    return project / "t0" / "m0" / "leaf" / "notes"


def _new_tree(project: Path) -> Path:
    (project / "new" / "a" / "b" / "c").mkdir(parents=True)
    (project / "new" / "a" / "b" / "c" / ".env").write_text(f"KEY={SECRET}\n")
    return project / "new" / "a" / "b" / "c" / ".env"


CHANGES = [_dotenv_deep, _rename_directory, _touch_back, _hard_link, _new_tree]


def _prepare(project: Path) -> None:
    # A directory holding a secret under another name, which a change renames back (_rename_directory).
    (project / "t2" / "m0" / "leaf").rename(project / "t2" / "m0" / "old")
    (project / "t2" / "m0" / "old" / ".env").write_text(f"KEY={SECRET}\n")


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.__name__.strip("_"))
@pytest.mark.parametrize("watch", [True, False], ids=["inotify", "stat walk"])
def test_a_change_between_walks_is_seen(project: Path, change, watch: bool) -> None:
    _prepare(project)
    scan = _scan(project, watch)
    scan.env_files()
    generation = scan.generation
    expected = change(project)
    assert expected in scan.env_files(learn=False)
    assert scan.generation != generation


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.__name__.strip("_"))
def test_the_queue_left_unread_misses_the_change(project: Path, change, monkeypatch: pytest.MonkeyPatch) -> None:
    _prepare(project)
    scan = _scan(project)
    scan.env_files()
    _no_drain(monkeypatch)
    expected = change(project)
    assert expected not in scan.env_files(learn=False)  # what the tests above see is inotify's doing


def test_attrib_alone_marks_the_directory(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # utimes on a directory and nothing else: only IN_ATTRIB says so (its ctime, to a stat).
    scan = _scan(project)
    watch = scan._watch
    assert watch is not None
    leaf = str(project / "t0" / "m1" / "leaf")
    os.utime(leaf, ns=(0, 0))
    watch.drain()
    assert leaf in watch.dirty
    monkeypatch.setattr(dir_watch, "MASK", dir_watch.MASK & ~dir_watch.flags.ATTRIB)
    watch.arm(leaf)
    os.utime(leaf, ns=(1, 1))
    watch.drain()
    assert leaf not in watch.dirty  # control: without IN_ATTRIB in the mask, missed


# ----- rule 1: watched before listed -----------------------------------------------------------------


def test_a_change_right_after_a_listing_is_an_event(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = ProjectScan(project, [])
    target = project / "t2" / "m2" / "leaf"
    real = os.scandir
    done: list[bool] = []

    def listing_then_change(path):
        entries = list(real(path))
        if str(path) == str(target) and not done:
            done.append(True)
            (target / ".env").write_text(f"KEY={SECRET}\n")  # after the listing, before the next walk

        class _Entries(list):
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        return _Entries(entries)

    monkeypatch.setattr(os, "scandir", listing_then_change)
    assert target / ".env" not in scan.env_files()
    monkeypatch.setattr(os, "scandir", real)
    assert target / ".env" in scan.env_files()


# ----- rule 2: drain, and every doubt marks everything ----------------------------------------------


def _event(wd: int, mask: int) -> object:
    from inotify_simple import Event

    return Event(wd, mask, 0, "")


@pytest.mark.parametrize("doubt", ["overflow", "unknown watch", "read error"])
def test_a_doubt_marks_every_directory(project: Path, monkeypatch: pytest.MonkeyPatch, doubt: str) -> None:
    scan = _scan(project)
    watch = scan._watch
    assert watch is not None and not watch.dirty
    if doubt == "read error":
        real_read = os.read

        def failing(fd: int, n: int) -> bytes:
            if fd == watch._inotify.fileno():
                raise OSError(errno.EIO, "I/O error")
            return real_read(fd, n)

        monkeypatch.setattr(os, "read", failing)
    else:
        event = _event(-1, dir_watch.flags.Q_OVERFLOW) if doubt == "overflow" else _event(10**6, dir_watch.flags.CREATE)
        monkeypatch.setattr(dir_watch, "parse_events", lambda data: [event])
    watch.drain()
    assert watch.dirty == set(scan.directories())
    # So the next use is the stat walk: every directory stat'ed once, then watched and clean again.
    monkeypatch.undo()
    seen = _stats_of_directories(monkeypatch, scan)
    assert scan.env_files() == [project / ".env"]
    assert sorted(seen) == sorted(set(scan.directories()) - {str(project)})
    assert not watch.dirty


def test_the_queue_is_read_before_a_walk_that_follows_an_incomplete_one(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A directory that could not be listed leaves no complete walk to compare with: the next walk
    # goes directory by directory, and takes the clean ones from the cache only once the queue is read.
    scan = _scan(project)
    broken = project / "t3" / "m0" / "leaf"
    real = os.scandir

    def failing(path):
        if str(path) == str(broken):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path)

    (broken / "new").mkdir()
    monkeypatch.setattr(os, "scandir", failing)
    scan.env_files()
    assert scan._last is None
    monkeypatch.setattr(os, "scandir", real)
    expected = _dotenv_deep(project)
    assert expected in scan.env_files()


def test_a_directory_moved_away_marks_what_was_below_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # t1 renamed, a new t1/m0/leaf made: the old leaf's watch is on the directory now at moved/m0/leaf.
    scan = _scan(project)
    (project / "t1").rename(project / "moved")
    (project / "t1" / "m0" / "leaf").mkdir(parents=True)
    (project / "t1" / "m0" / "leaf" / ".env").write_text(f"KEY={SECRET}\n")
    assert project / "t1" / "m0" / "leaf" / ".env" in scan.env_files()


def test_without_marking_below_a_moved_directory_the_change_is_missed(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = _scan(project)
    monkeypatch.setattr(DirWatch, "_below", lambda self, gone: None)
    (project / "t1").rename(project / "moved")
    (project / "t1" / "m0" / "leaf").mkdir(parents=True)
    (project / "t1" / "m0" / "leaf" / ".env").write_text(f"KEY={SECRET}\n")
    assert project / "t1" / "m0" / "leaf" / ".env" not in scan.env_files()


def test_the_project_replaced_under_its_path_is_seen(project: Path) -> None:
    scan = _scan(project)
    project.rename(project.with_name("before"))
    shutil.copytree(project.with_name("before"), project)
    (project / "t0" / "m0" / "leaf" / ".env").write_text(f"KEY={SECRET}\n")
    assert project / "t0" / "m0" / "leaf" / ".env" in scan.env_files()


# ----- rule 3: a marked directory is stat'ed, relisted only if changed, then clean -----------------


def test_a_marked_directory_is_stated_not_relisted(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = _scan(project)
    generation = scan.generation
    leaf = project / "t3" / "m2" / "leaf"
    os.chmod(leaf / "a.txt", 0o600)  # IN_ATTRIB of an entry: marked, though its listing holds
    seen = _stats_of_directories(monkeypatch, scan)
    scan.env_files()
    assert seen == [str(leaf)]
    assert scan.generation == generation
    seen.clear()
    scan.env_files()
    assert seen == []


# ----- rule 4: local filesystems only ------------------------------------------------------------------


def test_mount_table_and_filesystem_types() -> None:
    text = (
        "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        "30 22 0:40 / /srv/my\\040project rw - nfs4 server:/x rw\n"
        "31 30 0:41 / /srv/my\\040project/cache rw - tmpfs tmpfs rw\n"
        "32 22 0:42 / /data rw - xfs /dev/sdb rw\n"
        "33 32 0:43 / /data rw - fuse.sshfs host: rw\n"
    )
    table = mount_table(text)
    assert ("/srv/my project", "nfs4") in table
    assert fs_type("/srv/my project/src", table) == "nfs4"
    assert fs_type("/srv/my project/cache/x", table) == "tmpfs"
    assert fs_type("/data/x", table) == "fuse.sshfs"  # the last mount on a point is on top
    assert fs_type("/home/me", table) == "ext4"
    assert fs_type("/srv/my projectx", table) == "ext4"


@pytest.mark.parametrize("kind", ["nfs4", "cifs", "fuse.sshfs", "9p", "something-new"])
def test_a_project_not_on_a_local_filesystem_keeps_the_stat_walk(
    project: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(dir_watch, "mount_table", lambda text=None: [("/", "ext4"), (str(project), kind)])
    scan = ProjectScan(project, [])
    scan.env_files()
    assert scan._watch is None
    assert _dotenv_deep(project) in scan.env_files()


def test_a_network_mount_inside_the_project_is_stated_every_time(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inside = project / "t2"
    monkeypatch.setattr(dir_watch, "mount_table", lambda text=None: [("/", "ext4"), (str(inside), "nfs")])
    scan = _scan(project)
    scan.env_files()
    watch = scan._watch
    assert watch is not None
    assert not watch.watched(str(inside)) and not watch.watched(str(inside / "m0" / "leaf"))
    assert watch.watched(str(project / "t1"))
    seen = _stats_of_directories(monkeypatch, scan)
    scan.env_files()
    assert sorted(seen) == sorted(d for d in scan.directories() if d.startswith(str(inside)))
    # A change there (made by another machine: no event) is seen by its stat.
    _no_drain(monkeypatch)
    (inside / "m1" / "leaf" / ".env").write_text(f"KEY={SECRET}\n")
    assert inside / "m1" / "leaf" / ".env" in scan.env_files()


def test_a_mount_made_inside_the_project_marks_everything(project: Path) -> None:
    scan = _scan(project)
    watch = scan._watch
    assert watch is not None
    watch._mounts.close()
    watch._mounts = open(os.devnull, "rb", buffering=0)  # noqa: SIM115
    import select

    class _Changed:
        def poll(self, timeout: int) -> list[tuple[int, int]]:
            return [(0, select.POLLPRI)]

    watch._poll = _Changed()
    watch.drain()
    assert watch.dirty == set(scan.directories())


# ----- rule 5: limits, and a forked process ------------------------------------------------------------


def test_no_inotify_instance_means_the_stat_walk(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(dir_watch, "INotify", refuse)
    scan = ProjectScan(project, [])
    assert scan.env_files() == [project / ".env"]
    assert scan._watch is None
    assert _dotenv_deep(project) in scan.env_files()


def test_no_watch_left_means_stats_for_those_directories(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from inotify_simple import INotify

    real = INotify.add_watch
    count = [0]

    def limited(self, path, mask):
        count[0] += 1
        if count[0] > 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, path, mask)

    monkeypatch.setattr(INotify, "add_watch", limited)
    scan = _scan(project)
    watch = scan._watch
    assert watch is not None
    unwatched = [d for d in scan.directories() if not watch.watched(d)]
    assert unwatched and len(unwatched) < len(scan.directories())
    seen = _stats_of_directories(monkeypatch, scan)
    scan.env_files()
    assert sorted(seen) == sorted(set(unwatched) - {str(project)})
    _no_drain(monkeypatch)
    target = Path(sorted(d for d in unwatched if d != str(project))[0])
    (target / ".env").write_text(f"KEY={SECRET}\n")
    assert target / ".env" in scan.env_files()


def _in_child(scan: ProjectScan, expected: Path) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            if scan._dir_watch() is not None:
                code = 2
            elif expected not in scan.env_files():
                code = 3
        except BaseException:
            code = 4
        os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_forked_process_uses_stats_and_leaves_the_queue_to_its_parent(project: Path) -> None:
    scan = _scan(project)
    expected = _dotenv_deep(project)
    assert _in_child(scan, expected) == 0
    assert expected in scan.env_files()  # the child read nothing of the parent's queue


def test_a_forked_process_reading_the_queue_would_take_the_parents_events(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Control: the pid check taken out, the child drains the shared descriptor and the parent misses it.
    scan = _scan(project)
    monkeypatch.setattr(DirWatch, "usable", lambda self: not self._inotify.closed)
    expected = _dotenv_deep(project)
    pid = os.fork()
    if pid == 0:
        try:
            scan.env_files()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert expected not in scan.env_files()


# ----- rule 6: directories that leave the walk --------------------------------------------------------


def test_a_removed_tree_drops_its_watches(project: Path) -> None:
    scan = _scan(project)
    watch = scan._watch
    assert watch is not None
    before = len(watch._wds)
    shutil.rmtree(project / "t0")
    scan.env_files()
    assert not [path for path in watch._wd_of if path.startswith(str(project / "t0"))]
    assert all(watch._wds.values())
    assert len(watch._wds) == before - 7  # t0, its three m*, their three leaf
    (project / "t0").mkdir()
    (project / "t0" / ".env").write_text(f"KEY={SECRET}\n")
    assert project / "t0" / ".env" in scan.env_files()
    assert watch.watched(str(project / "t0"))


# ----- rule 7: the setting -----------------------------------------------------------------------------


def test_the_setting(project: Path, tmp_path: Path) -> None:
    assert SandboxSettings().watchDirectories is True
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        SandboxSettings.model_validate({"watchDirectories": "sometimes"})
    home = make_home(tmp_path)
    for value, watched in ((False, False), (True, True)):
        box = make_sandbox(project, home, watchDirectories=value)
        box.project_scan.env_files()
        assert (box.project_scan._watch is not None) is watched


# ----- a sandboxed command's changes, seen right after it ----------------------------------------------

BACKENDS = [
    pytest.param("bwrap", marks=pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bubblewrap: {BWRAP_PROBLEM}")),
    pytest.param("landlock", marks=pytest.mark.skipif(landlock.landlock_abi() < 1, reason="no Landlock")),
]

COMMANDS = {
    "dotenv deep": ("echo K=1 > t1/m2/leaf/.env", "t1/m2/leaf/.env"),
    "rename a directory": ("mv t2/m0/old t2/m0/leaf", "t2/m0/leaf/.env"),
    "touch -r back": (
        "touch -r t3/m1/leaf t3/stamp && echo K=1 > t3/m1/leaf/.env && touch -r t3/stamp t3/m1/leaf && rm t3/stamp",
        "t3/m1/leaf/.env",
    ),
    # bubblewrap refuses the link of its mask; Landlock lets it be made in the secret's own directory.
    "hard link a secret": ("ln .env notes 2>/dev/null; true", "notes"),
    "new tree": ("mkdir -p new/a/b/c && echo K=1 > new/a/b/c/.env", "new/a/b/c/.env"),
}


@pytest.mark.parametrize("what", list(COMMANDS))
@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_commands_change_is_seen_right_after_it(project: Path, tmp_path: Path, backend: str, what: str) -> None:
    _prepare(project)
    box = make_sandbox(project, make_home(tmp_path), backend=backend)
    assert box.active, box.unavailable_reason
    try:
        assert (await run(box, "true")).returncode == 0
        scan = box.project_scan
        assert scan._watch is not None
        command, rel = COMMANDS[what]
        result = await run(box, command)
        assert result.returncode == 0, result.err
        if what == "hard link a secret" and not (project / rel).exists():
            assert backend == "bwrap"
            return
        assert project / rel in scan.env_files(learn=False)
        # And the next command does not read it.
        out = (await run(box, f"cat {rel}")).out
        assert "K=1" not in out and SECRET not in out
    finally:
        await box.aclose()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_commands_change_unread_from_the_queue_is_missed(
    project: Path, tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    box = make_sandbox(project, make_home(tmp_path), backend=backend)
    try:
        assert (await run(box, "true")).returncode == 0
        _no_drain(monkeypatch)
        assert (await run(box, "echo K=1 > t1/m2/leaf/.env")).returncode == 0
        assert project / "t1/m2/leaf/.env" not in box.project_scan.env_files(learn=False)
    finally:
        await box.aclose()
