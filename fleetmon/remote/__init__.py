"""Recorded history from somewhere other than the local store (layer 2).

:mod:`fleetmon.remote.prometheus` reads the telemetry a Prometheus (or a
compatible long-term store: Thanos, Mimir, VictoriaMetrics) scraped from the
agents' ``/metrics`` and hands it out as the local store's own types
(:class:`storage.rows.HistoryWindow`, :class:`storage.health_input.RecordedWindow`
columns), so the GPU detail view and the reports need not know where the
history came from. It holds no SQL: the store is not involved.
"""
