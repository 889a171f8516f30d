"""Report load: how big is the HTML report of a 64-node run, and how long until it is readable?

1. Runs the contract suite on the 64-node simulated cluster (examples/sim-h100-64.yaml) with
   `python -m pytest --cluster=SPEC --cluster-reports=DIR -p no:cacheprovider -q`. That spec
   has the interconnect section only; where it lacks a section that examples/sim-h100.yaml has
   (host, gpus), a temporary spec on the same 64 nodes is written with those sections added,
   so the report holds the full suite. (`storage` is in neither: the sim launcher refuses it.)
2. Finds report.html under DIR (searched recursively: the layout may put each run in a
   sub-directory of its own), and junit.xml and results.jsonl next to it, and prints their
   sizes in MB (10^6 bytes).
3. Opens the report in headless Chromium (Debian's `chromium` package; the script says so and
   ends with `report_load_s=nan` without it) REPEATS times, each in a fresh browser with a
   fresh profile, and prints the median load time.
4. Takes a screenshot of the report (`--screenshot=PATH --window-size=1400,2000`) and prints
   where it is. The temporary directory (spec, reports, screenshot) is kept for a person to
   look at; the script prints the `rm -rf` that removes it.

What "load time" means: what a person waits for between opening the file and seeing the
results table -- the page loaded AND the report's own JavaScript done rendering (pytest-html
builds the table rows from a JSON blob in the page, after the HTML itself has loaded). It is
measured inside the page, through the Chrome DevTools Protocol over `--remote-debugging-pipe`
(the browser's fds 3 and 4: no port opened, nothing on the network):

- before any of the page's own scripts run, a MutationObserver is installed
  (Page.addScriptToEvaluateOnNewDocument) that notes the time of every DOM change and of the
  first animation frame after it (the frame that lays out and paints that change);
- the file is navigated to; once the load event has fired and `document.readyState` is
  `complete`, the DOM is watched until it has not changed for 500 ms;
- load time = the later of the load event's end and the frame after the last DOM change, in
  the page's own clock (performance.now(), zero at navigation start). The 500 ms of quiet
  used to decide that rendering is over are not counted, and neither is the browser's start
  (a person's browser is usually open already).

Why not `chromium --headless --virtual-time-budget=N --dump-dom` timed with a wall clock: its
wall time adds the browser's start and the serialisation of the whole DOM (megabytes of table
rows) to stdout, which nobody waits for, and `--virtual-time-budget` runs the page on a virtual
clock that jumps over idle time, so the budget decides part of what the wall clock shows.

Each load prints where the time goes, in the page's clock: HTML parsed (domInteractive; the
report's inline scripts run before it), DOMContentLoaded, load event, last DOM change, the
frame after it; and the rendered moment on this script's wall clock from sending
Page.navigate, as a cross-check.

The last line is `report_load_s=<median seconds>` (`nan` when Chromium is missing or the page
never finished). Pass --report PATH to measure an existing report.html instead of running the
suite.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SPEC_64 = ROOT / "examples" / "sim-h100-64.yaml"
SPEC_FULL = ROOT / "examples" / "sim-h100.yaml"
SECTIONS = ("host", "storage", "gpus", "interconnect")
QUIET_MS = 500
RENDER_TIMEOUT_S = 300.0
WINDOW = "1400,2000"

# Installed before any of the page's scripts: remembers the last DOM change and the first
# animation frame after it (double rAF: the frame that laid out and painted the change).
OBSERVER_JS = """
(() => {
  const w = window;
  w.__rl = {lastMutation: performance.now(), painted: performance.now()};
  new MutationObserver(() => {
    const t = performance.now();
    w.__rl.lastMutation = t;
    requestAnimationFrame(() => requestAnimationFrame(() => {
      if (w.__rl.lastMutation === t) { w.__rl.painted = performance.now(); }
    }));
  }).observe(document, {childList: true, subtree: true, attributes: true,
                        characterData: true});
})();
"""

# Resolves once the page has loaded and the DOM has been quiet for QUIET_MS (and the frame
# after the last change has been drawn, or QUIET_MS more have passed without a frame).
SETTLED_JS = """
new Promise((resolve) => {
  const quiet = QUIET_MS;
  const check = () => {
    const rl = window.__rl;
    const now = performance.now();
    const nav = performance.getEntriesByType("navigation")[0];
    const loaded = document.readyState === "complete" && nav && nav.loadEventEnd > 0;
    const drawn = rl.painted >= rl.lastMutation || now - rl.lastMutation > 2 * quiet;
    if (loaded && drawn && now - rl.lastMutation >= quiet) {
      resolve({domInteractive: nav.domInteractive,
               domContentLoaded: nav.domContentLoadedEventEnd,
               loadEventEnd: nav.loadEventEnd, lastMutation: rl.lastMutation,
               painted: rl.painted >= rl.lastMutation ? rl.painted : null,
               elements: document.getElementsByTagName("*").length, now: now});
    } else {
      setTimeout(check, 50);
    }
  };
  check();
})
""".replace("QUIET_MS", str(QUIET_MS))

# No network: requests can reach only a closed port on 127.0.0.1, names resolve to nothing.
CHROMIUM_FLAGS = (
    "--headless", "--disable-gpu", "--no-sandbox", "--disable-dev-shm-usage",
    "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-domain-reliability", "--disable-breakpad",
    "--metrics-recording-only", "--proxy-server=http://127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND", f"--window-size={WINDOW}",
)


class CdpError(RuntimeError):
    pass


class Cdp:
    """Chrome DevTools Protocol over --remote-debugging-pipe: JSON messages ended by NUL,
    the browser reads commands on its fd 3 and writes answers and events on its fd 4."""

    def __init__(self, chromium: str, profile: Path, log: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds_3_and_4() -> None:  # in the child, before exec
            # copies first, so that neither pipe end is overwritten before it is copied; the
            # pipes are not inheritable (PEP 446), fds 3 and 4 are: only they reach chromium
            copies = [os.dup(to_browser_r), os.dup(from_browser_w)]
            os.dup2(copies[0], 3, inheritable=True)
            os.dup2(copies[1], 4, inheritable=True)

        with log.open("ab") as err:
            self.proc = subprocess.Popen(
                [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                 "--remote-debugging-pipe", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, close_fds=False,
                preexec_fn=fds_3_and_4)  # noqa: PLW1509 - this script has one thread
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method,
                                   "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_browser, data):]
        return self._next_id

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("no answer from chromium in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise CdpError(f"chromium closed the pipe (exit {self.proc.poll()})")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, timeout: float = 30.0) -> dict[str, Any]:
        wanted = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            message = self._receive(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise CdpError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def wait_event(self, method: str, timeout: float) -> float:
        """Wait for the event; return the monotonic time it was read."""
        deadline = time.monotonic() + timeout
        while True:
            if any(event["method"] == method for event in self.events):
                self.events = [e for e in self.events if e["method"] != method]
                return time.monotonic()
            message = self._receive(deadline)
            if "method" in message:
                self.events.append(message)

    def close(self) -> None:
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)


def measure_once(chromium: str, report: Path, work: Path, run: int) -> dict[str, float]:
    """One load in a fresh browser; times in seconds from navigation start."""
    profile = work / f"profile-{run}"
    cdp = Cdp(chromium, profile, work / "chromium.log")
    try:
        targets = cdp.call("Target.getTargets")["targetInfos"]
        page = next(t["targetId"] for t in targets if t["type"] == "page")
        session = cdp.call("Target.attachToTarget", {"targetId": page, "flatten": True})
        sid: str = session["sessionId"]
        cdp.call("Page.enable", session=sid)
        cdp.call("Page.addScriptToEvaluateOnNewDocument", {"source": OBSERVER_JS}, sid)
        sent = time.monotonic()
        cdp.call("Page.navigate", {"url": report.resolve().as_uri()}, sid,
                 timeout=RENDER_TIMEOUT_S)
        cdp.wait_event("Page.loadEventFired", RENDER_TIMEOUT_S)
        answer = cdp.call("Runtime.evaluate", {"expression": SETTLED_JS, "awaitPromise": True,
                                               "returnByValue": True}, sid,
                          timeout=RENDER_TIMEOUT_S)
        settled_wall = time.monotonic() - sent
        if "exceptionDetails" in answer:
            raise CdpError(f"page script failed: {answer['exceptionDetails']}")
        value: dict[str, Any] = answer["result"]["value"]
    finally:
        cdp.close()
        shutil.rmtree(profile, ignore_errors=True)
    drawn = value["painted"] if value["painted"] is not None else value["lastMutation"]
    rendered = max(value["loadEventEnd"], drawn)
    return {"parsed_s": value["domInteractive"] / 1000,
            "dom_content_loaded_s": value["domContentLoaded"] / 1000,
            "load_event_s": value["loadEventEnd"] / 1000,
            "last_change_s": value["lastMutation"] / 1000,
            "frame_after_s": math.nan if value["painted"] is None else value["painted"] / 1000,
            "rendered_s": rendered / 1000,
            # the same moment on this process's clock, from sending Page.navigate
            "wall_s": settled_wall - (value["now"] - rendered) / 1000,
            "elements": float(value["elements"])}


def screenshot(chromium: str, report: Path, work: Path) -> Path | None:
    path = work / "report.png"
    profile = work / "profile-screenshot"
    with (work / "chromium.log").open("ab") as err:
        try:
            subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                            f"--screenshot={path}", "--virtual-time-budget=30000",
                            report.resolve().as_uri()],
                           stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                           timeout=RENDER_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return None
    shutil.rmtree(profile, ignore_errors=True)
    return path if path.exists() else None


def full_spec(work: Path) -> Path:
    """examples/sim-h100-64.yaml, plus the sections of sim-h100.yaml it lacks, on its nodes."""
    spec: dict[str, Any] = yaml.safe_load(SPEC_64.read_text())
    full: dict[str, Any] = yaml.safe_load(SPEC_FULL.read_text())
    added = [s for s in SECTIONS if s not in spec and s in full]
    for section in added:
        spec[section] = full[section]
    have = [s for s in SECTIONS if s in spec]
    lacking = [s for s in SECTIONS if s not in spec]
    print(f"spec: {SPEC_64.relative_to(ROOT)}, {len(have)} sections: {', '.join(have)}"
          + (f" ({', '.join(added)} from {SPEC_FULL.name})" if added else "")
          + (f"; not in either example: {', '.join(lacking)}" if lacking else ""))
    if not added:
        return SPEC_64
    path = work / "sim-h100-64-full.yaml"
    path.write_text(f"# {SPEC_64.name} with {', '.join(added)} from {SPEC_FULL.name}\n"
                    + yaml.safe_dump(spec, sort_keys=False))
    return path


def run_suite(spec: Path, reports: Path, cwd: Path) -> None:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", f"--cluster={spec}",
                           f"--cluster-reports={reports}", "-p", "no:cacheprovider", "-q"],
                          cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    lines = done.stdout.strip().splitlines()
    last = lines[-1].strip("= ") if lines else done.stderr[-300:]
    print(f"suite: {seconds:.1f} s, exit {done.returncode} ({last})")
    if done.returncode not in (0, 1):  # 1: the faults the spec injects fail, as they should
        sys.exit(f"pytest failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def find(name: str, near: Path, top: Path) -> Path | None:
    """`name` in the directory `near`, else the newest one anywhere under `top`."""
    if (near / name).is_file():
        return near / name
    found = sorted(top.rglob(name), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def mb(path: Path | None) -> str:
    if path is None:
        return "not found"
    return f"{path.stat().st_size / 1e6:.2f} MB ({path})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--report", type=Path, help="measure this report.html; run nothing")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="report_load-"))
    if args.report is None:
        reports = work / "reports"
        run_suite(full_spec(work), reports, work)
        report = find("report.html", reports, reports)
        if report is None:
            sys.exit(f"no report.html under {reports}")
    else:
        report = args.report
        reports = report.parent
    print(f"report.html   {mb(report)}")
    print(f"junit.xml     {mb(find('junit.xml', report.parent, reports))}")
    print(f"results.jsonl {mb(find('results.jsonl', report.parent, reports))}")

    chromium = shutil.which(os.environ.get("CHROMIUM") or "chromium")
    if chromium is None:
        print("chromium not found: install it (Debian: apt-get install -y chromium; or set "
              "CHROMIUM=/path/to/chromium) to measure how long the report takes to load")
        print(f"work dir kept: {work} (rm -rf {work})")
        print("report_load_s=nan")
        return 0
    runs: list[dict[str, float]] = []
    for run in range(args.repeats):
        try:
            runs.append(measure_once(chromium, report, work, run))
        except CdpError as exc:
            print(f"load {run + 1}: failed: {exc} (chromium's log: {work / 'chromium.log'})")
            continue
        r = runs[-1]
        print(f"load {run + 1}: html parsed {r['parsed_s']:.2f} s, DOMContentLoaded "
              f"{r['dom_content_loaded_s']:.2f} s, load event {r['load_event_s']:.2f} s, "
              f"last DOM change {r['last_change_s']:.2f} s, frame after it "
              f"{r['frame_after_s']:.2f} s -> rendered {r['rendered_s']:.2f} s "
              f"(wall clock {r['wall_s']:.2f} s); {r['elements']:.0f} elements")
    shot = screenshot(chromium, report, work)
    print(f"screenshot: {shot if shot else 'failed (see ' + str(work / 'chromium.log') + ')'}")
    print(f"work dir kept: {work} (rm -rf {work})")
    median = statistics.median(r["rendered_s"] for r in runs) if runs else math.nan
    print(f"median of {len(runs)}: load event "
          f"{statistics.median(r['load_event_s'] for r in runs) if runs else math.nan:.2f} s, "
          f"rendered {median:.2f} s")
    print(f"report_load_s={median:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
