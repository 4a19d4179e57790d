"""The app's five panes, one module each, over one shared :class:`~workbench.panes.base.Pane`."""
