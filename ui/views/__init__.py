"""The window's views: one widget per view, registered in the shell with MainWindow.add_view."""
