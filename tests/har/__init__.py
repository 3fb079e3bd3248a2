"""HAR 1.2 validation for the tests: the JSON schemas of npm's ``har-schema`` 2.0.0 (the ones
``har-validator`` uses; ISC licence in schema/LICENSE), checked by ``jsonschema`` (pinned in
requirements/dev.txt). The schemas refer to each other by ``$id`` (``entry.json#``…): a registry
resolves them.

The schema says ``min`` where JSON Schema says ``minimum`` (so it checks no lower bound); ``errors`` adds the
bounds HAR 1.2 states for timings itself."""

import json
from pathlib import Path

from jsonschema import Draft6Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT6

SCHEMAS = Path(__file__).parent / "schema"


def _registry() -> Registry:
    resources = []
    for path in SCHEMAS.glob("*.json"):
        schema = json.loads(path.read_text())
        resources.append((path.name, Resource.from_contents(schema, default_specification=DRAFT6)))
        resources.append((f"{path.name}#", Resource.from_contents(schema, default_specification=DRAFT6)))
    return Registry().with_resources(resources)


VALIDATOR = Draft6Validator(json.loads((SCHEMAS / "har.json").read_text()), registry=_registry())


def errors(har: dict) -> list[str]:
    """Every way ``har`` breaks HAR 1.2 (empty when it is valid)."""
    found = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(har)]
    for i, entry in enumerate(har.get("log", {}).get("entries", [])):
        timings = entry.get("timings", {})
        for name in ("send", "wait", "receive"):
            if not isinstance(timings.get(name), int | float) or timings[name] < 0:
                found.append(f"log/entries/{i}/timings/{name}: must be a number >= 0")
        for name in ("blocked", "dns", "connect", "ssl"):
            if name in timings and timings[name] < -1:
                found.append(f"log/entries/{i}/timings/{name}: must be -1 or more")
        spent = sum(
            v
            for k, v in timings.items()
            if k in ("blocked", "dns", "connect", "send", "wait", "receive") and v > 0
        )
        if abs(entry.get("time", 0) - spent) > 0.01:
            found.append(f"log/entries/{i}/time: {entry.get('time')} is not the sum of its timings ({spent})")
    return found
