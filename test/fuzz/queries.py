"""Random queries for the gpusort differential fuzzer.

A query is a plain dict (a "spec"), so that the minimizer can take it apart;
render() turns it into SQL plus the way its two results are to be compared:

  ordered  the sequence of ORDER BY key values must match (compared with the
           types' own equality, so ties may come in any order), and the
           multiset of rows
  multiset only the multiset of rows (order not defined)
  keys     only the sequence of key values (LIMIT/OFFSET cutting through
           ties: which of the tied rows come back is not defined)
  exact    the text of every FETCH of a SCROLL cursor (its ORDER BY ends with
           a unique column, so the order is total)

and whether rows are compared as text ('text') or with the types' equality
('typed': DISTINCT, GROUP BY and UNION keep one row of each group of equal
values, and which one is not defined where equal values differ, e.g. 1.1 and
1.10, 'abc' and 'ABC' under a case-insensitive collation).
"""
import copy
import re

from datagen import COLMAP, COLLATABLE

# key columns by category, weighted towards the types whose keys are being
# rewritten (text, numeric, bytea, interval)
CATS = {
    'text': ['t', 'tc', 'tde', 'tsv', 'ticu', 'tnd', 'tl', 'vc', 'bp', 'bx', 'nm'],
    'numeric': ['n', 'nb'],
    'bytea': ['b'],
    'interval': ['iv'],
    'int': ['g', 'i2', 'i4', 'i8'],
    'float': ['f4', 'f8'],
    'time': ['d', 'tm', 'ts', 'tz'],
    'misc': ['u', 'bo', 'ch', 'm', 'ip'],
    'array': ['ai', 'at', 'an'],
}
CAT_WEIGHTS = [('text', 34), ('numeric', 16), ('bytea', 9), ('interval', 9), ('int', 8),
               ('float', 8), ('time', 6), ('misc', 5), ('array', 5)]

# expressions over a column, by category ({c} is the column)
EXPRS = {
    'text': ['{c}', '{c}', '{c}', 'lower({c})', 'upper({c})', "{c} || 'x'", 'substr({c}, 2)',
             'rtrim({c})', 'left({c}, 3)', '{c}::varchar(5)', '{c}::name', "'' || {c}",
             "{c}::bpchar"],
    'numeric': ['{c}', '{c}', '{c}', '{c} * 10', '-{c}', 'round({c}, 1)', '{c} + 0.000',
                '{c} / 7', 'trunc({c})', '{c}::float8', '{c} * 0'],
    'bytea': ['{c}', '{c}', "substr({c}, 2)", "{c} || '\\x00'::bytea", "convert_to(a.t, 'UTF8')"],
    'interval': ['{c}', '{c}', '{c} * 2', '{c} / 7', '-{c}', 'justify_hours({c})',
                 'justify_interval({c})', "{c} + interval '1 mon'", "{c} - interval '30 days'"],
    'int': ['{c}', '{c}', '{c} % 7', '{c}::int8 * -1', '{c}::numeric / 3', '{c}::float8'],
    'float': ['{c}', '{c}', '{c} * -1', '{c} * 0', 'floor({c})', '{c}::float8'],
    'time': ['{c}', '{c}'],
    'misc': ['{c}'],
    'array': ['{c}', '{c}[1:2]'],
}

WINDOW_FUNCS = ['rank() OVER w', 'dense_rank() OVER w', 'count(*) OVER w', 'sum(a.i2) OVER w',
                'cume_dist() OVER w', 'percent_rank() OVER w', 'count(a.t) OVER w']
GROUP_AGGS = ['count(*)', 'sum(a.i4)', 'min(a.id)', 'max(a.i8)', 'count(a.tl)', 'avg(a.i2)',
              'sum(length(a.t))', 'min(a.d)', 'bool_or(a.bo)']
WHERES = ['a.id % 3 <> 0', 'a.i4 > 0', 'a.t IS NOT NULL', 'false', 'a.id <= 1', 'a.g = 3',
          'a.id % 17 = 0', 'a.n > 0', 'a.tl IS NOT NULL', 'a.g < 6']
FETCHES = ['FETCH 3', 'FETCH 1', 'FETCH 10', 'FETCH BACKWARD 2', 'FETCH BACKWARD 5',
           'FETCH ABSOLUTE 1', 'FETCH ABSOLUTE 5', 'FETCH ABSOLUTE -1', 'FETCH ABSOLUTE -3',
           'FETCH RELATIVE 2', 'FETCH RELATIVE -1', 'FETCH FIRST', 'FETCH LAST', 'FETCH PRIOR',
           'FETCH NEXT', 'MOVE 4', 'MOVE BACKWARD 2', 'MOVE LAST', 'MOVE ABSOLUTE 0',
           'FETCH FORWARD ALL', 'FETCH BACKWARD ALL', 'FETCH ABSOLUTE 100000']
JOIN_COLS = ['g', 'i2', 'i4', 'f4', 'f8', 'n', 'nb', 't', 'tc', 'tde', 'ticu', 'tnd', 'vc',
             'bp', 'nm', 'b', 'd', 'ts', 'iv', 'u', 'ip', 'ai', 'at']

NONDETERMINISTIC = {'fz_nd', 'fz_ai'}

KINDS = [('plain', 22), ('distinct', 8), ('distinct_on', 5), ('group', 10), ('window', 10),
         ('join', 12), ('setop', 8), ('cursor', 10), ('corr', 6), ('aggsub', 5), ('rollup', 3)]


def wchoice(r, pairs):
    total = sum(w for _, w in pairs)
    x = r.uniform(0, total)
    for v, w in pairs:
        x -= w
        if x <= 0:
            return v
    return pairs[-1][0]


class Gen:
    def __init__(self, r, colls, rows, join_est=None, join_cap=None):
        self.r = r
        self.colls = colls          # explicit collations that exist
        self.rows = rows
        self.join_est = join_est or (lambda cols: 0)   # estimated rows of t1 JOIN t2 on cols
        self.join_cap = join_cap or 10 ** 9

    def join_cols(self):
        """Join columns whose join is not too large (duplicates on both
        sides multiply); the unique id as a last resort."""
        r = self.r
        for _ in range(10):
            jc = r.sample(JOIN_COLS, r.choice([1, 1, 2]))
            if self.join_est(jc) <= self.join_cap:
                return jc
        return ['id'] + jc[:1]

    def key_expr(self, alias='a', cat=None):
        r = self.r
        cat = cat or wchoice(r, CAT_WEIGHTS)
        col = r.choice(CATS[cat])
        e = r.choice(EXPRS[cat]).replace('{c}', '%s.%s' % (alias, col)).replace('a.t,', alias + '.t,')
        # name's equality ignores collations (bitwise) while its ordering
        # does not: under a nondeterministic collation rows would tie in the
        # sort yet differ for GROUP BY, DISTINCT and our own key comparison,
        # and PostgreSQL's own result would depend on the order of ties
        is_name = col == 'nm' or '::name' in e
        if is_name and col == 'tnd':
            e = e.replace('::name', '::varchar(5)')
        collatable = (col in COLLATABLE and not e.startswith('convert_to')
                      and '::float8' not in e)
        if collatable and r.random() < 0.4:
            colls = [c for c in self.colls if not (is_name and c in NONDETERMINISTIC)]
            e = '%s COLLATE %s' % (e if e.startswith(alias + '.') and ' ' not in e else '(%s)' % e,
                                   r.choice(colls))
        return e

    def keys(self, alias='a', n=None):
        r = self.r
        n = n or r.choice([1, 1, 1, 2, 2, 2, 3, 4])
        out = []
        for _ in range(n):
            out.append({'expr': self.key_expr(alias), 'desc': r.random() < 0.35,
                        'nulls': r.choice([None, None, 'FIRST', 'LAST']),
                        'ref': r.choice(['name', 'name', 'pos', 'expr'])})
        return out

    def extras(self, alias='a', n=None):
        r = self.r
        n = r.randint(0, 3) if n is None else n
        cols = ['id', 'g', 'i4', 't', 'n', 'b', 'iv', 'tl', 'f8', 'tnd', 'd', 'u', 'at', 'tc',
                'bp', 'm', 'ip']
        return ['%s.%s' % (alias, c) for c in r.sample(cols, n)]

    def settings(self):
        r = self.r
        s = {}
        if r.random() < 0.8:
            s['enable_incremental_sort'] = 'off'
        if r.random() < 0.15:
            s['work_mem'] = r.choice(["'64kB'", "'256kB'", "'16MB'"])
        if r.random() < 0.12:   # parallel plans: Gather Merge over sorts in workers
            s.update({'max_parallel_workers_per_gather': '2', 'parallel_setup_cost': '0',
                      'parallel_tuple_cost': '0', 'min_parallel_table_scan_size': '0'})
        return s

    def on_settings(self):
        r = self.r
        s = {}
        if r.random() < 0.3:
            s['gpusort.key_width'] = r.choice(['8', '16', '24'])
        if r.random() < 0.05:
            s['gpusort.max_memory'] = "'1MB'"
        if r.random() < 0.1:
            s['gpusort.threads'] = r.choice(['1', '2', '4'])
        return s

    def limit(self):
        r = self.r
        lim = off = None
        x = r.random()
        if x < 0.12:
            lim = r.choice([1, 5, self.rows // 2 + 1, self.rows, self.rows * 2, 0])
        if r.random() < 0.1:
            off = r.choice([0, 1, 3, self.rows // 3, self.rows * 3])
        return lim, off

    def query(self):
        r = self.r
        kind = wchoice(r, KINDS)
        q = {'kind': kind, 'settings': self.settings(), 'on_settings': self.on_settings(),
             'where': r.choice(WHERES) if r.random() < 0.2 else None,
             'tiebreak': False, 'limit': None, 'offset': None, 'order': True}
        if kind == 'plain':
            q['keys'] = self.keys()
            q['extras'] = self.extras()
            q['tiebreak'] = r.random() < 0.4
            q['limit'], q['offset'] = self.limit()
        elif kind == 'distinct':
            q['keys'] = self.keys()
            q['extras'] = []
            q['order'] = r.random() < 0.75
            q['limit'], q['offset'] = self.limit()
            q['settings']['enable_hashagg'] = 'off'
        elif kind == 'distinct_on':
            q['keys'] = self.keys(n=r.choice([2, 2, 3]))
            q['don'] = r.randint(1, len(q['keys']) - 1)
            q['extras'] = self.extras()
            q['tiebreak'] = True
        elif kind in ('group', 'rollup'):
            q['keys'] = self.keys(n=r.choice([1, 1, 2, 2, 3]))
            if kind == 'rollup':
                # one expression twice, under two collations: PostgreSQL 15
                # sorts the grouping sets' rows on the expression, not on the
                # column that ROLLUP set to NULL, so the output columns do not
                # show the order the plan made, and its ties differ between
                # any two sorts.  A cast to the column's own type is the
                # same expression (a.bp::bpchar is a.bp, a.nm::name is a.nm);
                # such casts are stripped whatever the column, which merely
                # drops a key now and then
                seen = set()
                uniq = []
                for k in q['keys']:
                    base = k['expr'].split(' COLLATE ')[0].strip('()')
                    base = re.sub(r'::(bpchar|name|float8)$', '', base)
                    if base not in seen:
                        seen.add(base)
                        uniq.append(k)
                q['keys'] = uniq
            q['aggs'] = r.sample(GROUP_AGGS, r.randint(1, 3))
            q['order'] = r.random() < 0.8
            q['order_perm'] = list(range(len(q['keys'])))
            r.shuffle(q['order_perm'])
            q['order_agg'] = r.random() < 0.2     # ORDER BY the first aggregate first
            q['having'] = r.random() < 0.2
            q['settings']['enable_hashagg'] = 'off'
        elif kind == 'window':
            q['keys'] = self.keys()
            q['extras'] = self.extras(n=r.randint(0, 2))
            q['part'] = [self.key_expr() for _ in range(r.choice([0, 1, 1, 2]))]
            q['word'] = self.keys(n=r.choice([0, 1, 1, 2]))
            q['wfuncs'] = r.sample(WINDOW_FUNCS, r.randint(1, 3))
            q['order'] = r.random() < 0.85
            q['tiebreak'] = r.random() < 0.3
            q['limit'], q['offset'] = self.limit()
            if r.random() < 0.3:   # a second window with another order: another sort
                q['w2'] = self.keys(n=1)
        elif kind == 'join':
            q['jtype'] = r.choice(['JOIN', 'JOIN', 'LEFT JOIN', 'FULL JOIN', 'RIGHT JOIN'])
            jc = self.join_cols()
            q['jconds'] = []
            for c in jc:
                if c in COLLATABLE and c != 'at' and r.random() < 0.3:
                    coll = r.choice([x for x in self.colls if not (c == 'nm' and x in NONDETERMINISTIC)])
                    q['jconds'].append('a.%s = b.%s COLLATE %s' % (c, c, coll))
                else:
                    q['jconds'].append('a.%s = b.%s' % (c, c))
            q['keys'] = self.keys(alias=r.choice(['a', 'b']), n=r.choice([1, 1, 2])) + \
                (self.keys(alias='b', n=1) if r.random() < 0.4 else [])
            q['extras'] = self.extras('a', r.randint(0, 2)) + self.extras('b', r.randint(0, 2))
            q['order'] = r.random() < 0.85
            q['tiebreak'] = r.random() < 0.3
            q['limit'], q['offset'] = self.limit()
            q['settings'].update({'enable_hashjoin': 'off', 'enable_nestloop': 'off'})
            if r.random() < 0.4:
                q['settings']['enable_material'] = 'off'   # mark/restore on the sort itself
        elif kind == 'setop':
            q['op'] = r.choice(['UNION', 'UNION', 'UNION ALL', 'INTERSECT', 'EXCEPT',
                                'INTERSECT ALL', 'EXCEPT ALL'])
            q['keys'] = self.keys(n=r.choice([1, 1, 2, 3]))
            for k in q['keys']:
                k['ref'] = r.choice(['name', 'pos'])
            q['where2'] = r.choice(WHERES) if r.random() < 0.3 else None
            q['order'] = r.random() < 0.7
            q['limit'], q['offset'] = self.limit()
            q['settings']['enable_hashagg'] = 'off'
        elif kind == 'cursor':
            q['keys'] = self.keys()
            q['extras'] = self.extras(n=r.randint(1, 3))
            q['tiebreak'] = True
            q['join'] = r.random() < 0.25
            if q['join']:
                q['jconds'] = ['a.%s = b.%s' % (c, c) for c in self.join_cols()]
                q['settings'].update({'enable_hashjoin': 'off', 'enable_nestloop': 'off'})
            q['limit'] = self.rows if r.random() < 0.1 else None
            q['fetches'] = [r.choice(FETCHES) for _ in range(r.randint(3, 10))]
        elif kind == 'corr':
            q['keys'] = self.keys(alias='b', n=r.choice([1, 1, 2]))
            q['corr_col'] = r.choice(['g', 'g', 'i2', 'bo', 'tnd', 'n'])
            q['corr_form'] = r.choice(['agg', 'agg', 'offset', 'exists'])
            q['where'] = r.choice(['a.id % 7 = 0', 'a.id <= 300', 'a.id % 23 = 1'])
            q['settings']['enable_hashagg'] = 'off'
        elif kind == 'aggsub':
            q['keys'] = self.keys()
            q['tiebreak'] = r.random() < 0.6
        return q


def _order_item(k, i, name):
    if k['ref'] == 'pos':
        s = str(i + 1)
    elif k['ref'] == 'expr':
        s = k['expr']
    else:
        s = name
    if k['desc']:
        s += ' DESC'
    if k['nulls']:
        s += ' NULLS ' + k['nulls']
    return s


def _limit_sql(q):
    s = ''
    if q.get('limit') is not None:
        s += ' LIMIT %d' % q['limit']
    if q.get('offset') is not None:
        s += ' OFFSET %d' % q['offset']
    return s


def render(q):
    """(sql, mode, rowcmp, keycols, fetches): mode and rowcmp as in the module
    docstring, keycols the output columns whose sequence is compared."""
    kind = q['kind']
    keys = q.get('keys', [])
    where = ' WHERE ' + q['where'] if q.get('where') else ''
    limited = q.get('limit') is not None or q.get('offset') is not None
    sel = ['%s AS k%d' % (k['expr'], i + 1) for i, k in enumerate(keys)]
    order = [_order_item(k, i, 'k%d' % (i + 1)) for i, k in enumerate(keys)]
    keycols = ['k%d' % (i + 1) for i in range(len(keys))]
    rowcmp = 'text'

    if kind in ('plain', 'window', 'join', 'cursor', 'distinct_on'):
        extras = q.get('extras', [])
        sel += ['%s AS x%d' % (e, i + 1) for i, e in enumerate(extras)]
        frm = ' FROM t1 a'
        if kind == 'join' or (kind == 'cursor' and q.get('join')):
            frm += ' %s t2 b ON %s' % (q.get('jtype', 'JOIN'), ' AND '.join(q['jconds']))
        if kind == 'window':
            parts = []
            if q['part']:
                parts.append('PARTITION BY ' + ', '.join(q['part']))
            if q['word']:
                parts.append('ORDER BY ' + ', '.join(
                    k['expr'] + (' DESC' if k['desc'] else '') +
                    (' NULLS ' + k['nulls'] if k['nulls'] else '') for k in q['word']))
            for i, f in enumerate(q['wfuncs']):
                sel.append('%s AS w%d' % (f, i + 1))
            win = ' WINDOW w AS (%s)' % ' '.join(parts)
            if q.get('w2'):
                k = q['w2'][0]
                sel.append('rank() OVER (ORDER BY %s%s) AS w9' % (k['expr'], ' DESC' if k['desc'] else ''))
        else:
            win = ''
        if q.get('tiebreak'):
            sel.append('a.id AS kid')
            order.append('kid')
            keycols = keycols + ['kid']
            if kind == 'join' or (kind == 'cursor' and q.get('join')):
                sel.append('b.id AS kid2')
                order.append('kid2')
                keycols.append('kid2')
        dist = ''
        if kind == 'distinct_on':
            dist = 'DISTINCT ON (%s) ' % ', '.join('k%d' % (i + 1) for i in range(q['don']))
            # DISTINCT ON needs its expressions first in ORDER BY, as written
            order = ['k%d' % (i + 1) + (' DESC' if k['desc'] else '') +
                     (' NULLS ' + k['nulls'] if k['nulls'] else '')
                     for i, k in enumerate(keys)] + (['kid'] if q.get('tiebreak') else [])
        sql = 'SELECT %s%s%s%s%s' % (dist, ', '.join(sel), frm, where, win)
        if q.get('order', True) and order:
            sql += ' ORDER BY ' + ', '.join(order)
            if kind == 'cursor':
                mode = 'exact'
            elif limited and not q.get('tiebreak'):
                mode = 'keys'
            else:
                mode = 'ordered'
        else:
            mode = 'multiset'
            if limited and kind != 'cursor':    # which rows is not defined
                q = dict(q, limit=None, offset=None)
        sql += _limit_sql(q)
        if kind == 'cursor':
            return sql, 'exact', 'text', keycols, q['fetches']
        return sql, mode, rowcmp, keycols, None

    if kind == 'distinct':
        sql = 'SELECT DISTINCT %s FROM t1 a%s' % (', '.join(sel), where)
        if q.get('order', True) and order:
            sql += ' ORDER BY ' + ', '.join(order)
            mode = 'keys' if limited else 'ordered'
            sql += _limit_sql(q)
        else:
            mode = 'multiset'
        return sql, mode, 'typed', keycols, None

    if kind in ('group', 'rollup'):
        aggs = ['%s AS x%d' % (a, i + 1) for i, a in enumerate(q['aggs'])]
        gb = ', '.join('k%d' % (i + 1) for i in range(len(keys)))
        if kind == 'rollup':
            gb = 'ROLLUP (%s)' % ', '.join(k['expr'] for k in keys)
        sql = 'SELECT %s FROM t1 a%s GROUP BY %s' % (', '.join(sel + aggs), where, gb)
        if q.get('having'):
            sql += ' HAVING count(*) > 1'
        if q.get('order', True) and keys:
            perm = [p for p in q['order_perm'] if p < len(keys)]
            items = [_order_item(dict(keys[p], ref='name' if keys[p]['ref'] == 'expr' and kind == 'rollup'
                                      else keys[p]['ref']), p, 'k%d' % (p + 1)) for p in perm]
            kc = ['k%d' % (p + 1) for p in perm]
            if q.get('order_agg'):
                items = ['x1 DESC'] + items
                kc = ['x1'] + kc
            sql += ' ORDER BY ' + ', '.join(items)
            return sql, 'ordered', 'typed', kc, None
        return sql, 'multiset', 'typed', keycols, None

    if kind == 'setop':
        sel2 = ['%s AS k%d' % (k['expr'], i + 1) for i, k in enumerate(keys)]
        where2 = ' WHERE ' + q['where2'] if q.get('where2') else ''
        sql = '(SELECT %s FROM t1 a%s) %s (SELECT %s FROM t2 a%s)' % (
            ', '.join(sel), where, q['op'], ', '.join(sel2), where2)
        if q.get('order', True) and order:
            sql += ' ORDER BY ' + ', '.join(order)
            mode = 'keys' if limited else 'ordered'
            sql += _limit_sql(q)
        else:
            mode = 'multiset'
        return sql, mode, 'text' if q['op'] == 'UNION ALL' else 'typed', keycols, None

    if kind == 'corr':
        border = ', '.join(_order_item(dict(k, ref='expr'), i, '') for i, k in enumerate(keys))
        border = (border + ', ' if border else '') + 'b.id'
        c = q['corr_col']
        if q['corr_form'] == 'agg':
            sub = ("(SELECT string_agg(s.id::text, ',') FROM (SELECT b.id FROM t2 b "
                   "WHERE b.%s = a.%s ORDER BY %s) s)" % (c, c, border))
        elif q['corr_form'] == 'offset':
            sub = ("(SELECT array_agg(z.id) FROM (SELECT b.id FROM t2 b WHERE b.%s = a.%s "
                   "ORDER BY %s OFFSET 1 LIMIT 2) z)" % (c, c, border))
        else:
            sub = ("(SELECT count(*) FROM (SELECT DISTINCT %s FROM t2 b WHERE b.%s = a.%s) s)"
                   % (', '.join(k['expr'] for k in keys) or 'b.id', c, c))
        sql = 'SELECT a.id AS k1, %s AS x1 FROM t1 a%s ORDER BY a.id' % (sub, where)
        return sql, 'ordered', 'text', ['k1'], None

    if kind == 'aggsub':
        inner_order = list(order)
        if q.get('tiebreak'):
            sel.append('a.id AS kid')
            inner_order.append('kid')
        inner = 'SELECT %s FROM t1 a%s' % (', '.join(sel + ['a.i4 AS xi']), where)
        if inner_order:
            inner += ' ORDER BY ' + ', '.join(inner_order)
        outs = ['count(*) AS x1', 'sum(s.xi) AS x2']
        if q.get('tiebreak'):
            outs.append("md5(string_agg(s.kid::text, ',')) AS x3")
        sql = 'SELECT %s FROM (%s) s' % (', '.join(outs), inner)
        return sql, 'multiset', 'text', [], None

    raise ValueError(kind)


def reductions(q):
    """Smaller variants of a query spec, for the minimizer."""
    out = []

    def add(**kw):
        n = copy.deepcopy(q)
        n.update(kw)
        out.append(n)
    keys = q.get('keys', [])
    for i in range(len(keys)):
        if len(keys) > 1 and not (q['kind'] == 'distinct_on' and len(keys) <= 2):
            nk = keys[:i] + keys[i + 1:]
            extra = {}
            if q['kind'] == 'distinct_on':
                extra['don'] = min(q['don'], len(nk) - 1)
            if 'order_perm' in q:
                extra['order_perm'] = [p - (p > i) for p in q['order_perm'] if p != i]
            add(keys=nk, **extra)
    for f in ('where', 'where2', 'limit', 'offset', 'w2', 'having', 'order_agg'):
        if q.get(f):
            add(**{f: None})
    if q.get('tiebreak') and q['kind'] not in ('cursor', 'distinct_on'):
        add(tiebreak=False)
    for f in ('extras', 'part', 'word', 'aggs', 'wfuncs', 'fetches', 'jconds'):
        v = q.get(f) or []
        minimum = 1 if f in ('aggs', 'wfuncs', 'fetches', 'jconds') else 0
        for i in range(len(v)):
            if len(v) > minimum:
                add(**{f: v[:i] + v[i + 1:]})
    if q.get('jtype') and q['jtype'] != 'JOIN':
        add(jtype='JOIN')
    if q.get('join'):
        add(join=False, jconds=[])
    for s in ('settings', 'on_settings'):
        for k in list(q.get(s, {})):
            if k in ('enable_hashagg', 'enable_hashjoin', 'enable_nestloop'):
                continue
            d = dict(q[s])
            del d[k]
            add(**{s: d})
    for i, k in enumerate(keys):
        simpler = []
        if k['desc']:
            simpler.append(dict(k, desc=False))
        if k['nulls']:
            simpler.append(dict(k, nulls=None))
        if k['ref'] != 'name' and q['kind'] not in ('rollup',):
            simpler.append(dict(k, ref='name'))
        for nk in simpler:
            add(keys=keys[:i] + [nk] + keys[i + 1:])
    return out


def columns_used(sql):
    import re
    cols = set(re.findall(r'\b[ab]\.([a-z][a-z0-9]*)\b', sql))
    return {c for c in cols if c in COLMAP or c == 'id'}
