"""Notifications from the collector (issue 24): see :mod:`fleetmon.notify.notifier` and docs/notifications.md.

* :mod:`fleetmon.notify.message`: events (a finding's lifecycle transition, a stale node, the daily
  digest) and the messages made of them, folded when many come together;
* :mod:`fleetmon.notify.send`: one destination's Apprise URL (its secret from a file) and sending;
* :mod:`fleetmon.notify.notifier`: the outbox, the sender threads, quiet hours, rate limits, retries
  and dead letters.
"""

from __future__ import annotations

from fleetmon.notify.message import FOLD_OVER, Event, compose
from fleetmon.notify.notifier import Notifier, accepts, in_quiet_hours
from fleetmon.notify.send import DeliveryError, Destination, resolve_url

__all__ = ["FOLD_OVER", "DeliveryError", "Destination", "Event", "Notifier", "accepts", "compose", "in_quiet_hours",
           "resolve_url"]
