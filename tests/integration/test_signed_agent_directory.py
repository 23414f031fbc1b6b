"""Signed agents verified against a key directory served over real HTTPS by a test CA."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from anteroom.sdk.message_signatures import SignatureError, SignedRequest
from anteroom.sdk.signed_agents import AgentVerifier, Directories, Nonces, https_fetch
from key_directory import WELL_KNOWN, KeyDirectory
from signed_agent import Agent


@pytest.fixture
def directory(tmp_path: Path) -> Iterator[KeyDirectory]:
    served = KeyDirectory(tmp_path)
    yield served
    served.close()


def verifier(cafile: str | None, private: bool = True) -> AgentVerifier:
    """A verifier trusting ``cafile``; the test's directory is on 127.0.0.1, a private address
    a verifier refuses unless told (``private``)."""
    directories = Directories(https_fetch(timeout=2.0, cafile=cafile, private=private), time.time)
    return AgentVerifier(directories, Nonces(), time.time)


def request(headers: dict[str, str]) -> SignedRequest:
    return SignedRequest("GET", "https", "shop.example", "/drop", "", headers)


def test_an_agent_is_verified_through_its_https_directory(directory: KeyDirectory) -> None:
    agent = Agent(directory.origin)
    directory.pages[WELL_KNOWN] = (200, "max-age=300", agent.directory_body())
    check = verifier(str(directory.ca_file))
    for _ in range(3):
        found = check.verify(request(agent.sign("GET", "shop.example", "/drop", int(time.time()))))
        assert found is not None and found.keyid == agent.keyid
    assert directory.hits == [WELL_KNOWN]  # fetched once, kept for its max-age
    # A key the directory does not list, at the same directory: refused.
    stranger = Agent(directory.origin)
    with pytest.raises(SignatureError) as refused:
        check.verify(request(stranger.sign("GET", "shop.example", "/drop", int(time.time()))))
    assert refused.value.reason == "unknown-key"


def test_a_directory_whose_certificate_is_not_trusted_verifies_nobody(
    directory: KeyDirectory,
) -> None:
    agent = Agent(directory.origin)
    directory.pages[WELL_KNOWN] = (200, "", agent.directory_body())
    check = verifier(None)  # the system's trust store: the test CA is not in it
    with pytest.raises(SignatureError) as refused:
        check.verify(request(agent.sign("GET", "shop.example", "/drop", int(time.time()))))
    assert refused.value.reason == "directory"
    assert directory.hits == []  # the handshake failed before any request was made


def test_a_directory_that_is_missing_or_not_json_verifies_nobody(directory: KeyDirectory) -> None:
    agent = Agent(directory.origin + "/keys.json")
    for page in (None, (200, "", b"not json"), (500, "", b"{}")):
        if page is not None:
            directory.pages["/keys.json"] = page
        check = verifier(str(directory.ca_file))  # each case fetched anew
        with pytest.raises(SignatureError) as refused:
            check.verify(request(agent.sign("GET", "shop.example", "/drop", int(time.time()))))
        assert refused.value.reason == "directory"


def test_a_directory_on_a_private_address_is_not_fetched_unless_allowed(
    directory: KeyDirectory,
) -> None:
    """Anyone names a directory in Signature-Agent: the edge must not fetch into the site's own
    network (localhost resolves to 127.0.0.1 here)."""
    agent = Agent(directory.origin)
    directory.pages[WELL_KNOWN] = (200, "", agent.directory_body())
    check = verifier(str(directory.ca_file), private=False)
    with pytest.raises(SignatureError) as refused:
        check.verify(request(agent.sign("GET", "shop.example", "/drop", int(time.time()))))
    assert refused.value.reason == "directory"
    assert directory.hits == []  # not even connected to


def test_a_redirect_from_a_directory_is_not_followed(directory: KeyDirectory) -> None:
    agent = Agent(directory.origin)
    directory.pages[WELL_KNOWN] = (302, "", b"/elsewhere")
    directory.pages["/elsewhere"] = (200, "", agent.directory_body())
    check = verifier(str(directory.ca_file))
    with pytest.raises(SignatureError) as refused:
        check.verify(request(agent.sign("GET", "shop.example", "/drop", int(time.time()))))
    assert refused.value.reason == "directory"
    assert directory.hits == [WELL_KNOWN]


def test_a_directory_the_rooms_setting_does_not_name_is_never_fetched(
    directory: KeyDirectory,
) -> None:
    """Its request is anyone's: a signature cannot make the verifier fetch a URL it chose."""
    agent = Agent(directory.origin)
    directory.pages[WELL_KNOWN] = (200, "", agent.directory_body())
    check = verifier(str(directory.ca_file))
    signed = request(agent.sign("GET", "shop.example", "/drop", int(time.time())))
    assert check.verify(signed, lambda url: False) is None
    assert directory.hits == []
