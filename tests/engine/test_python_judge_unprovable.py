"""run_python judged by what the judge can prove (issue 33, point 3): what it cannot follow is unresolved
(asked in every mode); ordinary data snippets (the controls) stay resolved."""

from __future__ import annotations

import pytest

from codingcode_jupyter.engine.approval.python_code import analyse_python

UNPROVABLE = [
    'get_ipython().system("rm -rf /")', 'get_ipython().run_cell_magic("bash", "", "id")',
    'import os; getattr(os, "system")("sudo id")', 'import os; vars(os)["system"]("id")',
    'import operator, os; operator.methodcaller("system", "id")(os)', "import gc; gc.get_objects()",
    'import sys; sys.modules["codingcode_jupyter"]', 'import os; os.environ["CODINGCODE_TRUST"] = "1"',
    "from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline",
    "import threading, os; threading.Thread(target=os.system, args=('id',)).start()",
    "import importlib; importlib.import_module('os').system('id')", "import ctypes",
    "(lambda: 0).__globals__['__builtins__']", "from IPython import get_ipython",
]
ORDINARY = [
    "import pandas as pd\ndf = pd.read_csv('data.csv')\ndf.describe()", "import numpy as np\nnp.arange(10).mean()",
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()", "print(open('README.md').read()[:200])",
    "import json\njson.loads(open('package.json').read())", "sorted(x * x for x in range(10))",
    "from pathlib import Path\nlist(Path('src').glob('*.py'))", "import os\nos.environ.get('PATH')",
]


@pytest.mark.parametrize("code", UNPROVABLE)
def test_unprovable_code_is_unresolved(code: str) -> None:
    assert analyse_python(code, cwd="/p").unresolved, code


@pytest.mark.parametrize("code", ORDINARY)
def test_ordinary_code_stays_resolved(code: str) -> None:
    assert analyse_python(code, cwd="/p").unresolved == [], code
