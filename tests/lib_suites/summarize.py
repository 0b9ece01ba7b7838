#!/usr/bin/env python3
"""Summarize the junit xml written by tests/lib_suites/run.sh (files PLATFORM.LIB[.partN].xml,
PLATFORM.LIB.progress, PLATFORM.LIB.died, read as tests/jax_suite/summarize.py reads them).

Prints, per library: the pass/fail/error/skip counts of each platform, and how many of the tests
that pass on cpu pass on each other platform (a skip or a missing test counts as not passing).
Then, per platform, every test that passes on cpu but not there, grouped by cause: the cause
known_causes.tsv gives for it (kind `plugin`: no non-cpu PJRT plugin can pass it; kind `anvil`:
anvil's fault, with the commit or note), else its failure's first line, normalised.

usage: summarize.py OUT_DIR [--causes FILE]
"""
import argparse
import collections
import fnmatch
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jax_suite"))
from summarize import bucket_of, parse, parse_died, parse_progress  # noqa: E402


def load(out_dir):
    """{platform: {lib: {test_id: (status, message)}}}: xml first, then its partN files, then the
    progress log for the tests no xml holds, then the died list (each an error)."""
    results = collections.defaultdict(dict)
    later = []
    for name in sorted(os.listdir(out_dir), key=lambda n: (n.count("."), n)):
        parts = name.split(".")
        path = os.path.join(out_dir, name)
        if parts[-1] == "xml" and len(parts) in (3, 4):
            results[parts[0]].setdefault(parts[1], {}).update(parse(path))
        elif parts[-1] in ("progress", "died") and len(parts) == 3:
            later.append((parts, path))
    for parts, path in sorted(later, key=lambda pp: pp[0][-1] == "died"):
        r = results[parts[0]].setdefault(parts[1], {})
        if parts[-1] == "progress":
            for tid, outcome in parse_progress(path).items():
                r.setdefault(tid, outcome)
        else:
            r.update(parse_died(path))
    return results


def load_causes(path):
    """[(lib, pattern, kind, cause)] from a tab-separated file; # starts a comment."""
    causes = []
    if not os.path.exists(path):
        return causes
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            lib, pattern, kind, cause = line.split("\t", 3)
            causes.append((lib, pattern, kind, cause))
    return causes


def is_plugin_limit(causes, lib, tid):
    return any(clib == lib and kind == "plugin" and fnmatch.fnmatchcase(tid, pattern)
               for clib, pattern, kind, _ in causes)


def pct(n, d):
    return f"{100.0 * n / d if d else 100.0:.2f}%"


def cause_of(causes, lib, tid, status, msg):
    for clib, pattern, kind, cause in causes:
        if clib == lib and fnmatch.fnmatchcase(tid, pattern):
            return f"[{kind}] {cause}"
    if status == "?":
        return "[not run]"
    return f"[{status}] {bucket_of(msg) if msg else '(no message)'}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--causes", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "known_causes.tsv"))
    args = ap.parse_args()
    results = load(args.out_dir)
    if "cpu" not in results:
        sys.exit(f"no cpu.LIB.xml in {args.out_dir}")
    causes = load_causes(args.causes)
    others = sorted(p for p in results if p != "cpu")
    libs = sorted(results["cpu"])

    print("## Counts (pass / fail / error / skip)\n")
    print("| library |" + "".join(f" {p} |" for p in ["cpu"] + others))
    print("|---|" + "---|" * (1 + len(others)))
    for lib in libs:
        row = f"| {lib} |"
        for p in ["cpu"] + others:
            if lib not in results[p]:
                row += " – |"
                continue
            c = collections.Counter(st for st, _ in results[p].get(lib, {}).values())
            row += f" {c['pass']} / {c['fail']} / {c['error']} / {c['skip']} |"
        print(row)

    print("\n## Against the tests that pass on cpu (pass here / pass on cpu)\n")
    print("Last column: leaving out the tests known_causes.tsv says no non-cpu plugin can pass"
          " (kind `plugin`).\n")
    print("| library | cpu passes |" + "".join(
        f" {p} passes | {p}: of cpu's passes | {p}: of those a plugin can pass |" for p in others))
    print("|---|---|" + "---|---|---|" * len(others))
    for lib in libs:
        good = {t for t, (st, _) in results["cpu"][lib].items() if st == "pass"}
        row = f"| {lib} | {len(good)} |"
        for p in others:
            if lib not in results[p]:
                row += " – | – | – |"
                continue
            r = results[p][lib]
            npass = sum(1 for st, _ in r.values() if st == "pass")
            passed = {t for t in good if r.get(t, ("?",))[0] == "pass"}
            possible = {t for t in good if t in passed or not is_plugin_limit(causes, lib, t)}
            row += f" {npass} | {len(passed)} ({pct(len(passed), len(good))}) |"
            row += f" {len(passed)} / {len(possible)} ({pct(len(passed), len(possible))}) |"
        print(row)

    for p in others:
        print(f"\n## Passing on cpu, not on {p}, by cause\n")
        for lib in (lib for lib in libs if lib in results[p]):
            r = results[p][lib]
            by_cause = collections.defaultdict(list)
            for t, (st, _) in sorted(results["cpu"][lib].items()):
                if st != "pass":
                    continue
                st2, msg = r.get(t, ("?", ""))
                if st2 != "pass":
                    by_cause[cause_of(causes, lib, t, st2, msg)].append(t)
            print(f"### {lib}: {sum(len(v) for v in by_cause.values())}\n")
            for cause, tests in sorted(by_cause.items(), key=lambda kv: -len(kv[1])):
                print(f"- {len(tests)} × {cause}")
                for t in tests[:5]:
                    print(f"  - `{t}`")
                if len(tests) > 5:
                    print(f"  - … and {len(tests) - 5} more")
            print()
        died = [(lib, t, msg) for lib in sorted(results[p]) for t, (st, msg) in results[p][lib].items()
                if msg.startswith("process died")]
        print(f"### processes that died on {p}: {len(died)}\n")
        for lib, t, msg in died:
            print(f"- {lib}: `{t}`: {msg}")


if __name__ == "__main__":
    main()
