"""DSSE v1 envelopes (github.com/secure-systems-lab/dsse: its envelope and protocol):
what is signed is the pre-authentication encoding of the payload and its type, never the
JSON around it."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from pytest_cluster.errors import BundleError

#: The payload type of an in-toto Statement.
IN_TOTO = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, LEN the
    length in bytes as ASCII decimal."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


@dataclass(frozen=True)
class Signature:
    keyid: str  # a hint, not authenticated: which key, and how it signed
    sig: bytes


@dataclass(frozen=True)
class Envelope:
    payload_type: str
    payload: bytes
    signatures: tuple[Signature, ...] = ()

    def signed_bytes(self) -> bytes:
        return pae(self.payload_type, self.payload)

    def to_json(self) -> dict[str, Any]:
        return {"payloadType": self.payload_type,
                "payload": base64.b64encode(self.payload).decode("ascii"),
                "signatures": [{"keyid": s.keyid, "sig": base64.b64encode(s.sig).decode("ascii")}
                               for s in self.signatures]}

    @classmethod
    def from_json(cls, data: object, where: str) -> Envelope:
        """From a parsed envelope; BundleError naming `where` and what is wrong."""
        if not isinstance(data, dict):
            raise BundleError(f"{where}: not a DSSE envelope (expected a JSON object)")
        payload_type, payload = data.get("payloadType"), data.get("payload")
        signatures = data.get("signatures", [])
        if not isinstance(payload_type, str) or not isinstance(payload, str):
            raise BundleError(f"{where}: not a DSSE envelope (expected payloadType and "
                              f"payload, both strings)")
        if not isinstance(signatures, list):
            raise BundleError(f"{where}: signatures: expected a list")
        found = []
        for index, each in enumerate(signatures):
            if not isinstance(each, dict) or not isinstance(each.get("sig"), str):
                raise BundleError(f"{where}: signatures[{index}]: expected an object with "
                                  f"a string sig")
            keyid = each.get("keyid", "")
            found.append(Signature(keyid if isinstance(keyid, str) else "",
                                   _b64(each["sig"], f"{where}: signatures[{index}].sig")))
        return cls(payload_type, _b64(payload, f"{where}: payload"), tuple(found))

    def statement(self, where: str) -> dict[str, Any]:
        """The payload as JSON (an in-toto Statement for ours)."""
        try:
            parsed = json.loads(self.payload)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BundleError(f"{where}: payload: not JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise BundleError(f"{where}: payload: expected a JSON object")
        return parsed


def _b64(text: str, where: str) -> bytes:
    """Standard or URL-safe base64, padded or not (DSSE accepts both)."""
    try:
        padded = text + "=" * (-len(text) % 4)
        return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise BundleError(f"{where}: not base64") from None
