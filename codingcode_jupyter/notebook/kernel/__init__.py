"""Tools only an agent living in the kernel can have: the user's live variables, cells and notebook.

``list_variables``, ``inspect_variable``, ``notebook_history``, ``read_cell_output`` and
``read_notebook`` only look (read-only, so they run without asking); ``run_python`` runs
code in the user's namespace and ``insert_cell`` proposes new cells, both after approval
(their card shows the code).

What each cell showed is recorded from ``%load_ext`` on (:mod:`.outputs`: streams, results,
displays, errors, per execution count, within ``OutputHistory.max_cells`` and
``max_bytes``); cells from before are rebuilt from what IPython kept (:mod:`.recall`).
:mod:`.cell_output` turns a cell into content blocks — images the model sees
(:mod:`.pictures`), HTML as Markdown tables; :mod:`.notebook_file` reads the saved notebook
the frontend named.

How ``run_python`` runs, and why (measured, see tests/notebook/test_kernel_tools.py):
IPython's ``run_cell`` is not re-entrant while the ``%%agent`` cell runs as an awaited
cell, so the code is compiled and ``exec``'d in ``user_ns`` directly — on the kernel's main
thread, like a normal cell, not in a worker thread. A worker thread could not be stopped:
a ``time.sleep(600)`` in it would go on mutating the namespace after the turn was
cancelled. On the main thread the interrupt button raises KeyboardInterrupt inside the
code exactly as in a cell (SIGINT is switched back to Python's default handler for the
duration), and the tool turns it into a cancelled turn; a timeout (SIGALRM) bounds code
nobody interrupts. The event loop is paused while synchronous code runs, just as during a
normal cell. Code with top-level ``await`` is compiled as a coroutine and awaited on the
loop instead, so it stays responsive and the turn's own cancellation stops it.

The read-only tools never run a user-defined property or ``__getattr__`` (looked up with
``inspect.getattr_static``; array and frame libraries are trusted for ``shape`` and the
like); they do call ``repr`` and ``len``, as ``%whos`` and Jupyter's display do, and
``read_cell_output`` formats an ``Out[n]`` the recorder never saw again, as displaying it would.

``insert_cell`` uses ``shell.set_next_input(text, replace=False)``: the kernel cannot add
cells itself, it attaches a ``set_next_input`` payload to the ``%%agent`` cell's
execute_reply, and the frontend inserts a new, unrun code cell below it when that cell
finishes (only when it finishes without an error). A reply carries one such payload, so
the proposals of one agent cell travel as one cell (see :mod:`.insert_cell` for how
several cells and markdown are carried).
"""
