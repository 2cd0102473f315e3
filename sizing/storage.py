"""Storage: bytes of request logs per day and over a retention period.

Pure functions: scalar or ndarray in, the same shape out. Bytes are decimal
(1 GB = 1e9 B), as storage is priced.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from capplan.sizing._checks import _out, non_negative

#: UTF-8 bytes per token of English text for BPE tokenisers (~4 characters per token).
DEFAULT_BYTES_PER_TOKEN = 4.0


def request_log_bytes_per_day(
    requests_per_day: ArrayLike,
    tokens_per_request: ArrayLike,
    bytes_per_token: ArrayLike = DEFAULT_BYTES_PER_TOKEN,
    metadata_bytes_per_request: ArrayLike = 0.0,
) -> np.ndarray | float:
    """Bytes of request logs written per day.

    .. math:: b_{day} = N_{day} \\cdot (n_{tok} \\cdot b_{tok} + b_{meta})

    Parameters
    ----------
    requests_per_day : array_like
        Requests logged per day. [requests/day]
    tokens_per_request : array_like
        Mean tokens stored per request: input + output if prompts and
        completions are kept, 0 if only metadata is. [tokens/request]
    bytes_per_token : array_like, default 4.0
        Stored bytes per token (ASSUMED ~4 B of UTF-8 per English token;
        divide by the compression ratio if compressed). [B/token]
    metadata_bytes_per_request : array_like, default 0
        Fixed bytes per log row (ids, timestamps, counts). [B/request]

    Returns
    -------
    numpy.ndarray or float
        Bytes per day. [B/day]

    Examples
    --------
    2 M requests/day of 1,400 tokens at 4 B/token plus 200 B of metadata:

    >>> request_log_bytes_per_day(2_000_000, 1_400, 4, 200) / 1e9
    11.6
    """
    per_request = (non_negative("tokens_per_request", tokens_per_request)
                   * non_negative("bytes_per_token", bytes_per_token)
                   + non_negative("metadata_bytes_per_request", metadata_bytes_per_request))
    return _out(non_negative("requests_per_day", requests_per_day) * per_request)


def retained_bytes(bytes_per_day: ArrayLike, retention_days: ArrayLike) -> np.ndarray | float:
    """Bytes held at steady state when each day's logs are kept for ``retention_days``.

    .. math:: b = b_{day} \\cdot D

    Parameters
    ----------
    bytes_per_day : array_like
        Bytes written per day. [B/day]
    retention_days : array_like
        Days each day's logs are kept. [days]

    Returns
    -------
    numpy.ndarray or float
        Bytes stored once the retention window is full. [B]

    Examples
    --------
    >>> retained_bytes(11.6e9, 90) / 1e12
    1.044
    """
    return _out(non_negative("bytes_per_day", bytes_per_day) * non_negative("retention_days", retention_days))
