"""``python -m console.demo_idp``: migrate its own database, seed the demo users, serve on 127.0.0.1.

Reads DEBUG (must be true), DEMO_IDP_PORT (8200), DEMO_IDP_CLIENT_SECRET (shared with the console's demo
organization; `make run` generates it into .env), DEMO_IDP_REDIRECT_URIS, DEMO_PASSWORD, DEMO_IDP_DB.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from console import localenv

    for name, value in localenv.read().items():  # .env, like the console (the environment wins)
        os.environ.setdefault(name, value)
    os.environ["DJANGO_SETTINGS_MODULE"] = "console.demo_idp.settings"
    import django
    import uvicorn
    from django.conf import settings
    from django.core.asgi import get_asgi_application
    from django.core.management import call_command

    django.setup()
    Path(settings.DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    call_command("migrate", verbosity=0, interactive=False)
    from console.demo_idp import seed

    seed.from_environment()
    uvicorn.run(get_asgi_application(), host="127.0.0.1", port=settings.PORT, log_level="warning")


if __name__ == "__main__":
    main()
