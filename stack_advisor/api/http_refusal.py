"""The refusal of a request uvicorn cannot parse, in the API's error shape.

uvicorn answers a request it cannot read as HTTP (a malformed request line or header, or a URL
and headers beyond its parser's limit: a GET of a hundred kilobytes) itself, before the app sees
it, with a plain-text "Invalid HTTP request received.". ``JsonRefusingProtocol`` is the HTTP
protocol uvicorn picks ("auto": httptools where installed, else h11) with that one answer written
as the app's errors are: JSON ``{"error", "message"}`` saying what is wrong and what to do, with
the refusals' security headers. Everything else is uvicorn's own.
"""

from __future__ import annotations

import json

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from stack_advisor.api.middleware import REFUSAL_HEADERS

MESSAGE = (
    "the request could not be read as HTTP: a malformed request line or header, or a URL and "
    "headers longer than the server reads (tens of kilobytes); send long inputs in a POST body"
)


def refusal(parser_message: str) -> bytes:
    """The whole 400 response: status line, headers, and the JSON body."""
    body = json.dumps(
        {"error": "bad_request", "message": f"{MESSAGE} ({parser_message.rstrip('.')})"}
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
        (b"connection", b"close"),
        *REFUSAL_HEADERS,
    ]
    head = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    return b"HTTP/1.1 400 Bad Request\r\n" + head + b"\r\n" + body


class JsonRefusingProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP protocol, its unparsable-request answer in JSON (module docstring)."""

    def send_400_response(self, msg: str) -> None:
        # both of uvicorn's protocols write their answer to the transport and close it; the
        # connection ends here, so h11's state (not advanced by this write) is never read again
        self.transport.write(refusal(msg))
        self.transport.close()
