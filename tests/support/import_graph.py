"""Read a package's import graph and ledger SQL with ``ast``, and check the house's layering rules.

The layering test (tests/test_layering.py) runs these checks over
scalpel_desktop/ and over tiny planted packages, so a rule that silently
stopped matching would show up as a planted violation nobody reports.

What counts as an import: every ``import`` / ``from ... import`` statement in
a file, at module level or inside a function, class or ``try``; relative
imports are resolved against the file's package; the bodies of
``if TYPE_CHECKING:`` (or ``if typing.TYPE_CHECKING:``) are left out, since
they never run (their ``else:`` branch is kept). ``from pkg import name``
points at ``pkg.name`` when that is a module of the package, else at ``pkg``.
Importing ``a.b.c`` is an edge to ``a.b.c`` only, not to the parent packages'
``__init__`` (those carry no code here, and counting them would make every
package look like a cycle with its own modules). Imports spelled as strings
(``importlib.import_module(f"...")``) are not seen.

The rules are data (``CORE``, ``IMPORT_RULES``, ``SQL_TABLES``...): the lead
adjusts the tables when the layout changes, and the checker stays the same.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "scalpel_desktop"

# ---------------------------------------------------------------- the rules, as data

# Names are module paths inside the package: "wire" means scalpel_desktop/wire/
# and everything under it, "config" means scalpel_desktop/config.py,
# "cli.cmd_emulator" one module. External names are top-level distributions.

#: The core: everything below the application. It may import the stdlib, its
#: own kind, and third-party libraries other than the frontends' and server's.
CORE = (
    "wire", "accounting", "store", "surgery", "tools",
    "exchange", "errors", "clock", "config", "paths", "atomicfile",
)
#: What the core never imports.
ABOVE_CORE = ("pipeline", "proxy", "bench", "emulator", "runtime", "service", "tray", "tui", "cli")
#: Third-party libraries the core never imports.
CORE_FORBIDDEN_EXTERNAL = ("aiohttp", "pystray", "textual")


@dataclass(frozen=True)
class ImportRule:
    """``importers`` may not import ``forbidden`` (internal) or ``forbidden_external``.

    ``exempt`` importers are allowed even when they fall under ``importers``.
    A module never breaks a rule by importing from its own area (``same_area_ok``):
    the emulator importing itself is not "shipped code importing the emulator".
    """

    name: str
    importers: tuple[str, ...]
    forbidden: tuple[str, ...] = ()
    forbidden_external: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()


#: "*" as an importer means every module of the package.
IMPORT_RULES: tuple[ImportRule, ...] = (
    ImportRule(
        name="core imports nothing above it",
        importers=CORE,
        forbidden=ABOVE_CORE,
        forbidden_external=CORE_FORBIDDEN_EXTERNAL,
    ),
    ImportRule(
        name="shipped code never imports the emulator",
        importers=("*",),
        forbidden=("emulator",),
        # the emulator itself, the replay bench, and the command that runs it
        exempt=("emulator", "bench", "cli.cmd_emulator"),
    ),
    ImportRule(name="tray never imports cli or tui", importers=("tray",), forbidden=("cli", "tui")),
    ImportRule(name="tui never imports cli or tray", importers=("tui",), forbidden=("cli", "tray")),
    # Two more wrong-way imports issue 9 names: the service layer sits below the
    # frontends (the tray calls it, not the other way round), and wire/ is the
    # floor of the core (every API fact; it knows no ledger, cost or surgery).
    ImportRule(name="service never imports a frontend", importers=("service",), forbidden=("tray", "tui", "cli")),
    ImportRule(
        name="wire imports no other core package",
        importers=("wire",),
        forbidden=("accounting", "store", "surgery", "tools"),
    ),
)

#: The ledger's tables: SQL over them lives in ``SQL_HOME`` only.
SQL_TABLES = ("requests", "cuts")
SQL_HOME = ("store",)

# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class Import:
    importer: str  # module name, package-relative ("wire.view", "" for the package's __init__)
    target: str  # absolute dotted name as written/resolved ("scalpel_desktop.wire.view", "aiohttp.web")
    line: int
    internal: bool  # target is a module of the package
    rel_target: str = ""  # package-relative internal target ("wire.view"), "" when external

    @property
    def top(self) -> str:
        return self.target.split(".")[0]


@dataclass(frozen=True)
class SqlUse:
    module: str
    line: int
    table: str
    text: str


@dataclass
class Package:
    root: Path  # the package directory
    name: str
    files: dict[str, Path] = field(default_factory=dict)  # rel module name -> path
    imports: list[Import] = field(default_factory=list)
    sql: list[SqlUse] = field(default_factory=list)

    def path_of(self, module: str) -> str:
        p = self.files[module]
        return str(p.relative_to(self.root.parent))

    def edges(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {m: set() for m in self.files}
        for imp in self.imports:
            if imp.internal and imp.rel_target != imp.importer:
                out[imp.importer].add(imp.rel_target)
        return out


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING"
    return False


def _walk_runtime(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node``, leaving out the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _walk_runtime(other)
            continue
        yield child
        yield from _walk_runtime(child)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                ids.add(id(body[0].value))
    return ids


_SQL_VERB = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


def _sql_table_ref(tables: Iterable[str]) -> re.Pattern[str]:
    names = "|".join(re.escape(t) for t in tables)
    return re.compile(rf"\b(?:FROM|INTO|UPDATE|JOIN)\s+[\"`]?({names})[\"`]?(?![\w.])", re.IGNORECASE)


def read_package(root: Path, sql_tables: Iterable[str] = SQL_TABLES) -> Package:
    """Read every ``.py`` file under the package directory ``root``."""
    root = Path(root)
    pkg = Package(root=root, name=root.name)
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        pkg.files[_module_name(root, path)] = path
    table_ref = _sql_table_ref(sql_tables)
    for module, path in pkg.files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_init = path.name == "__init__.py"
        this_pkg = module if is_init else module.rpartition(".")[0]
        docstrings = _docstring_nodes(tree)
        for node in _walk_runtime(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    pkg.imports.append(_make_import(pkg, module, alias.name, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                base = _resolve_from(pkg.name, this_pkg, node.module, node.level)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    target = sub if alias.name != "*" and _rel(pkg.name, sub) in pkg.files else base
                    pkg.imports.append(_make_import(pkg, module, target, node.lineno))
            elif isinstance(node, (ast.Constant, ast.JoinedStr)):
                if id(node) in docstrings:
                    continue
                text = _literal_text(node)
                if text is None or not _SQL_VERB.search(text):
                    continue
                for m in table_ref.finditer(text):
                    pkg.sql.append(SqlUse(module, node.lineno, m.group(1).lower(), " ".join(text.split())[:120]))
    # a JoinedStr's Constant parts are visited again on their own: keep one hit per line and table
    seen = set()
    unique = []
    for s in pkg.sql:
        if (s.module, s.line, s.table) not in seen:
            seen.add((s.module, s.line, s.table))
            unique.append(s)
    pkg.sql = unique
    return pkg


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            parts.append(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "?")
        return "".join(parts)
    return None


def _resolve_from(pkg_name: str, this_pkg: str, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    base = this_pkg.split(".") if this_pkg else []
    if level > 1:
        base = base[: len(base) - (level - 1)]
    absolute = ".".join([pkg_name, *base] if base else [pkg_name])
    return f"{absolute}.{module}" if module else absolute


def _rel(pkg_name: str, dotted: str) -> str | None:
    if dotted == pkg_name:
        return ""
    if dotted.startswith(pkg_name + "."):
        return dotted[len(pkg_name) + 1:]
    return None


def _make_import(pkg: Package, importer: str, target: str, line: int) -> Import:
    rel = _rel(pkg.name, target)
    if rel is None:
        return Import(importer, target, line, internal=False)
    # the deepest name that is a module of the package ("wire.view.Thing" -> "wire.view")
    parts = rel.split(".") if rel else []
    while parts and ".".join(parts) not in pkg.files:
        parts.pop()
    return Import(importer, target, line, internal=True, rel_target=".".join(parts))


# ---------------------------------------------------------------- checking


def _within(module: str, areas: Iterable[str]) -> bool:
    for a in areas:
        if a == "*" or module == a or module.startswith(a + "."):
            return True
    return False


def _area(module: str) -> str:
    return module.split(".")[0]


def import_violations(pkg: Package, rule: ImportRule) -> list[str]:
    """One line per offending import: ``path:line: importer imports target``."""
    out = []
    for imp in pkg.imports:
        if not _within(imp.importer, rule.importers) or _within(imp.importer, rule.exempt):
            continue
        if imp.internal:
            if _area(imp.rel_target) == _area(imp.importer):
                continue
            bad = _within(imp.rel_target, rule.forbidden)
        else:
            bad = imp.top in rule.forbidden_external
        if bad:
            out.append(f"{pkg.path_of(imp.importer)}:{imp.line}: imports {imp.target}")
    return sorted(set(out))


def sql_violations(pkg: Package, home: Iterable[str] = SQL_HOME) -> list[str]:
    home = tuple(home)
    return [
        f"{pkg.path_of(s.module)}:{s.line}: SQL over {s.table!r}: {s.text}"
        for s in pkg.sql
        if not _within(s.module, home)
    ]


def cycles(pkg: Package) -> list[list[str]]:
    """Each import cycle between files, as the list of its files (one shortest loop per tangle).

    A tangle is a strongly connected component of the graph; for each one the
    report names every file in it and one concrete loop through them.
    """
    graph = pkg.edges()
    out = []
    for comp in _strongly_connected(graph):
        if len(comp) < 2:
            continue
        start = min(comp)
        loop = _shortest_loop(graph, start, set(comp))
        out.append([pkg.path_of(m) for m in loop])
    return sorted(out)


def describe_cycles(pkg: Package) -> list[str]:
    graph = pkg.edges()
    lines = []
    for comp in sorted(_strongly_connected(graph), key=min):
        if len(comp) < 2:
            continue
        loop = _shortest_loop(graph, min(comp), set(comp))
        files = sorted(pkg.path_of(m) for m in comp)
        lines.append(" -> ".join(pkg.path_of(m) for m in [*loop, loop[0]])
                     + (f"  (tangle of {len(files)}: {', '.join(files)})" if len(files) > len(loop) else ""))
    return lines


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # recursion depth is bounded by the package's module count
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            result.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


def _shortest_loop(graph: dict[str, set[str]], start: str, within: set[str]) -> list[str]:
    """The shortest path start -> ... -> start inside ``within`` (breadth first)."""
    prev: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return list(reversed(path))
                if w in within and w not in seen:
                    seen.add(w)
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]
