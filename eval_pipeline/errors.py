"""The two kinds of error a command ends with: the user's input (exit 2) or the infrastructure (exit 3)."""


class UserInputError(Exception):
    """A value the user gave (an argument, a variable, the config) cannot be used; the message says which and why."""


class InfrastructureError(Exception):
    """A source, the warehouse or a run failed; the message is one line a person can act on."""
