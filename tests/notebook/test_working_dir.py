"""%agent status's line when a gateway started the kernel away from its notebook (KERNEL_WORKING_DIR)."""

from __future__ import annotations

from codingcode_jupyter.notebook.kernel.working_dir import notebook_dir_line


def test_no_line_for_a_local_kernel(tmp_path, monkeypatch):
    monkeypatch.delenv("KERNEL_WORKING_DIR", raising=False)
    assert notebook_dir_line(tmp_path, cwd=tmp_path) is None
    monkeypatch.setenv("KERNEL_WORKING_DIR", str(tmp_path))
    assert notebook_dir_line(tmp_path, cwd=tmp_path) is None


def test_a_kernel_started_elsewhere_says_where_files_land(tmp_path, monkeypatch):
    notebook_dir, kernel_dir = tmp_path / "notebooks", tmp_path / "kernel"
    notebook_dir.mkdir()
    kernel_dir.mkdir()
    monkeypatch.setenv("KERNEL_WORKING_DIR", str(notebook_dir))
    line = notebook_dir_line(kernel_dir, cwd=kernel_dir)
    assert line is not None
    assert line.startswith(f"in {notebook_dir}, not in the kernel's directory, which is the project")
    assert f"%agent project {notebook_dir}" in line


def test_a_notebook_directory_on_another_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_WORKING_DIR", "/srv/elsewhere/notebooks")
    line = notebook_dir_line(tmp_path, cwd=tmp_path)
    assert line is not None and "not on the kernel's machine" in line and str(tmp_path) in line
