import json

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.http import HttpResponseForbidden, JsonResponse
from django.shortcuts import render
from django.utils.crypto import constant_time_compare
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from console.demo_idp import seed
from console.demo_idp.validator import FAULTS


def index(request):
    return render(request, "demo_idp/index.html", {"users": seed.DEMO_USERS, "issuer": settings.ISSUER})


def _allowed(request) -> bool:
    token = request.headers.get("Authorization", "").removeprefix("Bearer ")
    return bool(settings.CONTROL_TOKEN) and constant_time_compare(token, settings.CONTROL_TOKEN)


@csrf_exempt
@require_POST
def control_user(request):
    """Create or change a user: {"username", "email"?, "password"?, "groups"?: [...], "active"?: bool}."""
    if not _allowed(request):
        return HttpResponseForbidden("control is off")
    data = json.loads(request.body)
    user, _ = get_user_model().objects.get_or_create(username=data["username"])
    if "email" in data:
        user.email = data["email"]
    if "password" in data:
        user.set_password(data["password"])
    if "active" in data:
        user.is_active = bool(data["active"])
    user.save()
    if "groups" in data:
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in data["groups"]])
    return JsonResponse({"id": str(user.pk)})


@csrf_exempt
@require_POST
def control_faults(request):
    """{"nonce": "..."} puts that nonce in every ID token; {} stops misbehaving."""
    if not _allowed(request):
        return HttpResponseForbidden("control is off")
    FAULTS.clear()
    FAULTS.update({k: str(v) for k, v in json.loads(request.body).items()})
    return JsonResponse(FAULTS)
