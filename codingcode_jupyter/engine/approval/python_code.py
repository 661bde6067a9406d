"""Python code read with the `ast` module: the paths it names, the programs it starts, what it cannot be sure of.

Used for `python -c CODE` (and here-documents fed to Python) in shell commands, and for a
tool whose argument is Python code (the kernel's run_python): :func:`analyse_python`.

Strings are folded where their value is fixed by the code itself: concatenation, f-strings
and ``%`` / ``str.format`` of constants, ``str.join`` of constants, ``os.path.join``,
pathlib ``/`` joins, names bound once to such a value. ``Path.home()``,
``os.environ['HOME']``, ``os.getenv('HOME')`` and ``expanduser('~')`` are the home
directory. Whatever a rule needs but the code computes at run time (a path from input, an
``exec`` of a string, a dynamic import, ``ctypes``) is reported in ``unresolved``, never
guessed.
"""

from __future__ import annotations

import ast
import builtins
import operator
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from ..budget import OverBudget, check as check_budget, checked
from ..tools.access import NameLookup
from .file_calls import FILE_OBJECTS, FUNCTIONS, METHODS, PATH_METHODS, FileArg, FileCall
from .ipython_syntax import TWICE, Field, expansion, read_cell
from .python_proof import unproven

_BUILTIN_NAMES = frozenset(dir(builtins))

__all__ = ["CodePath", "CodeCall", "CodeCommand", "PythonReading", "analyse_python"]

CodeAccess = Literal["read", "write", "list", "tree", "unknown"]
CallKind = Literal["setuid-bits", "kill-init", "setuid", "delete-tree"]

# Integer arithmetic a flag or mode may be spelled with (`os.O_WRONLY | os.O_CREAT`, `0o700 + 0o55`).
_INT_OPERATORS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.BitOr: operator.or_, ast.Add: operator.add, ast.BitAnd: operator.and_, ast.Sub: operator.sub,
    ast.Mult: operator.mul,
}


@dataclass(frozen=True)
class CodePath:
    """A path the code reaches, how, and through which call."""

    path: str
    access: CodeAccess
    via: str


@dataclass(frozen=True)
class CodeCall:
    """A call the built-in rules judge on its own: setuid bits, killing init, becoming root, deleting a tree."""

    kind: CallKind
    target: str
    via: str


@dataclass(frozen=True)
class CodeCommand:
    """A shell command line the code runs, and the directory it runs in (None: not known)."""

    text: str
    cwd: str | None


@dataclass
class PythonReading:
    """What a piece of Python code does, as far as can be known without running it."""

    paths: list[CodePath] = field(default_factory=list)
    # Shell command lines the code runs (os.system, subprocess with shell=True or an argv list), each
    # with the directory it runs in: where chdir moved, or the cwd it was given.
    commands: list[CodeCommand] = field(default_factory=list)
    calls: list[CodeCall] = field(default_factory=list)
    # Files the code writes with what it downloads (urlretrieve(url, file)).
    downloads: list[str] = field(default_factory=list)
    # The code runs what it downloads (exec of a response body).
    runs_download: bool = False
    network: bool = False
    unresolved: list[str] = field(default_factory=list)


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


@dataclass(frozen=True)
class _PathValue:
    """A pathlib path whose text is known."""

    text: str


@dataclass(frozen=True)
class _Response:
    """The result of a network request (its body is downloaded code or data)."""


# Module constants whose value matters to a rule.
_CONSTANTS: dict[str, Any] = {
    "stat.S_ISUID": 0o4000, "stat.S_ISGID": 0o2000, "stat.S_ISVTX": 0o1000, "stat.S_IRWXU": 0o700,
    "stat.S_IRUSR": 0o400, "stat.S_IWUSR": 0o200, "stat.S_IXUSR": 0o100, "stat.S_IRWXG": 0o70, "stat.S_IRGRP": 0o40,
    "stat.S_IWGRP": 0o20, "stat.S_IXGRP": 0o10, "stat.S_IRWXO": 0o7, "stat.S_IROTH": 0o4, "stat.S_IWOTH": 0o2,
    "stat.S_IXOTH": 0o1, "os.sep": "/", "os.path.sep": "/", "os.curdir": ".", "os.pardir": "..",
}
_SIGNALS = {"signal.SIGKILL": 9, "signal.SIGTERM": 15, "signal.SIGINT": 2, "signal.SIGHUP": 1, "signal.SIGQUIT": 3,
            "signal.SIGSTOP": 19, "signal.SIGABRT": 6, "signal.SIGUSR1": 10, "signal.SIGUSR2": 12}
_PATH_TYPES = frozenset({"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath"})
_SHELL_CALLS = frozenset({"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
                          "commands.getoutput", "pty.spawn"})
_SUBPROCESS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
                         "subprocess.Popen", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell"})
_SETUID = frozenset({"os.setuid", "os.seteuid", "os.setreuid", "os.setresuid", "os.setgid", "os.setegid",
                     "os.setregid", "os.setresgid", "os.setgroups", "os.initgroups"})
_KILL = frozenset({"os.kill", "os.killpg"})
# Calls that read a list without changing it: one bound once is still its display where they see it.
_READS_LIST = frozenset({"print", "len", "str", "repr", "list", "tuple", "sorted", "shlex.join", "any", "all", "min",
                         "max", "enumerate", "zip", "set", "frozenset"})
_DYNAMIC_CODE = frozenset({"exec", "eval", "compile", "__import__", "importlib.import_module", "importlib.__import__",
                           "runpy.run_module", "builtins.exec", "builtins.eval", "code.interact",
                           "code.InteractiveInterpreter", "pickle.loads", "marshal.loads"})
_NETWORK = frozenset({"urllib.request.urlopen", "urllib.urlopen", "urllib2.urlopen", "requests.get", "requests.post",
                      "requests.request", "requests.put", "requests.patch", "requests.delete", "requests.head",
                      "httpx.get", "httpx.post", "httpx.put", "httpx.patch", "httpx.delete", "httpx.request", "http.client.HTTPConnection",
                      "http.client.HTTPSConnection", "socket.socket", "socket.create_connection"})
_DOWNLOAD_TO_FILE = frozenset({"urllib.request.urlretrieve", "urllib.urlretrieve", "wget.download"})
# Calls that move the working directory of everything after them.
_CHDIR = frozenset({"os.chdir", "contextlib.chdir"})
# What a file a data library writes is called when only its stem is computed: no name the host runs
# ends so (a plot per column, `f"{name}.png"`, is not asked about).
_DATA_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf", ".eps", ".tif", ".tiff", ".bmp", ".webp", ".csv",
                  ".tsv", ".parquet", ".feather", ".arrow", ".orc", ".npy", ".npz", ".h5", ".hdf5", ".nc", ".xlsx",
                  ".xls", ".ods", ".dta", ".mat", ".wav", ".mp4", ".pkl", ".pickle", ".log", ".zip", ".gz", ".bz2",
                  ".xz", ".tar")
# make_archive's formats and the suffix each writes.
_ARCHIVE_SUFFIX = {"zip": ".zip", "tar": ".tar", "gztar": ".tar.gz", "bztar": ".tar.bz2", "xztar": ".tar.xz"}
_URL = re.compile(r"(?i)^[a-z][a-z0-9+.-]*://")


# The longest code read with ast (a script of a few thousand lines; an agent's snippets are far shorter).
CODE_MAX = 128 * 1024


def analyse_python(code: str, *, home: str | None = None, cwd: str | None = None,
                   ipython: bool = False, names: NameLookup | None = None) -> PythonReading:
    """Read ``code`` without running it; ``home`` is what ``~`` means, ``cwd`` where relative paths start.

    ``ipython``: the code is a cell as IPython runs it (``!cmd`` lines, magics): its shell lines are
    read as commands and its magics allowed only when the judge knows them (:mod:`.ipython_syntax`).
    ``names``: what a name the code uses without binding it is bound to where it runs."""
    if len(code) > CODE_MAX:
        # Parsing cannot be stopped halfway and its tree's walks take seconds past this: asked unread.
        raise OverBudget(f"the code is {len(code):,} characters long, more than the judge reads ({CODE_MAX:,})")
    reading = PythonReading()
    marker = None
    if ipython:
        cell = read_cell(code)
        code, marker = cell.python, cell.marker
        reading.unresolved.extend(cell.problems)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as error:
        reading.unresolved.append(f"the Python code cannot be parsed ({type(error).__name__}: {error})")
        return reading
    _Reader(reading, home or os.path.expanduser("~"), cwd, names, marker).run(tree)
    return reading


def _judged(name: str) -> bool:
    """A call the judge reads argument by argument (its paths, its command, its address)."""
    if name.startswith(("socket.", "http.client.")):
        return False  # a raw connection's destination and what it sends are not followed
    row = FUNCTIONS.get(name)
    if row is not None and name.startswith(("numpy.", "pandas.")) and all(a.access == "read" for a in row.paths):
        return False  # a data library's reader: a pure function of the data libraries, even passed as a value
    return (row is not None or name in _SHELL_CALLS or name in _SUBPROCESS
            or name in _SETUID or name in _KILL or name in _DOWNLOAD_TO_FILE or name in _NETWORK
            or name in ("os.chmod", "os.lchmod", "os.fchmod") or name in _CHDIR
            or name.startswith(("os.exec", "os.spawn", "os.posix_spawn")))


class _Reader(ast.NodeVisitor):
    def __init__(self, reading: PythonReading, home: str, cwd: str | None, names: NameLookup | None = None,
                 marker: str | None = None) -> None:
        self.names = names
        # The name IPython's shell lines call in the cell as read (ipython_syntax.read_cell).
        self.marker = marker
        # Names of the live namespace bound to objects the judge does not understand (or not bound
        # yet): why they are not followed.
        self.live_objects: dict[str, str] = {}
        self.reading = reading
        self.home = home
        self.cwd = cwd
        self.aliases: dict[str, str] = {}
        # None: bound to something not followed (a loop target, `x += ...`).
        self.bindings: dict[str, list[ast.AST | None]] = {}
        # Where each binding is made (the statement), to tell whether a use sees it (_Scopes).
        self.sites: dict[str, list[ast.AST]] = {}
        # What `with X as name` binds each name to: X (a file the code opened, passed on to a writer).
        self.with_values: dict[str, list[ast.AST]] = {}
        self.scopes = _Scopes()
        self._evaluating: set[str] = set()
        self._visited = 0
        self.tree: ast.AST = ast.Module(body=[], type_ignores=[])
        self._parents: dict[ast.AST, ast.AST] | None = None

    def visit(self, node: ast.AST) -> object:
        # Every node visited counts against the call's judging budget (a script of a million lines).
        self._visited += 1
        if self._visited % 256 == 0:
            check_budget()
        return super().visit(node)

    # -- set-up: imports and names bound once -----------------------------------------------

    def run(self, tree: ast.AST) -> None:
        self.tree = tree
        self.scopes = _Scopes.of(tree)
        for node in checked(ast.walk(tree)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
                    # A name the code also assigns is no longer the value assigned.
                    self._bind(alias.asname or alias.name.split(".")[0], None, node)
            elif isinstance(node, ast.ImportFrom):
                if node.level or node.module is None:
                    continue
                for alias in node.names:
                    if alias.name == "*":
                        self.reading.unresolved.append(f"`from {node.module} import *` hides which names are called")
                        continue
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    self._bind(alias.asname or alias.name, None, node)
            else:
                self._collect_bindings(node)
        own_names = _bound_names(tree)
        if self.marker is not None:
            own_names.add(self.marker)
        self._look_up_free_names(tree, own_names)
        self.visit(tree)
        # What the judge cannot prove, by its allowlist of what it understands (python_proof).
        self.reading.unresolved.extend(unproven(tree, qualified=self.qualified, imported=self.aliases, bound=own_names,
                                                judged=_judged, literal=self.value, live_objects=self.live_objects))

    def _bind(self, name: str, value: ast.AST | None, site: ast.AST) -> None:
        self.bindings.setdefault(name, []).append(value)
        self.sites.setdefault(name, []).append(site)

    def _collect_bindings(self, node: ast.AST) -> None:
        """The names ``node`` binds, and to what when it is one value the judge may fold."""
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    self._bind(target.id, node.value if not isinstance(node, ast.AugAssign) else None, node)
                else:
                    # `*x, = ...`, `a, (x, b) = ...`: bound, to a value not followed.
                    for name in _store_names(target):
                        self._bind(name, None, node)
        elif isinstance(node, (ast.Delete, ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping,
                               ast.ClassDef)):
            # Each rebinds (or unbinds) a name to what the judge does not follow: a name bound once
            # before it is no longer that one value (`case c:` binds c to the subject).
            for name in _other_bound_names(node):
                self._bind(name, None, node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.With, ast.AsyncWith)):
            for bound_name in _loop_targets(node):
                self._bind(bound_name, None, node)
            for item in node.items if isinstance(node, (ast.With, ast.AsyncWith)) else ():
                if isinstance(item.optional_vars, ast.Name):
                    self.with_values.setdefault(item.optional_vars.id, []).append(item.context_expr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if not isinstance(node, ast.Lambda):
                self._bind(node.name, None, node)
            arguments = node.args
            for arg in [*arguments.args, *arguments.kwonlyargs, *arguments.posonlyargs, arguments.vararg, arguments.kwarg]:
                if arg is not None:
                    self._bind(arg.arg, None, node)

    def _look_up_free_names(self, tree: ast.AST, bound: set[str]) -> None:
        """A module or function the live namespace binds a free name to is followed as an import
        (an earlier cell's `sp = subprocess` makes `sp.run` subprocess.run); other objects are noted."""
        if self.names is None:
            return
        free = {node.id for node in checked(ast.walk(tree)) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
        # Builtins too: a namespace binding shadows the builtin of that name.
        for name in sorted(free - bound - set(self.aliases) - set(self.bindings)):
            live = self.names(name)
            if live is None:
                if name not in _BUILTIN_NAMES:
                    # A function body looks it up when called: by then an import may have bound it to anything.
                    self.live_objects[name] = "is not bound yet: what it will be bound to when this runs cannot be followed"
            elif live.kind == "object":
                self.live_objects[name] = (f"is a `{live.qualified}` object in the kernel: the judge cannot follow "
                                           "what its methods do")
            elif live.kind != "data":
                self.aliases[name] = live.qualified
        # An import over a name the namespace already binds changes what earlier code calls.
        for node in checked(ast.walk(tree)):
            if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and not node.level):
                for alias in node.names:
                    if isinstance(node, ast.ImportFrom):
                        local, target = alias.asname or alias.name, f"{node.module}.{alias.name}"
                    else:
                        local = alias.asname or alias.name.split(".")[0]
                        target = alias.name if alias.asname else local
                    live = self.names(local)
                    if live is not None and not (live.kind in ("module", "callable") and live.qualified == target):
                        self.reading.unresolved.append(
                            f"`{local}` is rebound by an import: code defined earlier that uses it would call what "
                            "the import brings")

    # -- values -----------------------------------------------------------------------------

    def qualified(self, node: ast.AST) -> str | None:
        """`os.path.join` for a call's function, following import aliases."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualified(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def value(self, node: ast.AST | None) -> Any:
        """The node's value when the code fixes it: str, int, tuple/list, _PathValue; else UNKNOWN."""
        if node is None:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node.id, node)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for part in node.values:
                if isinstance(part, ast.FormattedValue):
                    if part.format_spec is not None or part.conversion not in (-1, 115):
                        return UNKNOWN
                    inner = self.value(part.value)
                    if isinstance(inner, _PathValue):
                        inner = inner.text
                    if not isinstance(inner, (str, int)):
                        return UNKNOWN
                    parts.append(str(inner))
                else:
                    parts.append(self.value(part))
            return "".join(p for p in parts if isinstance(p, str)) if all(isinstance(p, str) for p in parts) else UNKNOWN
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self.value(e) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else list(items)
        if isinstance(node, ast.Subscript):
            base = self.qualified(node.value)
            key = self.value(node.slice)
            if base in ("os.environ",) and key == "HOME":
                return self.home
            return UNKNOWN
        if isinstance(node, ast.Call):
            return self._call_value(node)
        if isinstance(node, ast.Attribute):
            name = self.qualified(node)
            if name in _CONSTANTS:
                return _CONSTANTS[name]
            if name in _SIGNALS:
                return _SIGNALS[name]
            return UNKNOWN
        return UNKNOWN

    def _name(self, name: str, use: ast.AST) -> Any:
        """The value of ``name`` where ``use`` reads it: the one value the code binds it to, when that
        binding is made before, in a scope the use sees (else what the name holds then is not known)."""
        bound = self.bindings.get(name)
        if not bound or len(bound) != 1 or bound[0] is None or name in self._evaluating:
            return UNKNOWN
        if not self.scopes.sees(use, self.sites[name][0]):
            return UNKNOWN
        self._evaluating.add(name)
        try:
            value = self.value(bound[0])
        finally:
            self._evaluating.discard(name)
        # A list can be changed in place (`c[0] = 'sudo'`, `c.insert(...)`, `random.shuffle(c)`).
        return value if not isinstance(value, list) or self._unchanged(name) else UNKNOWN

    def _unchanged(self, name: str) -> bool:
        """Whether the list ``name`` is bound to is only read: every use of the name is an argument of
        a call that reads it (a command's, a join's, print's), an f-string's field or a loop's iterable.
        Stored into, a method called on it, handed to any other call or to another name, it may change."""
        if self._parents is None:
            self._parents = {child: parent for parent in checked(ast.walk(self.tree))
                             for child in ast.iter_child_nodes(parent)}
        for node in checked(ast.walk(self.tree)):
            if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
                continue
            parent = self._parents.get(node)
            if isinstance(parent, ast.keyword):
                parent = self._parents.get(parent)
            if isinstance(parent, ast.Call) and parent.func is not node and self._reads_only(parent):
                continue
            if isinstance(parent, ast.FormattedValue) or (isinstance(parent, (ast.For, ast.comprehension))
                                                          and parent.iter is node):
                continue
            return False
        return True

    def _reads_only(self, call: ast.Call) -> bool:
        called = self.qualified(call.func) or ""
        if isinstance(call.func, ast.Attribute) and call.func.attr == "join" and isinstance(call.func.value, ast.Constant):
            return True
        return (called in _READS_LIST or called in _SUBPROCESS or called in _SHELL_CALLS or called == self.marker
                or called.startswith(("os.exec", "os.spawn", "os.posix_spawn")))

    def _binop(self, node: ast.BinOp) -> Any:
        left, right = self.value(node.left), self.value(node.right)
        if isinstance(node.op, ast.Div) and isinstance(left, _PathValue):
            if isinstance(right, _PathValue):
                right = right.text
            return _PathValue(_join(left.text, right)) if isinstance(right, str) else UNKNOWN
        if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
            return left + right
        if isinstance(node.op, ast.Mod) and isinstance(left, str):
            args = right if isinstance(right, tuple) else (right,)
            if all(isinstance(a, (str, int)) for a in args):
                try:
                    return left % args
                except (TypeError, ValueError):
                    return UNKNOWN
            return UNKNOWN
        if isinstance(left, int) and isinstance(right, int) and not isinstance(left, bool):
            op = _INT_OPERATORS.get(type(node.op))
            return op(left, right) if op else UNKNOWN
        return UNKNOWN

    def _call_value(self, node: ast.Call) -> Any:
        func = node.func
        name = self.qualified(func)
        args = [self.value(a) for a in node.args]
        if name in _PATH_TYPES:
            texts = [a.text if isinstance(a, _PathValue) else a for a in args]
            if not texts:
                return _PathValue(".")
            if all(isinstance(t, str) for t in texts):
                return _PathValue(_join(*texts))
            return UNKNOWN
        if name in ("pathlib.Path.home", "os.path.expanduser") or (name or "").endswith("Path.home"):
            if name == "os.path.expanduser":
                return self._expanduser(args[0]) if args else UNKNOWN
            return _PathValue(self.home)
        if name in ("os.getenv", "os.environ.get"):
            return self.home if args[:1] == ["HOME"] else UNKNOWN
        if name in ("os.getcwd", "pathlib.Path.cwd"):
            if self.cwd is None:
                return UNKNOWN
            # `Path.cwd() / 'x'` joins as a path does; os.getcwd() is text.
            return self.cwd if name == "os.getcwd" else _PathValue(self.cwd)
        if name == "os.path.join":
            texts = [a.text if isinstance(a, _PathValue) else a for a in args]
            return _join(*texts) if texts and all(isinstance(t, str) for t in texts) else UNKNOWN
        if name in ("os.path.abspath", "os.path.normpath", "os.path.realpath", "str", "os.fspath", "os.fsencode",
                    "os.fsdecode"):
            first = args[0] if args else UNKNOWN
            return first.text if isinstance(first, _PathValue) else first
        if name in ("os.path.dirname",) and args and isinstance(args[0], str):
            return os.path.dirname(args[0])
        if isinstance(func, ast.Attribute):
            owner = self.value(func.value)
            if isinstance(owner, _PathValue) and func.attr in ("expanduser", "resolve", "absolute", "joinpath"):
                if func.attr == "expanduser":
                    return _PathValue(self._expanduser(owner.text))
                if func.attr == "joinpath":
                    rest = [a.text if isinstance(a, _PathValue) else a for a in args]
                    return _PathValue(_join(owner.text, *rest)) if all(isinstance(r, str) for r in rest) else UNKNOWN
                return owner
            if isinstance(owner, str) and func.attr == "join" and len(args) == 1 and isinstance(args[0], (list, tuple)):
                return owner.join(args[0]) if all(isinstance(x, str) for x in args[0]) else UNKNOWN
            if isinstance(owner, str) and func.attr == "format":
                keywords = {k.arg: self.value(k.value) for k in node.keywords if k.arg}
                if all(isinstance(a, (str, int)) for a in args) and all(isinstance(v, (str, int)) for v in keywords.values()):
                    try:
                        return owner.format(*args, **keywords)
                    except (IndexError, KeyError, ValueError):
                        return UNKNOWN
            if isinstance(owner, str) and func.attr in ("strip", "lower", "upper", "replace"):
                if all(isinstance(a, str) for a in args):
                    return getattr(owner, func.attr)(*args)
        if name in _NETWORK:
            return _Response()
        return UNKNOWN

    def _expanduser(self, value: Any) -> Any:
        if isinstance(value, _PathValue):
            value = value.text
        if not isinstance(value, str):
            return UNKNOWN
        if value == "~" or value.startswith("~/"):
            return self.home + value[1:]
        return value

    def path_of(self, node: ast.AST | None) -> str | None:
        value = self.value(node)
        if isinstance(value, _PathValue):
            return value.text
        if isinstance(value, bytes):
            return value.decode(errors="replace")
        return value if isinstance(value, str) else None

    # -- calls --------------------------------------------------------------------------------

    def add_path(self, node: ast.AST | None, access: CodeAccess, via: str) -> str | None:
        path = self.path_of(node)
        if path is None:
            if node is not None and not isinstance(node, ast.Constant):
                self.reading.unresolved.append(f"`{via}` reaches a path the code computes at run time")
            return None
        if access == "list" and any(ch in path for ch in "*?["):
            access = "read" if via.endswith("glob") else access
        self.reading.paths.append(CodePath(self._absolute(path), access, via))
        return path

    def _absolute(self, path: str) -> str:
        if self.cwd is not None and not os.path.isabs(path) and not path.startswith("~"):
            return os.path.join(self.cwd, path)
        return path

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)) and self.qualified(node.value) == "os.environ":
            self.reading.unresolved.append("a write to `os.environ` changes what later tools and commands see")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.qualified(node.func) or ""
        short = name.rsplit(".", 1)[-1]
        args = node.args
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if self.marker is not None and name == self.marker:
            self._shell_line(node)
        elif name in ("os.chmod", "os.lchmod", "os.fchmod") or (short in ("chmod", "lchmod") and isinstance(node.func, ast.Attribute)):
            self._chmod(node, name)
        elif name in FUNCTIONS:
            self._file_call(node, name, FUNCTIONS[name])
        elif name in _CHDIR:
            self._chdir(node, name)
        elif name in _KILL:
            self._kill(name, args)
        elif name in _SETUID:
            self.reading.calls.append(CodeCall("setuid", ast.unparse(node), name))
        elif name in _SHELL_CALLS:
            self._shell(args[0] if args else keywords.get("cmd") or keywords.get("command"), name)
        elif name in _SUBPROCESS or name.startswith(("os.exec", "os.spawn", "os.posix_spawn")):
            self._subprocess(node, name)
        elif name in _DOWNLOAD_TO_FILE:
            self._download(name, node)
        elif name in _DYNAMIC_CODE or short in ("exec", "eval") and name in ("exec", "eval"):
            if name in ("exec", "eval", "builtins.exec", "builtins.eval") and args and self._from_network(args[0]):
                self.reading.runs_download = True
            self.reading.unresolved.append(f"`{name}` runs code that is only known when it runs")
        elif name.startswith("ctypes") or name in ("os.fork", "os.forkpty", "multiprocessing.Process"):
            self.reading.unresolved.append(f"`{name}` can do anything the rules judge, out of their sight")
        elif name == "getattr" and len(args) > 1 and not isinstance(self.value(args[1]), str):
            self.reading.unresolved.append("`getattr` with a computed name hides which function is called")
        elif name in _NETWORK:
            self.reading.network = True
        elif not (isinstance(node.func, ast.Attribute) and self._method_call(node, node.func, name)):
            self._other_call(name, args, keywords)
        self.generic_visit(node)

    def _shell_line(self, node: ast.Call) -> None:
        """A line IPython runs as a shell command (`!cmd`, `%sx cmd`): its pieces as IPython expands
        them (ipython_syntax), judged as one command when every piece is known text."""
        texts: list[str] = []
        for arg in node.args:
            value = self.value(arg)
            value = value.text if isinstance(value, _PathValue) else value
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str):
                self.reading.unresolved.append(f"the shell line's `{{{_clip(ast.unparse(arg))}}}` is expanded from a "
                                               "Python value only known when it runs")
                return
            texts.append(value)
        command = "".join(texts)
        if any(k.arg == TWICE for k in node.keywords):
            again = expansion(command)
            if again is not None and any(isinstance(piece, Field) for piece in again):
                self.reading.unresolved.append(f"`{_clip(command)}` is expanded a second time, as Python, when it runs")
                return
            command = "".join(p for p in again if isinstance(p, str)) if again is not None else command
        self._run(command)

    def _file_call(self, node: ast.Call, via: str, row: FileCall, owner: "_PathValue | None" = None,
                   shift: int = 0) -> None:
        """A call of the file table (file_calls): each file argument added with how the call reaches it.
        ``owner``: the path a pathlib method is called on; ``shift``: a method called on its class."""
        if _hidden_arguments(node) and not self._all_given(node, row, shift):
            self.reading.unresolved.append(f"`{via}` is given `*`/`**` arguments: which file it reaches, and how, "
                                           "is only known when it runs")
            return
        if row.special == "archive":
            self._archive(node, via)
            return
        if row.special == "temp":
            self._temp_file(node, via)
            return
        for arg in row.paths:
            access = self._mode_access(node, row, shift) if arg.access == "mode" else arg.access
            if arg.keywords == ("self",):
                if owner is not None:
                    self.reading.paths.append(CodePath(self._absolute(owner.text), access, via))
                continue
            target = _argument(node, arg, shift)
            if target is not None:
                self._file_arg(target, access, via)
        if via in ("shutil.rmtree", "os.removedirs") and node.args:
            path = self.path_of(node.args[0])
            if path is not None:
                self.reading.calls.append(CodeCall("delete-tree", self._absolute(path), via))

    def _all_given(self, node: ast.Call, row: FileCall, shift: int) -> bool:
        """Whether every file argument and the mode of a file-table call are written out in it (a
        `*`/`**` beside them then cannot name another file or turn a read into a write)."""
        wanted = [arg for arg in row.paths if arg.keywords != ("self",)]
        if row.mode is not None:
            wanted.append(FileArg(row.mode[0], (row.mode[1],), "read"))
        return not row.special and all(_argument(node, arg, shift) is not None for arg in wanted)

    def _mode_access(self, node: ast.Call, row: FileCall, shift: int) -> CodeAccess:
        """Read or write, as the call's mode says (`"w"`, `"a"`, `"x"`, `"+"` write)."""
        assert row.mode is not None
        position, keyword, default = row.mode
        found = _argument(node, FileArg(position, (keyword,), "read"), shift)
        mode = default if found is None else self.value(found)
        if not isinstance(mode, str):
            return "unknown"
        return "write" if any(c in mode for c in "wax+") else "read"

    def _file_arg(self, node: ast.AST, access: CodeAccess, via: str) -> None:
        """One file argument: its path when the code fixes it; a URL is the network; a file object the
        code opened is no name; a computed name is unresolved, unless it ends with a data suffix."""
        path = self.path_of(node)
        if path is not None:
            if _URL.match(path):
                self.reading.network = True
                return
            if access == "list" and any(ch in path for ch in "*?["):
                access = "read" if via.endswith("glob") else access
            self.reading.paths.append(CodePath(self._absolute(path), access, via))
        elif isinstance(node, ast.Constant) or self._file_object(node):
            return
        elif access == "read" and via.startswith(("numpy.", "pandas.")):
            return  # a data file read from a computed name: read, never run
        elif not (access == "write" and (self._literal_suffix(node) or "").lower().endswith(_DATA_SUFFIXES)):
            self.reading.unresolved.append(f"`{via}` reaches a path the code computes at run time")

    def _file_object(self, node: ast.AST) -> bool:
        """A file object the code opened (its open call judged), not a name: `open(...)`, `io.StringIO()`,
        `sys.stdout`, a name bound (or `with ... as`) to one."""
        if isinstance(node, ast.Call):
            called = self.qualified(node.func) or ""
            return called in FILE_OBJECTS or (isinstance(node.func, ast.Attribute) and node.func.attr == "open")
        if isinstance(node, ast.Attribute):
            return (self.qualified(node) or "") in FILE_OBJECTS
        if not isinstance(node, ast.Name):
            return False
        values = [v for v in self.bindings.get(node.id, []) if v is not None]
        opened = self.with_values.get(node.id, [])
        if len(values) + len(opened) != len(self.bindings.get(node.id, [])) or not (values or opened):
            return False  # bound elsewhere too (a loop, an argument)
        return all(isinstance(v, ast.Call) and self._file_object(v) for v in [*values, *opened])

    def _literal_suffix(self, node: ast.AST) -> str | None:
        """The text a computed name surely ends with (`f"{x}.png"`, `x + ".csv"`), if any."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr) and node.values:
            return self._literal_suffix(node.values[-1])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._literal_suffix(node.right)
        if isinstance(node, ast.Call) and self.qualified(node.func) == "os.path.join" and node.args:
            return self._literal_suffix(node.args[-1])
        return None

    def _method_call(self, node: ast.Call, func: ast.Attribute, name: str) -> bool:
        """A method of the file table: on a path (`Path(F).write_text`), on any object the data
        libraries' writers (`df.to_csv(F)`), or such a writer called on its class
        (`pd.DataFrame.to_csv(df, F)`). False when it is none of them."""
        attr = func.attr
        owner = self.value(func.value)
        if attr in PATH_METHODS and isinstance(owner, _PathValue):
            self._file_call(node, f"Path.{attr}", PATH_METHODS[attr], owner=owner)
            return True
        if attr in ("read_text", "read_bytes", "write_text", "write_bytes", "unlink", "rmdir", "touch",
                    "symlink_to") and owner is UNKNOWN and self._looks_like_path(func.value):
            self.reading.unresolved.append(f"`.{attr}()` on a path the code computes at run time")
            return True
        if attr not in METHODS or isinstance(owner, (str, _PathValue)):
            return False
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        on_class = bool(name) and isinstance(root, ast.Name) and root.id in self.aliases
        self._file_call(node, f".{attr}", METHODS[attr], shift=1 if on_class else 0)
        return True

    def _archive(self, node: ast.Call, via: str) -> None:
        """`shutil.make_archive(base, format, root_dir, base_dir)`: writes base + the format's suffix and
        reads the whole tree under root_dir/base_dir (the working directory by default), as `tar c` does."""
        base = _argument(node, FileArg(0, ("base_name",), "write"))
        form = self.value(_argument(node, FileArg(1, ("format",), "read")))
        if base is not None:
            path = self.path_of(base)
            if path is None:
                self.reading.unresolved.append(f"`{via}` writes an archive the code names at run time")
            else:
                suffix = _ARCHIVE_SUFFIX.get(form, "") if isinstance(form, str) else ""
                self.reading.paths.append(CodePath(self._absolute(path + suffix), "write", via))
        parts = []
        for arg in (FileArg(2, ("root_dir",), "tree"), FileArg(3, ("base_dir",), "tree")):
            found = _argument(node, arg)
            part = "." if found is None or (isinstance(found, ast.Constant) and found.value is None) else self.path_of(found)
            if part is None:
                self.reading.unresolved.append(f"`{via}` archives a directory the code computes at run time")
                return
            parts.append(self._expanduser(part))
        self.reading.paths.append(CodePath(os.path.normpath(self._absolute(os.path.join(*parts))), "tree", via))

    def _temp_file(self, node: ast.Call, via: str) -> None:
        """A temporary file or directory made in a directory of the code's choosing: its name is random,
        but its prefix and suffix are the code's (`suffix='.pth'`)."""
        at = 4 if via.endswith(("NamedTemporaryFile", "TemporaryFile")) else 0
        texts: dict[str, str | None] = {}
        for offset, key in enumerate(("suffix", "prefix", "dir")):
            given = _argument(node, FileArg(at + offset, (key,), "write"))
            if given is not None and not (isinstance(given, ast.Constant) and given.value is None):
                texts[key] = self.path_of(given)
        if "dir" not in texts:
            return  # the system's temporary directory
        if None in texts.values():
            self.reading.unresolved.append(f"`{via}` makes a file the code names at run time")
            return
        name = f"{texts.get('prefix') or 'tmp'}XXXXXXXX{texts.get('suffix') or ''}"
        self.reading.paths.append(CodePath(self._absolute(os.path.join(self._expanduser(texts["dir"] or ""), name)),
                                           "write", via))

    def _chdir(self, node: ast.Call, name: str) -> None:
        """`os.chdir` moves where later relative paths and commands are resolved. To somewhere unknown,
        or from code that may run at another time or not at all (a function, a branch, a loop, a
        `with`), where the code after it runs is not known."""
        path = self.path_of(node.args[0]) if node.args else None
        if path is None:
            self.reading.unresolved.append(f"`{name}` moves to a directory the code computes at run time")
        elif not self.scopes.straight_line(node):
            path = None
            self.reading.unresolved.append(f"`{name}` in a function, branch, loop or `with`: where the code after it "
                                           "runs is not known")
        self.cwd = self._absolute(self._expanduser(path)) if path is not None else None

    def _kill(self, name: str, args: list[ast.expr]) -> None:
        """A signal to init or every process (pid 1, -1) is its own danger; to a computed pid, unknown."""
        pid = self.value(args[0]) if args else UNKNOWN
        if isinstance(pid, int) and pid in (1, -1):
            self.reading.calls.append(CodeCall("kill-init", str(pid), name))
        elif not isinstance(pid, int):
            self.reading.unresolved.append(f"`{name}` signals a process the code picks at run time")

    def _download(self, name: str, node: ast.Call) -> None:
        """A download saved to a file writes that file, which may later be run."""
        self.reading.network = True
        args, keywords = node.args, {k.arg: k.value for k in node.keywords if k.arg}
        target = args[1] if len(args) > 1 else keywords.get("filename") or keywords.get("out")
        if target is None and _hidden_arguments(node):
            self.reading.unresolved.append(f"`{name}` is given `*`/`**` arguments: where it saves is only known when it runs")
            return
        path = self.path_of(target)
        if path is not None:
            self.reading.downloads.append(self._absolute(path))
            self.reading.paths.append(CodePath(self._absolute(path), "write", name))
        elif target is not None:
            self.reading.unresolved.append(f"`{name}` saves to a file the code computes at run time")

    def _other_call(self, name: str, args: list[ast.expr], keywords: dict[str, ast.expr]) -> None:
        """Any other call: its string arguments that look like paths may be reached."""
        for arg in list(args) + list(keywords.values()):
            path = self.path_of(arg)
            if path is not None and _path_like(path):
                self.reading.paths.append(CodePath(self._absolute(path), "unknown", name or "a call"))

    def _looks_like_path(self, node: ast.AST) -> bool:
        return isinstance(node, (ast.Call, ast.BinOp, ast.Name, ast.Attribute))

    def _from_network(self, node: ast.AST) -> bool:
        for sub in checked(ast.walk(node)):
            if isinstance(sub, ast.Call) and (self.qualified(sub.func) or "") in _NETWORK:
                return True
            if isinstance(sub, ast.Name) and isinstance(self._name(sub.id, sub), _Response):
                return True
        return False

    def _chmod(self, node: ast.Call, name: str) -> None:
        args = node.args
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        path = self.path_of(args[0]) if args else None
        mode = self.value(args[1] if len(args) > 1 else keywords.get("mode"))
        self._mode(mode, path or "?", name)
        if args:
            self.add_path(args[0], "write", name)

    def _mode(self, mode: Any, path: str, via: str) -> None:
        if isinstance(mode, int) and not isinstance(mode, bool):
            if mode & 0o6000:
                self.reading.calls.append(CodeCall("setuid-bits", f"{oct(mode)} {path}", via))
        else:
            self.reading.unresolved.append(f"`{via}` sets a file mode the code computes at run time")

    def _run(self, text: str, cwd: str | None | bool = True) -> None:
        """A command the code runs, where the code is now (``cwd`` True) or in ``cwd``."""
        self.reading.commands.append(CodeCommand(text, self.cwd if cwd is True else cwd if isinstance(cwd, str) else None))

    def _shell(self, node: ast.AST | None, via: str) -> None:
        value = self.value(node)
        if isinstance(value, str):
            self._run(value)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            self._run(shlex.join(value))
        else:
            self.reading.unresolved.append(f"`{via}` runs a command the code computes at run time")

    def _given_cwd(self, name: str, args: list[ast.expr], keywords: dict[str, ast.expr]) -> str | None | bool:
        """The directory a subprocess call runs its command in: its ``cwd`` (Popen's tenth argument),
        True for where the code is, None when the code computes it (noted as unresolved)."""
        node = keywords.get("cwd") or (args[9] if len(args) > 9 and name.startswith("subprocess.") else None)
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return True
        path = self.path_of(node)
        if path is None:
            self.reading.unresolved.append(f"`{name}` runs its command in a directory the code computes at run time")
            return None
        return self._absolute(self._expanduser(path))

    def _subprocess(self, node: ast.Call, name: str) -> None:
        args = node.args
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        if _hidden_arguments(node):
            self.reading.unresolved.append(f"`{name}` is given `*`/`**` arguments: its program, its shell and its "
                                           "directory are only known when it runs")
            return
        if "executable" in keywords:
            # The program run is `executable`, whatever the argument list names first.
            self.reading.unresolved.append(f"`{name}(executable=...)` runs another program than its command names")
            return
        cwd = self._given_cwd(name, args, keywords)
        if cwd is None:
            return
        if name.startswith(("os.exec", "os.spawn", "os.posix_spawn")):
            # os.execvp(file, args) / os.spawnl(mode, path, arg0, ...): the program and its words.
            values = [self.value(a) for a in args]
            if name.startswith("os.spawn"):
                values = values[1:]
            argv: list[Any] = []
            if len(values) >= 2 and isinstance(values[1], (list, tuple)):
                argv = [values[0], *list(values[1])[1:]]
            else:
                argv = [values[0], *values[2:]] if values else []
            argv = [a for a in argv if not isinstance(a, dict)]
            if argv and all(isinstance(a, str) for a in argv):
                self._run(shlex.join(argv))
            else:
                self.reading.unresolved.append(f"`{name}` runs a program the code computes at run time")
            return
        command = args[0] if args else keywords.get("args")
        shell = self.value(keywords.get("shell")) if "shell" in keywords else False
        if name == "asyncio.create_subprocess_shell":
            shell = True
        if name == "asyncio.create_subprocess_exec":
            values = [self.value(a) for a in args]
            if values and all(isinstance(v, str) for v in values):
                self._run(shlex.join(values), cwd)
            else:
                self.reading.unresolved.append(f"`{name}` runs a program the code computes at run time")
            return
        value = self.value(command)
        if shell is True and isinstance(value, str):
            self._run(value, cwd)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            self._run(shlex.join(value), cwd)
        elif isinstance(value, str) and shell is False:
            self._run(shlex.quote(value), cwd)
        else:
            self.reading.unresolved.append(f"`{name}` runs a command the code computes at run time")


def _hidden_arguments(node: ast.Call) -> bool:
    """A `*args` or `**kwargs` in the call: what it passes, and where, is only known when it runs."""
    return any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)


def _argument(node: ast.Call, arg: FileArg, shift: int = 0) -> ast.expr | None:
    """The expression a call passes for ``arg`` (by keyword, or at its position moved by ``shift``)."""
    for keyword in node.keywords:
        if keyword.arg in arg.keywords:
            return keyword.value
    position = arg.position + shift if arg.position is not None else None
    if position is not None and position < len(node.args) and not isinstance(node.args[position], ast.Starred):
        return node.args[position]
    return None


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the code binds itself (assignments, definitions, arguments, handlers), imports aside."""
    bound: set[str] = set()
    for node in checked(ast.walk(tree)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
    return bound


def _store_names(target: ast.AST) -> list[str]:
    """The names an assignment target binds: itself, or each inside a tuple, list or `*`."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _store_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _store_names(element)]
    return []


def _other_bound_names(node: ast.AST) -> list[str]:
    """The names `del`, `except ... as`, a `case` pattern or a class statement bind or unbind."""
    if isinstance(node, ast.Delete):
        return [name for target in node.targets for name in _store_names(target)]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    return [node.name] if isinstance(node, ast.ClassDef) else []


def _loop_targets(node: ast.AST) -> list[str]:
    targets: list[ast.AST] = []
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    names: list[str] = []
    for target in targets:
        names.extend(n.id for n in checked(ast.walk(target)) if isinstance(n, ast.Name))
    return names


def _join(*parts: str) -> str:
    return os.path.join(*parts) if parts else ""


def _path_like(text: str) -> bool:
    return 0 < len(text) < 4096 and "\n" not in text and (
        text.startswith(("/", "~", "./", "../")) or text in (".", "..") or text.startswith(".env")
        or ("/" in text and " " not in text))


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


_SCOPE_NODES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_NOT_STRAIGHT = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match, ast.BoolOp,
                 ast.IfExp, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda, ast.FunctionDef,
                 ast.AsyncFunctionDef, ast.ClassDef, getattr(ast, "TryStar", ast.Try))


@dataclass
class _Scopes:
    """Which scope each node of a tree is in, and which statements are straight in a scope's body:
    a binding made there, before a use, in a scope the use sees, is what the use reads."""

    scope_of: dict[int, ast.AST] = field(default_factory=dict)
    outer: dict[int, ast.AST | None] = field(default_factory=dict)
    direct: set[int] = field(default_factory=set)
    # Nodes of the module's own straight-line code: run once, in order, when the code runs.
    straight: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, tree: ast.AST) -> "_Scopes":
        scopes = cls(outer={id(tree): None})
        stack: list[tuple[ast.AST, ast.AST, bool]] = [(tree, tree, True)]
        while stack:
            node, scope, straight = stack.pop()
            if straight:
                scopes.straight.add(id(node))
            body = getattr(node, "body", None) if isinstance(node, _SCOPE_NODES) else None
            if isinstance(body, list):
                scopes.direct.update(id(statement) for statement in body)
            # What a compound statement, a condition or a definition holds may run later, again or never.
            inside = straight and not isinstance(node, _NOT_STRAIGHT)
            for child in checked(ast.iter_child_nodes(node)):
                scopes.scope_of[id(child)] = scope
                if isinstance(child, _SCOPE_NODES):
                    scopes.outer[id(child)] = scope
                    stack.append((child, child, False))
                else:
                    stack.append((child, scope, inside))
        return scopes

    def straight_line(self, node: ast.AST) -> bool:
        return id(node) in self.straight

    def sees(self, use: ast.AST, site: ast.AST) -> bool:
        """A binding at ``site`` holds where ``use`` reads the name: straight in the body of a scope
        that is (or encloses, not as a class body) the use's, and over before the use starts (not
        in a branch or loop, which may not have run, and not after, when the name still holds what
        it held before: in a notebook, anything)."""
        binding_scope = self.scope_of.get(id(site))
        if binding_scope is None or id(site) not in self.direct:
            return False
        end = (getattr(site, "end_lineno", None) or 0, getattr(site, "end_col_offset", None) or 0)
        if end > (getattr(use, "lineno", 0), getattr(use, "col_offset", 0)):
            return False
        scope: ast.AST | None = self.scope_of.get(id(use))
        if scope is binding_scope:
            return True
        if isinstance(binding_scope, ast.ClassDef):
            return False  # a class body's names are not its methods'
        while scope is not None and scope is not binding_scope:
            scope = self.outer.get(id(scope))
        return scope is binding_scope
