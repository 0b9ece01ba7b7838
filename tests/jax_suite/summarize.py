#!/usr/bin/env python3
"""Summarize junit xml files written by tests/jax_suite/run.sh.

Files are named PLATFORM.TESTFILE.xml. Prints a markdown report: per test file
the pass/fail/error/skip counts and pass rate for each platform, then the top
failure buckets of each non-cpu platform (failure first lines with numbers,
shapes and addresses normalised), each with a count and one example test, and
the tests that fail on the platform but pass on cpu, and per file the share of
the tests passing on cpu that pass on each platform.

Files PLATFORM.TESTFILE.partN.xml (the runs after a process died, or run.sh
RESUME=1) are merged into PLATFORM.TESTFILE. PLATFORM.TESTFILE.died lists the
tests a process died in (crash, sanitizer report, hang), one `NODEID rc=N` per
line: each counts as an error, and a section lists them all.

usage: summarize.py OUT_DIR [OUT_DIR...] [--top N] (a later OUT_DIR's (platform, file)
replaces an earlier one's: reruns)
"""
import argparse
import collections
import os
import re
import sys
import xml.etree.ElementTree as ET


def parse(path):
    """Returns {test_id: (status, message)}; status in pass/fail/error/skip."""
    out = {}
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        print(f"warning: {path}: {e}", file=sys.stderr)
        return out
    for tc in root.iter("testcase"):
        tid = f"{tc.get('classname', '')}::{tc.get('name', '')}"
        status, msg = "pass", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                status = "fail" if child.tag == "failure" else "error"
                msg = first_line(child.get("message") or "", child.text or "")
                break
            if child.tag == "skipped":
                status, msg = "skip", child.get("message") or ""
                break
        out[tid] = (status, msg)
    return out


_RUNTIME_RE = re.compile(r"(UNIMPLEMENTED|INVALID_ARGUMENT|INTERNAL|UNKNOWN|"
                         r"FAILED_PRECONDITION|NOT_FOUND|RESOURCE_EXHAUSTED|"
                         r"UNAVAILABLE|OUT_OF_RANGE|ABORTED):.*")


def first_line(message, text):
    """The most telling line of a failure: a PJRT status line if there is one,
    else the first non-empty line of the message, else of the traceback's
    last 'E ' line."""
    for src in (message, text):
        m = _RUNTIME_RE.search(src)
        if m:
            return m.group(0).strip()
    for line in message.splitlines():
        line = line.strip()
        if line and not re.fullmatch(r"\w*(Error|Exception):?", line):
            return line
    elines = [l[1:].strip() for l in text.splitlines() if l.startswith("E ")]
    elines = [l for l in elines if l]
    if elines:
        return elines[0]
    return message.strip() or "(no message)"


_NORMALIZERS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x#"),
    (re.compile(r"tensor<[^>]*>"), "tensor<…>"),
    (re.compile(r"\b(bf16|f8\w*|[fsuic]\d+|pred|bool|float\d+|u?int\d+|complex\d+)\[[\d,\s]*\]"), "T[…]"),
    (re.compile(r"\([\d,\s]*\)"), "(…)"),
    (re.compile(r"\[[\d,\s.eE+-]*\]"), "[…]"),
    (re.compile(r"\b\d+(\.\d+)?([eE][+-]?\d+)?\b"), "#"),
    (re.compile(r"\s+"), " "),
]


def bucket_of(msg):
    # anvil's diagnostics end with the op's source location; drop it.
    b = re.split(r" \(at |\bloc\(", msg, maxsplit=1)[0]
    # sharding mismatch messages carry long reprs of both shardings
    b = re.sub(r"(Unexpected XLA sharding override):.*", r"\1: …", b)
    for rx, rep in _NORMALIZERS:
        b = rx.sub(rep, b)
    b = b.strip()
    return b[:200] + ("…" if len(b) > 200 else "")


def test_id(nodeid):
    """junit's test id (tests.FILE.Class::test) of a pytest node id (tests/FILE.py::Class::test)."""
    path_part, _, rest = nodeid.partition("::")
    klass, _, test = rest.rpartition("::")
    mod = path_part[:-3].replace("/", ".") if path_part.endswith(".py") else path_part
    return f"{mod}.{klass}::{test}" if klass else f"{mod}::{test}"


def parse_progress(path):
    """{test_id: (status, "")} from run.sh's progress log (pytest_with_dut.py)."""
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "done":
                out[test_id(parts[1])] = (parts[2], "")
    return out


def parse_died(path):
    """{test_id: ("error", why)} for the tests run.sh recorded a dead process in."""
    out = {}
    with open(path) as f:
        for line in f:
            nodeid, _, rc = line.strip().rpartition(" rc=")
            if nodeid:
                out[test_id(nodeid)] = ("error", f"process died (exit status {rc}): {died_kind(rc)}")
    return out


def died_kind(rc):
    rc = int(rc) if rc.lstrip("-").isdigit() else 0
    if rc in (124, 137):
        return "hang (killed at the file's time limit)"
    if rc == 1:
        return "hang (pytest-timeout ended the process)"
    if rc == 134:
        return "abort (SIGABRT: a sanitizer report or an assertion)"
    if rc == 139:
        return "crash (SIGSEGV)"
    return "crash"


# Skips that gate on the device's name (the test runs only where the device under test is
# cpu/gpu/tpu, or refuses "anvil" by name): run.sh's TEST_DUT=cpu mode runs these tests, so the
# mode without it does not count them against anvil.
NAME_GATED = re.compile(
    r"Skipped unless running on devices with tags|only works on tpu,gpu,cpu|"
    r"enabled only for cpu|not supported on anvil|Testing only the CPU|"
    r"requires CPU or GPU devices\. Got anvil|^other platform|only supported on CPU and GPU|"
    r"Pivoting not supported in fallback|^Unsupported device|only on CPU\.|"
    r"only implemented on CPU|Skipping test for non-CPU devices")


def load(out_dir):
    """{platform: {file: {tid: (status, msg)}}} of one run.sh OUT_DIR."""
    results = collections.defaultdict(dict)  # platform -> file -> {tid: (st, msg)}
    # PLATFORM.FILE.xml first, then its .partN.xml files (later results win)
    died = collections.defaultdict(dict)  # platform -> file -> {tid: (st, msg)}
    progress = collections.defaultdict(dict)  # likewise, from the progress logs
    for name in sorted(os.listdir(out_dir), key=lambda n: (n.count("."), n)):
        parts = name.split(".")
        if parts[-1] in ("died", "progress") and len(parts) == 3:
            into = died if parts[-1] == "died" else progress
            read = parse_died if parts[-1] == "died" else parse_progress
            into[parts[0]].setdefault(parts[1], {}).update(read(os.path.join(out_dir, name)))
            continue
        if parts[-1] != "xml" or len(parts) not in (3, 4):
            continue
        platform, tfile = parts[0], parts[1]
        results[platform].setdefault(tfile, {}).update(
            parse(os.path.join(out_dir, name)))
    # tests no junit xml holds (run before a process died) count as the progress log says
    for platform, files_done in progress.items():
        for tfile, d in files_done.items():
            r = results[platform].setdefault(tfile, {})
            for tid, outcome in d.items():
                r.setdefault(tid, outcome)
    for platform, files_died in died.items():
        for tfile, d in files_died.items():
            results[platform].setdefault(tfile, {}).update(d)
    return results, died


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dirs", nargs="+", metavar="OUT_DIR",
                    help="run.sh output folders; a (platform, file) in a later one replaces "
                         "the earlier one's (a rerun)")
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()

    results = collections.defaultdict(dict)
    died = collections.defaultdict(dict)
    for d in args.out_dirs:
        r, dd = load(d)
        for p, files in r.items():
            for f, tests in files.items():
                results[p][f] = tests
                died[p].pop(f, None)
        for p, files in dd.items():
            died[p].update(files)
    if not results:
        sys.exit(f"no PLATFORM.FILE.xml in {args.out_dirs}")

    platforms = sorted(results, key=lambda p: (p == "cpu", p))
    files = sorted({f for p in results for f in results[p]})

    def counts(tests):
        c = collections.Counter(st for st, _ in tests.values())
        ran = c["pass"] + c["fail"] + c["error"]
        rate = 100.0 * c["pass"] / ran if ran else 0.0
        return c, ran, rate

    print("## Pass rates (pass / (pass+fail+error); skips not counted)\n")
    hdr = "| file |" + "".join(f" {p} pass | {p} fail | {p} err | {p} skip | {p} rate |" for p in platforms)
    print(hdr)
    print("|---|" + "---|" * (5 * len(platforms)))
    totals = {p: collections.Counter() for p in platforms}
    for f in files:
        row = f"| {f} |"
        for p in platforms:
            if f not in results[p]:
                row += " – | – | – | – | – |"
                continue
            c, ran, rate = counts(results[p][f])
            totals[p].update(c)
            row += f" {c['pass']} | {c['fail']} | {c['error']} | {c['skip']} | {rate:.1f}% |"
        print(row)
    row = "| **all** |"
    for p in platforms:
        c = totals[p]
        ran = c["pass"] + c["fail"] + c["error"]
        rate = 100.0 * c["pass"] / ran if ran else 0.0
        row += f" {c['pass']} | {c['fail']} | {c['error']} | {c['skip']} | **{rate:.1f}%** |"
    print(row)

    # ASan writes OUT/LABEL.FILE.sanitizer.PID; UBSan writes "runtime error:" lines to the log
    reports = []
    for d in args.out_dirs:
        for n in sorted(os.listdir(d)):
            if ".sanitizer." not in n and not n.endswith(".log"):
                continue
            with open(os.path.join(d, n), errors="replace") as f:
                for line in f:
                    if "runtime error:" in line or "ERROR: AddressSanitizer" in line or \
                            ("ERROR:" in line and ".sanitizer." in n):
                        reports.append(f"{n}: {line.strip()[:200]}")
                        break
    print(f"\n## Sanitizer reports (ASan/UBSan, ASAN_PLUGIN runs): {len(reports)}\n")
    for r in reports:
        print(f"- {r}")

    print("\n## Processes that died (crash, sanitizer report, hang)\n")
    ndied = sum(len(d) for fd in died.values() for d in fd.values())
    if not ndied:
        print("none")
    for p in sorted(died):
        for f in sorted(died[p]):
            for tid, (_, why) in sorted(died[p][f].items()):
                print(f"- {p} {f}: {tid.split('::')[-1]}: {why}")

    if "cpu" in results:
        # the measure: of the tests that pass on JAX's CPU backend, how many pass here
        # (a test skipped here counts as not passing, except a skip gated on the device's name,
        # which the TEST_DUT=cpu mode runs: "gated" counts those; a test id the run never
        # generated -- sampled parameter spaces can differ between runs -- counts as "absent")
        others = [p for p in platforms if p != "cpu"]
        print("\n## Against the tests that pass on cpu (pass here / (pass on cpu - gated - absent))\n")
        print("| file | cpu passes |" + "".join(f" {p} |" for p in others))
        print("|---|---|" + "---|" * len(others))
        tot_cpu, tot, tot_gated = 0, collections.Counter(), collections.Counter()
        for f in files:
            if f not in results["cpu"]:
                continue
            good = {t for t, (st, _) in results["cpu"][f].items() if st == "pass"}
            tot_cpu += len(good)
            row = f"| {f} | {len(good)} |"
            for p in others:
                if f not in results[p]:
                    row += " – |"
                    continue
                here = results[p][f]
                n = sum(1 for t in good if here.get(t, ("?",))[0] == "pass")
                gated = sum(1 for t in good if here.get(t, ("?",))[0] == "skip"
                            and NAME_GATED.search(here[t][1]))
                absent = sum(1 for t in good if t not in here)
                tot[p] += n
                tot_gated[p] += gated + absent
                want = len(good) - gated - absent
                row += f" {n} ({100.0 * n / want if want else 100.0:.1f}%)"
                row += f", {gated} gated" if gated else ""
                row += f", {absent} absent" if absent else ""
                row += " |"
            print(row)
        print(f"| **all** | {tot_cpu} |" + "".join(
            f" **{tot[p]} ({100.0 * tot[p] / (tot_cpu - tot_gated[p]) if tot_cpu > tot_gated[p] else 100.0:.1f}%)**"
            f", {tot_gated[p]} gated or absent |" for p in others))

    for p in platforms:
        if p == "cpu":
            continue
        buckets = collections.defaultdict(list)
        for f in files:
            for tid, (st, msg) in results[p].get(f, {}).items():
                if st in ("fail", "error"):
                    buckets[bucket_of(msg)].append(f"{f}: {tid.split('::')[-1]}")
        nfail = sum(len(v) for v in buckets.values())
        print(f"\n## Top {args.top} failure buckets on {p} ({nfail} failures+errors, {len(buckets)} buckets)\n")
        print("| # | count | bucket (first line, numbers/shapes normalised) | example test |")
        print("|---|---|---|---|")
        ranked = sorted(buckets.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for i, (b, tests) in enumerate(ranked[: args.top], 1):
            b = b.replace("|", "\\|")
            print(f"| {i} | {len(tests)} | `{b}` | {tests[0]} |")

        if "cpu" in results:
            print(f"\n## Failing on {p} but passing on cpu, per file (files with none left out)\n")
            for f in files:
                cpu = results["cpu"].get(f, {})
                worse = sorted(t.split("::")[-1] for t, (st, _) in results[p].get(f, {}).items()
                               if st in ("fail", "error") and cpu.get(t, ("?",))[0] == "pass")
                if worse:
                    names = ", ".join(worse[:8]) + (", ..." if len(worse) > 8 else "")
                    print(f"- {f}: {len(worse)}: {names}")

            skipped = collections.defaultdict(list)
            for f in files:
                cpu = results["cpu"].get(f, {})
                for t, (st, msg) in results[p].get(f, {}).items():
                    if st == "skip" and cpu.get(t, ("?",))[0] == "pass":
                        skipped[bucket_of(msg)].append(f"{f}: {t.split('::')[-1]}")
            n = sum(len(v) for v in skipped.values())
            print(f"\n## Skipped on {p} but passing on cpu ({n}), by reason\n")
            print("| count | skip reason | example test |")
            print("|---|---|---|")
            for b, tests in sorted(skipped.items(), key=lambda kv: -len(kv[1]))[: args.top]:
                b = b.replace("|", "\\|")
                print(f"| {len(tests)} | `{b}` | {tests[0]} |")


if __name__ == "__main__":
    main()
