"""Settings read ahead of time (the notebook's background loading) serve the next session, and
only while every file they came from is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode_jupyter.engine import project_settings
from codingcode_jupyter.engine.project_settings import ProjectSettings, preload
from codingcode_jupyter.engine.settings import SettingsError
from tests.engine.helpers import write_settings


@pytest.fixture(autouse=True)
def _nothing_preloaded():
    project_settings._PRELOADED.clear()
    yield
    project_settings._PRELOADED.clear()


def _denies(settings: ProjectSettings) -> list[str]:
    return [rule.text for rule in settings.current().rules if rule.action == "deny"]


def test_the_next_settings_of_the_project_take_what_was_read_and_only_they_do(project: Path):
    write_settings(project, {"permissions": {"deny": ["read_file(secrets/**)"]}})
    preload(project)
    first, second = ProjectSettings(project), ProjectSettings(project)
    taken = first.current()
    assert project_settings._PRELOADED == {}
    assert second.current() is not taken  # read afresh, as a later session always was
    assert second.current() == taken


def test_a_file_changed_since_it_was_read_is_read_again(project: Path):
    write_settings(project, {"permissions": {"deny": ["read_file(secrets/**)"]}})
    preload(project)
    write_settings(project, {"permissions": {"deny": ["read_file(secrets/**)", "execute_command(rm *)"]}})
    assert _denies(ProjectSettings(project)) == ["read_file(secrets/**)", "execute_command(rm *)"]


def test_a_file_that_appeared_since_is_read_too(project: Path):
    preload(project)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Bash(curl:*)"]}}')
    assert len(_denies(ProjectSettings(project))) == 1


def test_trust_given_since_is_seen(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CODINGCODE_TRUST")
    write_settings(project, {"permissions": {"allow": ["execute_command(make *)"]}})
    preload(project)
    monkeypatch.setenv("CODINGCODE_TRUST", "1")
    allows = [rule.text for rule in ProjectSettings(project).current().rules if rule.action == "allow"]
    assert allows == ["execute_command(make *)"]


def test_a_broken_file_is_reported_by_the_session_not_by_the_warm_up(project: Path):
    from codingcode_jupyter.engine import runtime

    path = write_settings(project, {})
    path.write_text('{"permissions": {"deny": [')  # broken JSON: nothing of it can be read
    runtime.warm_up(project)  # quiet: nobody is there to read it
    with pytest.raises(SettingsError, match=str(path)):
        runtime.open_session(project)
