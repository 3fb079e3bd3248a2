"""WebMCP of a real session (``/browsers/{id}/webmcp/…``, SDK 0.131): the tools a browser's open tabs
offer, and custom tools added to it. Everything runs in the session's browser through the sandbox's own
Playwright executor (``browser_playwright.run_internal``: a confined Node.js process over the session's
CDP proxy).

Choices where the SDK's docstrings leave room (docs/sandbox.md copies them):

- Native tools are those a page registers with ``navigator.modelContext.registerTool`` where the browser
  offers that API (Debian's Chromium does not: a page may define it itself; the sandbox reads
  ``navigator.modelContext.tools``, an array of ``{name, description, inputSchema, execute}``).
- ``POST …/webmcp/custom-tools {namespace, source, force_overwrite_namespace?}``: ``source`` is a
  JavaScript expression evaluating to a non-empty array of ``{kind?: "page"|"cdp", match: {url_patterns:
  [glob]}, tool: {name, description, inputSchema, …}, execute}``. It is evaluated in the executor to check
  it (400 saying why when it throws or has the wrong shape) and kept. A name already in the namespace is
  409 unless ``force_overwrite_namespace`` (which replaces the namespace's tools). ``*`` in a URL pattern
  matches any characters. Answers every custom tool of the session.
- ``GET …/webmcp/tools`` (``exclude_custom``): one entry per (open tab, tool): native tools of the tab,
  then each custom tool whose pattern matches the tab's URL. ``tool_ref`` is ``<target id>/<tool>``,
  ``tab_id`` the tab's position, ``window_id`` 1.
- ``POST …/webmcp/invoke {tool_ref, input, timeout_sec?}``: a page tool's ``execute(input)`` runs in the
  tab (``page.evaluate``), a ``cdp`` tool's ``execute(input, {page, context, browser})`` in the executor.
  ``completed`` with ``output``, or ``error`` with ``error_text``; a ``tool_ref`` whose tab is gone is 404.
- ``DELETE …/webmcp/custom-tools/{id}`` removes one (404 when unknown). Custom tools end with the session.
"""

from __future__ import annotations

import json
import re

from starlette.requests import Request
from starlette.routing import Route

from console.sandbox.core.errors import ApiError, conflict, invalid, not_found
from console.sandbox.core.http import endpoint, no_content, ok, read_json
from console.sandbox.core.state import Tenant, new_id
from console.sandbox.resources import browser_playwright, sessions

EXECUTOR = "webmcp"
MAX_SOURCE = 8_000_000
MAX_INPUT = 1024 * 1024
TIMEOUT = 30
_NAMESPACE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

# The session's custom tools, by session id (kept with the executors: they end with the session).
_custom: dict[str, list[dict]] = {}

# What TABS and INVOKE start with: they ask each page for its CDP target (id and type).
TARGET_OF = """
async function targetOf(p) {
  const s = await p.context().newCDPSession(p);
  try {
    return (await s.send('Target.getTargetInfo')).targetInfo;
  } finally {
    await s.detach().catch(() => {});
  }
}
"""

TABS = """
const tabs = [];
for (const p of browser.contexts().flatMap((c) => c.pages())) {
  const info = await targetOf(p).catch(() => null);
  if (!info || info.type !== 'page') continue;
  const native = await p.evaluate(() => {
    const mc = navigator.modelContext;
    const tools = mc && Array.isArray(mc.tools) ? mc.tools : [];
    return tools.map((t) => ({name: String(t.name), description: String(t.description || ''),
      inputSchema: t.inputSchema || {type: 'object'}}));
  }).catch(() => []);
  tabs.push({target_id: info.targetId, url: p.url(), title: await p.title().catch(() => ''), native});
}
return tabs;
"""

CHECK = """
const defs = (SOURCE);
if (!Array.isArray(defs) || defs.length === 0) throw new Error('source must evaluate to a non-empty array');
return defs.map((d, i) => {
  if (!d || typeof d !== 'object') throw new Error(`definition ${i} is not an object`);
  if (typeof d.execute !== 'function') throw new Error(`definition ${i} has no execute function`);
  const t = d.tool || {};
  if (!t.name || typeof t.name !== 'string') throw new Error(`definition ${i} has no tool.name`);
  const patterns = (d.match && d.match.url_patterns) || [];
  if (!Array.isArray(patterns) || !patterns.length) {
    throw new Error(`definition ${i} has no match.url_patterns`);
  }
  return {kind: d.kind === 'cdp' ? 'cdp' : 'page', url_patterns: patterns.map(String),
    tool: {name: t.name, description: String(t.description || ''),
      inputSchema: t.inputSchema || {type: 'object'},
      ...(t.title ? {title: String(t.title)} : {}), ...(t.outputSchema ? {outputSchema: t.outputSchema} : {}),
      ...(t.annotations ? {annotations: t.annotations} : {})}};
});
"""

INVOKE = """
const target = TARGET;
let tab = null;
for (const p of browser.contexts().flatMap((c) => c.pages())) {
  const info = await targetOf(p).catch(() => null);
  if (info && info.targetId === target) tab = p;
}
if (!tab) return {gone: true};
const input = INPUT;
const name = NAME;
try {
  if (INDEX === null) {
    const output = await tab.evaluate(async ([tool, args]) => {
      const found = (navigator.modelContext.tools || []).find((t) => t.name === tool);
      if (!found) throw new Error('the tool is no longer registered');
      return await found.execute(args);
    }, [name, input]);
    return {output};
  }
  const def = (SOURCE)[INDEX];
  const output = def.kind === 'cdp'
    ? await def.execute(input, {page: tab, context: tab.context(), browser})
    : await tab.evaluate(def.execute, input);
  return {output: output === undefined ? null : output};
} catch (error) {
  return {error: String(error && error.message || error)};
}
"""


def _tools(record: dict) -> list[dict]:
    return _custom.setdefault(record["session_id"], [])


def stop_all(tenant: Tenant, record: dict) -> None:
    """The session ended: its custom tools go (``sessions.ended``)."""
    _custom.pop(record["session_id"], None)


def _matches(pattern: str, url: str) -> bool:
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), url) is not None


def _definition(tool: dict) -> dict:
    return {
        "id": tool["id"],
        "kind": tool["kind"],
        "namespace": tool["namespace"],
        "match": {"url_patterns": tool["url_patterns"]},
        "tool": tool["tool"],
    }


async def _run(request: Request, record: dict, code: str, timeout: int = TIMEOUT):
    answer = await browser_playwright.run_internal(request, record, EXECUTOR, code, timeout)
    if not answer["success"]:
        raise ApiError(502, "webmcp_failed", answer.get("error") or "the browser did not answer")
    return answer.get("result")


@endpoint
async def list_tools(request: Request):
    record = await browser_playwright.ready_session(request)
    exclude = request.query_params.get("exclude_custom", "false").lower() in ("true", "1")
    tabs = await _run(request, record, TARGET_OF + TABS) or []
    found = []
    for position, tab in enumerate(tabs, start=1):
        source = {"tab_id": position, "window_id": 1, "page_url": tab["url"], "page_title": tab["title"]}
        source["target_id"] = tab["target_id"]
        for tool in tab.get("native") or []:
            found.append({"tool_ref": f"{tab['target_id']}/{tool['name']}", "tool": tool, "source": source})
        if exclude:
            continue
        for tool in _tools(record):
            if any(_matches(p, tab["url"]) for p in tool["url_patterns"]):
                found.append(
                    {
                        "tool_ref": f"{tab['target_id']}/{tool['id']}",
                        "tool": tool["tool"],
                        "source": {**source, "custom": {"id": tool["id"], "namespace": tool["namespace"]}},
                    }
                )
    return ok({"tools": found})


@endpoint
async def invoke(request: Request):
    record = await browser_playwright.ready_session(request)
    body = await read_json(request)
    ref, given = body.get("tool_ref"), body.get("input")
    if not isinstance(ref, str) or "/" not in ref:
        raise invalid("the call is not valid", tool_ref="a tool_ref from the tools list")
    if not isinstance(given, dict) or len(json.dumps(given)) > MAX_INPUT:
        raise invalid("the call is not valid", input="an object of at most 1 MiB as JSON")
    timeout = body.get("timeout_sec", TIMEOUT)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 300:
        raise invalid("the call is not valid", timeout_sec="between 1 and 300")
    target, name = ref.split("/", 1)
    custom = next((t for t in _tools(record) if t["id"] == name), None)
    code = (
        (TARGET_OF + INVOKE)
        .replace("TARGET", json.dumps(target))
        .replace("INPUT", json.dumps(given))
        .replace("NAME", json.dumps(name))
        .replace("INDEX", "null" if custom is None else str(custom["index"]))
        .replace("SOURCE", custom["source"] if custom else "[]")
    )
    answer = await browser_playwright.run_internal(request, record, EXECUTOR, code, timeout)
    invocation = {"invocation_id": new_id("inv")}
    if not answer["success"]:
        return ok({**invocation, "status": "error", "error_text": answer.get("error") or "outcome_unknown"})
    result = answer.get("result") or {}
    if result.get("gone"):
        raise not_found("tool", ref)
    if "error" in result:
        return ok({**invocation, "status": "error", "error_text": str(result["error"])})
    return ok({**invocation, "status": "completed", "output": result.get("output")})


@endpoint
async def list_custom(request: Request):
    record = sessions.get_session(request, request.path_params["id"])
    return ok({"tools": [_definition(t) for t in _tools(record)]})


@endpoint
async def add_custom(request: Request):
    record = await browser_playwright.ready_session(request)
    body = await read_json(request, limit=MAX_SOURCE + 4096)
    namespace, source = body.get("namespace"), body.get("source")
    errors = {}
    if not isinstance(namespace, str) or not _NAMESPACE.match(namespace):
        errors["namespace"] = "1 to 64 letters, digits, '.', '_' or '-'"
    if not isinstance(source, str) or not source.strip() or len(source.encode()) > MAX_SOURCE:
        errors["source"] = f"a JavaScript expression of at most {MAX_SOURCE} bytes"
    if errors:
        raise invalid("the tools are not valid", **errors)
    answer = await browser_playwright.run_internal(
        request, record, EXECUTOR, CHECK.replace("SOURCE", source), TIMEOUT
    )
    if not answer["success"]:
        raise invalid("the tools are not valid", source=(answer.get("error") or "").splitlines()[0][:500])
    checked = answer.get("result") or []
    tools = _tools(record)
    overwrite = body.get("force_overwrite_namespace") is True
    names = [d["tool"]["name"] for d in checked]
    if len(set(names)) != len(names):
        raise invalid("the tools are not valid", source="two tools share a name")
    if not overwrite:
        taken = {t["tool"]["name"] for t in tools if t["namespace"] == namespace} & set(names)
        if taken:
            raise conflict(f"{', '.join(sorted(taken))} already in namespace {namespace!r}", "tool_exists")
    kept = [t for t in tools if not (overwrite and t["namespace"] == namespace)]
    for index, definition in enumerate(checked):
        kept.append(
            {
                "id": new_id("ctl"),
                "namespace": namespace,
                "index": index,
                "source": source,
                **definition,
            }
        )
    _custom[record["session_id"]] = kept
    return ok({"tools": [_definition(t) for t in kept]})


@endpoint
async def remove_custom(request: Request):
    record = sessions.get_session(request, request.path_params["id"])
    tools = _tools(record)
    wanted = request.path_params["tool_id"]
    if not any(t["id"] == wanted for t in tools):
        raise not_found("custom tool", wanted)
    _custom[record["session_id"]] = [t for t in tools if t["id"] != wanted]
    return no_content()


routes = [
    Route("/browsers/{id}/webmcp/tools", list_tools, methods=["GET"]),
    Route("/browsers/{id}/webmcp/invoke", invoke, methods=["POST"]),
    Route("/browsers/{id}/webmcp/custom-tools", list_custom, methods=["GET"]),
    Route("/browsers/{id}/webmcp/custom-tools", add_custom, methods=["POST"]),
    Route("/browsers/{id}/webmcp/custom-tools/{tool_id}", remove_custom, methods=["DELETE"]),
]
