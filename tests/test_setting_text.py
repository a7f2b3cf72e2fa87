"""Settings echoed in tables, reports and messages read back as the value given (``:g``
printed 0.1234567 as 0.123457, another setting)."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt._util import setting_text
from hepbdt.evaluation.metrics import efficiency_table


@pytest.mark.parametrize("value", [0.05, 1e-05, 0.3, 2.0, 0.1234567, 1 / 3, 123456789.0,
                                   0.30000000000000004, 1e-300])
def test_a_setting_reads_back_as_itself(value):
    text = setting_text(value)
    assert float(text) == value
    assert len(text) <= max(len(f"{value:g}"), len(repr(value)))


def test_plain_settings_keep_their_short_text():
    assert [setting_text(v) for v in (0.05, 1e-05, 0.3, 2.0)] == ["0.05", "1e-05", "0.3", "2"]


def test_efficiency_table_labels_name_the_requested_efficiencies():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 400)
    rows = efficiency_table(y, y + rng.normal(size=400), signal_eff=(0.1234567,),
                            background_eff=(0.3,)).rows()
    labels = [label for label, _ in rows]
    assert "background rejection @ eff_S = 0.1234567" in labels
    assert "signal efficiency @ eff_B = 0.3" in labels


def test_a_long_list_of_efficiencies_is_refused_with_a_short_message():
    from hepbdt.evaluation.decorrelation import MAX_EFFICIENCIES, decorrelation_measures

    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 200)
    many = np.linspace(0.001, 1.0, MAX_EFFICIENCIES + 1)
    with pytest.raises(ValueError, match=r"1 to 1,000 signal efficiencies .*\(1,001 values\)\]$")\
            as refused:
        decorrelation_measures(rng.normal(size=200), y, rng.normal(size=200), efficiencies=many)
    assert len(str(refused.value)) < 300
    with pytest.raises(ValueError, match=r"\(2,000,000 values\)\]$") as refused:
        efficiency_table(y, rng.normal(size=200), signal_eff=np.full(2_000_000, 2.0))
    assert len(str(refused.value)) < 300


def test_rejection_at_a_signal_efficiency_tied_scores_cannot_reach_is_not_a_number():
    """Scores of three values: the cuts keep 0, 20 %, 80 % or all of the signal. The
    rejection "at 30 %" of the cut keeping 80 % was printed as if it were at 30 %; at
    80 % (and within five points of it, 76 %) it is that cut's, by brute force."""
    from hepbdt.evaluation.metrics import background_rejection_at

    y = np.repeat([1, 1, 1, 0, 0, 0], [20, 60, 20, 60, 30, 10])
    score = np.repeat([2.0, 1.0, 0.0, 0.0, 1.0, 2.0], [20, 60, 20, 60, 30, 10])
    rejection = background_rejection_at(y, score, signal_eff=(0.2, 0.3, 0.76, 0.8))
    brute = {t: 1.0 - np.mean(score[y == 0] >= t) for t in (2.0, 1.0)}
    assert np.isnan(rejection[1])
    np.testing.assert_allclose(rejection[[0, 2, 3]], [brute[2.0], brute[1.0], brute[1.0]])
