"""The sandbox's wings (docs/architecture.md, "The sandbox in wings"), read from its source with ``ast``.

Imports run down: core <- chromium (the browser engine) <- resources <- the app that assembles them (the
app, the control interface, the demo data, the server). The demo sites stand apart: they import no other
wing, and only the wings that serve them (chromium, resources, the app) import them. What a lower wing
needs from a higher one is handed in (a callback, a hook the app registers at start-up: ``app.assemble``),
never imported inside a function to dodge a circle. Every import counts, at module level or inside a
function: relative imports are resolved, and ``from x import y`` where ``y`` is a module is an import of
that module.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "console.sandbox"
SANDBOX = ROOT.joinpath(*PACKAGE.split("."))

WINGS = ("core", "chromium", "resources", "sites")
# What each wing may import from the sandbox.
MAY_IMPORT = {
    "core": {"core"},
    "chromium": {"core", "chromium", "sites"},
    "resources": {"core", "chromium", "resources", "sites"},
    "sites": {"sites"},
    "app": {"core", "chromium", "resources", "sites", "app"},
}
# The top: what assembles the wings. Any other module belongs in a wing.
APP = {
    PACKAGE,
    f"{PACKAGE}.__main__",
    f"{PACKAGE}.app",
    f"{PACKAGE}.apps",
    f"{PACKAGE}.control",
    f"{PACKAGE}.demo",
    f"{PACKAGE}.server",
    f"{PACKAGE}.management",
    f"{PACKAGE}.management.commands",
    f"{PACKAGE}.management.commands.sandbox",
}
# Imports inside a function that are there for another reason than a circle, each with it: (importing
# module, imported module) -> why. Keep it short; an entry needs a reason a reader accepts. Never one of
# the console's own modules: those are imported at the top, or handed in.
IMPORTS_IN_FUNCTIONS: dict[tuple[str, str], str] = {
    ("console.sandbox.chromium.engine", "playwright.async_api"): (
        "optional: without Playwright the simulated engine runs (engine.choose)"
    ),
    ("console.sandbox.chromium.forward_proxy", "cryptography"): (
        "the proxies' certificate authority is made when a session first has a proxy"
    ),
    ("console.sandbox.chromium.forward_proxy", "cryptography.hazmat.primitives"): "the same",
    ("console.sandbox.chromium.forward_proxy", "cryptography.hazmat.primitives.asymmetric"): "the same",
    ("console.sandbox.chromium.forward_proxy", "cryptography.x509.oid"): "the same",
    ("console.sandbox.chromium.browser_jail", "ctypes"): (
        "a script of its own (python -I): only a browser in a network namespace of its own calls setns"
    ),
    ("console.sandbox.resources.cdp_proxy", "websockets.asyncio.client"): (
        "the relay's client, needed once a CDP client connects"
    ),
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    function: str | None  # the function it sits in, None at module level

    def __str__(self) -> str:
        where = f" (in {self.function})" if self.function else ""
        return f"{self.importer}:{self.line}{where} imports {self.imported}"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sandbox_modules(root: Path = ROOT) -> dict[str, Path]:
    base = root.joinpath(*PACKAGE.split("."))
    return {module_name(path, root): path for path in sorted(base.rglob("*.py"))}


def wing(module: str) -> str:
    inside = module.removeprefix(PACKAGE).lstrip(".").split(".")[0]
    return inside if inside in WINGS else "app"


def _enclosing_function(node, parents) -> str | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return getattr(node, "name", "<lambda>")
    return None


def imports_of(module: str, path: Path, known: set[str]) -> list[Import]:
    """Every import in ``path``, resolved to the module it loads (the sandbox's own by their module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            # ``from x import y``: the module x.y when y is one, else (a name of x) x itself.
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                for alias in node.names
            ]
        else:
            continue
        function = _enclosing_function(node, parents)
        for target in dict.fromkeys(targets):
            found.append(Import(module, target, node.lineno, function))
    return found


def all_imports(root: Path = ROOT) -> list[Import]:
    modules = sandbox_modules(root)
    known = set(modules)
    return [found for module, path in modules.items() for found in imports_of(module, path, known)]


def upward(imports: list[Import]) -> list[Import]:
    """Imports between sandbox modules that a wing may not make."""
    return [
        found
        for found in imports
        if found.imported.startswith(f"{PACKAGE}.")
        and wing(found.imported) not in MAY_IMPORT[wing(found.importer)]
    ]


def in_functions(imports: list[Import]) -> list[Import]:
    """Imports inside a function, but those allowed for a stated reason (never the console's own)."""
    return [
        found
        for found in imports
        if found.function is not None
        and (
            (found.importer, found.imported) not in IMPORTS_IN_FUNCTIONS
            or found.imported.split(".")[0] == "console"
        )
    ]


def circles(imports: list[Import]) -> list[list[str]]:
    """Every set of sandbox modules that import each other in a circle (Tarjan's strongly connected
    components of more than one module, or a module importing itself)."""
    graph: dict[str, set[str]] = {}
    for found in imports:
        if found.imported.startswith(f"{PACKAGE}.") or found.imported == PACKAGE:
            graph.setdefault(found.importer, set()).add(found.imported)
            graph.setdefault(found.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found_circles = []

    def visit(start: str) -> None:
        # Iterative, so a long chain of imports cannot reach the recursion limit.
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found_circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found_circles


def test_it_keeps_every_module_in_a_wing_or_in_the_app_that_assembles_them():
    strays = sorted(m for m in sandbox_modules() if wing(m) == "app" and m not in APP)
    assert strays == [], f"put these in core/, chromium/, resources/ or sites/: {strays}"
    for name in WINGS:
        assert (SANDBOX / name / "__init__.py").is_file(), f"the {name} wing is missing"


def test_it_finds_no_import_running_back_up():
    found = upward(all_imports())
    assert found == [], "imports that run back up (hand the function in instead):\n" + "\n".join(
        map(str, found)
    )


def test_it_finds_no_import_inside_a_function_to_dodge_a_circle():
    found = in_functions(all_imports())
    assert found == [], "imports inside functions (import at the top, or hand it in):\n" + "\n".join(
        map(str, found)
    )


def test_it_finds_no_circle_of_imports():
    found = circles(all_imports())
    assert found == [], "modules that import each other in a circle:\n" + "\n".join(map(str, found))


def test_it_reads_the_imports_it_judges(tmp_path):
    """The reader itself, on a small tree: relative imports, ``from x import module``, imports in
    functions, a name of a package, and a circle."""
    base = tmp_path.joinpath(*PACKAGE.split("."))
    files = {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/state.py": "import json\ndef later():\n    import zlib\n",
        "core/http.py": "from . import state\nfrom ..resources import RESOURCES\n",
        "chromium/__init__.py": "",
        "chromium/engine.py": (
            "from console.sandbox.core import http\n"
            "def wake():\n    from console.sandbox.resources.pools import grow\n"
        ),
        "resources/__init__.py": "from console.sandbox.resources import pools\nRESOURCES = [pools]\n",
        "resources/pools.py": "from ..chromium import engine\nfrom console.sandbox.sites import demo_sites\n",
        "sites/__init__.py": "",
        "sites/demo_sites.py": "import console.sandbox.core.state\n",
        "app.py": "from console.sandbox import resources\n",
    }
    for name, text in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)
    imports = all_imports(tmp_path)
    assert {str(found) for found in upward(imports)} == {
        "console.sandbox.core.http:2 imports console.sandbox.resources",
        "console.sandbox.chromium.engine:3 (in wake) imports console.sandbox.resources.pools",
        "console.sandbox.sites.demo_sites:1 imports console.sandbox.core.state",
    }
    assert sorted(str(found) for found in in_functions(imports)) == [
        "console.sandbox.chromium.engine:3 (in wake) imports console.sandbox.resources.pools",
        "console.sandbox.core.state:3 (in later) imports zlib",
    ]
    assert circles(imports) == [
        [
            "console.sandbox.chromium.engine",
            "console.sandbox.core.http",
            "console.sandbox.resources",
            "console.sandbox.resources.pools",
        ]
    ]
