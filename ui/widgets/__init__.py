"""Widgets of the desktop app."""
