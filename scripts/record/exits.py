"""Every process that ends on this machine, with what it cost: a diagnostic for
cpu_per_action.py (`--exits FILE`) where a window's cost differs between a
personality and its recorded client and processes.py cannot see why, because
the processes that matter (mbsync's, Roundcube's one `imap` process per login)
live and end between two readings.

The kernel's taskstats (generic netlink, family TASKSTATS) reports each task as
it exits; this listens for every CPU's exits and writes one JSON line per task:

  t          the wall-clock time it was reported (seconds)
  comm, pid, ppid
  cpu_us     its CPU time, exact (the scheduler's sum_exec_runtime)
  wait_us    time it was ready to run but waited for a CPU (the run queue)
  slices     how many times it was put on a CPU
  voluntary  context switches it made itself (it waited for input: woken again
             by the next command), involuntary: preempted
  life_us    from its start to its end

Root only (taskstats hands out every process's figures). No dependency beyond
the standard library.

    python3 scripts/record/exits.py record FILE              # until interrupted
    python3 scripts/record/exits.py summary FILE --comm imap [--ppid PID] [--between T0 T1]
"""

import argparse
import json
import os
import socket
import statistics
import struct
import sys
import threading
import time

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
TASKSTATS_CMD_GET = 1
TASKSTATS_CMD_ATTR_REGISTER_CPUMASK = 3
TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK = 4
TASKSTATS_TYPE_STATS = 3
TASKSTATS_TYPE_AGGR_PID = 4
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLMSG_ERROR = 2

# struct taskstats (linux/taskstats.h), the fields read here and their offsets:
# stable since version 1 of the struct, which only ever grows at its end.
FIELDS = {"slices": (16, "Q"), "wait_ns": (24, "Q"), "cpu_ns": (72, "Q"), "comm": (80, "32s"),
          "pid": (128, "I"), "ppid": (132, "I"), "life_us": (144, "Q"), "voluntary": (272, "Q"),
          "involuntary": (280, "Q")}


def _attr(kind, payload):
    length = 4 + len(payload)
    return struct.pack("HH", length, kind) + payload + b"\0" * ((4 - length % 4) % 4)


def _attrs(data):
    """{kind: payload} of a run of netlink attributes."""
    out, offset = {}, 0
    while offset + 4 <= len(data):
        length, kind = struct.unpack_from("HH", data, offset)
        if length < 4:
            break
        out[kind & 0x3FFF] = data[offset + 4:offset + length]
        offset += (length + 3) & ~3
    return out


class Listener:
    """A generic netlink socket registered for every CPU's task exits."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self.sock.bind((0, 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.family = self._family_id()
        self.mask = f"0-{os.cpu_count() - 1}"
        self._request(TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, acknowledged=True)

    def _send(self, kind, command, payload, flags=NLM_F_REQUEST):
        genl = struct.pack("BBH", command, 1, 0)
        header = struct.pack("IHHII", 16 + len(genl) + len(payload), kind, flags, 0, 0)
        self.sock.send(header + genl + payload)

    def _family_id(self):
        self._send(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, _attr(CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0"))
        data = self.sock.recv(65536)
        kind = struct.unpack_from("H", data, 4)[0]
        if kind == NLMSG_ERROR:
            raise OSError("the kernel has no taskstats (CONFIG_TASKSTATS)")
        return struct.unpack("H", _attrs(data[20:])[CTRL_ATTR_FAMILY_ID][:2])[0]

    def _request(self, attribute, acknowledged=False):
        """Registers (or deregisters) for the CPUs' exits; with `acknowledged`, waits for
        the kernel's answer and raises what it refused (registering needs root)."""
        flags = NLM_F_REQUEST | (NLM_F_ACK if acknowledged else 0)
        self._send(self.family, TASKSTATS_CMD_GET, _attr(attribute, self.mask.encode() + b"\0"), flags)
        if acknowledged:
            data = self.sock.recv(65536)
            if struct.unpack_from("H", data, 4)[0] == NLMSG_ERROR:
                error = -struct.unpack_from("i", data, 16)[0]
                if error:
                    raise OSError(error, f"taskstats refused to report exits: {os.strerror(error)} (root only)")

    def exits(self):
        """Yields one dict per task that ends, as the kernel reports it."""
        while True:
            data = self.sock.recv(1 << 20)
            offset = 0
            while offset + 16 <= len(data):
                length, kind = struct.unpack_from("IH", data, offset)
                if length < 16:
                    break
                if kind == self.family:
                    aggregate = _attrs(data[offset + 20:offset + length]).get(TASKSTATS_TYPE_AGGR_PID)
                    stats = _attrs(aggregate).get(TASKSTATS_TYPE_STATS) if aggregate else None
                    if stats and len(stats) >= 288:
                        yield self.decode(stats)
                offset += (length + 3) & ~3

    @staticmethod
    def decode(stats):
        row = {name: struct.unpack_from(form, stats, at)[0] for name, (at, form) in FIELDS.items()}
        return {"t": time.time(), "comm": row["comm"].split(b"\0", 1)[0].decode("utf-8", "replace"),
                "pid": row["pid"], "ppid": row["ppid"], "cpu_us": row["cpu_ns"] / 1000,
                "wait_us": row["wait_ns"] / 1000, "slices": row["slices"], "voluntary": row["voluntary"],
                "involuntary": row["involuntary"], "life_us": row["life_us"]}

    def close(self):
        try:
            self._request(TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK)
        finally:
            self.sock.close()


class Recorder:
    """Writes every exit to `path` from a thread of its own until closed."""

    def __init__(self, path):
        self.path, self.listener = path, Listener()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        with open(self.path, "a", encoding="utf-8") as out:
            try:
                for row in self.listener.exits():
                    out.write(json.dumps(row) + "\n")
                    out.flush()
            except OSError:
                return  # closed

    def close(self):
        self.listener.close()


def summary(rows, comm, ppid=None, between=None):
    """One line: how many `comm` processes ended and their means."""
    chosen = [r for r in rows if r["comm"] == comm and (ppid is None or r["ppid"] == ppid)
              and (between is None or between[0] <= r["t"] <= between[1])]
    if not chosen:
        return f"{comm}: none ended"

    def mean(key):
        return statistics.mean(r[key] for r in chosen)

    return (f"{comm}: {len(chosen)} ended; each: CPU {mean('cpu_us'):.0f} µs (median "
            f"{statistics.median(r['cpu_us'] for r in chosen):.0f}), waited for a CPU {mean('wait_us'):.0f} µs, "
            f"lived {mean('life_us') / 1000:.1f} ms, {mean('slices'):.0f} slices, "
            f"{mean('voluntary'):.1f} voluntary and {mean('involuntary'):.1f} involuntary switches")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    record = commands.add_parser("record", help="write every exit to FILE until interrupted")
    record.add_argument("file")
    report = commands.add_parser("summary", help="the means of one kind of process in FILE")
    report.add_argument("file")
    report.add_argument("--comm", default="imap")
    report.add_argument("--ppid", type=int, help="only the children of this process (Dovecot's master)")
    report.add_argument("--between", nargs=2, type=float, metavar=("T0", "T1"), help="wall-clock seconds")
    args = parser.parse_args()
    if args.command == "record":
        try:
            recorder = Recorder(args.file)
        except OSError as error:
            raise SystemExit(f"error: {error}")
        try:
            while recorder.thread.is_alive():
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        recorder.close()
        return
    with open(args.file, encoding="utf-8") as saved:
        rows = [json.loads(line) for line in saved if line.strip()]
    print(summary(rows, args.comm, args.ppid, args.between))


if __name__ == "__main__":
    sys.exit(main())
