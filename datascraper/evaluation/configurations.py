"""The configurations an evaluation compares (`manage.py evaluate SET --config NAME=ENVFILE ...`): each a name
and an env file of settings (models, search provider, keys, base URLs, RESEARCH_* knobs) over this process's
environment.

The research configuration and the market data client are process-wide, so each configuration runs in a
process of its own (`configuration_runs`), with the environment read here. The judge must be the same for
every configuration, or accuracy would compare judges: every child is told this process's judge model
(`EVAL_JUDGE_MODEL`, whatever the file says), and a file that sets what the judge's calls read (its provider's
key or base URL) to another value than this environment's is refused, since overriding it would also change
what that configuration researches with.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dotenv import dotenv_values
from dotenv.parser import parse_stream
from pydantic import ValidationError

from datascraper.model_ref import parse_model
from datascraper.models_config import PROVIDER_SETTINGS, ResearchConfig

MIN_CONFIGURATIONS = 2
# A configuration's name is also its folder's: a plain word.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
# The setting that names the judge's model; the children are told this process's.
JUDGE_SETTING = "EVAL_JUDGE_MODEL"
# Settings whose values are never shown (in the comparison, its figures or a message), by their name.
_SECRET = re.compile(r"KEY|SECRET|TOKEN|PASSWORD", re.IGNORECASE)
HIDDEN = "(set, not shown)"


class ConfigurationInvalid(Exception):
    """A `--config` that cannot run; the message names the option and what is wrong with it."""


@dataclass(frozen=True)
class Configuration:
    """One configuration: its name, its env file, the settings the file sets, and the environment and research
    configuration its process will have (this environment, overlaid by the file, with this judge)."""

    name: str
    env_file: Path
    settings: dict[str, str] = field(repr=False)
    environment: dict[str, str] = field(repr=False)
    research: ResearchConfig = field(repr=False)

    @property
    def shown_settings(self) -> dict[str, str]:
        """The file's settings as they may be shown: a key's, a token's or a password's value hidden."""
        return {name: HIDDEN if _SECRET.search(name) else value for name, value in self.settings.items()}


def judge_endpoint(judge_model: str) -> tuple[str, ...]:
    """The settings the judge's calls read besides its model: its provider's key and base URL (a model without
    a prefix, or an OpenAI fine-tuned id such as `ft:gpt-4.1:org::id`, is `openai`'s)."""
    return PROVIDER_SETTINGS[parse_model(judge_model).provider]


def read_configurations(
    options: Sequence[str], environ: Mapping[str, str], judge_model: str | None
) -> list[Configuration]:
    """The configurations of the `--config NAME=ENVFILE` options, in order, each checked: a plain and unique
    name, a readable env file, settings the research configuration accepts, and the judge left as it is here
    (`judge_model`; None: nothing is graded). Raises ConfigurationInvalid naming the first that is not."""
    if len(options) < MIN_CONFIGURATIONS:
        raise ConfigurationInvalid(
            f"--config compares configurations: give {MIN_CONFIGURATIONS} or more (NAME=ENVFILE each); "
            "for one, set its settings and run evaluate without --config."
        )
    configurations: list[Configuration] = []
    for option in options:
        name, env_file = _parse_option(option)
        if any(earlier.name.casefold() == name.casefold() for earlier in configurations):
            raise ConfigurationInvalid(f"--config {option}: the name {name} is given twice; each needs its own.")
        configurations.append(_configuration(name, env_file, environ, judge_model))
    return configurations


def _parse_option(option: str) -> tuple[str, Path]:
    name, sign, path = option.partition("=")
    if not sign or not path.strip():
        raise ConfigurationInvalid(f"--config {option}: expected NAME=ENVFILE, e.g. --config mini=mini.env.")
    if not NAME.match(name):
        raise ConfigurationInvalid(
            f"--config {option}: a configuration's name is a plain word (letters, digits, - and _, at most 40, "
            "starting with a letter or digit): it names its folder and its column."
        )
    return name, Path(path.strip())


def _configuration(name: str, env_file: Path, environ: Mapping[str, str], judge_model: str | None) -> Configuration:
    where = f"--config {name}={env_file}"
    settings = read_env_file(env_file, where)
    environment = {**environ, **settings}
    if judge_model is not None:
        for setting in judge_endpoint(judge_model):
            if setting in settings and settings[setting] != environ.get(setting, ""):
                raise ConfigurationInvalid(
                    f"{where}: it sets {setting}, which the judge ({judge_model}) reads too, to another value than "
                    "this environment's. The judge must be the same for every configuration: leave "
                    f"{setting} out of the file, or give it this environment's value."
                )
        environment[JUDGE_SETTING] = judge_model
    try:
        research = ResearchConfig.from_env(environment)
    except ValidationError as exc:
        error = exc.errors()[0]
        setting = ".".join(str(part) for part in error["loc"])
        raise ConfigurationInvalid(f"{where}: {setting}: {error['msg']}.") from None
    return Configuration(name, env_file, settings, environment, research)


def read_env_file(path: Path, where: str) -> dict[str, str]:
    """The settings an env file sets (`NAME=value` lines, python-dotenv's syntax); a name with no value sets
    nothing. Raises ConfigurationInvalid for a file that cannot be read or a line that is not a setting."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigurationInvalid(f"{where}: the env file cannot be read ({reason}).") from None
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raise ConfigurationInvalid(f"{where}, line {binding.original.line}: not a setting (NAME=value).")
    return {name: value for name, value in dotenv_values(stream=io.StringIO(text)).items() if value is not None}
