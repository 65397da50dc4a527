from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from pydantic import ValidationError


class ChatConfig(AppConfig):
    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Refuse to start on bad RESEARCH_* settings, rather than fail every run later."""
        import chat.checks  # noqa: F401  registers the models' lifecycle check
        from datascraper.models_config import get_research_config

        try:
            get_research_config()
        except ValidationError as exc:
            fields = ", ".join(str(error["loc"][0]) for error in exc.errors())
            message = f"Invalid research settings ({fields}): check the RESEARCH_* variables."
            raise ImproperlyConfigured(message) from None
