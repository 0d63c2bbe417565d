"""Schema step m018 (issue 25): a node's reason for a failed poll kept translatable (:func:`fleetmon.i18n.dumps`).

The collector's one-line reason for a failed poll ("cannot connect: Connection refused (10.0.0.7:9400)") is stored
in English, as before: ``nodes.last_error``, ``poll_log.error`` and, for the poll that made the node unreachable,
the ``node_unreachable`` event's ``message`` (the outages the reachability findings read). Beside each, a new
column keeps how the reason was made, as m017's ``findings.texts`` keeps a finding's summary:

* ``nodes.last_error_texts`` and ``poll_log.error_texts``: JSON ``{"error": data}``;
* ``events.message_texts``: JSON ``{"message": data}`` (the collector's ``node_unreachable`` events only);

``data`` as :func:`fleetmon.i18n.to_data` writes an ``i18n.Text`` (template and values, nested). NULL for rows
stored before this step, for a reason that is not an ``i18n.Text``, for a good poll and for an agent's events:
those are shown as stored (English).

Kept beside :mod:`storage.schema` (which registers it with its other hand-written steps), free of storage imports
so that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database


def m018_node_error_texts(db: Database) -> None:
    """Add ``nodes.last_error_texts``, ``poll_log.error_texts`` and ``events.message_texts`` (NULL: as stored)."""
    db.execute("ALTER TABLE nodes ADD COLUMN last_error_texts TEXT")
    db.execute("ALTER TABLE poll_log ADD COLUMN error_texts TEXT")
    db.execute("ALTER TABLE events ADD COLUMN message_texts TEXT")
