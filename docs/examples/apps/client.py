"""An app's whole wait in the standard library: what a mobile client does, call by call.

It keeps its ticket in a file (an app: its preferences or keychain), so a restart polls the
same spot rather than queueing again; it waits as told (pollAfterMs; Retry-After on a 429),
backs off with jitter on 5xx and network errors, enters again after 410, and once admitted
calls the app's own API with the admission, refreshes it and leaves.

    ANTEROOM_URL=http://127.0.0.1:8000 ANTEROOM_KEY=pk_demo ANTEROOM_ROOM=demo \
        APP_API=http://127.0.0.1:8000/demo/checkout python3 client.py
"""

import base64
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request

from solve import solve_fitted

BASE = os.environ.get("ANTEROOM_URL", "http://127.0.0.1:8000")
KEY = os.environ.get("ANTEROOM_KEY", "pk_demo")
ROOM = os.environ.get("ANTEROOM_ROOM", "demo")
STATE = os.environ.get("STATE", "anteroom-state.json")  # survives the app's restarts
APP_API = os.environ.get("APP_API", "")  # one of the app's own calls, behind the edge
MAX_ENTRIES = 3  # entries again in a row (410, a ticket refused) before giving up


class Refused(Exception):
    """An error answer: its HTTP status, its JSON body's code and its Retry-After (s)."""

    def __init__(self, status: int, body: dict, retry_after: str | None) -> None:
        super().__init__(f"{status} {body.get('error')}: {body.get('message')}")
        self.status, self.code = status, body.get("error")
        self.retry_after = float(retry_after) if retry_after else None


def say(line: str) -> None:
    print(line, flush=True)


def post(path: str, body: dict) -> dict | None:
    """One visitor call: a POST of JSON with the public key; the JSON answer (None: 204)."""
    data = json.dumps({"apiKey": KEY, **body}).encode()
    headers = {"Content-Type": "application/json", "Accept-Language": "en"}  # the device's
    request = urllib.request.Request(BASE + path, data, headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            text = response.read()
    except urllib.error.HTTPError as error:  # every error answer is JSON {error, message, …}
        try:
            body = json.loads(error.read() or b"{}")
        except ValueError:  # a proxy's page, not ours
            body = {"error": f"Http{error.code}"}
        raise Refused(error.code, body, error.headers.get("Retry-After")) from None
    return json.loads(text) if text else None


def backoff(failures: int) -> float:
    """Seconds before retry number `failures` + 1: 0.5-1, 1-2, 2-4 … up to 30-60 s."""
    ceiling = min(60.0, 2.0**failures)
    return ceiling / 2 + random.random() * ceiling / 2  # half waited, half spread out


def call(path: str, body: dict) -> dict | None:
    """post(), waiting out what passes: a 429 exactly its Retry-After, a 5xx or a network
    error with backoff (never less than a Retry-After). Sending the same body again is safe."""
    failures = 0
    while True:
        try:
            return post(path, body)
        except Refused as refused:
            if refused.status == 429:  # RateLimited, QueueFull, Busy: the spot is kept
                wait = refused.retry_after or backoff(failures)
            elif refused.status >= 500:  # Unavailable (503), a proxy's 502
                wait = max(backoff(failures), refused.retry_after or 0)
            else:
                raise
            say(f"{refused.code}: trying again in {wait:.1f} s")
        except OSError as error:  # no answer: offline, timed out, reset
            wait = backoff(failures)
            say(f"no answer ({type(error).__name__}): trying again in {wait:.1f} s")
        failures += 1
        time.sleep(wait)


def load() -> dict:
    try:
        with open(STATE) as file:
            return json.load(file)
    except (OSError, ValueError):
        return {}


def save(state: dict) -> None:
    with open(STATE + ".new", "w") as file:
        json.dump(state, file)
    os.replace(STATE + ".new", STATE)  # whole or not at all, even if the app is killed


def expires_in(admission: str) -> int:
    """Seconds the admission (ab1.<key>.<payload>.<signature>) has left, by its exp claim."""
    payload = admission.split(".")[2]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return round(claims["exp"] - time.time())


def enter(state: dict) -> dict:
    """Arrive, solve on the device, join: the spot's first answer. An earlier session keeps the
    visitor's identity (previousSession), so an app entering again is the same visitor."""
    arrival = call("/api/v1/arrive", {"room": ROOM})
    started = time.perf_counter()
    solutions = solve_fitted(arrival)
    took = round((time.perf_counter() - started) * 1000)
    say(f"arrived: solved {len(solutions)} of {len(arrival['puzzles'])} puzzles in {took} ms")
    body = {"room": ROOM, "challenge": arrival["challenge"], "solutions": solutions}
    if state.get("sessionToken"):
        body["previousSession"] = state["sessionToken"]
    joined = call("/api/v1/queue/join", body)
    state["sessionToken"] = joined["session"]["sessionToken"]
    return joined["queue"]


def wait_in_line(state: dict) -> dict:
    """Until admitted (or the room is not open): the last queue answer."""
    entries = 0
    if state.get("queueToken"):
        say(f"resuming the ticket kept in {STATE}")
    while True:
        try:
            if state.get("queueToken"):
                answer = call("/api/v1/queue/poll", {"ticket": state["queueToken"]})
            else:
                answer = enter(state)
                entries += 1
        except Refused as refused:
            gone = refused.code == "TicketGone" or refused.status == 401  # gone, or expired
            if state.get("queueToken") and gone and entries < MAX_ENTRIES:
                say(f"{refused.code}: entering again")
                state.pop("queueToken")
                save(state)
                continue
            raise
        state["queueToken"] = answer.get("queueToken") or state.get("queueToken")
        save(state)
        if answer["status"] in ("admitted", "idle"):
            return answer
        where = answer["position"] if answer["position"] is not None else answer["status"]
        say(f"{answer['status']}: position {where}, poll again in {answer['pollAfterMs']} ms")
        time.sleep(answer["pollAfterMs"] / 1000)
        entries = 0


def use_admission(state: dict, admission: str) -> None:
    """The app's own API call, with the admission; the edge may hand back a renewed one."""
    request = urllib.request.Request(APP_API, headers={"Anteroom-Admission": admission})
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            status, renewed = response.status, response.headers.get("Anteroom-Admission")
    except urllib.error.HTTPError as error:  # 429: no valid admission (see Anteroom-Enforcement)
        status, renewed = error.code, None
    say(f"the app's API answered {status}")
    if renewed:
        state["admission"] = renewed
        save(state)


def main() -> int:
    state = load()
    try:
        answer = wait_in_line(state)
    except Refused as refused:
        say(f"refused: {refused}")  # QueueDenied, RoomClosed, SessionRevoked …: say why, stop
        return 1
    if answer["status"] == "idle":
        say("the room is not open")
        return 0
    state["admission"] = answer["token"]
    save(state)
    say(f"admitted: the admission has {expires_in(state['admission'])} s left")
    if APP_API:
        use_admission(state, state["admission"])
    fresh = call("/api/v1/admission/refresh", {"token": state["admission"]})  # before it expires
    state["admission"] = fresh["token"]
    save(state)
    say(f"refreshed: {expires_in(state['admission'])} s left")
    call("/api/v1/queue/leave", {"ticket": state["queueToken"]})  # done: the slot goes to the next
    say("left")
    os.remove(STATE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
