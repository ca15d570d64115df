# SPDX-License-Identifier: MIT
"""Makes a run the last of its round: the default targets are judged on three runs of the named command,
each meeting them (judge.py RUNS_JUDGED), so the last run's results.json carries the earlier runs' target
rows under "round" and report.py judges every default target over all of them (judge.over_the_round).

Usage: bench/umt/round.py RESULTS EARLIER...
  RESULTS  the last run's results.json (rewritten in place; run report.py after it)
  EARLIER  each earlier run's results.json, as a file or as COMMIT (read with
           `git show COMMIT:docs/benchmarks/umt/results.json`), oldest first

Every run must have the same command and verdict mode as the last one: a round is one named command run
back to back, not the best of several."""

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge import RUNS_JUDGED  # noqa: E402

RESULTS_IN_TREE = "docs/benchmarks/umt/results.json"


def load(ref: str) -> tuple[str, dict]:
    if Path(ref).is_file():
        return ref, json.loads(Path(ref).read_text())
    shown = subprocess.run(["git", "show", f"{ref}:{RESULTS_IN_TREE}"], capture_output=True, text=True)
    if shown.returncode != 0:
        sys.exit(
            f"round.py: EARLIER={ref}: neither a file nor a commit with {RESULTS_IN_TREE}: {shown.stderr.strip()}"
        )
    return ref, json.loads(shown.stdout)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    results = Path(argv[0])
    doc = json.loads(results.read_text())
    earlier = [load(ref) for ref in argv[1:]]
    if len(earlier) + 1 != RUNS_JUDGED:
        sys.exit(f"round.py: EARLIER: {len(earlier)} runs given; a round is {RUNS_JUDGED} runs with this one")
    for ref, run in earlier:
        for key in ("command", "verdict_mode"):
            if run.get(key) != doc.get(key):
                sys.exit(
                    f"round.py: EARLIER={ref}: {key} {run.get(key)!r} is not this run's {doc.get(key)!r}"
                )
        if run["date"] >= doc["date"]:
            sys.exit(
                f"round.py: EARLIER={ref}: its run ({run['date']}) is not before this one ({doc['date']})"
            )
    doc["round"] = {
        "earlier": [
            {
                "ref": ref,
                "date": run["date"],
                "targets": {
                    t["id"]: {"measured": t["measured"], "met": t["met"]}
                    for t in run["targets"]
                    if t["id"].startswith("default-")
                },
            }
            for ref, run in earlier
        ]
    }
    results.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"round.py: {results} is run {RUNS_JUDGED} of its round; now run report.py")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
