from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from pydantic import ValidationError


class ChatConfig(AppConfig):
    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Refuse to start on bad RESEARCH_* settings (an unknown provider or SEARCH_PROVIDER among them), or
        hosted search with a research model that has none, rather than fail every run later."""
        import chat.checks  # noqa: F401  registers the models' lifecycle check
        from datascraper.errors import HostedSearchUnavailable
        from datascraper.model_ref import ModelSettingInvalid
        from datascraper.models_config import get_research_config
        from datascraper.search import registry as search_registry

        try:
            config = get_research_config()
        except ValidationError as exc:
            raise ImproperlyConfigured(_settings_error(exc, ModelSettingInvalid)) from None
        try:
            search_registry.require_available(config)
        except HostedSearchUnavailable as exc:
            raise ImproperlyConfigured(exc.message) from None


def _settings_error(exc: ValidationError, model_setting_error: type[ValueError]) -> str:
    """One line: a model setting's own message (it says exactly what to write), else the fields named."""
    errors = exc.errors()
    for error in errors:
        cause = error.get("ctx", {}).get("error")
        if isinstance(cause, model_setting_error):
            return str(cause)
    fields = ", ".join(str(error["loc"][0]) for error in errors)
    return f"Invalid research settings ({fields}): check the RESEARCH_* variables."
