"""Writes quickstart.ipynb (run it after editing the cells below; the notebook is committed)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# codingcode-jupyter: quickstart\n\n"
        "A coding agent that lives in this kernel. It reads and edits your project, runs commands and "
        "asks before anything changes: each question is a card in the cell with **Allow**, **Deny**, "
        "**Always allow** and **Never allow**.\n\n"
        "No API key? The offline **demo model** plays a short scripted session on a real project, "
        "through the real tools and approval pipeline. To work with Claude, run `%agent login` and paste "
        "your key into the password field: it stays in the kernel's memory and never appears in the "
        "notebook (`%env ANTHROPIC_API_KEY=...` would print it into the saved output)."
    ),
    new_code_cell("%load_ext codingcode_jupyter"),
    new_markdown_cell("A small project to work on (the agent's project root is the kernel's working directory unless `--project DIR`):"),
    new_code_cell(
        "from pathlib import Path\n\n"
        "project = Path('demo_project')\n"
        "project.mkdir(exist_ok=True)\n"
        "(project / 'cli.py').write_text('''\"\"\"A tiny command line tool.\"\"\"\n"
        "import argparse\n\n\n"
        "def main(argv=None):\n"
        "    parser = argparse.ArgumentParser(description=\"Greet someone.\")\n"
        "    parser.add_argument(\"name\")\n"
        "    args = parser.parse_args(argv)\n"
        "    print(f\"Hello, {args.name}!\")\n\n\n"
        "if __name__ == \"__main__\":\n"
        "    main()\n"
        "''')\n"
        "sorted(p.name for p in project.iterdir())"
    ),
    new_markdown_cell(
        "Ask. The answer streams in; when the agent wants to write a file or run a command, a card shows "
        "the exact diff or command — click **Allow** (or **Deny**). The todo list and the audit trail "
        "update beside the answer; **Stop** ends the turn. When the turn ends, the cell keeps a record of "
        "it — the answer, every call, who decided and the diffs — that stays readable after a restart, "
        "on GitHub and in an HTML export."
    ),
    new_code_cell("%%agent --project demo_project\nAdd a --verbose flag to cli.py and a test."),
    new_markdown_cell("Every decision is kept in `demo_project/.codingcode/audit.jsonl`:"),
    new_code_cell("%agent audit 10"),
    new_markdown_cell(
        "## Your own tools\n\n"
        "A Python function becomes a tool the agent can call: type hints give its parameters, the "
        "docstring its description. It passes the same approval pipeline (`read_only=True` lets it "
        "through without asking)."
    ),
    new_code_cell(
        "from codingcode_jupyter import tool\n\n\n"
        "@tool(read_only=True)\n"
        "def word_count(path: str) -> dict:\n"
        "    \"\"\"Count the lines and words of a text file in the project.\"\"\"\n"
        "    text = (project / path).read_text()\n"
        "    return {'lines': len(text.splitlines()), 'words': len(text.split())}\n\n\n"
        "word_count"
    ),
    new_code_cell("%agent tools"),
    new_code_cell("%agent status"),
]

notebook = new_notebook(cells=cells, metadata={
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
})
Path(__file__).with_name("quickstart.ipynb").write_text(nbformat.writes(notebook))
