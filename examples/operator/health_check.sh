#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A node health check for a batch system (a Slurm HealthCheckProgram, a PBS
# mom health check, a prolog): runs `strata doctor --json` and exits 1 when a
# capability strata's defaults require is missing, naming it, why, and the fix
# (docs/getting-started/operator.md lists every doctor line).
#
#   examples/operator/health_check.sh [STRATA]     (default: build/default/bin/strata)
#   examples/operator/health_check.sh --all [STRATA]   also every optional capability that is not ok
set -euo pipefail
all=0
if [[ ${1:-} == --all ]]; then all=1; shift; fi
strata=${1:-build/default/bin/strata}

# doctor exits 1 when a required capability is missing; its JSON says which.
report=$("$strata" doctor --json) || true
python3 - "$all" "$report" <<'PY'
import json
import sys

show_optional = sys.argv[1] == "1"
report = json.loads(sys.argv[2])
required = [c for c in report["capabilities"] if c["required"]]
failed = [c for c in required if c["status"] == "missing"]
print("strata", report["version"], "required:", ", ".join(f"{c['name']} {c['status']}" for c in required))
for c in failed + [c for c in report["capabilities"] if show_optional and not c["required"] and c["status"] != "ok"]:
    print(f"  {c['name']} {c['status']}: {c['detail']}\n    fix: {c['fix']}")
sys.exit(1 if failed or not report["ok"] else 0)
PY
