"""Every docstring example of the package runs and prints what it shows (doctest)."""
import doctest

import pytest

import ksum
from ksum import apps, direct, fmm2d, gauss, interpolate


@pytest.mark.parametrize("module", [ksum, direct, fmm2d, gauss, interpolate, apps],
                         ids=lambda m: m.__name__)
def test_docstring_examples(module):
    res = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0


def test_every_public_callable_has_an_example():
    missing = [name for name in ksum.__all__
               if callable(getattr(ksum, name)) and not isinstance(getattr(ksum, name), type(Exception))
               and name not in ("info", "FMMOutput", "DeformResult", "simulate")
               and not (isinstance(getattr(ksum, name), type) and issubclass(getattr(ksum, name), Warning))
               and ">>>" not in (getattr(ksum, name).__doc__ or "")]
    assert missing == []
