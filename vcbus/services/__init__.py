"""The vcbus services and the `vcbus` command."""
