"""A small local OpenID Connect provider for trying single sign-on (`make run`) and for the tests.

Its own Django project (settings.py) and process (``python -m console.demo_idp``), built on
django-oauth-toolkit: discovery, JWKS, the authorization code flow with PKCE, ID tokens with the nonce,
userinfo. Demo users only, kept in its own SQLite file; it refuses to start with DEBUG=false. The console
never imports it.
"""
