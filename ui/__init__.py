"""fleetmon's desktop app (PySide6 + pyqtgraph). The only package that imports Qt."""
