"""The one table of Python calls that reach files by name: which argument names a file, and how.

The Python judge (:mod:`.python_code`) looks every call up here, three ways:

- :data:`FUNCTIONS`, by qualified name: ``open``, ``os.remove``, ``shutil.copy``, ``numpy.savetxt``,
  ``pandas.to_pickle``, ``logging.FileHandler``...;
- :data:`METHODS`, by attribute, whatever object they are called on: the data libraries' writers
  (``df.to_csv``, ``fig.savefig``, ``arr.tofile``, ``image.save``, ``pl_df.write_csv``...), so a
  frame from the notebook writes where its call says, as ``open`` does;
- :data:`PATH_METHODS`, by attribute on a pathlib path: ``Path(F).write_text``, ``.rename(T)``...

A write to a file the host runs later (``sitecustomize.py``, a ``.pth``, ``.git/hooks/*``,
``.bashrc``) is then asked by the rules whatever call makes it; a write to a name the code
computes is unresolved, unless the argument is a file object the code opened (the open call was
judged). ``access`` ``"mode"`` means read or write as the call's mode says (``"w"``, ``"a"``,
``"x"``, ``"+"`` write). Archives (``shutil.make_archive``: a recursive read of its root, the
working directory by default) and temporary files (a ``.pth`` suffix in a chosen directory) are
read by :mod:`.python_code` from their own rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["FileArg", "FileCall", "FUNCTIONS", "METHODS", "PATH_METHODS", "FILE_OBJECTS", "Access"]

Access = Literal["read", "write", "list", "tree", "unknown", "mode"]


@dataclass(frozen=True)
class FileArg:
    """An argument naming a file: its position, its keyword names, how the call reaches it."""

    position: int | None
    keywords: tuple[str, ...]
    access: Access


@dataclass(frozen=True)
class FileCall:
    """What a call reaches: its file arguments; where its mode is (position, keyword, default)."""

    paths: tuple[FileArg, ...]
    mode: tuple[int | None, str, str] | None = None
    # Rows read by python_code's own code: "archive" (make_archive), "temp" (tempfile's makers).
    special: str = ""


def _one(position: int | None, keyword: str, access: Access, *more: str) -> FileCall:
    return FileCall((FileArg(position, (keyword, *more), access),))


def _opener(keyword: str, mode_at: int | None, default: str) -> FileCall:
    return FileCall((FileArg(0, (keyword,), "mode"),), mode=(mode_at, "mode", default))


def _copy(tree: bool = False) -> FileCall:
    return FileCall((FileArg(0, ("src",), "tree" if tree else "read"), FileArg(1, ("dst",), "write")))


_PANDAS_READ = ("filepath_or_buffer", "path", "io", "path_or_buf", "path_or_buffer")
_NETWORKX_WRITERS = ("write_gml", "write_graphml", "write_graphml_xml", "write_edgelist", "write_weighted_edgelist",
                     "write_adjlist", "write_multiline_adjlist", "write_gexf", "write_pajek")

FUNCTIONS: dict[str, FileCall] = {
    # Opened for reading or writing by their mode.
    **{name: _opener("file", 1, "r") for name in ("open", "io.open", "builtins.open", "codecs.open", "io.FileIO")},
    **{name: _opener("filename", 1, "rb") for name in ("gzip.open", "bz2.open", "lzma.open", "gzip.GzipFile",
                                                         "bz2.BZ2File", "lzma.LZMAFile")},
    "numpy.memmap": _opener("filename", 2, "r+"), "numpy.lib.format.open_memmap": _opener("filename", 1, "r+"),
    "os.open": _one(0, "path", "unknown"),
    # Changed or made.
    **{name: _one(0, "path", "write") for name in (
        "os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.truncate", "os.mkdir", "os.makedirs", "os.mkfifo",
        "os.chown", "os.lchown", "os.utime", "shutil.rmtree", "shutil.chown")},
    # Listed or looked at.
    **{name: _one(0, "path", "list", "top", "pathname") for name in (
        "os.listdir", "os.scandir", "os.walk", "os.stat", "os.lstat", "os.path.exists", "os.path.isfile",
        "os.path.isdir", "os.path.getsize", "os.readlink", "os.access", "shutil.disk_usage", "glob.glob",
        "glob.iglob")},
    **{name: _one(0, "filename", "read") for name in ("linecache.getline", "linecache.getlines", "runpy.run_path",
                                                       "fileinput.input")},
    **{name: _one(0, "name", "unknown", "file", "database") for name in ("tarfile.open", "zipfile.ZipFile",
                                                                          "sqlite3.connect", "py_compile.compile")},
    # Read from one, written to the other.
    **{name: _copy() for name in ("shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "os.rename",
                                  "os.replace", "os.renames", "os.link", "os.symlink")},
    "shutil.copytree": _copy(tree=True),
    "shutil.make_archive": FileCall((FileArg(0, ("base_name",), "write"),), special="archive"),
    **{name: FileCall((), special="temp") for name in (
        "tempfile.NamedTemporaryFile", "tempfile.TemporaryFile", "tempfile.mkstemp", "tempfile.mkdtemp",
        "tempfile.TemporaryDirectory")},
    # The data libraries' functions that write (or read) a file they are given.
    **{name: _one(0, "file", "write", "fname") for name in ("numpy.save", "numpy.savez", "numpy.savez_compressed",
                                                            "numpy.savetxt", "matplotlib.pyplot.savefig")},
    **{name: _one(0, "file", "read", "fname") for name in ("numpy.load", "numpy.loadtxt", "numpy.genfromtxt",
                                                           "numpy.fromfile")},
    **{f"pandas.read_{kind}": _one(0, _PANDAS_READ[0], "read", *_PANDAS_READ[1:]) for kind in (
        "csv", "table", "json", "excel", "parquet", "feather", "fwf", "xml", "stata", "orc", "sas", "spss", "hdf")},
    "pandas.to_pickle": _one(1, "filepath_or_buffer", "write", "path"),
    "pandas.ExcelWriter": _one(0, "path", "write"),
    "pandas.HDFStore": _opener("path", 1, "a"),
    "json.dump": _one(1, "fp", "write"), "pickle.dump": _one(1, "file", "write"),
    **{name: _one(0, "filename", "write") for name in (
        "logging.FileHandler", "logging.handlers.RotatingFileHandler", "logging.handlers.TimedRotatingFileHandler",
        "logging.handlers.WatchedFileHandler")},
    "logging.basicConfig": _one(None, "filename", "write"),
    "scipy.io.savemat": _one(0, "file_name", "write"), "scipy.io.wavfile.write": _one(0, "filename", "write"),
    "scipy.io.mmwrite": _one(0, "target", "write"), "scipy.sparse.save_npz": _one(0, "file", "write"),
    **{name: _one(0, "fname", "write") for name in ("skimage.io.imsave", "matplotlib.pyplot.imsave",
                                                    "matplotlib.image.imsave")},
    **{f"networkx.{name}": _one(1, "path", "write") for name in _NETWORKX_WRITERS},
    "pyarrow.parquet.write_table": _one(1, "where", "write"), "pyarrow.orc.write_table": _one(1, "where", "write"),
    "pyarrow.feather.write_feather": _one(1, "dest", "write"), "pyarrow.csv.write_csv": _one(1, "output_file", "write"),
    **{f"bokeh.{module}.output_file": _one(0, "filename", "write") for module in ("io", "plotting")},
    **{f"bokeh.{module}.save": _one(1, "filename", "write") for module in ("io", "plotting")},
}  # fmt: skip

# Writers of the data libraries, on whatever object they are called (a frame, a figure, an array).
METHODS: dict[str, FileCall] = {
    "to_csv": _one(0, "path_or_buf", "write"), "to_pickle": _one(0, "path", "write"),
    "to_parquet": _one(0, "path", "write"), "to_json": _one(0, "path_or_buf", "write"),
    "to_excel": _one(0, "excel_writer", "write"), "to_feather": _one(0, "path", "write"),
    "to_hdf": _one(0, "path_or_buf", "write"), "to_stata": _one(0, "path", "write"),
    "to_html": _one(0, "buf", "write"), "to_latex": _one(0, "buf", "write"), "to_markdown": _one(0, "buf", "write"),
    "to_string": _one(0, "buf", "write"), "to_xml": _one(0, "path_or_buffer", "write"),
    "to_orc": _one(0, "path", "write"), "to_netcdf": _one(0, "path", "write"), "to_zarr": _one(0, "store", "write"),
    "savefig": _one(0, "fname", "write"), "tofile": _one(0, "fid", "write"), "dump": _one(0, "file", "write"),
    "save": _one(0, "fp", "write", "filename", "fname", "path"), "write_image": _one(0, "file", "write"),
    "write_html": _one(0, "file", "write"),
    **{name: _one(0, "file", "write", "path", "workbook", "target") for name in (
        "write_csv", "write_parquet", "write_json", "write_ndjson", "write_ipc", "write_ipc_stream", "write_avro",
        "write_excel", "write_delta", "sink_parquet", "sink_csv", "sink_ipc", "sink_ndjson")},
}  # fmt: skip

# pathlib's methods reach the path they are called on (``self``) and, for some, an argument.
PATH_METHODS: dict[str, FileCall] = {
    **{name: FileCall((FileArg(None, ("self",), "read"),)) for name in ("read_text", "read_bytes")},
    "open": FileCall((FileArg(None, ("self",), "mode"),), mode=(0, "mode", "r")),
    **{name: FileCall((FileArg(None, ("self",), "write"),)) for name in (
        "write_text", "write_bytes", "touch", "unlink", "rmdir", "mkdir", "chmod", "lchmod")},
    **{name: FileCall((FileArg(None, ("self",), "write"), FileArg(0, ("target",), "write"))) for name in (
        "rename", "replace", "symlink_to", "hardlink_to")},
    **{name: FileCall((FileArg(None, ("self",), "list"),)) for name in (
        "iterdir", "glob", "rglob", "exists", "is_file", "is_dir", "stat", "walk")},
}  # fmt: skip

# Calls that make a file object (their own file judged by the row above): passed on to a writer,
# it is not a path the writer names.
FILE_OBJECTS = frozenset({*(name for name, call in FUNCTIONS.items() if call.mode is not None), "io.StringIO",
                          "io.BytesIO", "tempfile.TemporaryFile", "tempfile.NamedTemporaryFile",
                          "tempfile.SpooledTemporaryFile", "pandas.ExcelWriter", "sys.stdout", "sys.stderr"})
