#!/usr/bin/env python3
"""Generate include/anvil/pjrt_c_api_history.h: when each PJRT C API struct field appeared, and
the struct sizes each supported caller passes.

A caller fills `struct_size` with the STRUCT_SIZE of the header it was built with, so a plugin
that serves many framework versions must know, per struct, which sizes exist and which fields
each size covers. This tool measures that from the history of xla/pjrt/c/pjrt_c_api.h in a git
clone of openxla/xla (or a fork that carries its history):

  * for every API minor version from OLDEST_MINOR up, the last commit of that minor;
  * for every supported caller, the exact XLA commit it was built from (CALLERS below);

and for each such header it compiles a small C program with gcc that prints, for every struct
anvil's 0.114 header declares, the declared STRUCT_SIZE and the offset and size of each member.
Only numbers leave this tool; no upstream text is copied.

Output (X-macro tables, see the generated header's comments):
  ANVIL_PJRT_SIZE_HISTORY(X)    X(Type, minor, declared, extent): sizes from `minor` on
  ANVIL_PJRT_FIELDS_ADDED(X)    X(Type, field, minor): members added after their struct appeared
  ANVIL_PJRT_CALLERS(X)         X(caller, minor, description): the supported callers
  Type##_MIN_SIZE               the smallest declared size a supported caller can pass

Usage: tools/gen_pjrt_history.py --xla XLA_GIT_DIR [--out ROOT]
Python 3, standard library, git and gcc.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HEADER_PATH = "xla/pjrt/c/pjrt_c_api.h"
# The oldest caller anvil supports: jaxlib 0.4.35 (PJRT C API 0.55).
OLDEST_MINOR = 55
NEWEST_MINOR = 114

# Supported callers: (id, description, XLA commit the release was built from). jaxlib's commit is
# XLA_COMMIT in the jax tag's third_party/xla/{workspace,revision}.bzl; torch_xla's is xla_hash
# in the WORKSPACE of its release commit (torch_xla.version.__xla_gitrev__).
# Structs that supported callers know in incompatible layouts, left out of the tables.
# PJRT_ProcessInfo was reordered while new (task_id first and no struct_size in torch_xla 2.9's
# header): it is only passed to PJRT_Client_UpdateGlobalProcessInfo, whose elements such a
# caller lays out differently (it has no struct_size to tell).
OLD_LAYOUTS = {"PJRT_ProcessInfo"}
CALLERS = [
    ("jaxlib_0_4_35", "jaxlib 0.4.35", "76da730179313b3bebad6dea6861768421b7358c"),
    ("jaxlib_0_4_38", "jaxlib 0.4.38", "20a482597b7dd3067b26ca382b88084ee5a21cf7"),
    ("jaxlib_0_5_3", "jaxlib 0.5.3", "df971129bd82e381954da0185b534220e21798a4"),
    ("jaxlib_0_6_2", "jaxlib 0.6.2", "3d5ece64321630dade7ff733ae1353fc3c83d9cc"),
    ("torch_xla_2_9", "torch_xla 2.9.0", "92f7b5952dd585c5be17c9a5caad27407005b513"),
    ("jaxlib_0_7_2", "jaxlib 0.7.2", "0fccb8a6037019b20af2e502ba4b8f5e0f98c8f6"),
    ("jaxlib_0_8_3", "jaxlib 0.8.3", "913ae2eaa3cb88971003592a90959685a78c9e30"),
    ("jaxlib_0_9_2", "jaxlib 0.9.2", "187a5eb58277a85847d1516bd1e20b7faf03d5ef"),
    ("jaxlib_0_10_2", "jaxlib 0.10.2", "5a9e73cbd92530cac2ac36f4736a774b2412afe2"),
    ("api_0_114", "PJRT C API 0.114 (anvil's own header)", None),
]


def git(repo, *args):
    return subprocess.run(["git", "-C", repo] + list(args), check=True, capture_output=True,
                          text=True).stdout


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def member_name(decl):
    """The member a declaration declares (function pointers, arrays, API slot macros)."""
    m = re.search(r"(?:_PJRT|ANVIL_PJRT)_API_(?:STRUCT_)?FIELD\s*\(\s*(\w+)\s*\)", decl)
    if m:
        return m.group(1)
    m = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
    if m:
        return m.group(1)
    decl = re.sub(r"\[[^\]]*\]", "", decl).strip()
    m = re.search(r"(\w+)\s*$", decl)
    return m.group(1) if m else None


def parse_structs(text):
    """{struct name: [member names in order]}; an anonymous union counts as its first member."""
    text = strip_comments(text)
    structs = {}
    for m in re.finditer(r"\bstruct\s+(\w+)\s*\{", text):
        name, i, depth, start = m.group(1), m.end(), 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[start:i - 1]
        members, depth, cur = [], 0, ""
        for ch in body:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == ";" and depth == 0:
                decl = cur.strip()
                cur = ""
                if not decl:
                    continue
                if "{" in decl:  # nested union/struct: named after the brace, or its first member
                    after = decl[decl.rindex("}") + 1:].strip()
                    inner = decl[decl.index("{") + 1:decl.rindex("}")].split(";")
                    nm = member_name(after) if after else member_name(inner[0])
                else:
                    nm = member_name(decl)
                if nm:
                    members.append(nm)
            else:
                cur += ch
        structs[name] = members
    return structs


def declared_traits(text):
    """Structs with a declared STRUCT_SIZE (upstream's traits macro, or anvil's enum)."""
    text = strip_comments(text)
    names = re.findall(r"PJRT_DEFINE_STRUCT_TRAITS\(\s*(\w+)\s*,", text)
    names += re.findall(r"\b(\w+)_STRUCT_SIZE\s*=", text)
    return set(names)


def measure(header_text, wanted):
    """{struct: (declared STRUCT_SIZE or None, {member: (offset, size)})} for structs in wanted."""
    structs = parse_structs(header_text)
    traits = declared_traits(header_text)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "h.h"), "w") as f:
            f.write(header_text)
        lines = ['#include <stdio.h>', '#include "h.h"', "int main(void) {"]
        for s in wanted:
            if s not in structs:
                continue
            if s in traits:
                lines.append('printf("S %s %%zu\\n", (size_t)%s_STRUCT_SIZE);' % (s, s))
            for mem in structs[s]:
                lines.append('printf("F %s %s %%zu %%zu\\n", offsetof(struct %s, %s), '
                             'sizeof(((struct %s *)0)->%s));' % (s, mem, s, mem, s, mem))
        lines.append("return 0; }")
        src = os.path.join(tmp, "m.c")
        with open(src, "w") as f:
            f.write("\n".join(lines))
        exe = os.path.join(tmp, "m")
        subprocess.run(["gcc", "-std=gnu11", "-w", "-o", exe, src], check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        p = line.split()
        if p[0] == "S":
            result.setdefault(p[1], [None, {}])[0] = int(p[2])
        else:
            result.setdefault(p[1], [None, {}])[1][p[2]] = (int(p[3]), int(p[4]))
    return {k: (v[0], v[1]) for k, v in result.items()}


def extent(fields):
    return max((o + s for o, s in fields.values()), default=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--xla", required=True, help="git directory of openxla/xla (or a fork)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), ".."))
    a = ap.parse_args()

    own_path = os.path.join(a.out, "include/anvil/pjrt_c_api.h")
    with open(own_path) as f:
        own_text = f.read()
    own = measure(own_text.replace('#include "anvil/', '#include "'), parse_structs(own_text))
    # Structs with a declared size (a struct_size member); PJRT_Chunk and the like have none.
    wanted = sorted(s for s in own if own[s][0] is not None and s not in OLD_LAYOUTS)

    # The last commit of each minor version, in the order they were made.
    last_of_minor = {}
    for line in git(a.xla, "log", "--all", "--reverse", "--format=%H", "--", HEADER_PATH).split():
        try:
            text = git(a.xla, "show", "%s:%s" % (line, HEADER_PATH))
        except subprocess.CalledProcessError:
            continue
        m = re.search(r"#define\s+PJRT_API_MINOR\s+(\d+)", text)
        if m and OLDEST_MINOR <= int(m.group(1)) < NEWEST_MINOR:
            last_of_minor[int(m.group(1))] = text
    missing = [m for m in range(OLDEST_MINOR, NEWEST_MINOR) if m not in last_of_minor]
    if missing:
        sys.exit("no header found for minor versions %s" % missing)

    per_minor = {m: measure(last_of_minor[m], wanted) for m in sorted(last_of_minor)}
    per_minor[NEWEST_MINOR] = own

    callers, old_layouts = [], set()
    for cid, desc, commit in CALLERS:
        if cid == "api_0_114":
            callers.append((cid, desc, NEWEST_MINOR, own))
            continue
        text = git(a.xla, "show", "%s:%s" % (commit, HEADER_PATH))
        minor = int(re.search(r"#define\s+PJRT_API_MINOR\s+(\d+)", text).group(1))
        # Every struct and member this caller knows must exist in anvil's header, in the same
        # place: otherwise anvil would misread what the caller passes.
        data = measure(text, sorted(parse_structs(text)))
        for s, (_, fields) in data.items():
            for f, pos in fields.items():
                if s not in own or own[s][1].get(f) != pos:
                    if s not in OLD_LAYOUTS:
                        sys.exit("%s: %s.%s at %s is not in anvil's header there" % (
                            desc, s, f, pos))
                    old_layouts.add((desc, s))
        for d, s in old_layouts:
            if d == desc:
                data.pop(s, None)
        callers.append((cid, desc, minor, {k: v for k, v in data.items() if k in wanted}))

    # A minor version whose header had a struct's members elsewhere (an incompatible change
    # undone later, e.g. PJRT_Api at 0.56, or a struct changed while new, PJRT_ProcessInfo before
    # 0.75) is left out of that struct's history; no supported caller has such a layout (the
    # check on callers above).
    for s in wanted:
        for m, data in per_minor.items():
            if s in data and any(f in own[s][1] and own[s][1][f] != pos
                                 for f, pos in data[s][1].items()):
                print("note: %s laid out differently at minor %d; left out" % (s, m),
                      file=sys.stderr)
                data.pop(s)

    def sizes(data, s):
        if s not in data:
            return None
        decl, fields = data[s]
        ext = extent(fields)
        return (decl if decl is not None else ext, ext)

    # Size history: a row wherever a struct's (declared, extent) pair changes.
    history = {}
    for s in wanted:
        prev = None
        for minor in sorted(per_minor):
            cur = sizes(per_minor[minor], s)
            if cur is not None and cur != prev:
                history.setdefault(s, []).append((minor, cur))
            prev = cur if cur is not None else prev

    def size_at(s, minor):
        rows = [cur for m, cur in history.get(s, []) if m <= minor]
        return rows[-1] if rows else None

    # A caller's sizes must follow from its minor version and the size history (so the tables
    # below need no per-caller copy); where its commit differs from its minor's last one, say so.
    for cid, desc, minor, data in callers:
        for s in wanted:
            if (desc, s) not in old_layouts and sizes(data, s) != size_at(s, minor):
                sys.exit("%s: %s is %s, but minor %d's last header has %s" % (
                    desc, s, sizes(data, s), minor, size_at(s, minor)))

    born = {s: rows[0][0] for s, rows in history.items()}
    added = []
    for s in wanted:
        if s not in born:
            continue
        for f, (o, sz) in own[s][1].items():
            first = next(m for m, (_, ext) in history[s] if ext >= o + sz)
            if first > born[s]:
                added.append((s, f, first))

    out = []
    w = out.append
    w("/* anvil: the history of the PJRT C API structs, for serving callers of every supported")
    w(" * version (PJRT C API 0.%d, jaxlib 0.4.35, up to 0.%d)." % (OLDEST_MINOR, NEWEST_MINOR))
    w(" *")
    w(" * GENERATED by tools/gen_pjrt_history.py from the history of xla/pjrt/c/pjrt_c_api.h (the")
    w(" * header of each minor version and of each supported caller compiled, offsets and sizes")
    w(" * measured; every member a supported caller knows is checked to sit where anvil's header")
    w(" * has it). Do not edit by hand.")
    w(" *")
    w(" * A caller sets struct_size to the STRUCT_SIZE of its own header. A callee reads and writes")
    w(" * a field only when struct_size covers it (ANVIL_PJRT_HAS_FIELD). `extent` differs from")
    w(" * `declared` where a header's STRUCT_SIZE named an earlier member than the last one: such a")
    w(" * caller declares fewer bytes than its struct has, yet reads the later member. */")
    w("#ifndef ANVIL_PJRT_C_API_HISTORY_H_")
    w("#define ANVIL_PJRT_C_API_HISTORY_H_\n")
    w("/* The oldest API minor version the tables describe (jaxlib 0.4.35). */")
    w("#define ANVIL_PJRT_OLDEST_MINOR %d\n" % OLDEST_MINOR)

    w("/* X(Type, minor, declared, extent): from `minor` on (until the next row of the same Type),")
    w(" * callers declare struct_size `declared` for a struct of `extent` bytes of members. The")
    w(" * first row of a Type is the minor it appeared in (ANVIL_PJRT_OLDEST_MINOR: at or before). */")
    w("#define ANVIL_PJRT_SIZE_HISTORY(X) \\")
    w(" \\\n".join("  X(%s, %d, %d, %d)" % (s, m, d, e)
                   for s in wanted for m, (d, e) in history.get(s, [])) + "\n")

    w("/* X(Type, field, minor): members added after their struct appeared, with the minor that")
    w(" * added each; every other member is as old as its struct's first row above. */")
    w("#define ANVIL_PJRT_FIELDS_ADDED(X) \\")
    w(" \\\n".join("  X(%s, %s, %d)" % row for row in added) + "\n")

    w("/* Left out: %s (supported callers know them in incompatible layouts:" % ", ".join(
        sorted(OLD_LAYOUTS)))
    w(" * %s). */" % ", ".join(sorted(set(d for d, _ in old_layouts))))
    w("/* X(caller, minor, description): the supported callers and the API minor each speaks (its")
    w(" * struct sizes are the size history at that minor, checked against its own header). */")
    w("#define ANVIL_PJRT_CALLERS(X) \\")
    w(" \\\n".join('  X(%s, %d, "%s")' % (cid, minor, desc)
                   for cid, desc, minor, _ in callers) + "\n")

    w("/* Type##_MIN_SIZE: the smallest struct_size a supported caller declares for Type. */")
    for s in wanted:
        if s in history:
            w("enum { %s_MIN_SIZE = %d };" % (s, min(d for _, (d, _) in history[s])))
    w("\n#endif")
    path = os.path.join(a.out, "include/anvil/pjrt_c_api_history.h")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote %s: %d structs, %d minor versions, %d callers" % (path, len(wanted),
                                                                   len(per_minor), len(callers)))


if __name__ == "__main__":
    main()
