"""The record of what a turn's code did to the variables (kernel/undo_names.py), on a plain namespace:
each kind of change is found and put back, what cannot be copied is named, untouched names are not."""

from __future__ import annotations

import threading

import pytest

from codingcode_jupyter.notebook.kernel.undo_names import NamespaceJournal, estimate_size


def _turn(journal, ns, code, turn=1, **kwargs):
    journal.before_code(ns, "s1", turn, code=code, **kwargs)
    exec(code, ns)  # noqa: S102 -- the code a turn runs, as run_python runs it
    journal.finish(ns)
    return journal.plan(ns, "s1", turn)


def _by_name(plan):
    return {item.name: item for item in plan.names}


def test_each_kind_of_change_is_found_and_put_back():
    lock = threading.Lock()
    shared = {"a": 1}
    ns = {
        "data": shared,
        "alias": shared,
        "rate": 0.5,
        "gone": [1, 2],
        "untouched": list(range(100)),
        "lock": lock,
        "__builtins__": __builtins__,
    }
    journal = NamespaceJournal()
    plan = _turn(journal, ns, "data['b'] = 2\nrate = 9.0\nmade = 'x'\ndel gone\nlock.acquire()")
    items = _by_name(plan)
    assert set(items) == {"data", "alias", "rate", "made", "gone", "lock"}, plan.render()
    assert (items["data"].kind, items["data"].action) == ("mutated", "restore")
    assert (items["alias"].kind, items["alias"].action) == ("mutated", "restore")  # the same dict
    assert (items["rate"].kind, items["rate"].action) == ("rebound", "restore")
    assert (items["made"].kind, items["made"].action) == ("new", "remove")
    assert (items["gone"].kind, items["gone"].action) == ("deleted", "restore")
    assert items["lock"].action == "not_restorable" and "cannot be copied" in items["lock"].note
    assert not plan.conflicts
    done = journal.restore(ns, plan)
    assert {d["name"] for d in done} == set(items)
    assert ns["data"] == {"a": 1} and ns["data"] is shared and ns["alias"] == {"a": 1}  # in place: aliases see it
    assert ns["rate"] == 0.5 and "made" not in ns and ns["gone"] == [1, 2]
    assert ns["untouched"] == list(range(100))
    lock.release()
    assert journal.plan(ns, "s1", 1) is None  # undone once


def test_the_control_a_turn_that_changes_nothing_has_nothing_to_undo():
    ns = {"data": {"a": 1}, "rate": 0.5}
    journal = NamespaceJournal()
    assert _turn(journal, ns, "total = data['a'] + rate\ndel total") is None
    record = journal.turns[("s1", 1)]
    assert record.before == {} and record.copied_bytes == 0  # the copies of untouched names are given back


def test_a_value_over_the_budget_is_not_copied_and_is_named():
    ns = {"big": list(range(300_000)), "small": [1]}
    journal = NamespaceJournal()
    plan = _turn(journal, ns, "big.append(1)\nsmall.append(2)", budget_mb=1)
    items = _by_name(plan)
    assert items["big"].action == "not_restorable" and "undo budget" in items["big"].note, plan.render()
    assert items["small"].action == "restore"


def test_only_the_kept_names_are_copied_for_the_fork():
    ns = {"keep_me": [1], "other": [2]}
    journal = NamespaceJournal()
    record = journal.before_code(ns, "s1", 1, code="keep_me", only=["keep_me"])
    assert set(record.before) == {"keep_me"}
    ns["keep_me"] = [1, 2]  # what binding a kept value back does
    journal.finish(ns)
    plan = journal.plan(ns, "s1", 1)
    assert [(i.name, i.kind, i.action) for i in plan.names] == [("keep_me", "rebound", "restore")]
    journal.restore(ns, plan)
    assert ns["keep_me"] == [1]


def test_a_name_changed_after_the_turn_is_a_conflict():
    ns = {"data": {"a": 1}, "rate": 0.5}
    journal = NamespaceJournal()
    _turn(journal, ns, "data['b'] = 2\nrate = 1.0\nmade = []")
    ns["rate"] = 7.0  # the person's next cell
    ns["data"]["c"] = 3
    ns["made"].append(1)
    plan = journal.plan(ns, "s1", 1)
    conflicts = {item.name: item.conflict for item in plan.conflicts}
    assert set(conflicts) == {"rate", "data", "made"}, plan.render()
    assert "rebound" in conflicts["rate"] and "in place" in conflicts["data"] and "in place" in conflicts["made"]


def test_a_dataframe_changed_in_place_comes_back():
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    frame = pd.DataFrame({"x": [1, 2, 3]})
    ns = {"df": frame, "same": pd.DataFrame({"y": [1.0]})}
    journal = NamespaceJournal()
    plan = _turn(journal, ns, "df['y'] = df.x * 2\ndf.loc[0, 'x'] = 99")
    assert [(i.name, i.kind) for i in plan.names] == [("df", "mutated")]
    journal.restore(ns, plan)
    assert list(ns["df"].columns) == ["x"] and ns["df"].x.tolist() == [1, 2, 3]


def test_size_estimates_see_buffers_and_containers():
    np = pytest.importorskip("numpy", reason="numpy is not installed")
    assert estimate_size(np.zeros(1_000_000), 10**9) == 8_000_000
    assert estimate_size([b"x" * 1000] * 3, 10**9) < 5000  # one object met three times counts once
    assert estimate_size(list(range(100_000)), 1000) > 1000  # stops once past the limit
    # A large container is sampled, and the estimate is still near what its copy takes.
    import copy
    import tracemalloc

    records = [{"id": i, "name": f"row{i}", "score": i * 0.5} for i in range(100_000)]
    estimated = estimate_size(records, 10**12)
    tracemalloc.start()
    copied = copy.deepcopy(records)
    taken = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del copied
    assert 0.5 < estimated / taken < 2, (estimated, taken)


def test_the_shells_own_names_are_never_the_turns():
    ns = {"Out": {}, "In": [""], "data": [1]}
    journal = NamespaceJournal()
    journal.before_code(ns, "s1", 1, hidden={"Out", "In"}, code="data.append(2)")
    ns["data"].append(2)
    ns["Out"][1] = "x"
    # A later turn's first call finishes this one without being told the hidden names again.
    journal.before_code(ns, "s1", 2, code="")
    plan = journal.plan(ns, "s1", 1)
    assert [item.name for item in plan.names] == ["data"], plan.render()
