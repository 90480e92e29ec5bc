"""The ground every wing stands on: the entry model, URL and date rules, diagnostics, limits and errors.

Nothing here imports from a wing, and nothing here does I/O beyond what a function's name says.
"""
