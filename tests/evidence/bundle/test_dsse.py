"""dsse.py: the pre-authentication encoding, the envelope to and from JSON, and its
payload read as a JSON object."""

from __future__ import annotations

import json

import pytest

from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle.dsse import IN_TOTO, Envelope, Signature, pae


def test_pae_is_the_dsse_encoding() -> None:
    # the example of DSSE's protocol.md
    assert pae("http://example.com/HelloWorld", b"hello world") == \
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    assert pae("t", b"") == b"DSSEv1 1 t 0 "
    assert pae("\u00e9", b"x") == b"DSSEv1 2 \xc3\xa9 1 x"  # lengths in bytes


def test_envelope_round_trip_and_malformed_ones_are_named() -> None:
    envelope = Envelope(IN_TOTO, b'{"a": 1}', (Signature("ed25519 SHA256:x", b"\x00\xff"),))
    again = Envelope.from_json(json.loads(json.dumps(envelope.to_json())), "m.json")
    assert again == envelope
    urlsafe = dict(envelope.to_json(), payload="eyJhIjogMX0")  # unpadded, as DSSE allows
    assert Envelope.from_json(urlsafe, "m.json").payload == b'{"a": 1}'
    for bad, said in (([], "not a DSSE envelope"), ({"payloadType": 1}, "not a DSSE"),
                      ({"payloadType": "t", "payload": "!!"}, "payload: not base64"),
                      ({"payloadType": "t", "payload": "", "signatures": [{}]},
                       r"signatures\[0\]")):
        with pytest.raises(BundleError, match=said) as caught:
            Envelope.from_json(bad, "m.json")
        assert str(caught.value).startswith("m.json: ")


def test_what_is_signed_is_the_encoding_of_the_type_and_the_payload() -> None:
    envelope = Envelope("t", b"{}", (Signature("k", b"s"),))
    assert envelope.signed_bytes() == b"DSSEv1 1 t 2 {}"
    assert envelope.to_json() == {"payloadType": "t", "payload": "e30=",
                                  "signatures": [{"keyid": "k", "sig": "cw=="}]}


def test_a_keyid_that_is_no_string_is_read_as_none() -> None:
    envelope = Envelope.from_json({"payloadType": "t", "payload": "",
                                   "signatures": [{"keyid": 7, "sig": "cw=="}]}, "m.json")
    assert envelope.signatures == (Signature("", b"s"),)


@pytest.mark.parametrize(("data", "said"), [
    ({"payloadType": "t", "payload": "", "signatures": {}},
     "m.json: signatures: expected a list"),
    ({"payloadType": "t", "payload": "", "signatures": [{"sig": "!"}]},
     "m.json: signatures[0].sig: not base64"),
    ({"payloadType": "t"},
     "m.json: not a DSSE envelope (expected payloadType and payload, both strings)"),
])
def test_each_malformed_envelope_says_what_is_wrong_where(data: object, said: str) -> None:
    with pytest.raises(BundleError) as caught:
        Envelope.from_json(data, "m.json")
    assert str(caught.value) == said


def test_the_statement_is_the_payload_as_a_json_object() -> None:
    assert Envelope(IN_TOTO, b'{"a": [1]}').statement("m") == {"a": [1]}
    with pytest.raises(BundleError) as caught:
        Envelope(IN_TOTO, b"[1]").statement("m")
    assert str(caught.value) == "m: payload: expected a JSON object"
    for payload in (b"{", b"\xff"):
        with pytest.raises(BundleError, match=r"^m: payload: not JSON \("):
            Envelope(IN_TOTO, payload).statement("m")
