"""Code that changes TF's gradient machinery at run time, found in a module's ``ast``.

A tape bypasses a replaced ``tf.gradients``, and a swapped gradient-registry entry
changes which function an op's gradient gets while it is in place; either makes every
gradient call of the project manual (TFG131).  Reading the registry to register a
gradient once (``if "G" not in ops._gradient_registry._registry:``) changes nothing.
"""
from __future__ import annotations

import ast
import re
from typing import Optional

from migrator.astwalk import hit_lines, walk_near


def gradients_patch_nodes(tree: ast.AST, lines: Optional[list[int]] = None) -> list[ast.AST]:
    """Statements that rebind ``gradients`` on some module object: ``tf.gradients = f``,
    ``tf.__dict__["gradients"] = f``, ``setattr(tf, "gradients", f)``,
    ``gradients_impl.gradients = f``, ``gradients_util._GradientsHelper = f`` (only those on
    ``lines``, the lines that say ``gradients`` or ``GradientsHelper``)."""
    out = []
    for node in walk_near(tree, lines):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and t.attr in GRADIENT_ENTRY_POINTS \
                    and isinstance(t.value, (ast.Name, ast.Attribute)) \
                    and not (isinstance(t.value, ast.Name) and t.value.id == "self"):
                out.append(node)
            elif isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) \
                    and t.slice.value in GRADIENT_ENTRY_POINTS:
                if _is_namespace(t.value):
                    out.append(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and node.args[1].value in GRADIENT_ENTRY_POINTS:
            out.append(node)
        # `tf.__setattr__("gradients", f)`, `put = setattr; put(tf, "gradients", f)` (an adversarial run)
        if isinstance(node, ast.Call) and (
                isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__" and node.args
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in GRADIENT_ENTRY_POINTS
                or len(node.args) == 3 and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in GRADIENT_ENTRY_POINTS
                and not (isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr", "setattr"))):
            out.append(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                and _is_namespace(node.func.value) \
                and (any(isinstance(k, ast.Constant) and k.value in GRADIENT_ENTRY_POINTS
                         for a in node.args if isinstance(a, ast.Dict) for k in a.keys)
                     or any(kw.arg in GRADIENT_ENTRY_POINTS for kw in node.keywords)):
            out.append(node)
    return out


#: what tf.gradients runs: replacing the internal helper changes it too (an adversarial run:
#: `gradients_util._GradientsHelper = mine`)
GRADIENT_ENTRY_POINTS = frozenset({"gradients", "_GradientsHelper"})


def _is_namespace(node: ast.AST) -> bool:
    """``m.__dict__`` or ``vars(m)``: a module's namespace as a dict."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars"


#: a ``tf.Graph``'s own tables of gradient overrides (``gradient_override_map`` fills the
#: first) and the op attribute they set (``op._set_attr("_gradient_op_type", ...)``): code
#: that writes them directly overrides gradients a tape never sees
GRAPH_GRADIENT_MAPS = ("_gradient_override_map", "_gradient_function_map", "_gradient_op_type")

#: methods of TF's ``Registry`` that only read it
_READ_METHODS = ("lookup", "list")


def registry_use_lines(tree: ast.AST, text: str) -> list[int]:
    """Lines where ``_gradient_registry`` appears other than as the attribute a membership test
    reads (``"G" in ops._gradient_registry._registry``) or a read through its own methods
    (``ops._gradient_registry.lookup("Relu")``, ``.list()``): any other spelling (an alias, an
    import of the name, ``getattr(ops, "_gradient_registry")``, a string run by ``exec``,
    ``ops._gradient_registry.lookup = f``, even a comment) may swap an entry, and counts."""
    tested = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _READ_METHODS and isinstance(node.func.value, ast.Attribute) \
                and node.func.value.attr == "_gradient_registry":
            inner = node.func.value
            tested.add((inner.end_lineno, inner.end_col_offset))
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            for c in node.comparators:
                inner = c.value if isinstance(c, ast.Attribute) and c.attr == "_registry" else c
                if isinstance(inner, ast.Attribute) and inner.attr == "_gradient_registry":
                    tested.add((inner.end_lineno, inner.end_col_offset))
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        for m in re.finditer("_gradient_registry", line):
            end = len(line[:m.end()].encode("utf-8"))  # ast columns are utf-8 byte offsets
            if (i, end) not in tested:
                out.append(i)
    return out


def word_lines(text: str, word: str) -> list[int]:
    """The 1-based lines of ``text`` that name ``word``."""
    return [i for i, line in enumerate(text.splitlines(), 1) if word in line]


def tf_api_patch_nodes(tree: ast.AST) -> list[ast.AST]:
    """Statements that replace something on a TF module object (``tf.nn.relu = f``, through an
    alias, a tuple target, an annotation, a ``for`` target, ``setattr``, ``__dict__``): the call
    then makes other ops than TF's, which an override map keyed by op type does not see (an
    adversarial run: a migrated ``custom_gradient`` applied the override TF1 never applied)."""
    return [node for node, _path in tf_api_patch_paths(tree)]


def tf_api_patch_paths(tree: ast.AST, extra: Optional[dict] = None) -> list[tuple[ast.AST, Optional[str]]]:
    """:func:`tf_api_patch_nodes`, each with the dotted TF path it replaces
    (``tensorflow.compat.v1.get_variable``), or None when that is not one literal path (a
    subscript, ``setattr`` with a computed name, a namespace update, ``del``, a module alias
    bound more than once)."""
    mods: dict = dict(extra or {})  # name -> the TF module path it is bound to (None: bound to several)

    def bind(name: str, path: Optional[str]) -> None:
        mods[name] = path if name not in mods or mods[name] == path else None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "tensorflow":
                    bind(a.asname or "tensorflow", a.name if a.asname else "tensorflow")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tensorflow" and not node.level:
            for a in node.names:
                if a.name != "*":
                    bind(a.asname or a.name, f"{node.module}.{a.name}")
    for _ in range(2):  # `nn = tf.nn`, `relu_mod = nn`
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _root(node.value) in mods:
                path = _path(node.value, mods)
                for t in node.targets:
                    if isinstance(t, ast.Name) and (t.id not in mods or mods[t.id] != path):
                        bind(t.id, path)
    tf_names = set(mods)
    if not tf_names:
        return []
    out = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        hit = [x for t in targets for x in _flat(t) if isinstance(x, (ast.Attribute, ast.Subscript))
               and _root(x) in tf_names]
        if hit:
            paths = {_path(x, mods) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) else None
                     for x in hit}
            out.append((node, paths.pop() if len(paths) == 1 else None))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and node.args and _root(node.args[0]) in tf_names:
            attr = node.args[1] if len(node.args) > 1 else None
            base = _path(node.args[0], mods)
            literal = node.func.id == "setattr" and isinstance(attr, ast.Constant) and isinstance(attr.value, str)
            out.append((node, f"{base}.{attr.value}" if literal and base else None))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("update", "__setitem__", "setdefault") and _is_namespace(node.func.value) \
                and _root(node.func.value) in tf_names:
            out.append((node, None))
        elif isinstance(node, ast.Call):
            mocked = _mock_patch(node, mods, tf_names)
            if mocked is not False:
                out.append((node, mocked))
    return out


def _mock_patch(call: ast.Call, mods: dict, tf_names: set):
    """``mock.patch("tensorflow.sign", f)``, ``mock.patch.object(tf, "sign", f)``, or a TF module's
    namespace handed to a function (``operator.setitem(vars(tf), "sign", f)``): the path it
    replaces, None when unknown, False when the call patches nothing of TF (a second adversarial run)."""
    func, args = call.func, call.args
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name == "patch" and args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
        return args[0].value if args[0].value.split(".")[0] == "tensorflow" else False
    if name in ("object", "multiple", "dict") and isinstance(func, ast.Attribute) and \
            getattr(func.value, "attr", getattr(func.value, "id", None)) == "patch" and args:
        if _root(args[0]) not in tf_names and not (isinstance(args[0], ast.Constant) and
                                                   str(args[0].value).startswith("tensorflow")):
            return False
        base = _path(args[0], mods)
        attr = args[1] if len(args) > 1 and name == "object" else None
        return f"{base}.{attr.value}" if base and isinstance(attr, ast.Constant) and isinstance(attr.value, str) \
            else None
    if any(_is_namespace(a) and _root(a) in tf_names for a in [*args, *(k.value for k in call.keywords)]):
        return None
    return False


def _path(node: ast.AST, mods: dict) -> Optional[str]:
    """``tf.nn.relu`` -> ``tensorflow.nn.relu`` (the root's module path); None otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    base = mods.get(node.id) if isinstance(node, ast.Name) else None
    return ".".join([base] + parts[::-1]) if base else None


def _flat(target: ast.AST) -> list:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [x for e in target.elts for x in _flat(e)]
    if isinstance(target, ast.Starred):
        return _flat(target.value)
    return [target]


def _root(node: ast.AST) -> Optional[str]:
    """The name at the base of ``a.b[c].d``, ``vars(a)``, ``a.__dict__``."""
    while True:
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("vars", "getattr") \
                and node.args:
            node = node.args[0]  # `getattr(tf, "nn").relu = f` (an adversarial run)
        else:
            break
    return node.id if isinstance(node, ast.Name) else None


_MOCK = re.compile(r"\bpatch\s*\(\s*['\"]tensorflow|\bpatch\.(?:object|multiple|dict)\s*\(")
_ROOT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*[.\[]")
_TF_IMPORT = re.compile(r"^\s*(?:import\s+tensorflow[\w.]*(?:\s+as\s+(\w+))?|from\s+tensorflow[\w.]*\s+import\s+([^#\n]+))",
                        re.M)
_ASSIGN_LHS = re.compile(r"^([^#=]*?)(?:[-+*/%&|^@]|//|>>|<<|\*\*)?=(?!=)")


def may_patch_tf(text: str) -> bool:
    """A cheap look at a file's text: could it replace something on a TF module?  (True
    whenever :func:`tf_api_patch_nodes` could find something; false positives only cost a parse.)"""
    if _MOCK.search(text):
        return True  # `mock.patch("tensorflow.sign", f)` needs no import of TF
    names = set()
    for m in _TF_IMPORT.finditer(text):
        if m.group(2):
            names |= {p.split(" as ")[-1].strip(" ()\\") for p in m.group(2).split(",")}
        else:
            names.add(m.group(1) or "tensorflow")
    if not names:
        return False
    for line in text.splitlines():  # `nn = tf.nn`: an alias is a TF name too
        m = re.match(r"\s*(\w+)\s*=\s*(\w+)\.", line)
        if m and m.group(2) in names:
            names.add(m.group(1))
    for line in text.splitlines():
        s = line.strip()
        if any(w in s for w in ("setattr", "delattr", "__dict__", "vars(", "getattr(")) and \
                set(re.findall(r"\w+", s)) & names:
            return True
        if s.startswith(("for ", "async for ")):
            lhs = s.split(" in ", 1)[0]
        elif s.startswith(("del ", "with ", "async with ")):
            lhs = s.split(" as ", 1)[-1] if s.startswith(("with", "async")) else s
        else:
            m = _ASSIGN_LHS.match(s)
            lhs = m.group(1) if m and "(" not in m.group(1) else ""  # not `f(name=x.y)`: a keyword
        if {r for r in _ROOT.findall(lhs)} & names:
            return True
    return False


_GRADIENTS_WORD = re.compile("gradients|GradientsHelper")
_AFTER_DOT = re.compile(r"\s*=[^=]")  # `.gradients = f`
_AFTER_QUOTE = re.compile(r"""["']\s*\]\s*=""")  # `["gradients"] = f`
_HELPER_STORE = re.compile(r"_GradientsHelper\W*(\]\s*)?=[^=]")


def may_patch_gradients(text: str) -> bool:
    """Could ``text`` rebind ``gradients`` or ``_GradientsHelper`` on a module?  The text
    search before :func:`gradients_patch_nodes` parses: ``setattr(``, ``.update(``, or one of
    the words stored into (literals found with ``in``: a regex of alternatives tried at every
    byte took most of a scan of TF's own tree)."""
    lower, helper = "gradients" in text, "_GradientsHelper" in text
    if not (lower or helper):
        return False
    if "setattr(" in text or ".update(" in text or helper and _HELPER_STORE.search(text):
        return True
    at = text.find("gradients")
    while at != -1:
        before, end = text[at - 1:at], at + len("gradients")
        if before == "." and _AFTER_DOT.match(text, end) or before in ("'", '"') and _AFTER_QUOTE.match(text, end):
            return True
        at = text.find("gradients", end)
    return False


def gradients_patch_lines(text: str, parse=None) -> list[int]:
    """Lines of ``text`` that replace ``tf.gradients`` (:func:`gradients_patch_nodes`); the
    tree is parsed (``parse()``, or ``ast.parse``) only when the text search allows a patch,
    and a file that does not parse has none."""
    if not may_patch_gradients(text):
        return []
    if parse is not None:
        tree = parse()
    else:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
    return [] if tree is None else [n.lineno for n in gradients_patch_nodes(tree, hit_lines(text, _GRADIENTS_WORD))]
