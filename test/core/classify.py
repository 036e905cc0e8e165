#!/usr/bin/env python3
"""test/core/classify.py: compare the core regression suite's results with
gpusort forced on against its results with gpusort off, test by test.

    classify.py --sql SQLDIR [--list FILE] [--exact] OFFDIR RUNDIR [RUNDIR ...]

OFFDIR and each RUNDIR are pg_regress output directories (results/*.out,
log/postmaster.log) of test/core/run.sh's passes; SQLDIR is the suite's
sql/.  Each test of a run is

  identical   its results file is the off pass's;
  plan-only   every difference lies in the output of an EXPLAIN statement,
              or of a call to a function of the test that prints what
              EXPLAIN prints (one whose body EXECUTEs an EXPLAIN, such as
              explain_filter or explain_parallel_append);
  tie-order   other differences lie only in statements that FILE lists:
              rows whose ORDER BY keys are equal, in another order, or
              values that depend on that order;
  internals   as tie-order, where a statement listed looks at tuplesort's
              own workings (its memory contexts), which GpuSort replaces;
  FAILURE     anything else, printed as a unified diff: rows missing or
              added, other values, an error or warning that only one pass
              gives (also inside EXPLAIN), a crash, a results file that
              only one pass has.

A results file is split into statements by the test's own .sql: psql (run
by pg_regress with -a) echoes each line of input as it reads it, so a
statement's output runs from its echo to the next statement's.  Statements
are matched by their place in the .sql, so both passes are read alike even
where psql echoes nothing (\\set ECHO none, COPY data).

FILE: one entry a line, "TEST FLAG STATEMENT" (the statement: a part of its
text, compared case-insensitively with runs of white space as one space),
and the reason on the indented lines that follow; '#' starts a comment.
FLAG "rows": the statement's output must be the same lines in any order;
"values": its values may differ, not its number of lines or errors;
"internals": (a test of tuplesort's own workings, which GpuSort replaces)
its output may differ, not its errors; such a test counts as internals.  An
entry that matched nothing in any run given is reported, so that the list
stays tight (not a failure).

--exact accepts identical tests only (no list, no plan differences): for
comparing two passes that must not differ at all.  The exit status is 1
where any test of any run is a FAILURE.
"""

import argparse
import collections
import difflib
import os
import re
import sys

DIAG = re.compile(r'^(ERROR|FATAL|PANIC|WARNING):|server closed the connection|'
                  r'connection to server was lost|terminating connection|no connection to the server')
CRASH = re.compile(r'terminated by signal|PANIC:')


def units(sql):
    """Split a psql script into units: (first line, last line) of each run
    of lines holding whole statements or meta-commands, in order.  Lines of
    COPY ... FROM stdin data are in no unit (psql does not echo them)."""
    lines = sql.split('\n')
    out = []
    start = None            # first line of the pending statement
    paren = begin = 0       # psql ends a statement at ';' only outside both
    copy_data = False
    text = []               # the pending statement's words, for BEGIN ATOMIC
    state_stack = []        # open comments, quotes and dollar quotes

    def end(last):
        nonlocal start, paren, begin, copy_data
        if out and out[-1][1] >= start:
            out[-1] = (out[-1][0], last)
        else:
            out.append((start, last))
        stmt = ' '.join(lines[start:last + 1])
        copy_data = bool(re.match(r'\s*\\?copy\b.*\bfrom\s+(stdin|stdout)\b', stmt, re.I | re.S))
        start, paren, begin = None, 0, 0
        text.clear()

    echoed = []             # psql echoes no empty line outside quotes and comments
    for i, line in enumerate(lines):
        echoed.append(line != '' or bool(state_stack))
        if copy_data:
            if line.strip() == '\\.':
                copy_data = False
            continue
        j, n = 0, len(line)
        while j < n:
            c = line[j]
            if state_stack:
                kind, tag = state_stack[-1]
                if kind == 'block':
                    if line.startswith('*/', j):
                        state_stack.pop(); j += 2; continue
                    if line.startswith('/*', j):
                        state_stack.append(('block', None)); j += 2; continue
                elif kind == 'dollar':
                    if line.startswith(tag, j):
                        state_stack.pop(); j += len(tag); continue
                elif kind in ("'", 'E'):
                    if kind == 'E' and c == '\\':
                        j += 2; continue
                    if c == "'":
                        if line.startswith("''", j):
                            j += 2; continue
                        state_stack.pop()
                elif kind == '"' and c == '"':
                    state_stack.pop()
                j += 1
                continue
            if c.isspace():
                j += 1; continue
            if line.startswith('--', j):
                break
            if line.startswith('/*', j):
                state_stack.append(('block', None)); j += 2; continue
            if start is None:
                if c == '\\':           # a meta-command: the rest of the line
                    start = i
                    end(i)
                    break
                start = i
            if c == '\\':               # \g, \gset, \gexec ... end the statement
                if not line.startswith('\\;', j):
                    end(i)
                    break
                j += 2; continue
            m = re.match(r'\$([A-Za-z_][A-Za-z_0-9]*)?\$', line[j:])
            if m and not (j and (line[j - 1].isalnum() or line[j - 1] == '_')):
                state_stack.append(('dollar', m.group(0))); j += len(m.group(0)); continue
            if c == "'":
                e = j and line[j - 1] in 'eE' and not (j > 1 and (line[j - 2].isalnum() or line[j - 2] == '_'))
                state_stack.append(('E' if e else "'", None)); j += 1; continue
            if c == '"':
                state_stack.append(('"', None)); j += 1; continue
            if c == '(':
                paren += 1
            elif c == ')':
                paren = max(paren - 1, 0)
            elif c == ';' and paren == 0 and begin == 0:
                end(i)
                j += 1
                continue
            elif c.isalpha() or c == '_':
                w = re.match(r'\w+', line[j:]).group(0)
                text.append(w.upper())
                if w.upper() == 'BEGIN' and {'FUNCTION', 'PROCEDURE'} & set(text[:6]) and text[0] == 'CREATE':
                    if not re.match(r'\s*(;|$)', line[j + len(w):]):
                        begin += 1
                elif w.upper() == 'CASE' and begin:
                    begin += 1
                elif w.upper() == 'END' and begin:
                    begin -= 1
                j += len(w)
                continue
            j += 1
    return [(s, e, [x for x, keep in zip(lines[s:e + 1], echoed[s:e + 1]) if keep]) for s, e in out]


def split_statements(sqlfile):
    with open(sqlfile, encoding='utf-8', errors='replace') as f:
        return units(f.read())


def blocks(outfile, stmts):
    """Map unit index -> (echo lines, output lines) for a results file;
    index -1 is what comes before the first statement found."""
    with open(outfile, encoding='utf-8', errors='replace') as f:
        lines = f.read().split('\n')
    first = collections.defaultdict(list)
    for k, (_, _, text) in enumerate(stmts):
        first[text[0]].append(k)
    res = {}
    cur, echo, body = -1, [], []
    i, nxt = 0, 0
    while i < len(lines):
        hit = None
        for k in first.get(lines[i], ()):
            if k >= nxt and lines[i:i + len(stmts[k][2])] == stmts[k][2]:
                hit = k
                break
        if hit is None:
            body.append(lines[i])
            i += 1
            continue
        res[cur] = (echo, body)
        cur, echo, body = hit, stmts[hit][2], []
        i += len(echo)
        nxt = hit + 1
    res[cur] = (echo, body)
    return res


def plan_wrappers(stmts):
    """Names of the functions a test defines that run EXPLAIN."""
    names = set()
    for _, _, text in stmts:
        t = '\n'.join(text)
        m = re.match(r'\s*create\s+(or\s+replace\s+)?function\s+([\w.]+)', t, re.I)
        if m and re.search(r'\bexecute\b[^;]*?\bexplain\b', t, re.I | re.S):
            names.add(m.group(2).split('.')[-1].lower())
    return names


def is_plan(text, wrappers):
    t = re.sub(r'^\s*(--[^\n]*\n\s*)*', '', '\n'.join(text))
    if re.match(r'explain\b', t, re.I):
        return True
    calls = {w.lower() for w in re.findall(r'\b(\w+)\s*\(', t)}
    return bool(calls & wrappers) or any('explain' in c for c in calls)


def norm(s):
    return re.sub(r'\s+', ' ', s).strip().lower()


def read_list(path):
    entries = []
    if not path:
        return entries
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith('#'):
                continue
            if line[0].isspace():
                if not entries:
                    sys.exit(f'{path}:{n}: a reason before any entry')
                entries[-1]['reason'] = (entries[-1]['reason'] + ' ' + line.strip()).strip()
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[1] not in ('rows', 'values', 'internals'):
                sys.exit(f'{path}:{n}: expected "TEST rows|values|internals STATEMENT"')
            entries.append({'test': parts[0], 'flag': parts[1], 'stmt': norm(parts[2]),
                            'where': f'{os.path.basename(path)}:{n}', 'reason': '', 'runs': []})
    return entries


def udiff(a, b, name, labels):
    return ''.join(difflib.unified_diff([x + '\n' for x in a], [x + '\n' for x in b],
                                        f'{labels[0]}/{name}', f'{labels[1]}/{name}', n=3))


def classify_test(test, offfile, runfile, stmts, entries, exact, labels):
    """(verdict, [list entries used], failure text)"""
    with open(offfile, 'rb') as a, open(runfile, 'rb') as b:
        if a.read() == b.read():
            return 'identical', [], ''
    if exact or stmts is None:
        with open(offfile, errors='replace') as a, open(runfile, errors='replace') as b:
            return 'FAILURE', [], udiff(a.read().split('\n'), b.read().split('\n'), test + '.out', labels)
    off, run = blocks(offfile, stmts), blocks(runfile, stmts)
    wrappers = plan_wrappers(stmts)
    used, fail = [], []
    for k in sorted(set(off) | set(run)):
        a, b = off.get(k), run.get(k)
        if a == b:
            continue
        if a is None or b is None:
            fail.append(f'-- {test}.sql:{stmts[k][0] + 1}: echoed in one pass only\n' +
                        udiff(a[0] + a[1] if a else [], b[0] + b[1] if b else [], test + '.out', labels))
            continue
        echo, (oa, ob) = a[0], (a[1], b[1])
        why = None
        if collections.Counter(x for x in oa if DIAG.search(x)) != collections.Counter(x for x in ob if DIAG.search(x)):
            why = 'an error, warning or crash only one pass has'
        elif k >= 0 and is_plan(echo, wrappers):
            continue
        else:
            text = norm(' '.join(echo))
            hit = next((e for e in entries if e['test'] == test and e['stmt'] in text), None)
            if hit is None:
                why = 'not a plan, not listed'
            elif hit['flag'] == 'rows' and sorted(oa) != sorted(ob):
                why = f'listed as reordered rows ({hit["where"]}), but the rows differ'
            elif hit['flag'] == 'values' and (len(oa) != len(ob) or
                                               [x for x in oa if re.match(r'\(\d+ rows?\)', x)] !=
                                               [x for x in ob if re.match(r'\(\d+ rows?\)', x)]):
                why = f'listed as order-dependent values ({hit["where"]}), but the row count differs'
            else:
                if hit not in used:
                    used.append(hit)
                continue
        where = f'{test}.sql:{stmts[k][0] + 1}' if k >= 0 else f'{test}.out, before the first statement'
        fail.append(f'-- {where}: {why}\n' + ''.join(f'   {x}\n' for x in echo) +
                    udiff(oa, ob, test + '.out', labels))
    if fail:
        return 'FAILURE', used, ''.join(fail)
    flags = {e['flag'] for e in used}
    return ('tie-order' if flags - {'internals'} else 'internals' if flags else 'plan-only'), used, ''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sql', help="the suite's sql/ directory")
    ap.add_argument('--list', help='tie-order list')
    ap.add_argument('--exact', action='store_true', help='accept identical results only')
    ap.add_argument('offdir')
    ap.add_argument('rundirs', nargs='+')
    args = ap.parse_args()
    entries = [] if args.exact else read_list(args.list)
    offres = os.path.join(args.offdir, 'results')
    offlabel = os.path.basename(os.path.normpath(args.offdir))
    tests = sorted(f[:-4] for f in os.listdir(offres) if f.endswith('.out'))
    parsed = {}
    failures = 0
    summary = []
    for rundir in args.rundirs:
        label = os.path.basename(os.path.normpath(rundir))
        runres = os.path.join(rundir, 'results')
        counts = collections.Counter()
        missing = []            # tests with a results file in one pass only
        alltests = sorted(set(tests) | {f[:-4] for f in os.listdir(runres) if f.endswith('.out')}
                          if os.path.isdir(runres) else tests)
        for test in alltests:
            offfile = os.path.join(offres, test + '.out')
            runfile = os.path.join(runres, test + '.out')
            if not os.path.exists(offfile) or not os.path.exists(runfile):
                missing.append(test)
                continue
            if test not in parsed:
                sqlfile = os.path.join(args.sql or '', test + '.sql')
                parsed[test] = split_statements(sqlfile) if args.sql and os.path.exists(sqlfile) else None
            verdict, used, text = classify_test(test, offfile, runfile, parsed[test], entries,
                                                args.exact, (offlabel, label))
            counts[verdict] += 1
            for e in used:
                if label not in e['runs']:
                    e['runs'].append(label)
            if verdict == 'FAILURE':
                print(f'FAILURE: {label}: {test}')
                print(text, end='' if text.endswith('\n') else '\n')
        if missing:
            counts['FAILURE'] += len(missing)
            print(f'FAILURE: {label}: a results file in one pass only (did a pass end early?): '
                  + ' '.join(missing))
        log = os.path.join(rundir, 'log', 'postmaster.log')
        if os.path.exists(log):
            with open(log, errors='replace') as f:
                crashes = [x.rstrip() for x in f if CRASH.search(x)]
            if crashes:
                counts['FAILURE'] += 1
                print(f'FAILURE: {label}: the server log reports a crash:')
                print('\n'.join(crashes[:20]))
        failures += counts['FAILURE']
        summary.append(f'{label}: {counts["identical"]} identical, {counts["plan-only"]} plan-only, '
                       f'{counts["tie-order"]} tie-order, ' +
                       (f'{counts["internals"]} internals, ' if counts['internals'] else '') +
                       f'{counts["FAILURE"]} failures')
    if any(e['runs'] for e in entries):
        print('listed statements that differed:')
        for e in entries:
            if e['runs']:
                print(f'  {e["test"]} ({e["where"]}; {", ".join(e["runs"])}): {e["reason"]}')
    for e in entries:
        if not e['runs']:
            print(f'unused entry {e["where"]}: {e["test"]} {e["stmt"][:70]}')
    print('\n'.join(summary))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
