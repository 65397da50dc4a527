"""The admin site: Django's own, with its login limited per client address and per username.

A login attempt from an address, or for a username, that has had its share of wrong passwords in the
window (chat.services.admission) is answered 429 with a `Retry-After` and the lockout's reason, and its
password is not checked: the right password then does not get in either, so guessing learns nothing.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache

from chat.services.admission import AdmissionRefused, check_admin_login, count_admin_login_failure


class LimitedLoginAdminSite(admin.AdminSite):
    @method_decorator(never_cache)
    @login_not_required
    def login(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if request.method != "POST":
            return super().login(request, extra_context)
        username = request.POST.get("username", "")
        try:
            check_admin_login(request, username)
        except AdmissionRefused as refused:
            return self.login_refused(request, refused)
        response = super().login(request, extra_context)
        if response.status_code == 200:  # the form again, with its error: a success redirects
            count_admin_login_failure(request, username)
        return response

    def login_refused(self, request: HttpRequest, refused: AdmissionRefused) -> HttpResponse:
        context = {**self.each_context(request), "title": "Log in", "message": refused.message}
        response = TemplateResponse(request, "admin/login_refused.html", context, status=429)
        response["Retry-After"] = str(refused.retry_after_s)
        return response
