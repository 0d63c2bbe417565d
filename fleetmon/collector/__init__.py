"""The workstation side: polling agents and handing results to storage."""
