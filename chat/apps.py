from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured


class ChatConfig(AppConfig):
    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"
    # False in a process that reports a bad configuration itself instead of refusing to start: `manage.py
    # doctor` (manage.py sets it), whose contract is to run whatever the configuration.
    refuse_bad_configuration = True

    def ready(self) -> None:
        """Refuse to start on bad RESEARCH_* settings (an unknown provider or SEARCH_PROVIDER among them), or
        hosted search with a research model that has none, rather than fail every run later."""
        import chat.checks  # noqa: F401  registers the models' lifecycle check
        from datascraper.providers.availability import ConfigurationRefused, checked_configuration

        try:
            checked_configuration()
        except ConfigurationRefused as exc:
            if type(self).refuse_bad_configuration:
                raise ImproperlyConfigured(str(exc)) from None
