"""Regular expressions compiled at their first use, not when their module loads: most serve rare paths, and the
~50-200 µs each takes to compile adds up on every start."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import AnyStr


def lazy_pattern(pattern: AnyStr, flags: int = 0) -> Callable[[], re.Pattern[AnyStr]]:
    """A getter of `re.compile(pattern, flags)`: compiled at its first call, the same object at every call after."""
    return functools.cache(functools.partial(re.compile, pattern, flags))
