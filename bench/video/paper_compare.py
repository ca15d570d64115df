# SPDX-License-Identifier: MIT
"""The figures of a --paper run set beside paper 003's (bench/video/paper.py has where each comes from).

Every function takes results.json's "paper" record (the paper's figures and the boards, written by
paper_report.py) and report.py's summary of the run (medians, the ideal by the paper's method from each
node's measured kernel time, the bound with the gateway's link), and returns plain rows: paper_report.py
writes them into results.json as "comparison" and renders results.md from them.
"""

from __future__ import annotations

import statistics

SIZE_NAMES = {"hd": "HD", "uhd1": "UHD-1", "uhd2": "UHD-2"}


def reference_s(kernel_s: dict, paper: dict) -> float:
    """The mean kernel time per frame of the boards at P = 1 (the paper's reference, the Raspberry Pi)."""
    return statistics.mean(kernel_s[b["node"]] for b in paper["boards"] if b["p"] == 1.0)


def platform(data: dict, paper: dict) -> list[dict]:
    """Per board: the paper's relative speed, the node's quota, and the speed measured at every size
    (the reference boards' kernel time over the node's, each under its quota)."""
    rows = []
    for b in paper["boards"]:
        row = {**b, "kernel_ms": {}, "measured_p": {}}
        for size, info in data["sizes"].items():
            t = info["kernel_s"]
            row["kernel_ms"][size] = t[b["node"]] * 1e3
            row["measured_p"][size] = reference_s(t, paper) / t[b["node"]]
        rows.append(row)
    return rows


def ideal(data: dict, summary: dict, paper: dict) -> list[dict]:
    """Per size, Table 2's steps for the paper's boards and for the emulated ones: ΣP (P of the reference
    boards = 1), α = frames / ΣP, the ideal time, and beside it the bound that adds the gateway's link."""
    fig = paper["figures"]
    rows = []
    for size, s in summary.items():
        info = data["sizes"][size]
        t = info["kernel_s"]
        sum_p = sum(reference_s(t, paper) / t[n] for n in t)
        cumulative = sum(s["ideal_frames"][n] * t[n] for n in t)
        rows.append(
            {
                "size": size,
                "paper_frames": fig["frames"][size],
                "paper_sum_p": fig["frames"][size] / fig["alpha"][size],
                "paper_alpha": fig["alpha"][size],
                "paper_ideal_s": fig["ideal_s"][size],
                "frames": info["frames"],
                "sum_p": sum_p,
                "alpha": info["frames"] / sum_p,
                "ideal_s": s["ideal_s"],
                "ideal_cumulative_s": cumulative,
                "bound_s": s["compute_and_link_bound_s"],
                "bound_over_ideal": s["compute_and_link_bound_s"] / s["ideal_s"]
                if s["compute_and_link_bound_s"]
                else None,
            }
        )
    return rows


def best(impls: dict, family: tuple) -> str | None:
    """The family's implementation with the least median job time in this size's summary."""
    timed = [i for i in family if impls.get(i, {}).get("job_s")]
    return min(timed, key=lambda i: impls[i]["job_s"]) if timed else None


def ratio(impls: dict, a: str | None, b: str | None) -> float | None:
    if a is None or b is None:
        return None
    return impls[a]["job_s"] / impls[b]["job_s"]


def job_rows(data: dict, summary: dict, paper: dict) -> list[dict]:
    """Fig. 2: every implementation's job time at every size, over the ideal and over the bound, with the
    paper's where its text gives one (ZeroMQ at UHD-1 and UHD-2)."""
    fig = paper["figures"]
    rows = []
    for size, s in summary.items():
        for impl in data["config"]["impls"]:
            v = s["impls"].get(impl, {})
            paper_s = fig["zmq_s"].get(size) if impl == "zmq" else None
            rows.append(
                {
                    "size": size,
                    "impl": impl,
                    "family": next((f for f, members in paper["families"].items() if impl in members), None),
                    "paper_job_s": paper_s,
                    "paper_over_ideal": paper_s / fig["ideal_s"][size] if paper_s else None,
                    "job_s": v.get("job_s"),
                    "ms_per_frame": v["job_s"] / data["sizes"][size]["frames"] * 1e3
                    if v.get("job_s")
                    else None,
                    "over_ideal": v.get("over_ideal"),
                    "over_bound": v.get("over_bound"),
                    "failures": v.get("failures", 0),
                }
            )
    return rows


def claims(data: dict, summary: dict, paper: dict) -> list[dict]:
    """The paper's Fig. 2 statements (§4), each with strata's figure for the same comparison."""
    fig, fam = paper["figures"], paper["families"]
    frames = {s: data["sizes"][s]["frames"] for s in summary}
    out = []

    def add(claim: str, paper_figure: str, strata: dict, unit: str = "x") -> None:
        out.append({"claim": claim, "paper": paper_figure, "strata": strata, "unit": unit})

    fastest = {s: best(v["impls"], tuple(data["config"]["impls"])) for s, v in summary.items()}
    add("ZeroMQ is the fastest at every size", "ZeroMQ fastest at HD, UHD-1 and UHD-2", fastest, unit="")
    zmq_over = {s: v["impls"].get("zmq", {}).get("over_ideal") for s, v in summary.items()}
    add(
        "ZeroMQ's job time over the ideal time",
        ", ".join(f"{SIZE_NAMES[s]} {fig['zmq_s'][s] / fig['ideal_s'][s]:.2f}x" for s in fig["zmq_s"]),
        zmq_over,
    )
    per_frame = {
        s: v["impls"]["zmq"]["job_s"] / frames[s] * 1e3
        for s, v in summary.items()
        if v["impls"].get("zmq", {}).get("job_s")
    }
    add(
        "ZeroMQ takes less time per frame at UHD-2 than at UHD-1 (ms per frame)",
        ", ".join(f"{SIZE_NAMES[s]} {fig['zmq_s'][s] / fig['frames'][s] * 1e3:.0f} ms" for s in fig["zmq_s"]),
        per_frame,
        unit=" ms",
    )
    mpi_over_dsm = {
        s: ratio(v["impls"], best(v["impls"], tuple(fam["MPI"])), best(v["impls"], tuple(fam["S-DSM"])))
        for s, v in summary.items()
    }
    add("the best MPI over the best S-DSM", "more than 2x at HD and UHD-1", mpi_over_dsm)
    dsm_over_zmq = {
        s: ratio(
            v["impls"],
            best(v["impls"], tuple(fam["S-DSM"])),
            "zmq" if v["impls"].get("zmq", {}).get("job_s") else None,
        )
        for s, v in summary.items()
    }
    add("the best S-DSM over ZeroMQ", "close at HD and UHD-1, far at UHD-2", dsm_over_zmq)
    multi = {
        s: ratio(
            v["impls"],
            "mpi-async-multi" if v["impls"].get("mpi-async-multi", {}).get("job_s") else None,
            best(v["impls"], tuple(fam["S-DSM"])),
        )
        for s, v in summary.items()
    }
    add("MPI async with a buffer per worker over the best S-DSM", "close at UHD-2", multi)
    return out


def messages(data: dict, summary: dict, paper: dict) -> list[dict]:
    """§4's messages per run (about 1300 frames), as messages per frame beside strata's (the DSM's at the
    DSM level, where the paper's S-DSM counts MPI messages)."""
    fig = paper["figures"]
    per_run_frames = statistics.mean(fig["frames"].values())
    chosen = {"dsm": "dsm", "mpi": "mpi-async-multi", "zmq": "zmq"}
    rows = []
    for key, impl in chosen.items():
        row = {
            "impl": impl,
            "paper_per_run": fig["messages"][key],
            "paper_per_frame": fig["messages"][key] / per_run_frames,
        }
        row["per_frame"] = {
            s: v["impls"][impl]["messages"] / data["sizes"][s]["frames"]
            for s, v in summary.items()
            if v["impls"].get(impl, {}).get("job_s")
        }
        rows.append(row)
    return rows


def cumulative(data: dict, summary: dict, paper: dict, ideal_rows: list[dict]) -> list[dict]:
    """Fig. 3: the workers' summed processing and waiting times of the best of each family."""
    ideal_of = {r["size"]: r["ideal_cumulative_s"] for r in ideal_rows}
    rows = []
    for size, s in summary.items():
        for family, members in paper["families"].items():
            impl = best(s["impls"], tuple(members))
            if impl is None:
                continue
            v = s["impls"][impl]
            busy, wait = sum(v["busy_s_per_node"].values()), sum(v["wait_s_per_node"].values())
            rows.append(
                {
                    "size": size,
                    "family": family,
                    "impl": impl,
                    "busy_s": busy,
                    "wait_s": wait,
                    "busy_over_wait": busy / wait if wait else None,
                    "ideal_cumulative_s": ideal_of[size],
                }
            )
    return rows


def balance(summary: dict, paper: dict) -> list[dict]:
    """Load balancing: the frames each node filtered, for the best of each family, beside the ideal share."""
    rows = []
    for size, s in summary.items():
        rows.append(
            {"size": size, "family": "ideal", "impl": None, "frames": s["ideal_frames"], "distance": 0.0}
        )
        for family, members in paper["families"].items():
            impl = best(s["impls"], tuple(members))
            if impl is not None:
                v = s["impls"][impl]
                rows.append(
                    {
                        "size": size,
                        "family": family,
                        "impl": impl,
                        "frames": v["frames_per_node"],
                        "distance": v["load_balance_distance"],
                    }
                )
    return rows


def events(data: dict, summary: dict, paper: dict) -> list[dict]:
    """The event log's events per frame, beside the paper's 240000 per run of about 1300 frames."""
    per_frame = paper["figures"]["events"] / statistics.mean(paper["figures"]["frames"].values())
    rows = []
    for size, s in summary.items():
        for impl, v in s["impls"].items():
            if "events" in v:
                rows.append(
                    {
                        "size": size,
                        "impl": impl,
                        "paper_per_frame": per_frame,
                        "per_frame": v["events"] / data["sizes"][size]["frames"],
                        "dropped": v["events_dropped"],
                    }
                )
    return rows


def compare(data: dict, summary: dict, paper: dict) -> dict:
    ideal_rows = ideal(data, summary, paper)
    return {
        "platform": platform(data, paper),
        "ideal": ideal_rows,
        "jobs": job_rows(data, summary, paper),
        "claims": claims(data, summary, paper),
        "messages": messages(data, summary, paper),
        "cumulative": cumulative(data, summary, paper, ideal_rows),
        "balance": balance(summary, paper),
        "events": events(data, summary, paper),
    }
