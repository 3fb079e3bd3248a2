"""What `make run` prints once everything it started answers: one framed block, after their start-up lines.

Each process logs as it starts (the sandbox's engine, uvicorn's lines); a banner printed before they answered
was buried under them. This waits for every address to answer (at most ``WAIT_SECONDS``), then prints the
URLs and logins in a frame, and says which did not answer rather than hiding it.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request

WAIT_SECONDS = 30.0


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310 - our own loopback addresses
            return response.status < 500
    except OSError:
        return False


def engine(sandbox: str) -> str:
    try:
        with urllib.request.urlopen(f"{sandbox}/", timeout=2) as response:  # noqa: S310 - the local sandbox
            said = json.load(response)
    except (OSError, ValueError):
        return "unknown (the sandbox did not say)"
    kind = "real Chromium" if said.get("engine") == "chromium" else "simulated browser"
    return f"{kind} ({said.get('engine_reason', '')})"


def lines(env=os.environ, ready=answers, browsers=engine) -> list[str]:
    port, sandbox_port = env.get("PORT", "8000"), env.get("SANDBOX_PORT", "8100")
    idp_port, password = env.get("DEMO_IDP_PORT", "8200"), env.get("DEMO_PASSWORD", "demo")
    console, sandbox, idp = (f"http://127.0.0.1:{p}" for p in (port, sandbox_port, idp_port))
    waiting = {"console": f"{console}/healthz", "sandbox": f"{sandbox}/", "identity provider": f"{idp}/"}
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        waiting = {name: url for name, url in waiting.items() if not ready(url)}
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    said = [
        f"Console   {console}/",
        f"Log in    demo / {password}   (also operator and viewer, same password)",
        f"Sandbox   {sandbox}/   a local Browser Automation Service",
        f"Browsers  {browsers(sandbox)}",
        f"SSO       Sign in with SSO as ada@sso.demo.test (also otto, vera), password {password}",
        f"          demo identity provider on {idp}/",
        f"Worker    alert rules evaluated every {env.get('ALERTS_EVALUATION_SECONDS', '30')} s;"
        " alert e-mails are printed in this log",
        "Ctrl-C stops them all.",
    ]
    if waiting:
        said.insert(0, f"Not answering after {WAIT_SECONDS:.0f} s: {', '.join(waiting)} (see the log above)")
    return said


def framed(said: list[str]) -> str:
    width = max(len(line) for line in said)
    top, bottom = "╔" + "═" * (width + 2) + "╗", "╚" + "═" * (width + 2) + "╝"
    return "\n".join([top, *(f"║ {line.ljust(width)} ║" for line in said), bottom])


def main() -> None:
    print("\n" + framed(lines()) + "\n", flush=True)


if __name__ == "__main__":
    main()
