"""Qt item models over the typed rows of storage queries (storage.rows)."""
