"""Client of the Browser Automation Service. Never imports Django.

from console.service import Service, projects
svc = Service(base_url="http://127.0.0.1:8100", api_key="...", project="proj_...")
page = await projects.list_projects(svc, limit=20, offset=0)
"""

from console.service.errors import (
    BadRequest,
    CapReached,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    RateLimited,
    ServiceError,
    StreamDropped,
    Unauthorized,
    Unavailable,
)
from console.service.http import Reply, Service, aclose_clients, request
from console.service.pagination import Page

__all__ = [
    "BadRequest",
    "CapReached",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "NotFound",
    "Page",
    "RateLimited",
    "Reply",
    "Service",
    "ServiceError",
    "StreamDropped",
    "Unauthorized",
    "Unavailable",
    "aclose_clients",
    "request",
]
