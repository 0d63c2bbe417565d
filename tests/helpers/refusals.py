"""A parse that must refuse its input with a one-line SourceError, the English byte for byte and the same said in
the reader's language (the sources' i18n tests: test_i18n_parse_errors*.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fleetmon import i18n
from fleetmon.sources import SourceError


def assert_refused(parse: Callable[[], object], english: str, said: str) -> None:
    """``parse()`` raises a SourceError whose English is ``english`` and whose localized message is ``said``."""
    with pytest.raises(SourceError) as caught:
        parse()
    assert str(caught.value) == english  # the English, byte for byte
    assert i18n.message_of(caught.value) == said
