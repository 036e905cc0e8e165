#!/usr/bin/env python3
"""gpusort differential fuzzer.

Generates random tables (every type gpusort may see, with NULLs, duplicates,
special values, skew, TOASTed values and several collations) and random
queries with sorts in them (ORDER BY, DISTINCT, GROUP BY, window functions,
merge joins, set operations, SCROLL cursors, correlated subqueries), runs
each with gpusort off and forced on, and compares the results the way the
project defines correctness: the same multiset of rows and the ORDER BY keys
in the same order (rows tied on the keys may come in any order).  A query
that errors with gpusort on and not off, or with another SQLSTATE, or that
crashes the server, is a failure too; two data exceptions (class 22) count
as the same error, since which failing row a query meets first depends on
the order of ties.  A failure is minimized (sort keys, clauses, settings,
rows, columns) and reported with a self-contained SQL script that
reproduces it.

  test/fuzz/fuzz.py --seed 1 --minutes 1                  # own throwaway server
  test/fuzz/fuzz.py --seed 1 --seed random --queries 500
  test/fuzz/fuzz.py --seed 7 --replay 123                 # rerun one query
  test/fuzz/fuzz.py --dsn 'host=/tmp dbname=x' ...        # an existing server

Python 3 standard library only; talks to the server through psql.  As root,
the server it starts runs as --user (default $GPUSORT_TEST_USER or postgres).
"""
import argparse
import contextlib
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import datagen  # noqa: E402
import queries  # noqa: E402

MARK = '@@gsfz@@'
# SQLSTATE query_canceled: what statement_timeout raises
TIMEOUT_STATE = '57014'


def log(*a):
    print(*a, flush=True)


def same_failure(state_off, state_on):
    """Whether two runs' SQLSTATEs ('00000' or None: no error) count as
    the same outcome.  Two data exceptions (class 22) do, whatever their
    codes: when several rows would fail, which one a query meets first
    depends on the order of rows that tie in a sort (a merge join's input,
    say), which neither PostgreSQL nor gpusort defines.  Any other pair
    must match exactly, so that an error of gpusort's own still fails."""
    if state_off == state_on:
        return True
    return (state_off or '').startswith('22') and (state_on or '').startswith('22')


# ------------------------------------------------------------------- server

class Server:
    """A throwaway cluster: initdb, pg_ctl start, removed at the end."""

    def __init__(self, bindir, user, extra_conf, keep_dir=None):
        self.bindir = bindir
        self.user = user
        self.extra_conf = extra_conf
        self.keep_dir = keep_dir
        self.dir = None

    def _as_user(self, cmd):
        if os.geteuid() == 0:
            env = ['env', 'LD_LIBRARY_PATH=' + os.environ.get('LD_LIBRARY_PATH', '')]
            return ['runuser', '-u', self.user, '--'] + env + cmd
        return cmd

    def start(self):
        self.dir = tempfile.mkdtemp(prefix='gpusort-fuzz.')
        os.chmod(self.dir, 0o755)
        if os.geteuid() == 0:
            subprocess.run(['id', self.user], check=True, stdout=subprocess.DEVNULL)
            shutil.chown(self.dir, self.user)
        data = os.path.join(self.dir, 'data')
        locale = 'en_US.UTF-8'
        have = subprocess.run(['locale', '-a'], stdout=subprocess.PIPE, text=True).stdout.lower()
        if 'en_us.utf8' not in have and 'en_us.utf-8' not in have:
            log('warning: locale en_US.UTF-8 is missing; the cluster uses C.UTF-8')
            locale = 'C.UTF-8'
        env = dict(os.environ, LC_ALL=locale, LANG=locale)
        r = subprocess.run(self._as_user([os.path.join(self.bindir, 'initdb'), '-D', data, '-U', 'postgres',
                                          '-A', 'trust', '-E', 'UTF8', '--locale=' + locale]),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if r.returncode:
            raise SystemExit('initdb failed:\n' + r.stdout)
        with open(os.path.join(data, 'postgresql.conf'), 'a') as f:
            f.write("\nshared_preload_libraries = 'gpusort'\nlisten_addresses = ''\n"
                    "unix_socket_directories = '%s'\nport = 5432\nmax_parallel_workers_per_gather = 0\n"
                    "jit = off\nlc_messages = 'C'\ntimezone = 'UTC'\nfsync = off\n"
                    "synchronous_commit = off\nfull_page_writes = off\nshared_buffers = '256MB'\n"
                    "log_min_messages = warning\n%s\n" % (self.dir, self.extra_conf))
        self.log = os.path.join(self.dir, 'server.log')
        r = subprocess.run(self._as_user([os.path.join(self.bindir, 'pg_ctl'), '-D', data, '-l', self.log,
                                          '-w', '-t', '120', 'start']),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        if r.returncode:
            raise SystemExit('server start failed:\n' + r.stdout + self.tail_log())
        self.data = data
        return 'host=%s port=5432 dbname=postgres user=postgres' % self.dir

    def tail_log(self, n=30):
        try:
            with open(self.log, errors='replace') as f:
                return ''.join(f.readlines()[-n:])
        except OSError:
            return ''

    def stop(self):
        if not self.dir:
            return
        subprocess.run(self._as_user([os.path.join(self.bindir, 'pg_ctl'), '-D', self.data, '-m',
                                      'immediate', 'stop']),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.keep_dir:
            try:
                shutil.copy(self.log, os.path.join(self.keep_dir, 'server.log'))
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------ session

class Crash(Exception):
    pass


class Hang(Exception):
    pass


class Session:
    """One psql process fed scripts on stdin; every statement we care about
    is followed by \\echo MARK tag :SQLSTATE, and the output between marks is
    what the statement printed."""

    def __init__(self, psql, dsn, errdir, idle_limit):
        self.psql = psql
        self.dsn = dsn
        self.errpath = os.path.join(errdir, 'psql-stderr.log')
        self.idle_limit = idle_limit    # seconds without output: the statement hangs
        self.p = None
        self.n = 0

    def open(self):
        self.err = open(self.errpath, 'ab')
        self.p = subprocess.Popen([self.psql, '-X', '-q', '-A', '-t', '-F', '\x1f', '-P', 'null=\u2400',
                                   '-v', 'ON_ERROR_STOP=0', '-d', self.dsn],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err)
        self.buf = b''
        res = self.run("SET client_min_messages = warning;\nLOAD 'gpusort';\nSELECT pg_backend_pid();\n" +
                       mark('pid'))
        self.pid = int(res[-1][2][0])

    def close(self):
        if self.p:
            try:
                self.p.stdin.close()
                self.p.wait(timeout=10)
            except Exception:
                self.p.kill()
                self.p.wait()
            self.p = None

    def kill(self):
        """Ends a hanging session: cancel, then terminate its backend."""
        for fn in ('pg_cancel_backend', 'pg_terminate_backend'):
            subprocess.run([self.psql, '-X', '-q', '-d', self.dsn, '-c', 'SELECT %s(%d)' % (fn, self.pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            time.sleep(3)
        if self.p:
            self.p.kill()
            self.p.wait()
            self.p = None

    def _readline(self):
        deadline = time.time() + self.idle_limit
        fd = self.p.stdout.fileno()
        while b'\n' not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                raise Hang('no answer in %d s (statement_timeout did not end it)' % self.idle_limit)
            ready, _, _ = select.select([fd], [], [], min(left, 5))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise Crash('connection lost')
                self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return line

    def run(self, script):
        """Runs script; returns [(tag, sqlstate, output lines)] for its marks."""
        self.n += 1
        end = '%s end%d' % (MARK, self.n)
        try:
            self.p.stdin.write((script + '\n\\echo ' + end + '\n').encode())
            self.p.stdin.flush()
        except (BrokenPipeError, OSError):
            raise Crash('psql has gone')
        res = []
        buf = []
        while True:
            line = self._readline().decode('utf-8', 'replace')
            if line.startswith(MARK):
                parts = line.split(' ')
                if parts[1] == 'end%d' % self.n:
                    return res
                res.append((parts[1], parts[2] if len(parts) > 2 else '', buf))
                buf = []
            else:
                buf.append(line)

    def err_tail(self):
        try:
            self.err.flush()
            with open(self.errpath, 'rb') as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 3000))
                return f.read().decode('utf-8', 'replace')
        except OSError:
            return ''


def mark(tag):
    return '\\echo %s %s :SQLSTATE\n' % (MARK, tag)


# --------------------------------------------------------------------- data

def table_ddl(colls, schema_cols=None):
    """CREATE TABLE for t1 and t2, columns restricted to schema_cols."""
    cols = [('id', 'int4')]
    for name, typ, _, _ in datagen.COLUMNS:
        if schema_cols is not None and name not in schema_cols:
            continue
        typ = re.sub(r'\{coll:(\w+)\}', lambda m: 'COLLATE %s' % colls['col'][m.group(1)]
                     if colls['col'].get(m.group(1)) else '', typ)
        cols.append((name, typ.strip()))
    return cols


def create_sql(name, cols):
    return 'CREATE TABLE %s (%s);' % (name, ', '.join('%s %s' % c for c in cols))


def copy_data(rows, idx=None):
    out = []
    for row in rows:
        vals = row if idx is None else [row[i] for i in idx]
        out.append('\t'.join(datagen.copy_escape(v) for v in vals) + '\n')
    return ''.join(out)


# ------------------------------------------------------------------- fuzzer

COLL_CANDIDATES = [
    # (name to use, SQL to create it or None if built in)
    ('"C"', None), ('"POSIX"', None), ('"default"', None),
    ('fz_en', "CREATE COLLATION fz_en (provider = libc, locale = 'en_US.utf8')"),
    ('fz_de', "CREATE COLLATION fz_de (provider = libc, locale = 'de_DE.utf8')"),
    ('fz_sv', "CREATE COLLATION fz_sv (provider = libc, locale = 'sv_SE.utf8')"),
    ('"und-x-icu"', None),
    ('"sv-x-icu"', None),
    ('fz_nd', "CREATE COLLATION fz_nd (provider = icu, locale = 'und-u-ks-level2', deterministic = false)"),
    ('fz_ai', "CREATE COLLATION fz_ai (provider = icu, locale = 'und-u-ks-level1', deterministic = false)"),
    ('fz_num', "CREATE COLLATION fz_num (provider = icu, locale = 'und-u-kn-true')"),
    ('fz_upper', "CREATE COLLATION fz_upper (provider = icu, locale = 'und-u-kf-upper')"),
]


class Fuzzer:
    def __init__(self, args, dsn, server=None):
        self.args = args
        self.dsn = dsn
        self.server = server
        self.workdir = args.log_dir
        os.makedirs(self.workdir, exist_ok=True)
        self.psql = os.path.join(args.bindir, 'psql')
        self.sess = Session(self.psql, dsn, self.workdir, args.statement_timeout + 60)
        self.sess.open()
        self.stats = {'queries': 0, 'gpusort': 0, 'native_left': 0, 'both_error': 0, 'failures': 0,
                      'by_kind': {}, 'errors': {}}
        self.failures = []
        self.setup_collations()

    # -- setup
    def setup_collations(self):
        self.sess.run('CREATE SCHEMA IF NOT EXISTS fz; SET search_path = fz, public;')
        avail = []
        for name, create in COLL_CANDIDATES:
            script = ''
            if create:
                script += 'DROP COLLATION IF EXISTS public.%s;\n%s;\n' % (name, create)
            script += "SELECT 'a' COLLATE %s;\n" % name + mark('c')
            res = self.sess.run(script)
            if res and res[-1][1] == '00000':
                avail.append(name)
        self.colls_avail = avail

        def pick(*names):
            for n in names:
                if n in avail:
                    return n
            return None
        self.colls = {'col': {'de': pick('fz_de', '"de-x-icu"'), 'sv': pick('fz_sv', '"sv-x-icu"'),
                              'icu': pick('"und-x-icu"'), 'nd': pick('fz_nd', '"und-x-icu"')},
                      'explicit': avail}
        self.coll_create = [c for n, c in COLL_CANDIDATES if c and n in avail]
        log('collations: ' + ' '.join(avail))
        missing = [n for n, _ in COLL_CANDIDATES if n not in avail]
        if missing:
            log('collations not available here (queries use the others): ' + ' '.join(missing))

    def set_schema(self, schema):
        self.sess.run('SET search_path = %s, public;' % schema)

    def load_tables(self, seed, epoch):
        r = random.Random('%s:tables:%d' % (seed, epoch))
        rows = self.args.rows
        rows = r.choice([rows, rows, rows, max(1, rows // 10), rows * 2 if rows < 20000 else rows])
        t1, t2, order, modes = datagen.make_tables(r, rows)
        self.tables = {'t1': t1, 't2': t2, 'order': order, 'modes': modes}
        cols = table_ddl(self.colls)
        self.cols = cols
        names = ', '.join(c[0] for c in cols)
        script = ('SET gpusort.enabled = off;\nSET statement_timeout = 0;\n'
                  'DROP TABLE IF EXISTS fz.t1, fz.t2, fz.t1_load;\n' +
                  create_sql('fz.t1', cols) + '\n' + create_sql('fz.t2', cols) + '\n' +
                  create_sql('fz.t1_load', cols) + '\n')
        script += 'COPY fz.t1_load (%s) FROM STDIN;\n%s\\.\n' % (names, copy_data(t1)) + mark('copy1')
        script += 'COPY fz.t2 (%s) FROM STDIN;\n%s\\.\n' % (names, copy_data(t2)) + mark('copy2')
        script += 'INSERT INTO fz.t1 SELECT * FROM fz.t1_load%s;\n' % (
            ' ORDER BY ' + order if order else '') + mark('ins')
        script += 'DROP TABLE fz.t1_load; ANALYZE fz.t1; ANALYZE fz.t2;\nRESET gpusort.enabled;\n'
        script += 'SELECT (SELECT count(*) FROM fz.t1), (SELECT count(*) FROM fz.t2);\n' + mark('count')
        res = self.sess.run(script)
        bad = [t for t in res if t[1] != '00000']
        if not bad and res[-1][2] != ['%d\x1f%d' % (len(t1), len(t2))]:
            bad = ['row counts %s, expected %d and %d' % (res[-1][2], len(t1), len(t2))]
        if bad:
            raise SystemExit('loading the tables failed: %s\n%s' % (bad, self.sess.err_tail()))
        skew = ','.join('%s:%s%s' % (k, v[0], '/null%.2f' % v[1] if v[1] else '')
                        for k, v in modes.items() if v[0] != 'uniform' or v[1] >= 0.3)
        return 't1 %d rows, t2 %d rows, t1 stored in order of %s; non-uniform columns: %s' % (
            len(t1), len(t2), order or 'nothing', skew)

    def join_estimate(self, cols):
        """Rows of t1 JOIN t2 on these columns, over-estimated with a loose
        equality (case, accents, trailing spaces, numeric scale ignored)."""
        from collections import Counter
        idx = [0 if c == 'id' else 1 + [x[0] for x in datagen.COLUMNS].index(c) for c in cols]
        counts = []
        for t in ('t1', 't2'):
            cnt = Counter()
            for row in self.tables[t]:
                key = tuple(loose(row[i]) for i in idx)
                if None not in key:
                    cnt[key] += 1
            counts.append(cnt)
        return sum(n * counts[1].get(k, 0) for k, n in counts[0].items())

    # -- one query
    def gen_query(self, seed, qi):
        r = random.Random('%s:query:%d' % (seed, qi))
        g = queries.Gen(r, self.colls['explicit'], len(self.tables['t1']), self.join_estimate,
                        max(50000, 30 * self.args.rows))
        return g.query()

    def settings_sql(self, d):
        return ''.join('SET %s = %s;\n' % kv for kv in d.items())

    def on_sql(self, q):
        return ('SET gpusort.enabled = on;\nSET gpusort.min_rows = 0;\nSET gpusort.keyless_sorts = on;\n'
                'SET gpusort.engine = %s;\n'
                % self.args.engine) + self.settings_sql(q.get('on_settings', {}))

    def check(self, q):
        """Runs q both ways.  Returns (verdict, detail, plan info) where
        verdict is None (ok), 'both_error', or a failure class."""
        sql, mode, rowcmp, keycols, fetches = queries.render(q)
        pre = ('RESET ALL;\nSET search_path = %s, public;\nSET client_min_messages = warning;\n'
               'SET statement_timeout = %d;\nSET extra_float_digits = 3;\n' % (
                   self.schema, self.args.statement_timeout * 1000)) + self.settings_sql(q['settings'])
        off = 'SET gpusort.enabled = off;\n'
        on = self.on_sql(q)
        if fetches is not None:
            return self.check_cursor(q, sql, fetches, pre, off, on)
        wrap = 'SELECT row_number() OVER () AS gs_rn, * FROM (\n%s\n) gs_q' % sql
        wrap_on = wrap if not self.args.self_test else self_test_mutation(wrap)
        script = pre + 'DROP TABLE IF EXISTS pg_temp.r_off, pg_temp.r_on;\n'
        script += off + 'CREATE TEMP TABLE r_off AS %s;\n' % wrap + mark('off')
        script += on + 'EXPLAIN (COSTS OFF) %s;\n' % wrap_on + mark('plan')
        script += 'CREATE TEMP TABLE r_on AS %s;\n' % wrap_on + mark('on')
        res = self.sess.run(script)
        st = {t: (s, out) for t, s, out in res}
        s_off, s_on = st['off'][0], st['on'][0]
        plan = st['plan'][1]
        pinfo = plan_info(plan)
        if s_off != '00000' or s_on != '00000':
            if same_failure(s_off, s_on):
                return 'both_error', s_off, pinfo
            return 'error', 'gpusort off: SQLSTATE %s, on: SQLSTATE %s\n%s' % (
                s_off, s_on, self.sess.err_tail()[-600:]), pinfo
        return self.compare(mode, rowcmp, keycols) + (pinfo,)

    def compare(self, mode, rowcmp, keycols):
        # the comparison runs with the server's settings, not the query's:
        # a query's tiny work_mem or disabled join methods can make
        # comparing its results take longer than the query itself
        res = self.sess.run(
            "RESET ALL;\nSET gpusort.enabled = off;\nSET statement_timeout = %d;\n"
            % (self.args.statement_timeout * 1000) +
            "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute "
            "WHERE attrelid = 'pg_temp.r_off'::regclass AND attnum > 1 AND NOT attisdropped;\n" + mark('cols'))
        cols = res[0][2][0] if res and res[0][2] else ''
        q = ['(SELECT count(*) FROM r_off)', '(SELECT count(*) FROM r_on)']
        if mode in ('ordered', 'multiset'):
            if rowcmp == 'text':
                q.append('(SELECT count(*) FROM (SELECT s::text FROM (SELECT %s FROM r_off) s EXCEPT ALL '
                         'SELECT s::text FROM (SELECT %s FROM r_on) s) d)' % (cols, cols))
            else:
                q.append('(SELECT count(*) FROM (SELECT %s FROM r_off EXCEPT ALL SELECT %s FROM r_on) d)'
                         % (cols, cols))
        else:
            q.append('0')
        if mode in ('ordered', 'keys') and keycols:
            ka = ', '.join('a.%s' % k for k in keycols)
            kb = ', '.join('b.%s' % k for k in keycols)
            cond = 'ROW(%s, NULL) IS DISTINCT FROM ROW(%s, NULL)' % (ka, kb)
            q.append('(SELECT min(gs_rn) FROM r_off a JOIN r_on b USING (gs_rn) WHERE %s)' % cond)
        else:
            q.append('NULL')
        res = self.sess.run('SELECT %s;\n' % ', '.join(q) + mark('cmp'))
        tag, state, out = res[0]
        if state != '00000' or not out:
            return 'cmp_error', 'comparison query failed (%s): %s' % (state, self.sess.err_tail()[-500:])
        n_off, n_on, bad, pos = out[0].split('\x1f')
        if n_off != n_on:
            return 'rows', '%s rows with gpusort off, %s on' % (n_off, n_on)
        if bad != '0':
            ex = self.sess.run(
                "SELECT 'off', s::text FROM (SELECT %s FROM r_off EXCEPT ALL SELECT %s FROM r_on) s LIMIT 3;\n"
                "SELECT 'on', s::text FROM (SELECT %s FROM r_on EXCEPT ALL SELECT %s FROM r_off) s LIMIT 3;\n"
                % (cols, cols, cols, cols) + mark('ex'))
            lines = ex[0][2] if ex else []
            return 'rows', '%s of %s rows differ (%s comparison); e.g.\n  %s' % (
                bad, n_off, rowcmp, '\n  '.join(shorten(l) for l in lines))
        if pos not in ('', '\u2400'):
            p = int(pos)
            ex = self.sess.run(
                "SELECT 'off', a.gs_rn, (a)::text FROM r_off a WHERE gs_rn BETWEEN %d AND %d UNION ALL "
                "SELECT 'on', b.gs_rn, (b)::text FROM r_on b WHERE gs_rn BETWEEN %d AND %d ORDER BY 1 DESC, 2;\n"
                % (max(1, p - 1), p + 1, max(1, p - 1), p + 1) + mark('ex'))
            lines = ex[0][2] if ex else []
            return 'order', 'sort keys (%s) differ first at row %d of %s:\n  %s' % (
                ', '.join(keycols), p, n_off, '\n  '.join(shorten(l) for l in lines))
        return None, ''

    def check_cursor(self, q, sql, fetches, pre, off, on):
        outs = {}
        pinfo = None
        for side, setup in (('off', off), ('on', on)):
            script = pre + setup
            if side == 'on':
                script += 'EXPLAIN (COSTS OFF) DECLARE c SCROLL CURSOR FOR %s;\n' % sql + mark('plan')
            script += 'BEGIN;\nDECLARE c SCROLL CURSOR FOR %s;\n' % sql + mark('decl')
            for i, f in enumerate(fetches):
                script += '%s FROM c;\n' % f + mark('f%d' % i)
            script += 'COMMIT;\n'
            res = self.sess.run(script)
            outs[side] = [(t, s, o) for t, s, o in res if t != 'plan']
            for t, s, o in res:
                if t == 'plan':
                    pinfo = plan_info(o)
        a, b = outs['off'], outs['on']
        err_a = next((s for t, s, o in a if s != '00000'), None)
        err_b = next((s for t, s, o in b if s != '00000'), None)
        if err_a or err_b:
            if same_failure(err_a, err_b):
                return 'both_error', err_a, pinfo
            return 'error', 'gpusort off: SQLSTATE %s, on: SQLSTATE %s\n%s' % (
                err_a, err_b, self.sess.err_tail()[-600:]), pinfo
        for (t, s, oa), (_, _, ob) in zip(a, b):
            if oa != ob:
                i = int(t[1:]) if t.startswith('f') else -1
                return 'cursor', '%s returned different rows:\n  off: %s\n  on:  %s' % (
                    fetches[i] if i >= 0 else t, shorten(' | '.join(oa), 600),
                    shorten(' | '.join(ob), 600)), pinfo
        return None, '', pinfo

    def check_patient(self, q):
        """check_safe, with a second try under four times the
        statement_timeout where the first met it on one side only or in
        the comparison: a slow machine (a busy CI host) is no verdict on
        the sort.  A sort that still times out where PostgreSQL's does not
        is still reported."""
        v = self.check_safe(q)
        if v[0] not in ('error', 'cmp_error') or TIMEOUT_STATE not in v[1]:
            return v
        log('  (a statement timed out; the query runs again with a longer statement_timeout)')
        longer = self.args.statement_timeout * 4
        with self.timeouts(longer, longer + 60):
            return self.check_safe(q)

    @contextlib.contextmanager
    def timeouts(self, statement_timeout, idle_limit):
        """Within the block, queries run with this statement_timeout
        (seconds) and a statement hangs after idle_limit seconds without
        output; the earlier limits come back after it."""
        saved = self.args.statement_timeout, self.sess.idle_limit
        self.args.statement_timeout, self.sess.idle_limit = statement_timeout, idle_limit
        try:
            yield
        finally:
            self.args.statement_timeout, self.sess.idle_limit = saved

    def check_safe(self, q):
        try:
            return self.check(q)
        except Hang as e:
            detail = 'the query hangs: %s; its backend was cancelled, then terminated' % e
            self.sess.kill()
            self.recover()
            return 'hang', detail, None
        except Crash as e:
            detail = 'server connection lost (%s): crash?\n%s\n%s' % (
                e, self.sess.err_tail()[-800:], self.server.tail_log(15) if self.server else '')
            self.recover()
            return 'crash', detail, None

    def recover(self):
        self.sess.close()
        for _ in range(120):
            r = subprocess.run([os.path.join(self.args.bindir, 'pg_isready'), '-d', self.dsn],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r.returncode == 0:
                break
            time.sleep(0.5)
        self.sess.open()
        self.sess.run('SET search_path = %s, public;' % self.schema)

    # -- minimization
    def minimize(self, q, verdict, seed, qi):
        deadline = time.time() + self.args.minimize_seconds
        runs = [0]
        if verdict == 'hang':       # a hang shows sooner with a short timeout
            with self.timeouts(5, 25):
                return self._minimize(q, verdict, deadline, runs)
        return self._minimize(q, verdict, deadline, runs)

    def _minimize(self, q, verdict, deadline, runs):

        def still(qq):
            if time.time() > deadline:
                return False
            runs[0] += 1
            v = self.check_safe(qq)[0]
            return v == verdict
        # 1. the query
        changed = True
        while changed and time.time() < deadline:
            changed = False
            for cand in queries.reductions(q):
                try:
                    queries.render(cand)
                except Exception:
                    continue
                if still(cand):
                    q = cand
                    changed = True
                    break
        # 2. rows and columns, on copies in schema mz
        sql = queries.render(q)[0]
        used = queries.columns_used(sql) | {'id'}
        if q['kind'] == 'aggsub':
            used |= {'i4'}
        cols = [c for c in self.cols if c[0] in used]
        names = [c[0] for c in cols]
        self.copy_cols = cols
        keep = {'t1': self.ids('t1'), 't2': self.ids('t2')}
        self.schema = 'mz'
        if not self.make_copies(keep, names) or not still(q):
            # the failure needs the full tables (or their other columns)
            self.schema = 'fz'
            log('  (minimizer: the failure does not reproduce on copies of the tables; rows not reduced)')
            return q, None, runs[0]
        for t in ('t1', 't2'):
            if t == 't2' and 't2' not in sql:
                keep['t2'] = []
                self.make_copies(keep, names)
                if not still(q):
                    keep['t2'] = self.ids('t2')
                    self.make_copies(keep, names)
                continue
            ids = keep[t]
            n = 2
            while len(ids) >= 2 and time.time() < deadline:
                chunk = max(1, len(ids) // n)
                reduced = False
                for i in range(0, len(ids), chunk):
                    cand = ids[:i] + ids[i + chunk:]
                    trial = dict(keep, **{t: cand})
                    self.make_copies(trial, names)
                    if still(q):
                        ids = cand
                        keep[t] = ids
                        n = max(n - 1, 2)
                        reduced = True
                        break
                if not reduced:
                    if chunk == 1:
                        break
                    n = min(len(ids), n * 2)
            keep[t] = ids
        self.make_copies(keep, names)
        dump = self.dump_copies(names)
        return q, dump, runs[0]

    def ids(self, t):
        return [int(row[0]) for row in self.tables[t]]

    def make_copies(self, keep, names):
        script = ('SET gpusort.enabled = off;\nSET statement_timeout = 0;\n'
                  'DROP SCHEMA IF EXISTS mz CASCADE;\nCREATE SCHEMA mz;\n')
        for t in ('t1', 't2'):
            script += create_sql('mz.' + t, self.copy_cols) + '\n'
            ids = keep[t]
            script += 'INSERT INTO mz.%s SELECT %s FROM fz.%s WHERE id = ANY(\'{%s}\'::int4[]);\n' % (
                t, ', '.join(names), t, ','.join(map(str, ids)))
            script += 'ANALYZE mz.%s;\n' % t
        script += mark('mk') + 'RESET gpusort.enabled;\n'
        res = self.sess.run(script)
        return res and res[0][1] == '00000'

    def dump_copies(self, names):
        out = {}
        for t in ('t1', 't2'):
            res = self.sess.run('COPY mz.%s TO STDOUT;\n' % t + mark('dump'))
            out[t] = res[0][2] if res else []
        return out

    # -- reporting
    def report(self, q, verdict, detail, seed, qi, epoch, tinfo, dump, runs):
        sql, mode, rowcmp, keycols, fetches = queries.render(q)
        lines = ['=' * 78, 'FAILURE (%s): seed %s, query %d (tables %d: %s)' % (verdict, seed, qi, epoch, tinfo),
                 'reproduce: test/fuzz/fuzz.py --seed %s --rows %d --replay %d%s' % (
                     seed, self.args.rows, qi, '' if self.args.engine == 'cpu' else ' --engine ' + self.args.engine),
                 'minimized in %d runs; comparison: %s, rows as %s' % (runs, mode, rowcmp),
                 detail, '-- settings (both runs): ' + (' '.join('%s=%s' % kv for kv in q['settings'].items()) or '-'),
                 '-- settings (gpusort on): ' + (' '.join('%s=%s' % kv for kv in q.get('on_settings', {}).items())
                                                or '-'),
                 '-- query:', sql + ';']
        if fetches:
            lines.append('-- cursor commands: ' + '; '.join(fetches))
        text = '\n'.join(lines)
        log(text)
        # a self-contained script: collations, tables with the rows left, both runs
        path = os.path.join(self.workdir, 'repro-%s-%d.sql' % (seed, qi))
        cols = self.copy_cols if dump else self.cols
        with open(path, 'w') as f:
            f.write('-- gpusort fuzzer: seed %s query %d (%s)\n' % (seed, qi, verdict))
            f.write('-- ' + detail.replace('\n', '\n-- ') + '\n')
            f.write("-- run: psql -X -f %s (server with shared_preload_libraries = 'gpusort')\n" %
                    os.path.basename(path))
            f.write("LOAD 'gpusort';\nDROP SCHEMA IF EXISTS gsrepro CASCADE;\nCREATE SCHEMA gsrepro;\n"
                    "SET search_path = gsrepro, public;\n")
            for c in self.coll_create:
                f.write(c + ';\n')
            for t in ('t1', 't2'):
                f.write(create_sql(t, cols) + '\n')
                f.write('COPY %s FROM STDIN;\n' % t)
                if dump:
                    f.write(''.join(l + '\n' for l in dump[t]))
                else:
                    f.write(copy_data(self.tables[t]))
                f.write('\\.\nANALYZE %s;\n' % t)
            f.write(self.settings_sql(q['settings']))
            body = sql + ';\n' if not fetches else (
                'BEGIN;\nDECLARE c SCROLL CURSOR FOR %s;\n%sCOMMIT;\n' % (sql, ''.join('%s FROM c;\n' % x
                                                                                      for x in fetches)))
            f.write('\\echo == gpusort off\nSET gpusort.enabled = off;\n' + body)
            f.write('\\echo == gpusort on\n' + self.on_sql(q) + 'EXPLAIN (COSTS OFF) %s;\n' % (
                sql if not fetches else 'DECLARE c SCROLL CURSOR FOR ' + sql) + body)
        log('repro script (DDL, rows, both runs): %s' % path)
        log('=' * 78)
        self.failures.append((seed, qi, verdict))

    # -- main loop
    def run_seed(self, seed, nqueries, deadline, only=None):
        per = self.args.queries_per_table
        epoch = None
        qi = only if only is not None else 0
        last_progress = time.time()
        st = self.stats
        # the progress line counts this seed's queries; the totals are of all seeds so far
        base = {k: st[k] for k in ('queries', 'gpusort', 'failures')}
        while True:
            if only is None and (qi >= nqueries or time.time() > deadline):
                break
            e = qi // per
            if e != epoch:
                epoch = e
                self.schema = 'fz'
                self.set_schema('fz')
                tinfo = self.load_tables(seed, epoch)
                log('seed %s, tables %d: %s' % (seed, epoch, tinfo))
            q = self.gen_query(seed, qi)
            self.schema = 'fz'
            verdict, detail, pinfo = self.check_patient(q)
            kind = q['kind']
            st = self.stats
            st['queries'] += 1
            bk = st['by_kind'].setdefault(kind, [0, 0])
            bk[0] += 1
            if pinfo and pinfo[0]:
                st['gpusort'] += 1
                bk[1] += 1
            if pinfo and pinfo[1]:
                st['native_left'] += 1
            if self.args.verbose:
                log('q%d %s %s %s' % (qi, kind, verdict or 'ok', queries.render(q)[0][:300]))
            if verdict == 'both_error':
                st['both_error'] += 1
                st['errors'][detail] = st['errors'].get(detail, 0) + 1
                if self.args.verbose:
                    log('  both error %s: %s' % (detail, self.sess.err_tail()[-300:]))
            elif verdict is not None and self.args.self_test:
                st['failures'] += 1
                st['errors'][verdict] = st['errors'].get(verdict, 0) + 1
            elif verdict is not None:
                st['failures'] += 1
                log('seed %s query %d (%s): %s; minimizing...' % (seed, qi, kind, verdict))
                mq, dump, runs = self.minimize(q, verdict, seed, qi)
                self.schema = 'mz' if dump else 'fz'
                v2, detail2, _ = self.check_safe(mq)
                if v2 != verdict:       # flaky under minimization: report the original
                    mq, dump, detail2 = q, None, detail
                    self.schema = 'fz'
                self.report(mq, verdict, detail2, seed, qi, epoch, tinfo, dump, runs)
                self.schema = 'fz'
                self.set_schema('fz')
                if len(self.failures) >= self.args.max_failures:
                    return False
            if time.time() - last_progress > 15:
                last_progress = time.time()
                log('  ... seed %s: %d queries, %d with GpuSort, %d failures '
                    '(all seeds so far: %d queries, %d with GpuSort, %d failures)' % (
                        seed, st['queries'] - base['queries'], st['gpusort'] - base['gpusort'],
                        st['failures'] - base['failures'],
                        st['queries'], st['gpusort'], st['failures']))
            if only is not None:
                break
            qi += 1
        return True


def self_test_mutation(sql):
    """--self-test: what the gpusort-on run executes instead, to show that
    the checks catch a wrong order (the first ORDER BY key flipped), a missing
    row and an error raised only with gpusort on."""
    h = sum(map(ord, sql)) % 3
    if h == 0:
        return sql.replace('FROM (\n', 'FROM (SELECT * FROM (\n').replace('\n) gs_q', '\n) gs_i ORDER BY random()) gs_q')
    if h == 1:
        return sql.replace('\n) gs_q', '\n) gs_q OFFSET 1')
    return sql.replace('\n) gs_q', '\n) gs_q WHERE 1 / (random() > 2)::int = 0')


def plan_info(lines):
    """(GpuSort nodes, native Sort nodes) in EXPLAIN (COSTS OFF) output."""
    g = n = 0
    for l in lines:
        s = l.strip()
        if s.startswith('->'):
            s = s[2:].strip()
        if s.startswith('Custom Scan (GpuSort)'):
            g += 1
        elif s == 'Sort' or s.startswith('Sort  (') or s == 'Incremental Sort':
            n += 1
    return g, n


def loose(v):
    import unicodedata
    from decimal import Decimal, InvalidOperation
    if v is None:
        return None
    try:
        d = Decimal(v)
        return 'nan' if d.is_nan() else d.normalize()
    except (InvalidOperation, ValueError):
        pass
    v = ''.join(c for c in unicodedata.normalize('NFKD', v) if not unicodedata.combining(c))
    return v.casefold().rstrip(' ')


def shorten(s, n=300):
    s = s.replace('\x1f', ' | ')
    return s if len(s) <= n else s[:n] + '...(%d chars)' % len(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seed', action='append', help="seed (repeatable; 'random' for a random one)")
    ap.add_argument('--queries', type=int, default=None, help='queries per seed')
    ap.add_argument('--minutes', type=float, default=None, help='total time for all seeds')
    ap.add_argument('--rows', type=int, default=2000, help='rows of t1 (t2 is smaller)')
    ap.add_argument('--queries-per-table', type=int, default=150, help='queries before new tables')
    ap.add_argument('--replay', type=int, default=None, help='run only this query index of the seed')
    ap.add_argument('--engine', default=os.environ.get('GPUSORT_FUZZ_ENGINE', 'cpu'),
                    help='gpusort.engine with gpusort on: cpu (default) or gpu')
    ap.add_argument('--dsn', help='connection string of an existing server (gpusort loaded, superuser)')
    ap.add_argument('--pg-config', default=os.environ.get('PG_CONFIG', 'pg_config'))
    ap.add_argument('--user', default=os.environ.get('GPUSORT_TEST_USER', 'postgres'),
                    help='user the own server runs as, when run as root')
    ap.add_argument('--log-dir', default=None, help='where repro scripts (and the server log) go')
    ap.add_argument('--extra-conf', default='', help='lines added to the own server configuration')
    ap.add_argument('--max-failures', type=int, default=1, help='stop after this many failures')
    ap.add_argument('--minimize-seconds', type=int, default=180)
    ap.add_argument('--statement-timeout', type=int, default=60, help='seconds')
    ap.add_argument('-v', '--verbose', action='store_true')
    ap.add_argument('--self-test', action='store_true',
                    help='check the checker: the gpusort-on run executes a wrong query; '
                         'nearly every query must fail (nothing is minimized)')
    args = ap.parse_args()

    seeds = []
    for s in args.seed or ['1']:
        seeds.append(str(random.SystemRandom().randrange(1, 10 ** 9)) if s == 'random' else s)
    if args.queries is None and args.minutes is None:
        args.queries = 300
    args.bindir = subprocess.run([args.pg_config, '--bindir'], stdout=subprocess.PIPE, text=True,
                                 check=True).stdout.strip()
    given_log_dir = bool(args.log_dir)
    if not args.log_dir:
        args.log_dir = tempfile.mkdtemp(prefix='gpusort-fuzz-log.')
    os.makedirs(args.log_dir, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(args.log_dir, args.user)

    def on_signal(signum, frame):
        raise SystemExit('fuzz: signal %d' % signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    t0 = time.time()
    log('gpusort fuzzer: seeds %s, engine %s, rows %d, %s' % (
        ' '.join(seeds), args.engine, args.rows,
        ('%s queries per seed' % args.queries if args.queries else '') +
        (' %.2f minutes' % args.minutes if args.minutes else '')))
    server = None
    if args.dsn:
        dsn = args.dsn
    else:
        if args.engine == 'gpu':    # each sort logs the engine that did it at DEBUG1
            args.extra_conf = 'log_min_messages = debug1\n' + args.extra_conf
        server = Server(args.bindir, args.user, args.extra_conf, args.log_dir)
        dsn = server.start()
        log('server started in %.1f s (%s)' % (time.time() - t0, server.dir))
    ok = True
    try:
        fz = Fuzzer(args, dsn, server)
        if args.engine == 'gpu':
            res = fz.sess.run('SELECT engines FROM gpusort_info();\n' + mark('info'))
            log('gpusort_info().engines: %s' % (res[0][2] if res and res[0][1] == '00000'
                                                else '(CREATE EXTENSION gpusort for gpusort_info)'))
        start = time.time()
        for i, seed in enumerate(seeds):
            if args.minutes is not None:
                left = args.minutes * 60 - (time.time() - start)
                deadline = time.time() + left / (len(seeds) - i)
            else:
                deadline = float('inf')
            if not fz.run_seed(seed, args.queries or 10 ** 9, deadline, args.replay):
                break
        st = fz.stats
        n = max(1, st['queries'])
        log('-' * 78)
        log('fuzz summary: %d queries in %.0f s (seeds %s, engine %s), %d failures' % (
            st['queries'], time.time() - start, ' '.join(seeds), args.engine, st['failures']))
        log('GpuSort in the plan: %d of %d queries (%.0f%%); queries with a native Sort left: %d; '
            'queries that errored both ways: %d' % (st['gpusort'], st['queries'], 100.0 * st['gpusort'] / n,
                                                    st['native_left'], st['both_error']))
        log('by kind (queries / with GpuSort): ' + ', '.join(
            '%s %d/%d' % (k, v[0], v[1]) for k, v in sorted(st['by_kind'].items())))
        if st['errors']:
            log('errors both ways, by SQLSTATE: ' + ', '.join('%s x%d' % kv for kv in sorted(st['errors'].items())))
        if fz.failures:
            log('FAILURES: ' + ', '.join('seed %s query %d (%s)' % f for f in fz.failures))
            ok = False
        fz.sess.close()
    finally:
        if server:
            server.stop()
    if server and args.engine == 'gpu':
        engines = {}
        try:
            with open(os.path.join(args.log_dir, 'server.log'), errors='replace') as f:
                for line in f:
                    m = re.search(r'gpusort: \d+ records sorted by (GPU|CPU|PostgreSQL comparators)', line)
                    if m:
                        k = m.group(1)
                        engines[k] = engines.get(k, 0) + 1
        except OSError:
            pass
        log('sorts by engine (server log): ' + (', '.join('%s %d' % kv for kv in sorted(engines.items()))
                                                 or 'none logged'))
    # a passed round's logs are of no further use: a caller that named the
    # directory may remove them, so only a failure (or a directory of our
    # own) points there
    if ok and given_log_dir:
        log('fuzz passed')
    else:
        log('fuzz %s; logs in %s' % ('passed' if ok else 'FAILED', args.log_dir))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
