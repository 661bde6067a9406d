"""What the Python judge can prove: the allowlist of names, modules and attributes it understands.

:func:`unproven` walks the code once and names every reference the judge cannot follow; the
caller (:mod:`.python_code`) reports them as unresolved, which is asked in every mode. A
reference is understood when it is:

- a pure builtin (:data:`SAFE_BUILTINS`), or ``getattr``/``hasattr`` with a literal, ordinary name;
- a module on :data:`PURE_MODULES` (the standard library's data and text modules, the data
  libraries) or a listed attribute of a module the judge reads in part (:data:`PARTLY`);
- a function the judge reads call by call (``open``, ``os.system``, ``subprocess.run``, file and
  network calls: the ``judged`` predicate) — *in the call*; passed as a value (``f = os.system``,
  ``Thread(target=os.system)``, ``map(os.system, ...)``) the judge cannot see how it is called;
- a name the code binds, or one of the person's own namespace (a name the code uses but neither
  binds nor imports, and that is no module of the standard library).

Everything else is unproven: ``eval``/``exec``/``getattr`` by computed names, ``vars``, the
interpreter's machinery (``sys.modules``, frames, ``gc``, ``ctypes``, ``importlib``), IPython's
API (``get_ipython``), this package, modules the judge does not know (importing one runs its
code), assignments to a module's attributes, dunder attributes beyond :data:`DUNDER_OK`,
and unpickling (``read_pickle``, ``allow_pickle=True``).

A name the code uses but neither binds nor imports is looked up in the namespace the code runs
in, when the tool says how (:class:`~..tools.access.LiveName`, from ``ToolAccess.names``): a module or a
function there is followed as if the code had imported it (``sp = subprocess`` in an earlier
cell, then ``sp.run(...)``), plain data (values of builtin types, the data libraries, the
person's own functions and classes) is understood, and any other object is not — its methods
may reach anything. Without a lookup such a name is trusted as data. Method names of IPython's
shell are refused whatever their receiver (:data:`SHELL_METHODS`).
"""

from __future__ import annotations

import ast
import builtins
import sys
from typing import Callable

from ..budget import check as check_budget, checked

__all__ = ["unproven", "PURE_MODULES", "PARTLY", "SAFE_BUILTINS"]



# Any attribute of these modules is understood: computing, parsing, formatting, data frames,
# plots. Their file functions reach paths the judge collects from literal arguments.
PURE_MODULES = frozenset({
    "math", "cmath", "statistics", "decimal", "fractions", "numbers", "random", "re", "string", "textwrap",
    "unicodedata", "difflib", "json", "csv", "collections", "itertools", "functools", "heapq", "bisect", "array",
    "copy", "pprint", "reprlib", "enum", "dataclasses", "typing", "datetime", "time", "calendar", "zoneinfo",
    "hashlib", "hmac", "base64", "binascii", "uuid", "struct", "zlib", "gzip", "bz2", "lzma", "warnings",
    "contextlib", "abc", "html", "urllib.parse", "fnmatch", "glob", "os.path", "posixpath", "pathlib", "shlex",
    "tempfile", "io", "operator", "asyncio", "concurrent.futures", "logging", "locale", "keyword", "secrets",
    "numpy", "pandas", "matplotlib", "mpl_toolkits", "seaborn", "scipy", "sklearn", "statsmodels", "polars",
    "pyarrow", "networkx", "PIL", "skimage", "plotly", "altair", "bokeh", "tqdm", "xarray", "openpyxl",
})  # fmt: skip
# Modules understood in part: the attributes listed (values, pure functions, classes).
PARTLY: dict[str, frozenset[str]] = {
    "os": frozenset({
        "path", "environ", "getcwd", "getcwdb", "getpid", "getppid", "cpu_count", "sep", "linesep", "pathsep",
        "curdir", "pardir", "extsep", "altsep", "devnull", "name", "getenv", "fspath", "fsencode", "fsdecode",
        "urandom", "get_terminal_size", "getuid", "geteuid", "getgid", "getlogin", "uname", "times", "strerror",
        "stat_result", "DirEntry", "PathLike", "error"}),
    "sys": frozenset({
        "version", "version_info", "platform", "executable", "argv", "getsizeof", "maxsize", "stdout", "stderr",
        "getrecursionlimit", "byteorder", "float_info", "int_info", "implementation", "getdefaultencoding",
        "getfilesystemencoding", "path", "prefix", "base_prefix", "exc_info", "exception", "hexversion", "stdin",
        "exit"}),
    "subprocess": frozenset({"PIPE", "DEVNULL", "STDOUT", "CalledProcessError", "TimeoutExpired", "CompletedProcess",
                             "SubprocessError"}),
    "shutil": frozenset({"which", "get_terminal_size", "disk_usage"}),
    "threading": frozenset({"Lock", "RLock", "Event", "Condition", "Semaphore", "BoundedSemaphore", "Barrier",
                            "current_thread", "get_ident", "active_count", "main_thread", "Thread", "local"}),
    "types": frozenset({"SimpleNamespace", "MappingProxyType", "GeneratorType"}),
    # Writing only: a pickle read back (`load`, `loads`, `Unpickler`) runs what it names.
    "pickle": frozenset({"dump", "dumps", "HIGHEST_PROTOCOL", "DEFAULT_PROTOCOL", "PicklingError"}),
    "urllib.request": frozenset({"Request"}),
    "requests": frozenset({"RequestException", "HTTPError", "codes"}),
    "httpx": frozenset({"HTTPError"}),
    "sqlite3": frozenset({"Row", "Error"}),
    "signal": frozenset({"SIGALRM", "SIGINT", "SIGTERM", "SIGKILL", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGQUIT",
                         "Signals", "alarm", "getsignal"}),
    "builtins": frozenset(),
    # Markdown, images and plain displays only: HTML, Javascript, SVG and IFrame run scripts in the
    # person's page, which holds the server's token.
    "IPython.display": frozenset({"display", "Markdown", "Image", "clear_output", "Latex", "Math", "JSON", "Pretty",
                                  "update_display", "DisplayHandle"}),
}
# Never understood, even inside an allowed module: they run code chosen at run time.
BLOCKED = frozenset({"operator.methodcaller", "operator.attrgetter", "pandas.read_pickle", "pandas.eval",
                     "numpy.load.__call__",
                     # They read text as Python: a string evaluated, a config that names callables.
                     "typing.get_type_hints", "typing.ForwardRef", "logging.config", "statsmodels.formula",
                     "statsmodels.api.formula"})
# Live views of the interpreter: read them, never change them.
_READ_ONLY_VALUES = {"os.environ": frozenset({"get", "copy", "items", "keys", "values"}),
                     "sys.path": frozenset({"index", "count", "copy"})}
SAFE_BUILTINS = frozenset({
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod", "complex",
    "dict", "dir", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "id", "int",
    "isinstance", "issubclass", "iter", "len", "list", "map", "max", "memoryview", "min", "next", "object", "oct",
    "ord", "pow", "print", "property", "range", "repr", "reversed", "round", "set", "slice", "sorted",
    "staticmethod", "str", "sum", "super", "tuple", "type", "zip", "aiter", "anext", "display", "True", "False",
    "None", "NotImplemented", "Ellipsis", "__name__", "__doc__",
})  # fmt: skip
# Dunder attributes that only describe or build objects.
DUNDER_OK = frozenset({
    "__name__", "__doc__", "__qualname__", "__module__", "__version__", "__file__", "__class__", "__init__",
    "__annotations__", "__len__", "__iter__", "__next__", "__enter__", "__exit__", "__str__", "__repr__", "__eq__",
    "__hash__", "__getitem__", "__setitem__", "__contains__", "__dataclass_fields__", "__members__", "__post_init__",
})  # fmt: skip
# Frames, code objects and tracebacks reach any namespace, the guard's included.
FRAME_ATTRS = frozenset({"f_globals", "f_locals", "f_back", "f_builtins", "f_code", "gi_frame", "gi_code", "cr_frame",
                         "cr_code", "ag_frame", "tb_frame", "tb_next", "co_code", "_getframe"})
# IPython's shell runs cells, magics and commands: refused whatever the receiver is called.
SHELL_METHODS = frozenset({"system", "system_raw", "system_piped", "run_cell", "run_cell_async", "run_line_magic",
                           "run_cell_magic", "getoutput", "run_code", "run_ast_nodes", "user_ns", "user_global_ns",
                           "safe_execfile", "safe_run_module", "enable_load_extension", "load_extension",
                           "read_pickle"})
# Names the code cannot use without the judge losing sight: IPython's API, the interpreter's.
_NEVER = frozenset({"get_ipython", "__builtins__", "__import__", "__loader__", "__spec__", "__build_class__"})
_STDLIB = frozenset(sys.stdlib_module_names)
_BUILTIN_NAMES = frozenset(dir(builtins))


def _exception_name(name: str) -> bool:
    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)


def _module_understood(module: str) -> bool:
    """An import of ``module`` runs only code the judge knows."""
    parts = module.split(".")
    return any(".".join(parts[:n]) in PURE_MODULES or ".".join(parts[:n]) in PARTLY for n in range(1, len(parts) + 1))


def _module_as_value(module: str) -> str | None:
    """Why a module passed as a value is not understood (whoever receives it may call any of its
    attributes), or None for a pure module none of whose attributes is blocked."""
    if module in PURE_MODULES and not any(blocked.startswith(module + ".") for blocked in BLOCKED):
        return None
    return "is a module passed as a value: what is called on it cannot be followed"


class _Proof(ast.NodeVisitor):
    def __init__(self, qualified: Callable[[ast.AST], str | None], imported: dict[str, str], bound: set[str],
                 judged: Callable[[str], bool], literal: Callable[[ast.AST], object],
                 live_objects: dict[str, str]) -> None:
        self.live_objects = live_objects
        self.qualified = qualified
        self.imported = imported
        self.bound = bound
        self.judged = judged
        self.literal = literal
        self.problems: list[str] = []
        self.parents: dict[int, ast.AST] = {}
        self._visited = 0

    def visit(self, node: ast.AST) -> object:
        # Every node visited counts against the call's judging budget (a script of a million lines).
        self._visited += 1
        if self._visited % 256 == 0:
            check_budget()
        return super().visit(node)

    def run(self, tree: ast.AST) -> list[str]:
        for node in checked(ast.walk(tree)):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.visit(tree)
        return list(dict.fromkeys(self.problems))

    def say(self, text: str) -> None:
        self.problems.append(text)

    # -- imports ------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not _module_understood(alias.name):
                self.say(f"`import {alias.name}`: a module the judge does not know (importing it runs its code)")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or node.module is None:
            self.say("a relative import runs code the judge does not know")
        elif not _module_understood(node.module):
            self.say(f"`from {node.module} import ...`: a module the judge does not know (importing it runs its code)")

    # -- references ---------------------------------------------------------------------------

    def _module_rooted(self, name: str) -> bool:
        root = name.split(".")[0]
        if root in self.imported:
            return True
        return root not in self.bound and (root in _STDLIB or _module_understood(root)
                                           or root in ("codingcode_jupyter", "IPython"))

    def _in_call(self, node: ast.AST) -> bool:
        parent = self.parents.get(id(node))
        return isinstance(parent, ast.Call) and parent.func is node

    def _chain_top(self, node: ast.AST) -> bool:
        parent = self.parents.get(id(node))
        return not (isinstance(parent, ast.Attribute) and parent.value is node)

    def visit_Name(self, node: ast.Name) -> None:
        if self._chain_top(node):
            self._reference(node, node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr.startswith("__") and attr.endswith("__") and attr not in DUNDER_OK:
            self.say(f"`.{attr}` reaches objects the judge cannot follow")
        elif attr in FRAME_ATTRS:
            self.say(f"`.{attr}` reaches the frames of running code (any namespace, the guard's included)")
        name = self.qualified(node)
        if attr in SHELL_METHODS and not (name and self._module_rooted(name)):
            self.say(f"`.{attr}` is IPython's way to run cells, magics or commands (or unpickles)")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and name and self._module_rooted(name):
            self.say(f"assigning `{name}` changes the module for every later cell and tool")
        elif self._chain_top(node) and name is not None:
            self._reference(node, name)
        self.generic_visit(node)

    def _reference(self, node: ast.AST, written: str) -> None:
        if isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)) and "." not in written:
            return  # binding a name of the code's own
        name = self.qualified(node) or written
        root = name.split(".")[0]
        if root in _NEVER or written.split(".")[0] in _NEVER:
            self.say(f"`{written}` is IPython's or the interpreter's own machinery")
            return
        if root == "builtins" and "." in name and root not in self.bound:
            self._builtin(node, name.split(".", 1)[1], written)
            return
        if self._module_rooted(name):
            why = self._module_reference(name, self._in_call(node))
            if why:
                self.say(f"`{written}` {why}")
            return
        if root in self.live_objects and root not in self.bound:
            self.say(f"`{root}` {self.live_objects[root]}")
            return
        if root in self.bound or root not in _BUILTIN_NAMES:
            return  # the code's own name, or plain data of the person's namespace
        self._builtin(node, name, written)

    def _builtin(self, node: ast.AST, name: str, written: str) -> None:
        root, _, rest = name.partition(".")
        if rest:
            if root in SAFE_BUILTINS or _exception_name(root):
                return  # str.join, dict.fromkeys, int.from_bytes (dunders are checked on the attribute)
            self.say(f"`{written}` is not a builtin the judge understands")
            return
        if root in SAFE_BUILTINS or _exception_name(root):
            return
        if self.judged(root) and self._in_call(node):
            return
        if root in ("getattr", "hasattr") and self._in_call(node):
            call = self.parents[id(node)]
            assert isinstance(call, ast.Call)
            attr = self.literal(call.args[1]) if len(call.args) > 1 else None
            if isinstance(attr, str) and not attr.startswith("_") and attr not in SHELL_METHODS | FRAME_ATTRS:
                return
            self.say(f"`{root}` with a computed or private name hides which attribute is used")
            return
        if self.judged(root):
            self.say(f"`{root}` is passed as a value: the judge cannot see how it is called")
            return
        self.say(f"`{root}` is not a builtin the judge understands (it reaches code or names it cannot follow)")

    def _module_reference(self, name: str, in_call: bool) -> str | None:
        """Why a reference to ``name`` (module-qualified) is not understood, or None."""
        if self.judged(name):
            return None if in_call else "is passed as a value: the judge cannot see how it is called"
        if name in BLOCKED or any(name.startswith(blocked + ".") for blocked in BLOCKED):
            return "runs code chosen at run time"
        for value, methods in _READ_ONLY_VALUES.items():
            if name.startswith(value + "."):
                method = name[len(value) + 1:].split(".")[0]
                return None if method in methods else "changes a live view of the interpreter"
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in PURE_MODULES:
                return _module_as_value(prefix) if cut == len(parts) else None
            if prefix in PARTLY:
                if cut < len(parts) and parts[cut] in PARTLY[prefix]:
                    return None
                if cut == len(parts):
                    return _module_as_value(prefix)
                return "is not an attribute the judge understands"
        if parts[0] == "codingcode_jupyter":
            return "is the agent's own code, its approval included"
        return "belongs to a module the judge does not know"

    def visit_Call(self, node: ast.Call) -> None:
        for keyword in node.keywords:
            if keyword.arg == "allow_pickle" and self.literal(keyword.value) is not False:
                self.say("`allow_pickle` unpickles: loading the file runs code in it")
        self.generic_visit(node)


def unproven(tree: ast.AST, *, qualified: Callable[[ast.AST], str | None], imported: dict[str, str],
             bound: set[str], judged: Callable[[str], bool], literal: Callable[[ast.AST], object],
             live_objects: dict[str, str] | None = None) -> list[str]:
    """What in ``tree`` the judge cannot prove harmless (empty when every reference is understood).

    ``qualified`` names a Name/Attribute chain through the code's imports; ``imported`` maps the
    names the code imports to what they import; ``bound`` holds every other name the code binds;
    ``judged`` says whether a qualified name is a call the judge reads argument by argument;
    ``literal`` folds a node to its constant value (or anything else when it cannot);
    ``live_objects`` maps names the live namespace binds to objects the judge does not
    understand (or does not bind yet) to why."""
    return _Proof(qualified, imported, bound, judged, literal, live_objects or {}).run(tree)
