"""User text made harmless where it is shown: bidirectional controls made visible, and chart
labels escaped for plotly.

* Right-to-left overrides and their kin (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C)
  reorder the text around them: a job named ``"invoice\u202egpj.exe"`` reads as
  ``invoiceexe.jpg``. :func:`inert` shows each as ``[U+202E]`` instead.
* Plotly draws a subset of HTML in legends, hover text and titles (``<a href>``, ``<b>``,
  ``<br>``): a job named ``<a href="//e.vil/p">PAY</a>`` became a live link on the staff
  dashboard. :func:`chart_text` escapes it (plotly shows the entities as the characters) and
  ``%`` too (``%{y}`` in a name would be a hover-template field).
"""

from __future__ import annotations

import html
import math
import re

BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def inert(text: str) -> str:
    """``text`` with every bidirectional control character shown as ``[U+XXXX]``."""
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


def seconds_text(seconds: float) -> str:
    """Simulated seconds for a sentence: ``"412 s"``, or words for an infinite time (never ``"inf s"``)."""
    if math.isfinite(seconds):
        return f"{seconds:,.0f} s"
    return "forever: some resource type it needs has no free slot"


def chart_text(text: object) -> str:
    """User text for a plotly label (trace name, hover text, title): bidi controls made visible,
    HTML escaped (``<``, ``>``, ``&``: quotes stay, plotly shows no &quot;), ``%`` as an entity."""
    return html.escape(inert(str(text)), quote=False).replace("%", "&#37;")  # plotly knows &lt; &gt; &amp;, not &quot;
