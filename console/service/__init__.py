"""Client of the Browser Automation Service. Never imports Django.

from console.service import Service, projects
svc = Service(base_url="https://api.example.com", api_key="...", project="proj_...")
page = await projects.list_projects(svc, limit=20, offset=0)
"""

from console.service.errors import (
    BadRequest,
    BadResponse,
    CapReached,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NoAnswer,
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
    "BadResponse",
    "CapReached",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "NoAnswer",
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
