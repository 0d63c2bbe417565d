"""Schema step m017 (issue 25): a finding's text kept translatable (:func:`fleetmon.i18n.dumps`).

A finding's summary is stored in English (in its ``evidence`` JSON, as ``"summary"``: scripts, the CSV and
JSON exports read it) and its action in ``action``. ``texts`` keeps, beside them, how they were made:
JSON ``{"summary": data, "action": data, "base_summary": data, "why": data}`` (``base_summary``: the rule's
own summary that the lifecycle keeps in ``evidence.lifecycle.base_summary``; ``why``: why the data closed it,
``evidence.lifecycle.resolved.why``, its figures as values; written by later builds into the same column), each as :func:`fleetmon.i18n.to_data` writes an
``i18n.Text`` (its template and values, nested Text, ``Joined`` and ``Moment`` values too), so that a
surface can say a stored finding in the reader's language. NULL for rows stored before this step and
for text with nothing to translate: those are shown as stored (English). ``finding_resolutions`` gets
the same column for the summary it copies.

Kept beside :mod:`storage.schema` (which registers it with its other hand-written steps), free of
storage imports so that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database


def m017_finding_texts(db: Database) -> None:
    """Add ``texts`` (NULL: the English text as stored) to ``findings`` and ``finding_resolutions``."""
    db.execute("ALTER TABLE findings ADD COLUMN texts TEXT")
    db.execute("ALTER TABLE finding_resolutions ADD COLUMN texts TEXT")
