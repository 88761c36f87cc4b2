"""What the analysis tests share."""

from __future__ import annotations

import re

#: A unimodal summary: all events, or all but a stray few outside the core range the band is named by (a share short
#: of all is never written 100%).
UNIMODAL = re.compile(r"unimodal: (100|99(\.\d+)?)% of events in ")
