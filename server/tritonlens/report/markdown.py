"""Text from the checked files, a capture or a worker as literal markdown: what the hover and SARIF's markdown show."""
from __future__ import annotations

import re

# A text that comes from the checked files, a capture, a baseline or a worker must never become markup where it is
# shown (a link, a command, an image): every character markdown could read as syntax is escaped.
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#!|~&])")


def md(text: object) -> str:
    """`text` as literal markdown: every character markdown could read as syntax escaped, lines joined."""
    return _MARKDOWN.sub(r"\\\1", " ".join(str(text).split()))
