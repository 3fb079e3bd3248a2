"""OpenID Connect with an organization's identity provider, through Authlib (never by hand).

Authlib's Django client makes the authorization request (authorization code flow, PKCE with S256, a random
``state`` and ``nonce`` kept in the Django session) and, on the way back, checks the state, exchanges the
code with the PKCE verifier, and validates the ID token: signature against the provider's JWKS, issuer,
audience, expiry and the nonce. This module adds what is ours:

- every request the console itself makes to the provider (discovery, token, JWKS, userinfo) goes only
  where ``console.service.targets`` lets the service API key go: http(s), no user info, no link-local or
  metadata address, private ones only with ``SERVICE_URL_ALLOW_PRIVATE``; the address each connection
  reached is checked again (DNS rebinding), redirects are not followed and the environment's proxies are
  not used;
- discovery must name the configured issuer exactly, and its endpoints must be http(s) URLs.
"""

from __future__ import annotations

import requests
from authlib.common.errors import AuthlibBaseError
from authlib.integrations.base_client import OAuthError
from authlib.integrations.django_client import DjangoOAuth2App
from authlib.integrations.django_client.integration import DjangoIntegration
from authlib.integrations.requests_client import OAuth2Session
from django.conf import settings
from joserfc.errors import JoseError
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from console.service import targets

SCOPE = "openid email profile"
TIMEOUT = 10  # seconds, per request to the provider
ENDPOINTS = ("authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint")


class ProviderError(Exception):
    """The provider cannot be used or answered wrongly; ``str()`` is a sentence for the admin or user."""


def issuer_refusal(url: str) -> str:
    """Why the console may not talk to an issuer at ``url`` ("" when it may): the service URL's rule."""
    try:
        targets.check_url(url, allow_private=settings.SERVICE_URL_ALLOW_PRIVATE)
    except targets.ForbiddenTarget as exc:
        return exc.message.replace("the service base URL", "the issuer URL")
    return ""


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def _check_peer(sock) -> None:
    if sock is None:
        return
    try:
        address = sock.getpeername()[0]
    except OSError:
        return
    reason = targets.refusal(address, allow_private=settings.SERVICE_URL_ALLOW_PRIVATE)
    if reason:
        sock.close()
        raise ProviderError(f"the identity provider's address {address} is {reason}")


class _CheckedHTTPConnection(HTTPConnection):
    def connect(self):
        super().connect()
        _check_peer(self.sock)


class _CheckedHTTPSConnection(HTTPSConnection):
    def connect(self):
        super().connect()
        _check_peer(self.sock)


class _CheckedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _CheckedHTTPConnection


class _CheckedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _CheckedHTTPSConnection


class _CheckedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _CheckedHTTPPool, "https": _CheckedHTTPSPool}


class CheckedSession(OAuth2Session):
    """Authlib's requests session, sending only to allowed addresses and following no redirect."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.trust_env = False  # no proxy from the environment: it would resolve the name itself
        for prefix in ("http://", "https://"):
            self.mount(prefix, _CheckedAdapter())

    def request(self, method, url, *args, **kwargs):
        reason = issuer_refusal(url)
        if reason:
            raise ProviderError(reason.replace("the issuer URL", "a URL of the identity provider"))
        kwargs["allow_redirects"] = False
        kwargs.setdefault("timeout", TIMEOUT)
        try:
            return super().request(method, url, *args, **kwargs)
        except (requests.RequestException, OSError) as exc:
            raise ProviderError(f"the identity provider did not answer ({exc.__class__.__name__})") from None


class OrgProvider(DjangoOAuth2App):
    """One organization's provider, built per request from its settings (nothing cached between orgs)."""

    client_cls = CheckedSession

    def __init__(self, signin):
        self.issuer = signin.issuer_url
        name = f"org{signin.org_id}"
        super().__init__(
            DjangoIntegration(name),
            name=name,
            client_id=signin.client_id,
            client_secret=signin.client_secret,
            server_metadata_url=discovery_url(signin.issuer_url),
            client_kwargs={"scope": SCOPE, "code_challenge_method": "S256", "timeout": TIMEOUT},
        )

    def load_server_metadata(self):
        fresh = "_loaded_at" not in self.server_metadata
        try:
            metadata = super().load_server_metadata()
        except ValueError:
            raise ProviderError("the identity provider's discovery document is not JSON") from None
        except requests.HTTPError as exc:
            raise ProviderError(f"discovery answered HTTP {exc.response.status_code}") from None
        if fresh:
            if not isinstance(metadata, dict) or metadata.get("issuer") != self.issuer:
                raise ProviderError(
                    "the discovery document names another issuer than the configured one: "
                    "enter the issuer exactly as the provider writes it"
                )
            for name in ENDPOINTS:
                value = metadata.get(name)
                if value is not None and (
                    not isinstance(value, str) or not value.startswith(("https://", "http://"))
                ):
                    raise ProviderError(f"the discovery document's {name} is not an http(s) URL")
            if not metadata.get("authorization_endpoint") or not metadata.get("token_endpoint"):
                raise ProviderError("the discovery document has no authorization or token endpoint")
        return metadata

    def check(self) -> None:
        """Fetch and check discovery (the settings page's "Test")."""
        self.load_server_metadata()


# What a failed sign-in raises: Authlib's errors (state, token endpoint, ID token claims: its own and
# joserfc's), ours, and an answer that is not JSON.
FAILURES = (AuthlibBaseError, JoseError, ProviderError, ValueError)

__all__ = ["FAILURES", "OAuthError", "OrgProvider", "ProviderError", "discovery_url", "issuer_refusal"]
