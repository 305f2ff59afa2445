"""helpers.plots: chapter 09's diagram of one synchronous step draws the norms it is given and refuses a wrong input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from helpers import plots

NORMS = {1: 0.1657, 2: 0.1657, 3: 0.1, 4: 0.1}


def _texts(figure: matplotlib.figure.Figure) -> str:
    return "\n".join(text.get_text() for axis in figure.axes for text in axis.texts)


def test_the_step_diagram_shows_each_place_and_the_measured_norms() -> None:
    figure = plots.draw_synchronous_step(replica_norms=[0.4479, 0.4594], sum_norm=0.7517, clip_norm=0.1, update_norms=NORMS)
    try:
        texts = _texts(figure)
        assert "norm 0.448" in texts and "norm 0.459" in texts and "norm 0.752" in texts
        for place, who in plots.STEP_CLIPPING_PLACES.items():
            assert who in texts and str(place) in texts
        assert texts.count("(more than the clip norm)") == 2 and texts.count("(the clip norm)") == 2
    finally:
        plt.close(figure)


@pytest.mark.parametrize(
    ("replica_norms", "update_norms", "message"),
    [([0.1, 0.2, 0.3], NORMS, "two replicas, not 3"), ([0.1, 0.2], {1: 0.1, 2: 0.1}, "needs the places")],
)
def test_the_step_diagram_refuses_what_it_cannot_draw(replica_norms: list[float], update_norms: dict[int, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plots.draw_synchronous_step(replica_norms=replica_norms, sum_norm=0.5, clip_norm=0.1, update_norms=update_norms)
