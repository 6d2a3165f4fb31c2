# Fixtures of the core suite: `impl` runs a scenario against the C++ binding (sparrow_core)
# and against the pure-Python reference models (tests/core/reference), uvloop style.
import pytest

import sparrow_core

from . import reference


@pytest.fixture(params=["binding", "reference"])
def impl(request):
    """The module under test: sparrow_core, or the reference model with the same face."""
    return sparrow_core if request.param == "binding" else reference
