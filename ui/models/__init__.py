"""Qt item models over plain rows from storage queries."""
