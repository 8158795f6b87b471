"""Kubernetes name rules, with the error texts Kubernetes and Volcano print.

Port of ``k8s.io/apimachinery/pkg/util/validation/validation.go`` (``IsDNS1123Label``,
``IsDNS1123Subdomain``, ``IsQualifiedName``, ``IsValidLabelValue``, ``RegexError``;
apimachinery v0.31) and of the path-segment
rule of ``apimachinery/pkg/api/validation/path`` that the API server applies to every
object name. Each function returns the list of error texts (empty when the value is
valid), as the Go functions do, so callers can render them the Go way
(:func:`go_list`).
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
QUALIFIED_NAME_MAX_LENGTH = 63

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)

LABEL_VALUE_MAX_LENGTH = 63
_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)

# \Z, not $: Python's $ also matches before a final newline, which Go's regexp does not.
_DNS1123_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}\\Z")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}\\Z")
_QUALIFIED_NAME = re.compile(f"^{_QUALIFIED_NAME_FMT}\\Z")
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}\\Z")


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """Return Kubernetes' ``RegexError`` text: the rule, examples and the regex."""
    text = message + " (e.g. "
    for index, example in enumerate(examples):
        if index > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """Return Kubernetes' ``MaxLenError`` text."""
    return f"must be no more than {length} characters"


def dns1123_label_errors(value: str) -> list[str]:
    """Return why ``value`` is not a DNS-1123 label (``IsDNS1123Label``)."""
    errors = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL.match(value):
        errors.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Return why ``value`` is not a DNS-1123 subdomain (``IsDNS1123Subdomain``)."""
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN.match(value):
        errors.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """Return why ``value`` is not a qualified name (``IsQualifiedName``)."""
    errors: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {msg}" for msg in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errors.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME.match(name):
        errors.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value_errors(value: str) -> list[str]:
    """Return why ``value`` is not a label value (``IsValidLabelValue``)."""
    errors = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errors.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE.match(value):
        errors.append(
            regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errors


def path_segment_errors(value: str) -> list[str]:
    """Return why ``value`` cannot be an object name in a URL path (``IsValidPathSegmentName``)."""
    if value in {".", ".."}:
        return [f"may not be '{value}'"]
    return [f"may not contain '{char}'" for char in ("/", "%") if char in value]


def go_list(errors: list[str]) -> str:
    """Render a list of texts as Go's ``%v`` prints a ``[]string``: ``[a b]``."""
    return "[" + " ".join(errors) + "]"
