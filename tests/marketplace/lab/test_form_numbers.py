"""The study form refuses non-finite numbers at their field (the attack: ``inf`` or ``NaN`` as a
capacity or a seed reached ``int()`` and answered 500)."""

from __future__ import annotations

import pytest

from marketplace.lab.forms import StudyForm


@pytest.mark.parametrize("field", ["capacity", "seeds"])
@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e400", "20, inf"])
def test_a_non_finite_number_is_a_field_error(field: str, value: str) -> None:
    form = StudyForm(data={**StudyForm().initial, field: value})
    assert not form.is_valid()
    assert field in form.errors and "finite" in " ".join(form.errors[field])
