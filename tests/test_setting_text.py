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
