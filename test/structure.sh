#!/bin/bash
#-------------------------------------------------------------------------
#
# test/structure.sh
#	  Structure check of the C and CUDA sources (src/, cuda/): exported
#	  functions nothing outside their file uses, macros nothing uses,
#	  circles of includes or of calls between files, calls up the order
#	  of src/README or up its layers, the sort module's door, the words
#	  src/README bans, and heads that do not name their file's entry
#	  points.
#
# What it checks.  Each violation is one line, "file:line: what", and the
# exit status is 1 if there is any (0 if none, 2 if it could not run):
#
#  1. A function declared in a header (src/*.h, cuda/*.h, cuda/*.cuh) that
#	  no file other than the one that defines it calls or names: it should
#	  be static in its file.  A header's declaration that nothing defines, or
#	  that nothing uses at all, is one too.  So is a function defined without
#	  "static" in a .c or .cu file, declared in no header, that nothing
#	  outside its file names.  A function defined in a header (static
#	  inline, inline, a template) must be used somewhere, its own header
#	  included.
#  2. A macro (#define in src/ or cuda/) that nothing names other than its
#	  own definition and #undef.  Include guards are not counted.
#  3. A circle between files, for includes and for calls: every strongly
#	  connected component of more than one file of the file graph, with one
#	  example for each of its links (the edges between two of its files).
#	   - includes: A -> B if A includes a header of B.  A header is B's if
#		 B is the .c/.cu of the same name (batch.h: batch.c), else the only
#		 file that defines the functions it declares (gscuda_api.h:
#		 gscuda_api.cu), else, of the files that do, the one whose name
#		 begins its name (run_internal.h: run.c); else it is a file of its
#		 own.  A header's own includes are its owner's.
#	   - calls: A -> B if A calls or names a function that B defines (a
#		 function declared in a header belongs to the .c/.cu that defines it;
#		 one defined in a header, to the header).  A function pointer is a
#		 reference, not a call of the file that calls through it: a thread
#		 pool in P that runs the task it was given has no edge to the task's
#		 file; the file that names the task (passes it to the pool, stores
#		 it into a struct of callbacks) has that edge.  So names count
#		 wherever they stand, calls and references alike, and a call through
#		 a pointer counts for nothing.
#  4. A file of src/ above another in src/README's list that the other
#	  calls or includes: the list gives the files in the order a tuple
#	  meets them, and data flows one way, down it.  An interface header
#	  that no one file owns (engine.h) stands where its idea does, above
#	  the files that include it to implement it.  A .c file the list leaves
#	  out is a violation too.
#  5. A file that includes or calls a file of a layer above its own: the
#	  layers are src/README's "Folders, in order", top down (the module's
#	  src/gpusort.c and src/views.c, then plan/, exec/, sort/ ... support/),
#	  and cuda/ is below them all.  A header's includes are its own here,
#	  and an interface header (engine.h) is of its folder's layer.  cuda/'s
#	  headers are included from service/ and support/faults.h alone.  A
#	  folder of src/ the list leaves out is a violation too.
#  6. An executor node (src/exec/node*.c/.h) or an index build's file
#	  (src/index/) that includes a header of sort/, runs/, batch/,
#	  resolve/, engine/, service/ or keys/ other than sort/sort.h: the sort
#	  module has one door, as tuplesort.h is PostgreSQL's.  support/'s
#	  headers and those of its own folder are the file's to include.
#  7. A word that src/README's "Words" bans: a "not: a, b" line under an
#	  entry gives the words that must not name its idea, and none appears,
#	  as whole words in any case (a phrase across a line break of a comment
#	  too), in src/, cuda/, docs/, README.md or test/expected/ (EXPLAIN
#	  output).  The Words section itself is not searched.  An entry's
#	  word stands in the twelve columns after two spaces, or alone on its
#	  line where it is longer; a "not:" line that ends in a comma goes on
#	  to the next.
#  8. A .c/.cu file whose head comment (its first comment block) does not
#	  name a function of it that another file of src/ or cuda/ calls, with
#	  or without "()": the head says how the file fits, and its entry
#	  points are how.
#
# Why: an exported function that only its file uses widens the interface
# between files for nothing; a macro nothing uses is dead text that is
# still read and kept true; and a circle between files means that neither
# can be understood, changed or tested without the other, as a call up
# src/README's list is a stage that reaches back into one before it, or
# up a layer.  A second way into the sort module is a second contract to
# keep; two words for one idea, or one word for two, make a reader
# wonder which is meant; and a head that leaves out what others call
# does not say how its file fits.  The compiler finds none of these.
#
# How: lexically, in python3 alone (no ctags, no clang, no compiler), which
# is enough for PostgreSQL's style.  Comments, strings and character
# literals are blanked out; preprocessor lines are read apart (includes,
# defines) and every other line is split into tokens.  At file scope
# (extern "C" { } and namespace { } are looked through), a statement whose
# first "name(" is followed by a body is a definition of name, and by ";"
# a declaration; "static", "inline" or a template in front of it are noted.
# Every other occurrence of a function's name is a use, except a member's
# name (after "." or "->" or "X::") and a local variable or parameter of
# that name (declared after a type name or "*"), which shadows the function
# to its body's end.  A name resolves to the functions of that name the
# file can see: its own, those declared or defined in a header it includes
# (directly or not), and those it declares itself; so static functions of
# the same name in other files, and C++ functions of cuda/ that src/ cannot
# see, do not mix.  A macro's use is a use of the functions and macros its
# body names, where the macro is used.  PostgreSQL's own entry points count
# as used: _PG_init, functions named by PG_FUNCTION_INFO_V1 or in sql/*.sql,
# and a function whose name another file gives PostgreSQL in a string (a
# background worker's bgw_function_name) is used by that file, though it
# has no edge to it.
# The kernel tests and benchmarks (test/, bench/: *.c, *.cu) compile
# against src/ and cuda/ headers, so what they name counts as used too, but
# they are not files of the graphs.
#
# A circle is reported as one line for each edge between two of its files
# ("include circle N (its files): A -> B: the example", at the example's
# line), so that each line says where one link of the circle starts.
#
# What must stay all the same goes into test/structure.allow, one entry a
# line, "#" starting a comment: "function NAME reason" or "macro NAME
# reason" (a function PostgreSQL or a tool finds by a name this check
# cannot see, a macro that a PostgreSQL or system header reads:
# _GNU_SOURCE), "door FILE HEADER reason" (a node's include past sort.h,
# check 6, while it is being removed; an entry that allows nothing is a
# violation), "heads pending reason" (check 8's findings are printed on
# stderr as warnings, not violations, while heads are being brought up to
# date).
#
# Usage: test/structure.sh [-v]; -v adds, on stderr, each header's owner,
# every definition, declaration and call edge found, and the functions that
# only test/ or bench/ use outside their file.  CI runs it first
# (.ci/run: "structure"); it takes under a second.
#
#-------------------------------------------------------------------------
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
command -v python3 >/dev/null || { echo "test/structure.sh: python3 is needed" >&2; exit 2; }
exec python3 - "$@" <<'PYTHON'
import os, re, sys, glob

verbose = "-v" in sys.argv[1:]
ROOT = os.getcwd()
TREE = sorted(glob.glob("src/*.[ch]") + glob.glob("src/*/*.[ch]") + glob.glob("cuda/*.cu") + glob.glob("cuda/*.h") + glob.glob("cuda/*.cuh"))
OUTSIDE = sorted(f for d in ("test", "bench") for pat in ("*.c", "*.h", "*.cu", "*.cuh")
                 for f in glob.glob(os.path.join(d, "**", pat), recursive=True))
INCLUDE_DIRS = ["src", "cuda"]

def is_header(f):
    return f.endswith((".h", ".cuh"))

# words that are followed by "(" at file scope but name no function
NOT_NAMES = {
    "if", "while", "for", "switch", "return", "sizeof", "defined", "alignof", "alignas",
    "decltype", "static_assert", "_Static_assert", "__attribute__", "__launch_bounds__",
    "__declspec", "typeof", "__typeof__", "operator", "noexcept", "PG_FUNCTION_INFO_V1",
    "StaticAssertDecl", "__align__", "_Alignas",
    # keywords and types: "void (*hook) (void)" declares no function void
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
    "bool", "const", "volatile", "struct", "union", "enum", "static", "extern", "inline",
}
# words before a name that do not make it a declaration
NOT_TYPES = {
    "return", "case", "else", "do", "goto", "sizeof", "throw", "new", "delete", "typedef",
    "co_return", "and", "or", "not",
}
QUALIFIERS = {"const", "noexcept", "override", "final", "volatile", "throw"}

# ---------------------------------------------------------------------------
# reading a file: comments, strings and characters blanked; preprocessor
# lines apart
def strip(text, names):
    """text with comments, strings and characters blanked (lines kept);
    adds to names each string that is a name ("gpusort_service_main")"""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            # a // comment ending in a backslash continues; rare, ignored
            i = j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"' and re.match(r"[A-Za-z_]\w*$", text[i + 1:j]):
                names.add(text[i + 1:j])
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)

TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.']*|->|::|<<<|>>>|\S")

class Src:
    pass

def read(path):
    s = Src()
    s.path = path
    with open(path, encoding="utf-8", errors="replace") as fh:
        raw = fh.read()
    s.strings = set()
    lines = strip(raw, s.strings).split("\n")
    s.pp = []          # (line, text) of each preprocessor directive, joined
    code = [""] * len(lines)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("#"):
            start = i
            text = line
            while text.endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text[:-1] + " " + lines[i]
            s.pp.append((start + 1, text.strip()))
        else:
            code[i] = line
        i += 1
    s.tokens = []
    for ln, line in enumerate(code, 1):
        for m in TOKEN.finditer(line):
            s.tokens.append((m.group(0), ln))
    return s

def ident(t):
    return re.match(r"[A-Za-z_]\w*$", t) is not None

# ---------------------------------------------------------------------------
# file scope: definitions and declarations of functions; every other name
# occurrence, with what shadows it
def parse(s):
    toks = s.tokens
    s.defs = []        # (name, line, static, inline)
    s.decls = []       # (name, line, static, inline)
    s.skip = set()     # token indexes that are no uses (declared names, parameters)
    s.shadow = []      # (name, first, last) token ranges where a local hides a function
    stack = []         # "T": looked through; "B": a body or braces
    head = []          # token indexes of the statement at file scope so far
    body_start = None
    params = []
    i = 0
    n = len(toks)
    def real_depth():
        return sum(1 for k in stack if k != "T")
    def head_name(head):
        """The declared function of a statement at file scope: its name's
        index, the indexes of its parameter list, where the list ends"""
        words = [toks[k][0] for k in head]
        if not words or words[0] in ("typedef", "using", "template") and "(" not in words:
            return None
        if words[0] == "typedef":
            return None
        depth = 0
        for p, k in enumerate(head):
            t = toks[k][0]
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
            elif t == "=" and depth == 0:
                return None
            elif depth == 0 and ident(t) and t not in NOT_NAMES and not t.startswith("pg_attribute") \
                    and p + 1 < len(head) and toks[head[p + 1]][0] == "(":
                # its parameter list
                d = 0
                q = p + 1
                while q < len(head):
                    if toks[head[q]][0] == "(":
                        d += 1
                    elif toks[head[q]][0] == ")":
                        d -= 1
                        if d == 0:
                            break
                    q += 1
                return p, head[p + 1:q + 1], q
        return None
    while i < n:
        t, ln = toks[i]
        depth = real_depth()
        if t == "{":
            if depth == 0:
                words = [toks[k][0] for k in head]
                if words[:3] == ["extern", '"', '"'] or (words and words[0] == "namespace"):
                    stack.append("T")
                    head = []
                    i += 1
                    continue
                hn = head_name(head)
                if hn:
                    p, plist, q = hn
                    rest = [toks[k][0] for k in head[q + 1:]]
                    if all(ident(w) or w in "()," for w in rest) and \
                            all(w in QUALIFIERS or w in "()," or w.isupper() for w in rest):
                        k = head[p]
                        s.skip.add(k)
                        s.skip.update(plist)
                        static = "static" in words[:p]
                        inline = any(w in ("inline", "__forceinline__", "template") for w in words[:p])
                        s.defs.append((toks[k][0], toks[k][1], static, inline))
                        params = plist
                        body_start = i
                stack.append("B")
            else:
                stack.append("B")
            i += 1
            continue
        if t == "}":
            if stack:
                kind = stack.pop()
                if kind == "B" and real_depth() == 0:
                    if body_start is not None:
                        # parameters and locals of that name shadow a function
                        for k in params:
                            if ident(toks[k][0]) and k > 0 and (ident(toks[k - 1][0]) or toks[k - 1][0] in ("*", "&")):
                                s.shadow.append((toks[k][0], body_start, i))
                        body_start = None
                        params = []
                        head = []
                        i += 1
                        continue
                    head.append(i)
                    i += 1
                    continue
            i += 1
            continue
        if depth == 0:
            if t == ";":
                hn = head_name(head)
                if hn:
                    p, plist, q = hn
                    words = [toks[k][0] for k in head]
                    k = head[p]
                    if not toks[k][0].isupper() or words[:p]:
                        s.skip.add(k)
                        s.skip.update(plist)
                        static = "static" in words[:p]
                        inline = any(w in ("inline", "__forceinline__") for w in words[:p])
                        s.decls.append((toks[k][0], toks[k][1], static, inline))
                head = []
            else:
                head.append(i)
        elif body_start is not None and ident(t) and i > 0:
            prev = toks[i - 1][0]
            nxt = toks[i + 1][0] if i + 1 < n else ""
            if (ident(prev) and prev not in NOT_TYPES or prev in ("*", "&")) and nxt in ("=", ";", ",", "[", ")"):
                # a local of that name, to the body's end (found at the "}")
                s.shadow.append((t, i, None))
        i += 1
    # close the shadows that run to their body's end
    fixed, s.shadow = s.shadow, []
    for name, a, b in fixed:
        if b is None:
            # the end of the body the local is in: the "}" that closes the
            # depth at a
            d = 0
            b = n
            for k in range(a, n):
                if toks[k][0] == "{":
                    d += 1
                elif toks[k][0] == "}":
                    d -= 1
                    if d < 0:
                        b = k
                        break
        s.shadow.append((name, a, b))

namespaces = set()

def uses(s, names):
    """{name: first line} of the names of `names` s uses, and the token
    indexes"""
    toks = s.tokens
    found = {}
    for i, (t, ln) in enumerate(toks):
        if t not in names or i in s.skip:
            continue
        if i > 0 and toks[i - 1][0] in (".", "->"):
            continue
        if i > 1 and toks[i - 1][0] == "::" and ident(toks[i - 2][0]) and toks[i - 2][0] not in namespaces:
            continue
        if any(name == t and a <= i <= b for name, a, b in s.shadow):
            continue
        found.setdefault(t, ln)
    return found

# ---------------------------------------------------------------------------
files = {}
for f in TREE + OUTSIDE:
    s = read(f)
    parse(s)
    toks = [t for t, _ in s.tokens]
    namespaces |= {toks[k + 1] for k, t in enumerate(toks[:-1]) if t == "namespace" and ident(toks[k + 1])}
    s.outside = f in OUTSIDE
    s.includes = []        # (line, resolved path)
    s.defines = []         # (name, line)
    s.guard = None
    first = [t for _, t in s.pp[:2]]
    m1 = re.match(r"#\s*ifndef\s+(\w+)", first[0]) if first else None
    if is_header(f) and m1 and len(first) > 1 and re.match(r"#\s*define\s+%s\s*$" % m1.group(1), first[1]):
        s.guard = m1.group(1)
    rawlines = open(f, encoding="utf-8", errors="replace").read().split("\n")
    for ln, text in s.pp:
        # the strings were blanked: the include's name from the file itself
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', rawlines[ln - 1])
        if m:
            for d in [os.path.dirname(f)] + INCLUDE_DIRS:
                p = os.path.normpath(os.path.join(d, m.group(1)))
                if os.path.exists(p):
                    s.includes.append((ln, p))
                    break
        m = re.match(r"#\s*define\s+(\w+)(\(?)(.*)", text)
        if m and m.group(1) != s.guard:
            s.defines.append((m.group(1), ln, m.group(3) if m.group(2) else " " + m.group(3)))
    files[f] = s

# the allow-list: "function NAME reason", "macro NAME reason", "door FILE
# HEADER reason", "heads pending reason"
allow = {"function": set(), "macro": set()}
allow_door = {}        # (file, header) -> line of its entry
heads_pending = False
allow_file = "test/structure.allow"
if os.path.exists(allow_file):
    with open(allow_file) as fh:
        for no, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if parts[0] in allow and len(parts) >= 3:
                allow[parts[0]].add(parts[1])
            elif parts[0] == "door" and len(parts) >= 4:
                allow_door[(os.path.normpath(parts[1]), os.path.normpath(parts[2]))] = no
            elif parts[:2] == ["heads", "pending"] and len(parts) >= 3:
                heads_pending = True
            else:
                print("%s:%d: an entry is \"function|macro NAME reason\", \"door FILE HEADER reason\" "
                      "or \"heads pending reason\"" % (allow_file, no))
                sys.exit(2)

# transitive includes (a file sees itself)
def closure(f, seen=None):
    seen = set() if seen is None else seen
    if f in seen:
        return seen
    seen.add(f)
    for _, p in files[f].includes if f in files else []:
        closure(p, seen)
    return seen
sees = {f: closure(f) for f in files}

# functions: name -> [(file, line, static, inline, kind)], kind "def" or "decl"
defs = {}
hdecl = {}
for f, s in files.items():
    if s.outside:
        continue
    for name, ln, static, inline in s.defs:
        defs.setdefault(name, []).append((f, ln, static, inline or is_header(f)))
    if is_header(f):
        for name, ln, static, inline in s.decls:
            hdecl.setdefault(name, []).append((f, ln))
fnames = set(defs) | set(hdecl)

# macros: name -> [(file, line, body)]
macros = {}
for f, s in files.items():
    for name, ln, body in s.defines:
        macros.setdefault(name, []).append((f, ln, body))

def visible(user, name):
    """the definitions of name that file user can see"""
    out = []
    for df, ln, static, inline in defs.get(name, []):
        if df == user:
            out.append((df, ln))
        elif static and not is_header(df):
            continue
        elif is_header(df):
            if df in sees[user]:
                out.append((df, ln))
        elif any(hf in sees[user] for hf, _ in hdecl.get(name, [])) or \
                any(d[0] == name for d in files[user].decls):
            out.append((df, ln))
    # a file's own definition hides the others
    own = [o for o in out if o[0] == user]
    return own or out

# the functions and macros a macro's body names, transitively
mtoks = {}
for name, lst in macros.items():
    words = set()
    for _, _, body in lst:
        words |= set(re.findall(r"[A-Za-z_]\w*", body))
    mtoks[name] = words
def macro_refs(name, seen):
    if name in seen:
        return set()
    seen.add(name)
    out = set()
    for w in mtoks.get(name, ()):
        if w in fnames:
            out.add(w)
        if w in macros:
            out |= macro_refs(w, seen)
    return out

# uses: file -> {function name: line}, direct and through macros
fuses = {}
for f, s in files.items():
    u = uses(s, fnames)
    for mname, ln in uses(s, set(macros)).items():
        for fn in macro_refs(mname, set()):
            u.setdefault(fn, ln)
    # the names in its preprocessor lines (#if, macros of its own are above)
    fuses[f] = u

# what PostgreSQL calls by name: _PG_init; the C functions of sql/*.sql
# (AS 'MODULE_PATHNAME', 'name', or the SQL function's own name); those of
# PG_FUNCTION_INFO_V1
pg_entry = {"_PG_init", "_PG_fini"}
for p in glob.glob("sql/*.sql"):
    with open(p, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    pg_entry |= set(re.findall(r"'MODULE_PATHNAME'\s*,\s*'(\w+)'", text))
    pg_entry |= set(re.findall(r"(?i)create\s+(?:or\s+replace\s+)?function\s+(?:\w+\.)?(\w+)", text))
for f, s in files.items():
    toks = [t for t, _ in s.tokens]
    for k, t in enumerate(toks):
        if t == "PG_FUNCTION_INFO_V1" and k + 2 < len(toks):
            pg_entry.add(toks[k + 2])

violations = []
notes = []
def report(f, ln, what):
    violations.append((f, ln, what))

# ---------------------------------------------------------------------------
# 1. functions
def users_of(name, owner):
    """files other than owner that name owner's function (or give its name
    to PostgreSQL in a string: a background worker's bgw_function_name)"""
    out = []
    for f in files:
        if f != owner and name in files[f].strings:
            out.append(f)
            continue
        if f == owner or name not in fuses[f]:
            continue
        if any(o[0] == owner for o in visible(f, name)):
            out.append(f)
    return out

for name in sorted(fnames):
    if name in allow["function"]:
        continue
    entry = name in pg_entry
    hd = hdecl.get(name, [])
    ext = [d for d in defs.get(name, []) if not d[2] and not is_header(d[0])]
    inl = [d for d in defs.get(name, []) if is_header(d[0])]
    for hf, hl in hd:
        if not ext and not inl:
            report(hf, hl, "%s() is declared here and defined nowhere" % name)
            continue
    for df, dl, static, inline in ext:
        if entry:
            continue
        others = users_of(name, df)
        declared = [h for h in hd]
        if others:
            if verbose and all(files[o].outside for o in others):
                notes.append("%s:%d: %s() is used outside its file only by %s" % (df, dl, name, " ".join(others)))
            continue
        own = name in fuses[df]
        where = ("declared in %s:%d, " % declared[0]) if declared else "declared in no header, "
        if own:
            report(df, dl, "%s() is %sused only in %s: make it static" % (name, where, df))
        else:
            report(df, dl, "%s() is %sused nowhere" % (name, where))
    for df, dl, static, inline in inl:
        if name in fuses[df] or any(name in fuses[f] for f in files if f != df):
            continue
        report(df, dl, "%s(), defined in a header, is used nowhere" % name)

# 2. macros
mused = {}
for f, s in files.items():
    own_lines = {ln for _, ln, _ in s.defines}
    words = {}
    for t, ln in s.tokens:
        words.setdefault(t, ln)
    for ln, text in s.pp:
        m = re.match(r"#\s*(define|undef)\s+(\w+)(.*)", text)
        if m:
            rest = m.group(3) if m.group(1) == "define" else ""
        else:
            rest = text
        for w in re.findall(r"[A-Za-z_]\w*", rest):
            words.setdefault(w, ln)
    for w in words:
        if w in macros:
            mused.setdefault(w, set()).add(f)
for name in sorted(macros):
    if name in allow["macro"] or name in mused:
        continue
    for f, ln, _ in macros[name]:
        if f in OUTSIDE:
            continue
        report(f, ln, "macro %s is used nowhere" % name)

# 3. circles
owner = {}
impl = {}
for f in TREE:
    if not is_header(f):
        continue
    stem = os.path.splitext(f)[0]
    same = [stem + e for e in (".c", ".cu") if os.path.exists(stem + e)]
    definers = sorted({d[0] for n, lst in hdecl.items() if any(h == f for h, _ in lst)
                       for d in defs.get(n, []) if not is_header(d[0]) and not d[2]})
    if same:
        owner[f] = same[0]
    elif len(definers) == 1:
        owner[f] = definers[0]
    else:
        pre = [d for d in definers if os.path.basename(stem).startswith(os.path.splitext(os.path.basename(d))[0] + "_")]
        pre.sort(key=lambda d: -len(d))
        owner[f] = pre[0] if pre else f
def node(f):
    return owner.get(f, f)

def sccs(graph):
    index, low, onstack, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)
    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        onstack.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in onstack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                onstack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out

inc = {}
for f in TREE:
    for ln, p in files[f].includes:
        if p not in files or files[p].outside:
            continue
        a, b = node(f), node(p)
        if a != b:
            inc.setdefault(a, {}).setdefault(b, (f, ln, "includes %s%s" % (
                os.path.basename(p), "" if p == b else " (%s's)" % b)))

calls = {}
for f in TREE:
    for name, ln in fuses[f].items():
        for df, dl in visible(f, name):
            # a header's names are its own (its inline functions' and
            # templates'); its declarations were not counted as uses
            a, b = f, df
            if a != b:
                calls.setdefault(a, {}).setdefault(b, (f, ln, "names %s() (%s:%d)" % (name, df, dl)))

for kind, graph in (("include", inc), ("call", calls)):
    for no, comp in enumerate(sccs(graph), 1):
        members = set(comp)
        for a in comp:
            for b in sorted(graph.get(a, {})):
                if b in members:
                    f, ln, what = graph[a][b]
                    report(f, ln, "%s circle %d (%s): %s -> %s: %s" % (
                        kind, no, " ".join(comp), a, b, what))

# 4. src/README lists the files in the order a tuple meets them, and every
# call and include goes down that list: a file above never calls or
# includes one below it back
listed = {}
readme = os.path.join("src", "README")
if os.path.exists(readme):
    for no, line in enumerate(open(readme), 1):
        m = re.match(r"^  ((?:[a-z]+/)?[A-Za-z_][\w]*\.(?:c|h))(?:/\.h)?(?:\s|$)", line)
        if m:
            n = node(os.path.join("src", m.group(1)))
            listed.setdefault(n, no)
    for f in TREE:
        if f.startswith("src/") and not is_header(f) and f not in listed:
            report(f, 1, "not listed in src/README")
    for kind, graph in (("includes", inc), ("calls", calls)):
        for a in sorted(graph):
            for b in sorted(graph[a]):
                # an interface that no one file owns (engine.h) is listed
                # where its idea is, above the files that implement it
                if is_header(b) and kind == "includes":
                    continue
                if a in listed and b in listed and listed[b] < listed[a]:
                    f, ln, what = graph[a][b]
                    report(f, ln, "%s %s, listed above it in src/README (line %d, %s at %d): %s" % (
                        kind, b, listed[b], a, listed[a], what))

# the layers: src/README's "Folders, in order", top down; the module's
# files (src/*.c) above them, cuda/ below them all
layers = [""]
readme_lines = open(readme).read().split("\n") if os.path.exists(readme) else []
def readme_sections():
    """(line number, line, its section) of src/README: a section is the
    line above a "-----" underline"""
    section = None
    for no, line in enumerate(readme_lines, 1):
        if no < len(readme_lines) and re.match(r"^-{3,}\s*$", readme_lines[no]):
            section = line.strip()
        yield no, line, section
for no, line, section in readme_sections():
    if section == "Folders, in order":
        m = re.match(r"^([a-z]+)/: ", line)
        if m and m.group(1) not in layers:
            layers.append(m.group(1))
layers.append("cuda")

def layer(f):
    parts = f.split("/")
    if parts[0] == "cuda":
        return "cuda"
    return parts[1] if len(parts) > 2 else ""
def layer_name(l):
    return l + "/" if l else "the module"
def rank(f):
    l = layer(f)
    return layers.index(l) if l in layers else None

# 5. layers: a file includes or calls only files of its own folder and of
# the folders below it; cuda/'s headers are included from service/ and
# support/faults.h alone
CUDA_DOORS = ("src/service/",)
CUDA_DOOR_FILES = ("src/support/faults.h",)
for f in TREE:
    if f.startswith("src/") and rank(f) is None:
        report(f, 1, "in folder %s, which src/README's \"Folders, in order\" does not list" % layer_name(layer(f)))
        continue
    for ln, p in files[f].includes:
        if p not in files or files[p].outside or rank(p) is None:
            continue
        if rank(p) < rank(f):
            report(f, ln, "includes %s of layer %s, above layer %s" % (p, layer_name(layer(p)), layer_name(layer(f))))
        elif layer(p) == "cuda" and f.startswith("src/") and \
                not f.startswith(CUDA_DOORS) and f not in CUDA_DOOR_FILES:
            report(f, ln, "includes %s of cuda/, which only service/ and support/faults.h include" % p)
    for b in sorted(calls.get(f, {})):
        if rank(b) is not None and rank(b) < rank(f):
            _, ln, what = calls[f][b]
            report(f, ln, "calls %s of layer %s, above layer %s: %s" % (
                b, layer_name(layer(b)), layer_name(layer(f)), what))

# 6. doors: an executor node (exec/node*) and an index build (index/)
# reach the sort module and the layers below it through sort/sort.h alone;
# support/ and their own folder's files are theirs
DOOR = "src/sort/sort.h"
BEHIND_DOOR = ("sort", "runs", "batch", "resolve", "engine", "service", "keys")
door_used = set()
for f in TREE:
    if not re.match(r"src/(exec/node\w*|index/\w+)\.[ch]$", f):
        continue
    for ln, p in files[f].includes:
        if p == DOOR or p not in files or layer(p) not in BEHIND_DOOR:
            continue
        if (f, p) in allow_door:
            door_used.add((f, p))
            continue
        report(f, ln, "includes %s: a node or an index build reaches the sort module only through %s" % (p, DOOR))
for (f, p), no in sorted(allow_door.items()):
    if (f, p) not in door_used:
        report(allow_file, no, "door %s %s allows nothing: %s does not include it" % (f, p, f))

# 7. the glossary: src/README's "Words" gives, under an entry, "not: a, b"
# the words banned for its idea; none appears (whole words, any case) in
# src/, cuda/, docs/, README.md or test/expected/
banned = []            # (phrase, word, README line)
words_lines = set()    # src/README's lines of the Words section, not searched
entry = None
more = False
for no, line, section in readme_sections():
    if section != "Words":
        continue
    words_lines.add(no)
    # an entry: its word in the twelve columns after two spaces, then
    # what it means; a longer word is alone on its line
    if re.match(r"^  \S", line):
        entry = line[2:13].strip() if line[13:14] == " " and line[14:15].strip() else line.strip()
    # "not: a, b," goes on to the next line after a comma
    m = re.match(r"^\s+not:\s*(.*)$", line)
    if not m and more and entry:
        m = re.match(r"^\s+(.*)$", line)
    more = bool(m) and m.group(1).rstrip().endswith(",")
    if m and entry:
        for phrase in m.group(1).split(","):
            phrase = phrase.strip().rstrip(".")
            if phrase:
                banned.append((phrase, entry, no))
if verbose:
    for phrase, word, no in banned:
        print("banned: \"%s\" (%s, src/README:%d)" % (phrase, word, no), file=sys.stderr)
if banned:
    places = sorted(set(glob.glob("src/**/*", recursive=True) + glob.glob("cuda/**/*", recursive=True) +
                        glob.glob("docs/**/*.md", recursive=True) + ["README.md"] +
                        glob.glob("test/expected/*.out")))
    places = [p for p in places if os.path.isfile(p) and not p.endswith((".o", ".so", ".bc"))]
    pats = [(re.compile(r"(?<!\w)" + r"[\s*/#-]+".join(re.escape(w) for w in phrase.split()) + r"(?!\w)",
                        re.IGNORECASE), phrase, word, no) for phrase, word, no in banned]
    for p in places:
        try:
            text = open(p, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for pat, phrase, word, no in pats:
            for m in pat.finditer(text):
                ln = text.count("\n", 0, m.start()) + 1
                if p == readme and ln in words_lines:
                    continue
                report(p, ln, "\"%s\": the word is %s (src/README:%d)" % (
                    " ".join(re.findall(r"\w+", m.group(0))), word, no))

# 8. heads: a .c/.cu file's head comment names every function of it that
# another file calls
heads_found = []
for f in TREE:
    if is_header(f):
        continue
    raw = open(f, encoding="utf-8", errors="replace").read()
    m = re.match(r"\s*(/\*.*?\*/)", raw, re.S)
    head = m.group(1) if m else ""
    callers = {}
    for g in TREE:
        if g == f:
            continue
        for name in fuses[g]:
            if any(df == f for df, _ in visible(g, name)):
                callers.setdefault(name, []).append(g)
    for name in sorted(callers):
        if not re.search(r"(?<!\w)%s(?!\w)" % re.escape(name), head):
            by = callers[name]
            heads_found.append((f, 1, "head of %s does not name %s(), which %s" % (
                f, name, by[0] + " calls" if len(by) == 1 else
                "%s and %d other file%s call" % (by[0], len(by) - 1, "s" if len(by) > 2 else ""))))
if heads_pending:
    for f, ln, what in heads_found:
        print("warning: %s:%d: %s" % (f, ln, what), file=sys.stderr)
else:
    violations.extend(heads_found)

if verbose:
    for line in notes:
        print("note: " + line, file=sys.stderr)
    for name in sorted(defs):
        for d in defs[name]:
            print("def: %s %s:%d static=%s inline=%s" % ((name,) + d), file=sys.stderr)
    for name in sorted(hdecl):
        for d in hdecl[name]:
            print("decl: %s %s:%d" % ((name,) + d), file=sys.stderr)
    for h in sorted(owner):
        print("owner: %s -> %s" % (h, owner[h]), file=sys.stderr)
    print("include edges: %d, call edges: %d" % (
        sum(len(v) for v in inc.values()), sum(len(v) for v in calls.values())), file=sys.stderr)
    for a in sorted(calls):
        for b in sorted(calls[a]):
            print("call: %s -> %s: %s:%d: %s" % ((a, b) + calls[a][b]), file=sys.stderr)

for f, ln, what in violations:
    print("%s:%d: %s" % (f, ln, what))
if violations:
    print("test/structure.sh: %d violations" % len(violations), file=sys.stderr)
    sys.exit(1)
print("test/structure.sh: no violations", file=sys.stderr)
PYTHON
