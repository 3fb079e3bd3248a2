"""Run the benchmarks and write their figures into docs/benchmarks.md (between the section markers)."""

from __future__ import annotations

import argparse
import re

from tests.bench import browsers, harness, inspector, pages, persistence, relay, relay_stages, screen

SUITES = {
    "pages": pages.run,
    "relay": relay.run,
    "relay-stages": relay_stages.run,
    "browsers": browsers.run,
    "persistence": persistence.run,
    "screen": screen.run,
    "inspector": inspector.run,
}
DOC = harness.ROOT / "docs" / "benchmarks.md"


def write(section: str, body: str) -> None:
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    start, end = f"<!-- bench:{section} -->", f"<!-- /bench:{section} -->"
    block = f"{start}\nMeasured on {harness.machine()}.\n\n{body}\n{end}"
    if start in text:
        text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip() + f"\n\n## {section}\n{block}\n"
    DOC.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "suites", nargs="*", metavar="suite", help=f"one of {', '.join(SUITES)} (default: all)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args()
    unknown = set(args.suites) - set(SUITES)
    if unknown:
        parser.error(f"unknown suite(s): {', '.join(sorted(unknown))}")
    for name in args.suites or list(SUITES):
        print(f"== {name}", flush=True)
        body = SUITES[name]()
        print(body, flush=True)
        if not args.no_write:
            write(name, body)


main()
