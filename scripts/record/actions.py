"""Timestamps of the actions a recording performs, for the manifest.

Each client driver performs the profile's actions through the real client and
notes when each began and ended (Unix time, the clock Dovecot's rawlog uses),
so that a later tool can cut the transcript per action.
"""

import json
import signal
import sys
import time
from contextlib import contextmanager

# record-clients.sh stops a driver with SIGTERM; exiting through SystemExit
# runs the drivers' `finally` blocks, which stop the client they started.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


class ActionLog:
    """Collects actions and writes them as JSON after each one (a crash keeps what was done)."""

    def __init__(self, path):
        self.path = path
        self.actions = []

    @contextmanager
    def action(self, name, how):
        entry = {"action": name, "how": how, "start": round(time.time(), 6)}
        try:
            yield entry
            entry["outcome"] = entry.get("outcome", "done")
        except Exception as error:  # noqa: BLE001 - recorded, then re-raised
            entry["outcome"] = f"failed: {error}"
            raise
        finally:
            entry["end"] = round(time.time(), 6)
            self.actions.append(entry)
            self.save()

    def add(self, name, how, start, end):
        """An action timed by the caller (one that began before the log could be used)."""
        self.actions.append({"action": name, "how": how, "start": round(start, 6), "outcome": "done",
                             "end": round(end, 6)})
        self.save()

    def save(self):
        with open(self.path, "w", encoding="utf-8") as out:
            json.dump(self.actions, out, indent=1)
            out.write("\n")


def wait_until(predicate, timeout, step=0.5, what="condition"):
    """Polls `predicate` until true; bounded by `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
