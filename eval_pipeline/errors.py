"""Errors that end a command with exit code 3: the infrastructure failed, not the user's input."""


class InfrastructureError(Exception):
    """A source, the warehouse or a run failed; the message is one line a person can act on."""
