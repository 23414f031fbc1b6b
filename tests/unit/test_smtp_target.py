"""The operator's SMTP URL (``ANTEROOM_SMTP_URL``): what it may say, and a bad one stops
start-up naming the setting, never its password; a send's failure is recorded by its kind and
SMTP code, never the address a refusal quotes."""

from __future__ import annotations

import smtplib

import pytest

from anteroom.config import Settings
from anteroom.queue.rooms.smtp_target import SmtpTarget
from anteroom.queue.rooms.turn_mailer import failure_kind, permanent, retry_delay_ms


def test_the_url_names_the_server_its_tls_and_its_login() -> None:
    plain = SmtpTarget.parse("smtp://mail.internal:2525")
    assert (plain.host, plain.port, plain.tls, plain.user) == ("mail.internal", 2525, False, "")
    tls = SmtpTarget.parse("smtps://queue%40shop.example:p%3Ass@smtp.example")
    assert (tls.host, tls.port, tls.tls) == ("smtp.example", 465, True)
    assert (tls.user, tls.password) == ("queue@shop.example", "p:ss")
    assert "p:ss" not in repr(tls)
    assert SmtpTarget.parse("smtp://relay").port == 25


@pytest.mark.parametrize(
    "url", ["http://mail.example", "smtp://", "mail.example:25", "smtp://host:99999"]
)
def test_a_bad_url_stops_start_up_naming_the_setting(url: str) -> None:
    with pytest.raises(ValueError, match="ANTEROOM_SMTP_URL"):
        Settings.from_env({"ANTEROOM_SMTP_URL": url})


def test_a_failure_is_named_by_kind_and_code_never_by_address() -> None:
    refused = smtplib.SMTPRecipientsRefused({"ada@example.com": (550, b"no such user ada")})
    assert failure_kind(refused) == "SMTPRecipientsRefused 550"
    assert permanent(refused)
    busy = smtplib.SMTPRecipientsRefused({"ada@example.com": (451, b"later")})
    assert not permanent(busy)
    assert failure_kind(smtplib.SMTPDataError(451, b"try later")) == "SMTPDataError 451"
    assert failure_kind(ConnectionRefusedError()) == "ConnectionRefusedError"
    assert [retry_delay_ms(n) for n in (1, 2, 5, 8, 20)] == [
        5_000,
        10_000,
        80_000,
        300_000,
        300_000,
    ]
