"""Finding input files, and reading and writing them without damage.

Discovery follows symlinks at most once (a real directory or file reached
twice is visited once) and honours exclude patterns and ``.gitignore`` (both
read with ``pathspec``).  Reading keeps everything a
write needs to give the bytes back exactly as they were apart from the
migrated lines: the encoding (UTF-8, UTF-8 with BOM, a PEP 263 cookie), the
newline style and a missing final newline.  Writing is atomic and keeps the
file mode; a file that changed on disk meanwhile is not overwritten.
"""
from __future__ import annotations

import codecs
import fnmatch
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from typing import Iterable, Optional

DEFAULT_EXCLUDES = (
    ".git", ".venv", "venv", "build", "dist", "__pycache__", ".tox", "site-packages", "node_modules",
)
SUFFIXES = (".py", ".ipynb")
#: files larger than this are reported, not parsed (config key ``max-file-size``)
MAX_BYTES = 5 * 1024 * 1024


class FileError(Exception):
    """A file that could not be read, decoded or written; carries a position."""

    def __init__(self, message: str, line: int = 1, col: int = 1):
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col

    def format(self, path: str) -> str:
        return f"{path}:{self.line}:{self.col}: {self.message}"


@dataclass
class Discovered:
    files: list[str]
    #: (display path, message) for paths that could not be walked or stat'ed
    errors: list[tuple[str, str]]


def _gitignore_spec(lines: Iterable[str]):
    import pathspec  # lazily: a run on explicit files never needs it

    return pathspec.GitIgnoreSpec.from_lines(list(lines))


class ExcludeSet:
    """Exclude patterns in .gitignore syntax, relative to ``base``.

    A pattern without a slash (``third_party``, ``*_pb2.py``) matches a file or
    folder of that name at any depth; one with a slash (``tests/data``) matches
    the path relative to ``base``: the current directory for ``--exclude``, the
    folder of pyproject.toml for its ``exclude`` key (as ruff does).
    """

    def __init__(self, patterns: Iterable[str], base: Optional[str] = None):
        self.patterns = tuple(patterns)
        self.base = os.path.abspath(base or os.getcwd())
        self._spec = _gitignore_spec(self.patterns) if self.patterns else None

    def matches(self, path: str, is_dir: bool = False) -> bool:
        if self._spec is None:
            return False
        rel = os.path.relpath(os.path.abspath(path), self.base).replace(os.sep, "/")
        return bool(self._spec.check_file(rel + "/" if is_dir else rel).include)


def repository_root(folder: str) -> Optional[str]:
    """The nearest folder at or above ``folder`` holding ``.git`` (a folder, or a file in a worktree)."""
    folder = os.path.abspath(folder)
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


class GitIgnore:
    """``.gitignore`` files (and ``.git/info/exclude``) of the repository a path is in, as git reads them.

    Outside a git repository nothing is ignored, as with git itself.  The
    deepest ``.gitignore`` with a matching pattern decides.
    """

    def __init__(self):
        self._chains: dict[str, list[tuple[str, object]]] = {}

    def _own(self, folder: str, root: str) -> list[tuple[str, object]]:
        out = []
        sources = [os.path.join(folder, ".gitignore")]
        if folder == root:
            sources.insert(0, os.path.join(folder, ".git", "info", "exclude"))
        for name in sources:
            try:
                with open(name, encoding="utf-8", errors="replace") as fh:
                    out.append((folder, _gitignore_spec(fh.read().splitlines())))
            except OSError:
                continue
        return out

    def _chain(self, folder: str) -> list[tuple[str, object]]:
        """Specs that apply inside ``folder``, shallowest first."""
        if folder in self._chains:
            return self._chains[folder]
        root = repository_root(folder)
        if root is None:
            chain: list = []
        elif folder == root:
            chain = self._own(folder, root)
        else:
            chain = self._chain(os.path.dirname(folder)) + self._own(folder, root)
        self._chains[folder] = chain
        return chain

    def ignored(self, path: str, is_dir: bool = False) -> bool:
        path = os.path.abspath(path)
        for base, spec in reversed(self._chain(os.path.dirname(path))):
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            decision = spec.check_file(rel + "/" if is_dir else rel).include
            if decision is not None:
                return decision
        return False

    def ignored_with_parents(self, path: str) -> bool:
        """Whether ``path`` or a folder above it (inside its repository) is ignored."""
        path = os.path.abspath(path)
        root = repository_root(os.path.dirname(path))
        if root is None:
            return False
        if self.ignored(path):
            return True
        folder = os.path.dirname(path)
        while folder != root and len(folder) > len(root):
            if self.ignored(folder, is_dir=True):
                return True
            folder = os.path.dirname(folder)
        return False


@dataclass
class Filters:
    """What discovery leaves out."""

    excludes: tuple = ()  # ExcludeSet, or plain patterns taken relative to the current directory
    default_excludes: bool = True
    respect_gitignore: bool = True
    #: apply the excludes (and .gitignore) to files named on the command line too,
    #: as pre-commit passes every staged file explicitly
    force_exclude: bool = False

    def __post_init__(self):
        plain = [e for e in self.excludes if isinstance(e, str)]
        sets = [e for e in self.excludes if isinstance(e, ExcludeSet)]
        self._sets = sets + ([ExcludeSet(plain)] if plain else [])
        self._gitignore = GitIgnore() if self.respect_gitignore else None

    def _user(self, path: str, is_dir: bool) -> bool:
        return any(s.matches(path, is_dir) for s in self._sets)

    def _default(self, rel: str) -> bool:
        return self.default_excludes and any(
            fnmatch.fnmatch(part, pat) for part in rel.replace(os.sep, "/").split("/") for pat in DEFAULT_EXCLUDES)

    def skip_below(self, path: str, rel: str, is_dir: bool) -> bool:
        """For a path found by walking a folder given on the command line (``rel`` below it)."""
        return (self._default(rel) or self._user(path, is_dir)
                or (self._gitignore is not None and self._gitignore.ignored(path, is_dir)))

    def skip_explicit(self, path: str) -> bool:
        """For a file named on the command line: taken unless --force-exclude says otherwise."""
        if not self.force_exclude:
            return False
        rel = os.path.relpath(os.path.abspath(path))
        rel = "/".join(p for p in rel.replace(os.sep, "/").split("/") if p not in ("..", "."))
        return (self._default(rel) or self._user(path, False)
                or (self._gitignore is not None and self._gitignore.ignored_with_parents(path)))


def discover(paths: Iterable[str], excludes: Iterable = (), default_excludes: bool = True,
             filters: Optional[Filters] = None) -> Discovered:
    """Files to process, in a stable order, each real file once.

    Directories are walked for ``*.py`` and ``*.ipynb``, leaving out the
    default excludes, the exclude patterns and what ``.gitignore`` ignores.  A
    file named explicitly is taken whatever its suffix, unless ``force_exclude``.
    Default excludes apply only below a directory given on the command line
    (and to explicit files under ``force_exclude``).
    """
    filters = filters or Filters(tuple(excludes), default_excludes)
    seen_files: set[str] = set()
    files: list[str] = []
    errors: list[tuple[str, str]] = []

    def take(display: str) -> None:
        try:
            os.stat(display)  # raises on symlink loops and dangling links
            real = os.path.realpath(display)
        except OSError as e:
            errors.append((display, _os_message(e)))
            return
        if real not in seen_files:
            seen_files.add(real)
            files.append(display)

    for given in paths:
        if not os.path.isdir(given):
            if not filters.skip_explicit(given):
                take(given)
            continue
        seen_dirs: set[str] = set()
        root = os.path.realpath(given)
        for dirpath, dirnames, filenames in os.walk(given, followlinks=True, onerror=None):
            real_dir = os.path.realpath(dirpath)
            if real_dir in seen_dirs or not _inside(real_dir, root):
                dirnames[:] = []  # a link out of the tree (into a venv, say) is not walked, as black does
                continue
            seen_dirs.add(real_dir)
            rel_dir = os.path.relpath(dirpath, given)
            keep = []
            for d in sorted(dirnames):
                rel = d if rel_dir == "." else os.path.join(rel_dir, d)
                path = os.path.join(dirpath, d)
                if not filters.skip_below(path, rel, True) and os.path.realpath(path) not in seen_dirs:
                    keep.append(d)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith(SUFFIXES) or name.startswith(".#"):
                    continue  # `.#m.py`: an editor's lock file (a dangling link), not code
                rel = name if rel_dir == "." else os.path.join(rel_dir, name)
                path = os.path.join(dirpath, name)
                if filters.skip_below(path, rel, False):
                    continue
                if os.path.islink(path) and os.path.exists(path) and not _inside(os.path.realpath(path), root):
                    continue  # a link to a file outside the tree: name it explicitly to migrate it
                take(os.path.normpath(path))
    return Discovered(files, errors)


def _os_message(e: OSError) -> str:
    import errno

    if e.errno == errno.ELOOP:
        return "cannot read: symlink loop"
    if e.errno == errno.ENOENT:
        return "cannot read: no such file (dangling symlink, or it vanished)"
    return f"cannot read: {e.strerror or e}"


@dataclass
class Source:
    """One file as read: the raw bytes and what is needed to write it back."""

    path: str
    raw: bytes
    encoding: str = "utf-8"  # a codec name; "utf-8-sig" when there is a BOM
    crlf: bool = False  # every line ends in CRLF; ``text`` then holds LF only
    mtime_ns: int = 0
    size: int = 0
    mode: int = 0o644
    _text: Optional[str] = None

    @property
    def text(self) -> str:
        """The decoded text (raises FileError); CRLF files come back with LF."""
        if self._text is None:
            self._text = decode(self.raw, self)
        return self._text

    def encode(self, text: str) -> bytes:
        """Bytes of ``text`` in this file's encoding and newline style."""
        if self.crlf:
            text = text.replace("\n", "\r\n")
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError as e:
            raise FileError(f"migrated text cannot be encoded as {self.encoding}: {e.reason}") from None


def read_source(path: str, max_bytes: int = MAX_BYTES) -> Source:
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise FileError("not a regular file")
        if st.st_size > max_bytes:
            raise FileError(f"file too large ({st.st_size} bytes; the limit is {max_bytes}), left untouched")
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as e:
        raise FileError(_os_message(e)) from None
    if len(raw) > max_bytes:
        raise FileError(f"file too large (over {max_bytes} bytes), left untouched")
    return Source(path, raw, mtime_ns=st.st_mtime_ns, size=st.st_size, mode=stat.S_IMODE(st.st_mode))


def source_encoding(raw: bytes) -> str:
    """The codec Python reads the source bytes with: its PEP 263 cookie or UTF-8 ("utf-8-sig"
    with a BOM); FileError for a cookie it rejects."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as e:
        raise FileError(f"cannot decode: {e.msg if hasattr(e, 'msg') else e}", getattr(e, "lineno", 1) or 1) from None
    encoding = codecs.lookup(encoding).name
    return "utf-8-sig" if encoding == "utf-8" and raw.startswith(codecs.BOM_UTF8) else encoding


def decode(raw: bytes, src: Source) -> str:
    """Decode Python source bytes as the interpreter would; record how."""
    if b"\x00" in raw:
        off = raw.index(b"\x00")
        line, col = _position(raw, off)
        raise FileError("cannot decode: binary content (NUL byte)", line, col)
    encoding = source_encoding(raw)
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as e:
        line, col = _position(raw, e.start)
        raise FileError(f"cannot decode as {encoding}: {e.reason}", line, col) from None
    src.encoding = encoding
    if "\r\n" in text and text.count("\r\n") == text.count("\n") == text.count("\r"):
        src.crlf = True
        text = text.replace("\r\n", "\n")
    return text


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    line = raw.count(b"\n", 0, offset) + 1
    col = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return line, col


def write_source(src: Source, text: str) -> None:
    """Atomically replace the file behind ``src`` with ``text``.

    Writes through a symlink to its target, keeps the mode and (as root) the
    owner, and refuses when the file is read-only, hard-linked, vanished, or
    changed since it was read.
    """
    data = src.encode(text)
    target = os.path.realpath(src.path)
    try:
        st = os.stat(target)
    except OSError as e:
        raise FileError(_os_message(e).replace("cannot read", "not written")) from None
    if (st.st_mtime_ns, st.st_size) != (src.mtime_ns, src.size):
        raise FileError("file changed on disk while it was being migrated; not written")
    # Same test as open(path, "w") would make: a 0444 file is read-only for a
    # user, but root (as in CI) may write it, as black and ruff would.
    if not os.access(target, os.W_OK):
        raise FileError("file is read-only; not written")
    if st.st_nlink > 1:  # a replace would split the links: the others would keep the old code
        raise FileError(f"file has {st.st_nlink} hard links, which an atomic write would split; not written")
    folder = os.path.dirname(target) or "."
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(target) + ".", suffix=".tfgm")
    except OSError as e:
        raise FileError(f"not written: cannot create a temporary file beside it: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()) and hasattr(os, "chown"):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)  # root writing a user's file: it stays theirs
            except PermissionError:
                pass  # not root: the new file is ours, as an editor's save would make it
        os.replace(tmp, target)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise FileError(f"not written: {e.strerror or e}") from None
        raise


def python_script(path: str) -> bool:
    """An extensionless file that starts with a Python shebang (``bin/train``)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def raw_holds(path: str, needle: bytes, limit: int = 64 * 1024 * 1024) -> bool:
    """The file's bytes hold ``needle`` (a file too big to search counts as holding it)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > limit:
            return os.path.isfile(path)  # too big even to search: it may hold it
        with open(path, "rb") as fh:
            return needle in fh.read()
    except OSError:
        return False


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
