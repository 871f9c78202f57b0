"""Error types a person sees: every message names what is wrong and what to do."""


class FedcoreError(Exception):
    """Base class for errors that the UI and the CLI show as one readable line."""


class ConfigError(FedcoreError, ValueError):
    """A configuration value is invalid.

    The message names the field, the value given and the allowed range, e.g.
    ``privacy.epsilon: got -1.0; must be > 0``.
    """

    def __init__(self, field: str, value, allowed: str):
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field}: got {value!r}; {allowed}")


class DatasetUnavailable(FedcoreError):
    """The dataset files are absent and could not be downloaded."""


class PartitionError(FedcoreError, ValueError):
    """The requested partition cannot be built from this dataset."""
