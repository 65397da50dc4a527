"""The project's own app: what `config` registers with Django once the app registry is ready.

A system check runs only if the module that registers it is imported, and Django imports middleware only to
serve a request, never for `manage.py check`. So `config` registers its checks itself, from its place in
INSTALLED_APPS, rather than through an app above it reaching back up the layers to import them.
"""

from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class ProjectConfig(AppConfig):
    name = "config"
    label = "project"
    verbose_name = "Project configuration"

    def ready(self) -> None:
        # `check_security_middleware` (deploy): Django's security checks, run again for our middleware.
        from config import middleware  # noqa: F401


class AdminConfig(DjangoAdminConfig):
    """Django's admin, served by a site whose login is limited per client address and per username."""

    default_site = "chat.admin_site.LimitedLoginAdminSite"
