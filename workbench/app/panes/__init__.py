"""The app's five panes, one module each, over one shared
:class:`~workbench.app.panes.base.Pane`."""
