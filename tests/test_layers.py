"""Data flows one way through the tree: no module imports a module of a layer above its own.

The layers, lowest first, are those docs/architecture.md draws. Within `datascraper` the MCP server's side
(the data sources' tools and their clients) imports nothing of the research side, and no data source imports
another; `chat` calls `datascraper`, never the reverse. Imports are read from the source (every `import` and
`from ... import`, those inside functions too), so a late import that climbs is caught as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Lowest first. A module belongs to the layer of the longest prefix that names it; a layer may import its
# own modules and those of the layers below it. Peers in one layer (two data sources) may not import each
# other: `PEERS` lists the layers whose prefixes are kept apart.
LAYERS: list[tuple[str, ...]] = [
    ("config.settings", "chat.__root__", "datascraper.__root__"),
    (
        "datascraper.errors",
        "datascraper.formatting",
        "datascraper.cache",
        "datascraper.model_ref",
        "datascraper.models_config",
        "datascraper.figures",
        "datascraper.sources",
        "datascraper.schemas",
        "datascraper.plan_schemas",
        "datascraper.trace_schemas",
    ),
    ("datascraper.market_data", "datascraper.filings"),
    ("datascraper.mcp_server",),
    (
        "datascraper.prompts",
        "datascraper.stream_rewriter",
        "datascraper.providers.base",
        "datascraper.providers.breaker",
        "datascraper.providers.sse",
        "datascraper.providers.event_stream",
        "datascraper.providers.loop_client",
        "datascraper.search",
    ),
    (
        "datascraper.providers.openai",
        "datascraper.providers.anthropic",
        "datascraper.providers.google",
        "datascraper.providers.openai_compatible",
    ),
    ("datascraper.providers",),
    ("datascraper.web_search", "datascraper.citations", "datascraper.quality_logger"),
    ("datascraper.search.answer",),
    ("datascraper.query_analyzer",),
    ("datascraper.research_engine",),
    ("datascraper.evaluation", "datascraper.briefs"),
    ("chat.models", "chat.db_calls", "chat.redis_client", "chat.request_bodies", "chat.schedules", "chat.watchlist_schemas", "chat.schemas", "chat.brief_schemas"),
    ("chat.event_store", "chat.callers", "chat.selectors"),
    ("chat.events",),
    ("chat.services",),
    ("chat.checks", "chat.doctor", "chat.openai_schemas"),
    (
        "chat.api",
        "chat.api_watchlists",
        "chat.api_briefs",
        "chat.views",
        "chat.pages",
        "chat.openai_compat",
        "chat.admin",
        "chat.admin_site",
        "chat.management",
        "chat.apps",
    ),
    ("config",),
]
PEERS = {
    ("datascraper.market_data", "datascraper.filings"),
    ("datascraper.providers.openai", "datascraper.providers.anthropic"),
    ("datascraper.providers.openai", "datascraper.providers.google"),
    ("datascraper.providers.anthropic", "datascraper.providers.google"),
    ("datascraper.providers.anthropic", "datascraper.providers.openai_compatible"),
    ("datascraper.providers.openai_compatible", "datascraper.providers.google"),
}
# Each model provider's SDK, and the only packages that may import it: everything else calls the provider
# interface (`datascraper.providers.base`), so the research engine never knows which provider answers.
SDK_OWNERS: dict[str, tuple[str, ...]] = {
    "openai": ("datascraper.providers.openai", "datascraper.providers.openai_compatible"),
    "anthropic": ("datascraper.providers.anthropic",),
    "google": ("datascraper.providers.google",),
}


def layer_of(module: str) -> tuple[int, str]:
    """(layer index, prefix) of the longest prefix naming `module`; a package's root (`chat/__init__.py`)
    is `<package>.__root__`."""
    if module in ("chat", "datascraper"):
        module = f"{module}.__root__"
    best: tuple[int, str] | None = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (index, prefix)
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/test_layers.py: place it")
    return best


def application_modules() -> dict[str, Path]:
    modules = {}
    for package in ("datascraper", "chat", "config"):
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            modules[name] = path
    return modules


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The application modules `path` imports (a `from package import name` counts the submodule `name`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(name for name in names if name in known)
    return found


def libraries_imported(path: Path) -> set[str]:
    """The top-level names of the packages `path` imports (`openai` for `from openai.types import X`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def climbs() -> list[str]:
    modules = application_modules()
    found = []
    for module, path in sorted(modules.items()):
        own, own_prefix = layer_of(module)
        for target in sorted(imports_of(path, set(modules)) - {module}):
            theirs, their_prefix = layer_of(target)
            if theirs > own:
                found.append(f"{module} imports {target}, a layer above it")
            elif (
                theirs == own
                and own_prefix != their_prefix
                and (own_prefix, their_prefix) in PEERS | {(b, a) for a, b in PEERS}
            ):
                found.append(f"{module} imports {target}, another data source")
    return found


def test_no_module_imports_a_layer_above_its_own():
    assert climbs() == []


@pytest.mark.parametrize("module", ["datascraper.market_data", "datascraper.filings"])
def test_the_mcp_servers_side_imports_nothing_of_the_research_side(module):
    modules = application_modules()
    research_side = ("datascraper.research_engine", "datascraper.providers", "datascraper.query_analyzer")
    for name, path in modules.items():
        if name == module or name.startswith(module + "."):
            assert not {t for t in imports_of(path, set(modules)) if t.startswith(research_side)}, name


def within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


@pytest.mark.parametrize("sdk", sorted(SDK_OWNERS))
def test_a_providers_sdk_is_imported_by_its_provider_alone(sdk):
    importers = [
        name
        for name, path in sorted(application_modules().items())
        if not within(name, SDK_OWNERS[sdk]) and sdk in libraries_imported(path)
    ]
    assert importers == []
