# Operator console: multi-stage build, slim runtime, non-root user.

FROM python:3.11-slim AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /venv
COPY requirements/base.txt /tmp/base.txt
RUN /venv/bin/pip install -r /tmp/base.txt

FROM python:3.11-slim
ENV PATH="/venv/bin:$PATH" \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DEBUG=false
RUN useradd --create-home --uid 10001 console
COPY --from=builder /venv /venv
WORKDIR /app
COPY --chown=console:console . /app
# collectstatic only needs settings to load: throwaway random values, generated here and never kept.
RUN SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    KEY_ENCRYPTION_KEYS="$(python -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())')" \
    python manage.py collectstatic --noinput \
    && chown -R console:console /app/staticfiles
USER console
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD python -c "import urllib.request, sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"
# Migrations run as a separate release step (`python manage.py migrate`), not on every replica's start.
# The worker (alert evaluations and deliveries, usage samples) runs from this same image with its own command, one or more
# beside the console replicas on the same DATABASE_URL (none evaluates or sends twice; SMTP from EMAIL_*):
#   docker run --env-file console.env IMAGE python manage.py worker
# X-Forwarded-For/-Proto are believed only from FORWARDED_ALLOW_IPS (the TLS proxy's addresses): the login
# throttle counts failures per client address, which any other client could otherwise choose for itself.
CMD ["sh", "-c", "exec uvicorn console.asgi:application --host 0.0.0.0 --port 8000 --proxy-headers --forwarded-allow-ips \"${FORWARDED_ALLOW_IPS:-127.0.0.1}\""]
