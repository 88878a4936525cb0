#!/usr/bin/env python3
"""Whole-process figures of one or more strata binaries, rounds alternating
between them so a noisy machine treats each alike; medians of each.

- startup: launch in tmux (120x36, a new session) until the first frame;
- open: launch with `--continue` on a 10,000-message session until its
  last message is on screen;
- context: `strata context ID --json` on that session, wall time.

Usage: scripts/bench-clients.py [--rounds N] NAME=BINARY [NAME=BINARY ...]
Each binary gets a home of its own, with the session imported by itself.
Needs tmux.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

MESSAGES = 10_000


def body(i):
    more = "More words to wrap across several rows of the chat pane. " * (1 + i % 7)
    return f"Message {i}: the parser keeps a stack of open scopes; 日本語 text and emoji 🙂 mixed in. {more}"


class Client:
    def __init__(self, name, binary, root):
        self.name = name
        self.binary = os.path.abspath(binary)
        self.home = os.path.join(root, name, "home")
        self.ws = os.path.join(root, name, "ws")
        os.makedirs(self.home)
        os.makedirs(os.path.join(self.ws, ".git"))
        history = os.path.join(self.home, "history.json")
        with open(history, "w") as f:
            roles = ("user", "assistant")
            json.dump([{"role": roles[i % 2], "content": body(i)} for i in range(MESSAGES)], f)
        out = self.run(["--provider", "openai", "import", history])
        self.session = out.stdout.decode().strip()
        self.figures = {"startup": [], "open": [], "context": []}

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(STRATA_HOME=self.home, OPENAI_API_KEY="sk-bench", TERM="xterm-256color")
        return env

    def run(self, args):
        out = subprocess.run([self.binary, *args], cwd=self.ws, env=self.env(), capture_output=True)
        if out.returncode != 0:
            raise SystemExit(f"{self.name}: strata {args} failed: {out.stderr.decode()}")
        return out

    def screen_time(self, socket, args, wanted):
        """Seconds from launch until `wanted` is on the screen."""
        name = f"{self.name}-{time.monotonic_ns()}"
        line = f"cd {self.ws} && {self.binary} {args}; sleep 30"
        start = time.monotonic()
        subprocess.run(
            ["tmux", "-L", socket, "new-session", "-d", "-s", name, "-x", "120", "-y", "36", "-e",
             f"STRATA_HOME={self.home}", "-e", "OPENAI_API_KEY=sk-bench", line],
            check=True,
        )
        try:
            while True:
                screen = subprocess.run(
                    ["tmux", "-L", socket, "capture-pane", "-p", "-t", name], capture_output=True
                ).stdout.decode(errors="replace")
                if wanted(screen):
                    return time.monotonic() - start
                if time.monotonic() - start > 60:
                    raise SystemExit(f"{self.name}: nothing on screen after 60 s:\n{screen}")
                time.sleep(0.002)
        finally:
            subprocess.run(["tmux", "-L", socket, "kill-session", "-t", name], capture_output=True)

    def round(self, socket):
        self.figures["startup"].append(
            self.screen_time(socket, "--provider openai", lambda s: "strata" in s)
        )
        self.figures["open"].append(
            self.screen_time(socket, "--provider openai --continue", lambda s: f"Message {MESSAGES - 1}" in s)
        )
        start = time.monotonic()
        self.run(["--provider", "openai", "context", self.session, "--json"])
        self.figures["context"].append(time.monotonic() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("binaries", nargs="+", metavar="NAME=BINARY")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed; install it to take these figures")
    root = tempfile.mkdtemp(prefix="strata-bench-")
    socket = f"strata-bench-{os.getpid()}"
    try:
        # A session kept open for the whole run: the server does not exit
        # (and race the next launch) when a measured session ends.
        subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "keep", "sleep 100000"], check=True)
        clients = [Client(*b.split("=", 1), root) for b in args.binaries]
        for _ in range(args.rounds):
            for client in clients:
                client.round(socket)
        print(f"medians of {args.rounds} rounds, ms (tmux's own start included on screen):")
        print(f"{'':12} {'startup':>9} {'open 10k':>9} {'context':>9}")
        for c in clients:
            m = [statistics.median(c.figures[k]) * 1000 for k in ("startup", "open", "context")]
            print(f"{c.name:12} {m[0]:9.0f} {m[1]:9.0f} {m[2]:9.0f}")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
