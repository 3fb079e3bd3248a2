# The live streams' fixtures (a console under uvicorn, a quiet tenant, a session, signed-in cookies).
from tests.live.test_revoke import (  # noqa: F401
    console_url,
    operator_cookies,
    quiet,
    session_id,
    viewer_cookies,
)
