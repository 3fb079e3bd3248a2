import os
import subprocess
import sys

import pytest
from django.test import Client

from tests.idp import ROOT


def test_it_refuses_to_run_the_demo_identity_provider_in_production():
    env = {**os.environ, "DEBUG": "false", "DEMO_IDP_CLIENT_SECRET": "x"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "-m", "console.demo_idp"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "refuses DEBUG=false" in done.stderr


@pytest.mark.django_db(transaction=True)
def test_it_says_when_no_organization_signs_in_a_domain_with_sso():
    response = Client().post("/sso/", {"email": "someone@nowhere.test"})
    assert response.status_code == 400
    assert "No organization signs in nowhere.test addresses" in response.content.decode()
