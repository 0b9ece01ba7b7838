#!/usr/bin/env python3
"""Generate anvil's own ABI-compatible PJRT C API header and the ABI test tables.

Inputs (facts only, no upstream text is copied):
  <ref>/pjrt-c-api-0.114/record_layouts.txt  clang -fdump-record-layouts of every struct
  <ref>/pjrt-c-api-0.114/struct_sizes.tsv    *_STRUCT_SIZE values and their last field
  <ref>/pjrt-c-api-0.114/enum_values.txt     every enum constant
  <ref>/pjrt-c-api-0.75-struct-sizes.txt     struct sizes of the 0.75 API
  <research>/pjrt_api_and_jax.md             PJRT_Api field order (cross-check only)

Outputs (relative to the repository root):
  include/anvil/pjrt_c_api.h     the header
  tests/c/abi_expected.inc       X-macro tables for tests/c/test_abi.c
  tests/c/abi_sizes_0_75.inc     X-macro table of 0.75 struct sizes

The struct definitions in the header are derived from the field *types and
order* of the layout dump only; the offsets and sizes of the dump go to the test
tables, so a wrongly translated type shows up as a failing ABI test.

Usage: tools/gen_pjrt_header.py [--reference DIR] [--research DIR] [--out ROOT]
Python 3, standard library only.
"""

import argparse
import os
import re
import sys

API_MAJOR = 0
API_MINOR = 114

# ---------------------------------------------------------------------------
# Hand-written knowledge that is not in the layout dump.
# ---------------------------------------------------------------------------

# Callback typedefs (signatures checked against the LLVM types in the dump).
# They only need the forward typedefs and the enums, so they come early.
CALLBACKS = [
    ("PJRT_Event_OnReadyCallback",
     "Run once an event is ready. The callback owns `error` (may be NULL) and\n"
     "must release it with PJRT_Error_Destroy.",
     "typedef void (*PJRT_Event_OnReadyCallback)(PJRT_Error *error, void *user_arg);"),
    ("PJRT_Error_PayloadVisitor",
     "Called once per (key, value) payload attached to an error.",
     "typedef void (*PJRT_Error_PayloadVisitor)(const char *key, size_t key_size,\n"
     "                                          const char *value, size_t value_size,\n"
     "                                          void *user_arg);"),
    ("PJRT_CallbackError",
     "Supplied by the plugin to caller callbacks so that they can build a\n"
     "PJRT_Error to return; `message` only has to live for the call.",
     "typedef PJRT_Error *(*PJRT_CallbackError)(PJRT_Error_Code code,\n"
     "                                          const char *message,\n"
     "                                          size_t message_size);"),
    ("PJRT_KeyValueGetCallback_ValueDeleter",
     "Frees a value returned by PJRT_KeyValueGetCallback.",
     "typedef void (*PJRT_KeyValueGetCallback_ValueDeleter)(char *value);"),
    ("PJRT_KeyValueGetCallback",
     "Blocking key-value store lookup provided by the caller of PJRT_Client_Create.",
     "typedef PJRT_Error *(*PJRT_KeyValueGetCallback)(\n"
     "    PJRT_KeyValueGetCallback_Args *args);"),
    ("PJRT_KeyValueTryGetCallback_ValueDeleter",
     "Frees a value returned by PJRT_KeyValueTryGetCallback.",
     "typedef void (*PJRT_KeyValueTryGetCallback_ValueDeleter)(char *value);"),
    ("PJRT_KeyValueTryGetCallback",
     "Non-blocking lookup: fails with NOT_FOUND at once when the key is absent.",
     "typedef PJRT_Error *(*PJRT_KeyValueTryGetCallback)(\n"
     "    PJRT_KeyValueTryGetCallback_Args *args);"),
    ("PJRT_KeyValuePutCallback",
     "Key-value store insert provided by the caller of PJRT_Client_Create.",
     "typedef PJRT_Error *(*PJRT_KeyValuePutCallback)(\n"
     "    PJRT_KeyValuePutCallback_Args *args);"),
    ("PJRT_SendCallback",
     "Host side of a send op: receives one chunk; must call\n"
     "chunk->deleter(chunk->data, chunk->deleter_arg) when done with it.",
     "typedef PJRT_Error *(*PJRT_SendCallback)(PJRT_Chunk *chunk,\n"
     "                                         PJRT_CallbackError *callback_error,\n"
     "                                         size_t total_size_in_bytes,\n"
     "                                         bool done, void *user_arg);"),
    ("PJRT_RecvCallback",
     "Host side of a recv op: takes ownership of `stream` and must destroy it.",
     "typedef void (*PJRT_RecvCallback)(PJRT_CopyToDeviceStream *stream,\n"
     "                                  void *user_arg);"),
    ("PJRT_HloOutputCallback",
     "Receives the value of an HLO output-callback operand during execution.",
     "typedef void (*PJRT_HloOutputCallback)(int64_t replica_id,\n"
     "                                       int64_t partition_id,\n"
     "                                       const void *data,\n"
     "                                       const int64_t *dims, size_t num_dims,\n"
     "                                       PJRT_Buffer_Type element_type,\n"
     "                                       int64_t operand_index,\n"
     "                                       void *user_arg);"),
]
CALLBACK_NAMES = {c[0] for c in CALLBACKS}

# Descriptions of the opaque handle types (those referenced but never defined).
HANDLE_DOCS = {
    "PJRT_Client": "A client: owns devices, memories, buffers and executables.",
    "PJRT_DeviceDescription": "Static description of a device (also without hardware).",
    "PJRT_Device": "A device of a client.",
    "PJRT_Event": "Completion notification for asynchronous work.",
    "PJRT_Executable": "A compiled, not loaded, program.",
    "PJRT_LoadedExecutable": "A compiled program loaded onto devices of a client.",
    "PJRT_Buffer": "An array on a device / in a memory.",
    "PJRT_TopologyDescription": "Description of a set of devices, usable for compilation.",
    "PJRT_CopyToDeviceStream": "Stream of chunks handed to a recv callback.",
    "PJRT_AsyncHostToDeviceTransferManager": "Manages buffers filled asynchronously from the host.",
    "PJRT_ExecuteContext": "Caller-provided extra context for an execution.",
    "PJRT_AsyncTrackingEvent": "Event tracking asynchronous device work for profiling.",
    "PJRT_DeviceAssignmentSerialized": "Owner of serialized device-assignment bytes.",
    "PJRT_Device_Attributes": "Owner of the attribute array of PJRT_Device_GetAttributes.",
    "PJRT_SerializedExecutable": "Owner of serialized executable bytes.",
    "PJRT_SerializedCompileOptions": "Owner of serialized compile-options bytes.",
    "PJRT_SerializedTopology": "Owner of serialized topology bytes.",
    "PJRT_FulfillAliasBufferCallback": "Token used to fulfill an alias buffer later.",
    "PJRT_MultiSlice_Config": "Multi-slice configuration (opaque to the core API).",
}
HANDLE_ORDER = list(HANDLE_DOCS)

# API entries whose function type returns void instead of PJRT_Error*.
VOID_ENTRIES = {"PJRT_Error_Destroy", "PJRT_Error_Message"}

# Minor version in which each PJRT_Api field from #91 on appeared (from
# pjrt_c_api_test_summary.md, FieldOffsetsAndSizesForVersion). Fields #1-#90
# are the baseline of every version the test knows.
API_FIELD_SINCE = {}
for _minor, _names in [
    (29, ["PJRT_Executable_OutputElementTypes", "PJRT_Executable_OutputDimensions"]),
    (32, ["PJRT_Buffer_CopyToMemory"]),
    (33, ["PJRT_Client_CreateViewOfDeviceBuffer"]),
    (35, ["PJRT_Executable_Fingerprint"]),
    (36, ["PJRT_Client_TopologyDescription"]),
    (40, ["PJRT_Executable_GetCompiledMemoryStats"]),
    (48, ["PJRT_Memory_Kind_Id"]),
    (52, ["PJRT_ExecuteContext_Create", "PJRT_ExecuteContext_Destroy"]),
    (57, ["PJRT_Buffer_CopyRawToHost"]),
    (60, ["PJRT_AsyncHostToDeviceTransferManager_Destroy",
          "PJRT_AsyncHostToDeviceTransferManager_TransferData",
          "PJRT_Client_CreateBuffersForAsyncHostToDevice"]),
    (62, ["PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer",
          "PJRT_AsyncHostToDeviceTransferManager_Device",
          "PJRT_AsyncHostToDeviceTransferManager_BufferCount",
          "PJRT_AsyncHostToDeviceTransferManager_BufferSize",
          "PJRT_AsyncHostToDeviceTransferManager_SetBufferError",
          "PJRT_AsyncHostToDeviceTransferManager_AddMetadata"]),
    (67, ["PJRT_Client_DmaMap", "PJRT_Client_DmaUnmap"]),
    (68, ["PJRT_Client_CreateUninitializedBuffer"]),
    (73, ["PJRT_Client_UpdateGlobalProcessInfo"]),
    (75, ["PJRT_TopologyDescription_Deserialize"]),
    (77, ["PJRT_Client_CreateAliasBuffer", "PJRT_Client_FulfillAliasBuffer"]),
    (79, ["PJRT_LoadedExecutable_GetDeviceAssignment"]),
    (82, ["PJRT_Client_CreateErrorBuffer"]),
    (83, ["PJRT_AsyncHostToDeviceTransferManager_TransferLiteral"]),
    (84, ["PJRT_Buffer_CopyRawToHostFuture"]),
    (85, ["PJRT_Device_PoisonExecution"]),
    (86, ["PJRT_Device_CreateAsyncTrackingEvent", "PJRT_AsyncTrackingEvent_Destroy"]),
    (87, ["PJRT_Executable_GetCompileOptions"]),
    (88, ["PJRT_Buffer_DonateWithControlDependency"]),
    (89, ["PJRT_Event_Create", "PJRT_Event_Set"]),
    (92, ["PJRT_Device_GetAttributes"]),
    (95, ["PJRT_Client_Load"]),
    (96, ["PJRT_LoadedExecutable_AddressableDeviceLogicalIds"]),
    (98, ["PJRT_Buffer_Bitcast"]),
    (99, ["PJRT_Error_ForEachPayload"]),
    (101, ["PJRT_TopologyDescription_Fingerprint"]),
    (102, ["PJRT_Executable_ParameterMemoryKinds"]),
    (106, ["PJRT_Device_ClearMemoryStats"]),
    (109, ["PJRT_TopologyDescription_MakeCanonicalShapeForMemorySpace"]),
    (110, ["PJRT_TopologyDescription_GetMemorySpaceKindIds"]),
]:
    for _n in _names:
        API_FIELD_SINCE[_n] = _minor

# Header sections: (title, comment, predicate on struct name). First match wins.
def _exact(*names):
    s = set(names)
    return lambda n: n in s


def _prefix(*prefixes):
    return lambda n: any(n.startswith(p) for p in prefixes)


SECTIONS = [
    ("Extensions and version",
     "Every argument struct starts with `struct_size` (the size the caller\n"
     "compiled against) and `extension_start`, a linked list of optional\n"
     "extension structs identified by PJRT_Extension_Type.",
     _exact("PJRT_Extension_Base", "PJRT_Api_Version")),
    ("Errors",
     "A NULL PJRT_Error* means success. Errors are allocated by the plugin and\n"
     "freed by the caller with PJRT_Error_Destroy. Since 0.107 every PJRT_Error\n"
     "starts with a pointer to a function table (may be used without PJRT_Api).",
     _prefix("PJRT_Error")),
    ("Named values",
     "Typed key/value pairs used for attributes and options.",
     _exact("PJRT_NamedValue")),
    ("Plugin",
     "Plugin-wide initialization and attributes.",
     _prefix("PJRT_Plugin_")),
    ("Events",
     "Asynchronous completion notifications; always destroyed by the caller.",
     _prefix("PJRT_Event_")),
    ("Memory objects",
     "Since 0.105 every PJRT_Memory starts with a pointer to a function table\n"
     "(or NULL) through which the framework attaches user data to the memory.",
     _exact("PJRT_Memory_FunctionTable", "PJRT_Memory")),
    ("Key-value store callbacks",
     "Arguments of the optional key-value store callbacks that the caller of\n"
     "PJRT_Client_Create may supply for multi-process setups.",
     _prefix("PJRT_KeyValue")),
    ("Client",
     "Client creation and queries, programs, buffer creation and host transfers.",
     lambda n: n.startswith("PJRT_Client_") or
     n in ("PJRT_ProcessInfo", "PJRT_Program", "PJRT_ShapeSpec")),
    ("Device descriptions",
     "Static device properties; also available without hardware (topologies).",
     _prefix("PJRT_DeviceDescription_")),
    ("Devices",
     "Per-device queries and memory statistics.",
     _prefix("PJRT_Device_")),
    ("Async tracking events",
     "Events that track asynchronous device work.",
     _prefix("PJRT_AsyncTrackingEvent_")),
    ("Memories",
     "Memory spaces attached to devices (e.g. device and pinned host memory).",
     _prefix("PJRT_Memory_")),
    ("Execute context",
     "Caller-provided context passed to an execution.",
     _prefix("PJRT_ExecuteContext_")),
    ("Executables",
     "Queries on compiled programs, serialization and deserialization.",
     lambda n: n.startswith("PJRT_Executable_") or n == "PJRT_LoadOptions"),
    ("Loaded executables",
     "Executables loaded on devices: execution and its options and callbacks.",
     lambda n: n.startswith("PJRT_LoadedExecutable_") or n in (
         "PJRT_LogicalDeviceIds", "PJRT_SendCallbackInfo",
         "PJRT_RecvCallbackInfo", "PJRT_HloOutputCallbackInfo",
         "PJRT_ExecuteOptions")),
    ("Buffers",
     "Arrays on devices: shape, layout, transfers, lifetime.",
     _prefix("PJRT_Buffer_")),
    ("Copy-to-device streams",
     "Chunked data handed to recv callbacks.",
     lambda n: n.startswith("PJRT_CopyToDeviceStream_") or n == "PJRT_Chunk"),
    ("Topology descriptions",
     "Device topologies, usable for ahead-of-time compilation.",
     _prefix("PJRT_TopologyDescription_")),
    ("Compilation without a client",
     "Compile against a topology description.",
     _exact("PJRT_Compile_Args")),
    ("Async host-to-device transfer manager",
     "Buffers created up front and filled from the host piece by piece.",
     _prefix("PJRT_AsyncHostToDeviceTransferManager_")),
    ("The API table",
     "Returned by GetPjrtApi(). `struct_size` tells the caller how many of the\n"
     "function pointers below exist. Each field is tagged with its number; from\n"
     "#91 on also with the minor version that, per the upstream ABI test, first\n"
     "has it. Caveat: the 0.75 reference gives PJRT_Api 960 bytes = 117\n"
     "pointers, so #116/#117 (tagged 0.77) were already in 0.75 headers.",
     _exact("PJRT_Api")),
]

SCALAR_SIZES = {
    "bool": 1, "_Bool": 1, "char": 1, "int": 4, "int32_t": 4, "float": 4,
    "int64_t": 8, "uint64_t": 8, "size_t": 8, "intptr_t": 8, "uintptr_t": 8,
}


# ---------------------------------------------------------------------------
# Parsing.
# ---------------------------------------------------------------------------

class Node:
    def __init__(self, offset, level, ctype, name):
        self.offset = offset
        self.level = level
        self.ctype = ctype      # as printed by clang ('' for anonymous union)
        self.name = name        # '' for anonymous union
        self.anon_union = False
        self.children = []


class Record:
    def __init__(self, name):
        self.name = name
        self.fields = []        # level-1 Nodes
        self.size = None
        self.align = None
        self.line = 10 ** 9     # source line in the original header (ordering)


LAYOUT_LINE = re.compile(r"^\s*(\d*) \|( +)(.*?)\s*$")


def parse_layouts(path):
    text = open(path, encoding="utf-8").read()
    records = {}
    order = []
    for block in text.split("*** Dumping AST Record Layout")[1:]:
        lines = block.split("\n")
        head = None
        stack = []
        rec = None
        for line in lines:
            m = re.match(r"^\s*\| \[sizeof=(\d+), align=(\d+)\]", line)
            if m and rec is not None:
                rec.size, rec.align = int(m.group(1)), int(m.group(2))
                break
            m = LAYOUT_LINE.match(line)
            if not m:
                continue
            off, spaces, rest = m.group(1), m.group(2), m.group(3)
            level = (len(spaces) - 1) // 2
            if head is None:
                head = rest
                hm = re.match(r"^(struct|union) (\S+)$", rest)
                if not hm or "(anonymous" in rest:
                    rec = None  # anonymous union block: shown inline in parent
                    break
                rec = Record(hm.group(2))
                continue
            if "(anonymous" in rest:
                node = Node(int(off), level, "", "")
                node.anon_union = True
            else:
                ctype, _, name = rest.rpartition(" ")
                node = Node(int(off), level, ctype.strip(), name)
            while stack and stack[-1].level >= level:
                stack.pop()
            if level == 1:
                rec.fields.append(node)
            else:
                stack[-1].children.append(node)
            stack.append(node)
        if rec is not None:
            if rec.size is None:
                sys.exit("no sizeof for %s" % rec.name)
            records[rec.name] = rec
            order.append(rec.name)
        # AST part of the block: source line of the record definition.
        m = re.search(r"Record: RecordDecl \S+ (?:prev \S+ )?<[^:>]+:(\d+):\d+.*? "
                      r"struct (\w+) definition", block)
        if m and m.group(2) in records:
            records[m.group(2)].line = int(m.group(1))
    return records, order


def parse_struct_sizes(path):
    out = {}
    lines = open(path, encoding="utf-8").read().split("\n")
    for line in lines[1:]:
        if not line.strip():
            continue
        name, size, last = line.split("\t")
        out[name] = (int(size), last.strip())
    return out


def parse_enums(path):
    """Returns list of groups: each a list of (name, value)."""
    groups = []
    for line in open(path, encoding="utf-8"):
        if line.startswith("enum"):
            groups.append([])
            continue
        m = re.match(r"^\s+(\w+) = (-?\d+)\s*$", line)
        if m:
            groups[-1].append((m.group(1), int(m.group(2))))
    return [g for g in groups if g]


def parse_sizes_075(path):
    out = []
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^(PJRT_\w+)\s+STRUCT_SIZE=(\d+)\s+sizeof=(\d+)", line)
        if m:
            out.append((m.group(1), int(m.group(2)), int(m.group(3))))
    return out


def parse_research_api_order(path):
    if not os.path.exists(path):
        return None
    names = []
    in_list = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("### 1.1"):
            in_list = True
            continue
        if in_list and line.startswith("#"):
            break
        m = re.match(r"^\d+\. (PJRT_\w+)", line)
        if in_list and m:
            names.append(m.group(1))
    return names


# ---------------------------------------------------------------------------
# Type handling.
# ---------------------------------------------------------------------------

def c_type(t):
    return t.replace("_Bool", "bool")


def declare(ctype, name):
    """Turns clang's 'type name' into a C declaration."""
    t = c_type(ctype)
    if "(*)" in t:
        return t.replace("(*)", "(*%s)" % name, 1) + ";"
    sep = "" if t.endswith("*") else " "
    return "%s%s%s;" % (t, sep, name)


def type_size(ctype, records, enum_types):
    t = ctype.strip()
    if "*" in t:
        return 8
    t = re.sub(r"\bconst\b", "", t).strip()
    if t.startswith("struct "):
        return records[t[len("struct "):]].size
    if t in records:
        return records[t].size
    if t in SCALAR_SIZES:
        return SCALAR_SIZES[t]
    if t in enum_types:
        return 4
    if t in CALLBACK_NAMES:
        return 8
    raise ValueError("unknown type size: %r" % ctype)


# ---------------------------------------------------------------------------
# Generation.
# ---------------------------------------------------------------------------

def enum_type_name(group, known_types):
    first = group[0][0]
    best = None
    for t in known_types:
        if first.startswith(t + "_") and (best is None or len(t) > len(best)):
            best = t
    if best:
        return best
    # 'PJRT_NamedValue_kString' style: strip the constant part.
    prefix = re.sub(r"_k[A-Z]\w*$", "", first)
    for cand in (prefix, prefix + "_Type"):
        if cand in known_types:
            return cand
    raise ValueError("cannot name enum starting with %s" % first)


def wrap_comment(text, indent=""):
    lines = text.split("\n")
    if len(lines) == 1:
        return "%s/* %s */" % (indent, lines[0])
    out = ["%s/* %s" % (indent, lines[0])]
    out += ["%s * %s" % (indent, l) if l else "%s *" % indent for l in lines[1:]]
    out.append("%s */" % indent)
    return "\n".join(out)


def emit_fields(nodes, indent):
    out = []
    for f in nodes:
        if f.anon_union:
            out.append("%sunion {" % indent)
            out += emit_fields(f.children, indent + "  ")
            out.append("%s};" % indent)
        else:
            out.append(indent + declare(f.ctype, f.name))
    return out


def field_entries(rec, records, enum_types):
    """(path, offset, size-or-None) for every field at every nesting level."""
    out = []

    def walk(nodes, prefix):
        for f in nodes:
            if f.anon_union:
                walk(f.children, prefix)  # members are reached directly
                continue
            path = prefix + f.name
            out.append((path, f.offset, type_size(f.ctype, records, enum_types)))
            if f.children:
                walk(f.children, path + ".")

    walk(rec.fields, "")
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference", default="/work/shared/reference")
    ap.add_argument("--research", default="/work/shared/research")
    ap.add_argument("--out", default=os.path.dirname(here))
    args = ap.parse_args()

    d114 = os.path.join(args.reference, "pjrt-c-api-0.114")
    records, order = parse_layouts(os.path.join(d114, "record_layouts.txt"))
    sizes_tsv = parse_struct_sizes(os.path.join(d114, "struct_sizes.tsv"))
    enum_groups = parse_enums(os.path.join(d114, "enum_values.txt"))
    sizes_075 = parse_sizes_075(os.path.join(args.reference,
                                             "pjrt-c-api-0.75-struct-sizes.txt"))

    # --- Enums: split STRUCT_SIZE constants from real enum types.
    struct_size_values = {}
    real_groups = []
    for g in enum_groups:
        if all(n.endswith("_STRUCT_SIZE") for n, _ in g):
            for n, v in g:
                struct_size_values[n[:-len("_STRUCT_SIZE")]] = v
        else:
            real_groups.append(g)

    # Types referenced by fields.
    referenced = set()
    for rec in records.values():
        stack = list(rec.fields)
        while stack:
            f = stack.pop()
            stack += f.children
            referenced.update(re.findall(r"\bPJRT_\w+", f.ctype))
    api = records["PJRT_Api"]
    api_entries = [f.name for f in api.fields[3:]]
    enum_known = {t for t in referenced if t not in records and t not in CALLBACK_NAMES
                  and t not in api_entries}
    enum_named = [(enum_type_name(g, enum_known), g) for g in real_groups]
    enum_types = {n for n, _ in enum_named}
    handles = sorted(enum_known - enum_types,
                     key=lambda h: (HANDLE_ORDER.index(h) if h in HANDLE_ORDER else 999, h))
    missing_cb = [c for c in CALLBACK_NAMES if c not in referenced]
    if missing_cb:
        sys.exit("callback typedefs not referenced by any field: %s" % missing_cb)

    # --- Cross-checks.
    if len(api_entries) != 138:
        sys.exit("PJRT_Api has %d function pointers, expected 138" % len(api_entries))
    for f in api.fields[3:]:
        if f.ctype != f.name + " *":
            sys.exit("unexpected PJRT_Api field %r %r" % (f.ctype, f.name))
        if f.name + "_Args" not in records:
            sys.exit("no args struct for %s" % f.name)
    research = parse_research_api_order(os.path.join(args.research, "pjrt_api_and_jax.md"))
    if research is not None and research != api_entries:
        sys.exit("PJRT_Api order differs from pjrt_api_and_jax.md section 1.1")
    if [n for n in API_FIELD_SINCE if n not in api_entries]:
        sys.exit("unknown names in API_FIELD_SINCE")
    for i, n in enumerate(api_entries):
        if (i >= 90) != (n in API_FIELD_SINCE):
            sys.exit("API_FIELD_SINCE does not cover exactly fields #91..#138 (%s)" % n)
    for n, (v, _) in sizes_tsv.items():
        if struct_size_values.get(n) != v:
            sys.exit("struct_sizes.tsv and enum_values.txt disagree on %s" % n)
        if n not in records:
            sys.exit("%s has a STRUCT_SIZE but no layout" % n)

    # Last field for every STRUCT_SIZE constant: from the tsv, else the struct's
    # final member (checked below against the enum value).
    last_field = {}
    notes = []
    for n in struct_size_values:
        rec = records[n]
        if n in sizes_tsv:
            last_field[n] = sizes_tsv[n][1]
        else:
            last_field[n] = rec.fields[-1].name
            notes.append("%s: not in struct_sizes.tsv; last field taken as %s"
                         % (n, last_field[n]))
        lf = [f for f in rec.fields if f.name == last_field[n]]
        if not lf:
            sys.exit("%s has no field %s" % (n, last_field[n]))
        if lf[0] is not rec.fields[-1]:
            notes.append("%s: STRUCT_SIZE field %s is not the final member"
                         % (n, last_field[n]))
        computed = lf[0].offset + type_size(lf[0].ctype, records, enum_types)
        if computed != struct_size_values[n]:
            sys.exit("%s: offset+size of %s = %d, expected %d"
                     % (n, last_field[n], computed, struct_size_values[n]))
    for n in records:
        if n not in struct_size_values:
            notes.append("%s: no STRUCT_SIZE constant in 0.114" % n)

    # --- Assign structs to sections.
    sections = [(t, c, []) for t, c, _ in SECTIONS]
    for n in sorted(records, key=lambda n: (records[n].line, order.index(n))):
        for i, (_, _, pred) in enumerate(SECTIONS):
            if pred(n):
                sections[i][2].append(n)
                break
        else:
            sys.exit("no section for %s" % n)

    # --- Header.
    H = []
    w = H.append
    w("/* anvil: PJRT C API declarations, ABI-compatible with PJRT C API %d.%d."
      % (API_MAJOR, API_MINOR))
    w(" *")
    w(" * GENERATED by tools/gen_pjrt_header.py from the record layouts, struct sizes")
    w(" * and enum values of the reference API. Do not edit by hand: change the")
    w(" * generator and re-run it. tests/c/test_abi.c checks every size and offset.")
    w(" *")
    w(" * Conventions: every call takes one argument struct whose first member")
    w(" * `struct_size` is set by the caller to <Name>_STRUCT_SIZE of the header it")
    w(" * was built with; a callee must not touch fields past that size. Output")
    w(" * fields are written by the callee. Strings are (pointer, size) pairs and")
    w(" * need not be NUL-terminated.")
    w(" */")
    w("#ifndef ANVIL_PJRT_C_API_H_")
    w("#define ANVIL_PJRT_C_API_H_")
    w("")
    w("#include <stdbool.h>")
    w("#include <stddef.h>")
    w("#include <stdint.h>")
    w("")
    w("#define PJRT_API_MAJOR %d" % API_MAJOR)
    w("#define PJRT_API_MINOR %d" % API_MINOR)
    w("")
    w("/* Bytes of `type` up to and including `last_field` (no tail padding). */")
    w("#define ANVIL_PJRT_STRUCT_SIZE(type, last_field) \\")
    w("  (offsetof(type, last_field) + sizeof(((type *)0)->last_field))")
    w("")
    w("/* Helper for callers built against older headers: true when the")
    w(" * caller-declared size `struct_size` of an argument struct of type `type`")
    w(" * covers `field`, i.e. the caller knows the field and it may be read or")
    w(" * written. Example: ANVIL_PJRT_HAS_FIELD(args->struct_size,")
    w(" * PJRT_Client_Create_Args, kv_try_get_callback). */")
    w("#define ANVIL_PJRT_HAS_FIELD(struct_size, type, field) \\")
    w("  ((size_t)(struct_size) >= ANVIL_PJRT_STRUCT_SIZE(type, field))")
    w("")
    w("#ifdef __cplusplus")
    w('extern "C" {')
    w("#endif")
    w("")

    w("/* ============================== Enumerations ============================== */")
    w("")
    for tname, g in enum_named:
        w("typedef enum {")
        for n, v in g:
            w("  %s = %d," % (n, v))
        w("} %s;" % tname)
        w("")

    w("/* =========================== Struct type names ============================ */")
    w("")
    w("/* Every struct of the API, so that any of them can be named before its")
    w(" * definition (as the callback types below do). */")
    for t, _, names in sections:
        for n in names:
            w("typedef struct %s %s;" % (n, n))
    w("")

    w("/* ============================= Opaque handles ============================= */")
    w("")
    w("/* Incomplete types: their contents belong to the plugin. (PJRT_Error and")
    w(" * PJRT_Memory are not opaque: they begin with a function-table pointer.) */")
    for h in handles:
        doc = HANDLE_DOCS.get(h, "Opaque handle.")
        w("/* %s */" % doc)
        w("typedef struct %s %s;" % (h, h))
    w("")

    w("/* ============================= Callback types ============================= */")
    w("")
    for _, doc, text in CALLBACKS:
        w(wrap_comment(doc))
        w(text)
        w("")

    for title, comment, names in sections:
        if not names:
            continue
        bar = "=" * max(4, (76 - len(title) - 2) // 2)
        w("/* %s %s %s */" % (bar, title, bar)[:80])
        w("")
        w(wrap_comment(comment))
        w("")
        for n in names:
            rec = records[n]
            if n == "PJRT_Api":
                w("/* Declares the member `fn` of type pointer-to-`fn`. In C++ the type is")
                w(" * qualified so that the member may reuse the type's name. */")
                w("#ifdef __cplusplus")
                w("#define ANVIL_PJRT_API_FIELD(fn) ::fn *fn")
                w("#else")
                w("#define ANVIL_PJRT_API_FIELD(fn) fn *fn")
                w("#endif")
                w("")
                w("struct PJRT_Api {")
                for i, f in enumerate(rec.fields):
                    decl = declare(f.ctype, f.name)
                    if i >= 3:
                        decl = "ANVIL_PJRT_API_FIELD(%s);" % f.name
                        num = i - 2
                        since = API_FIELD_SINCE.get(f.name)
                        tag = "/* %3d%s */" % (num, ", 0.%d" % since if since else "")
                        decl = "%-86s %s" % (decl, tag) if len(decl) < 86 else decl + " " + tag
                    w("  " + decl)
                w("};")
            else:
                w("struct %s {" % n)
                H.extend(emit_fields(rec.fields, "  "))
                w("};")
            if n in struct_size_values:
                w("enum { %s_STRUCT_SIZE = ANVIL_PJRT_STRUCT_SIZE(%s, %s) };"
                  % (n, n, last_field[n]))
            if n.endswith("_Args") and n[:-5] in api_entries:
                fn = n[:-5]
                ret = "void" if fn in VOID_ENTRIES else "PJRT_Error *"
                sep = "" if ret.endswith("*") else " "
                w("typedef %s%s%s(%s *args);" % (ret, sep, fn, n))
            w("")

    w("/* ============================== Entry point =============================== */")
    w("")
    w("/* Exported by every PJRT plugin shared library. */")
    w("const PJRT_Api *GetPjrtApi(void);")
    w("")
    w("#ifdef __cplusplus")
    w('} /* extern "C" */')
    w("#endif")
    w("")
    w("#endif /* ANVIL_PJRT_C_API_H_ */")

    # --- Expected tables.
    E = []
    e = E.append
    e("/* GENERATED by tools/gen_pjrt_header.py from the PJRT C API %d.%d reference"
      % (API_MAJOR, API_MINOR))
    e(" * (record layouts, STRUCT_SIZE values, enum values). Do not edit.")
    e(" *")
    e(" * X-macro tables. The includer defines each macro it wants before including")
    e(" * this file; undefined ones expand to nothing:")
    e(" *   ANVIL_ABI_STRUCT(type, sizeof, alignof)")
    e(" *   ANVIL_ABI_FIELD(type, member_designator, offsetof, sizeof)")
    e(" *   ANVIL_ABI_STRUCT_SIZE(type, STRUCT_SIZE)")
    e(" *   ANVIL_ABI_ENUM(constant, value)")
    e(" * member_designator may contain '.' (members of by-value nested structs);")
    e(" * members of anonymous unions are named directly. */")
    for m in ("ANVIL_ABI_STRUCT(t, s, a)", "ANVIL_ABI_FIELD(t, f, o, s)",
              "ANVIL_ABI_STRUCT_SIZE(t, s)", "ANVIL_ABI_ENUM(n, v)"):
        base = m.split("(")[0]
        e("#ifndef %s" % base)
        e("#define %s" % m)
        e("#define %s_DEFAULTED_" % base)
        e("#endif")
    e("")
    nfields = 0
    for t, _, names in sections:
        for n in names:
            rec = records[n]
            e("ANVIL_ABI_STRUCT(%s, %d, %d)" % (n, rec.size, rec.align))
            for path, off, size in field_entries(rec, records, enum_types):
                e("ANVIL_ABI_FIELD(%s, %s, %d, %d)" % (n, path, off, size))
                nfields += 1
            if n in struct_size_values:
                e("ANVIL_ABI_STRUCT_SIZE(%s, %d)" % (n, struct_size_values[n]))
    e("")
    nenums = 0
    for _, g in enum_named:
        for n, v in g:
            e("ANVIL_ABI_ENUM(%s, %d)" % (n, v))
            nenums += 1
    e("")
    for m in ("ANVIL_ABI_STRUCT", "ANVIL_ABI_FIELD", "ANVIL_ABI_STRUCT_SIZE", "ANVIL_ABI_ENUM"):
        e("#ifdef %s_DEFAULTED_" % m)
        e("#undef %s" % m)
        e("#undef %s_DEFAULTED_" % m)
        e("#endif")

    # --- 0.75 table.
    S = []
    s = S.append
    s("/* GENERATED by tools/gen_pjrt_header.py from pjrt-c-api-0.75-struct-sizes.txt.")
    s(" * Do not edit.")
    s(" *")
    s(" * Struct sizes of PJRT C API 0.75 (what e.g. PyTorch/XLA 2.9 puts in")
    s(" * `struct_size`). Define before including:")
    s(" *   ANVIL_ABI_SIZE_0_75(type, STRUCT_SIZE_in_0_75, sizeof_in_0_75)")
    s(" * Every type listed also exists in the 0.114 header. */")
    s("#ifndef ANVIL_ABI_SIZE_0_75")
    s("#define ANVIL_ABI_SIZE_0_75(t, s, z)")
    s("#define ANVIL_ABI_SIZE_0_75_DEFAULTED_")
    s("#endif")
    s("")
    n075 = 0
    for n, ss, sz in sizes_075:
        if n not in records:
            s("/* %s (STRUCT_SIZE=%d) does not exist in 0.114 */" % (n, ss))
            notes.append("0.75 struct %s missing from 0.114" % n)
            continue
        s("ANVIL_ABI_SIZE_0_75(%s, %d, %d)" % (n, ss, sz))
        n075 += 1
    s("")
    s("#ifdef ANVIL_ABI_SIZE_0_75_DEFAULTED_")
    s("#undef ANVIL_ABI_SIZE_0_75")
    s("#undef ANVIL_ABI_SIZE_0_75_DEFAULTED_")
    s("#endif")

    outs = [
        (os.path.join(args.out, "include", "anvil", "pjrt_c_api.h"), H),
        (os.path.join(args.out, "tests", "c", "abi_expected.inc"), E),
        (os.path.join(args.out, "tests", "c", "abi_sizes_0_75.inc"), S),
    ]
    for path, lines in outs:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        print("wrote %s" % os.path.relpath(path, args.out))
    print("%d structs, %d field entries, %d STRUCT_SIZE constants, %d enum "
          "constants, %d opaque handles, %d 0.75 sizes"
          % (len(records), nfields, len(struct_size_values), nenums, len(handles), n075))
    for n in notes:
        print("note: " + n)


if __name__ == "__main__":
    main()
