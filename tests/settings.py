"""The settings the test suite runs with (pytest.ini): the app's own, read under the suite's environment.

The environment must be in place before config.settings reads it, and pytest-django imports the settings
before any conftest, so it is set here; every process the suite starts inherits it.
"""

import tests.environment  # noqa: F401 (sets os.environ, before the import below reads it)
from config.settings import *  # noqa: F403
