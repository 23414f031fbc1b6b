"""The hosted page's themed text: whatever background an operator picks, the ink chosen for it
(and for the buttons on the accent) reads at 4.5:1 or better, as WCAG AA asks of body text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from anteroom.queue.rooms.room_config import MIN_CONTRAST, contrast
from anteroom.web.pages.hosted_pages import readable_ink

colours = st.integers(0, 0xFFFFFF).map(lambda n: f"#{n:06x}")


@given(colours)
def test_the_ink_reads_on_every_background(background: str) -> None:
    assert contrast(readable_ink(background), background) >= MIN_CONTRAST


def test_a_mid_grey_gets_ink_that_reads() -> None:
    # Near-black (#111111) gave 4.41:1 here and white 4.29:1: a passing accent, unreadable text.
    assert contrast(readable_ink("#7a7a7a"), "#7a7a7a") >= MIN_CONTRAST
