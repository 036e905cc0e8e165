"""Random table data for the gpusort differential fuzzer.

Every generator takes a random.Random and returns the *text form* of one
value (what the type's input function accepts) or None for NULL; the loader
escapes it for COPY.  Tables are fully determined by the seed they are made
from, so a failure can be reproduced with --seed and --replay.
"""
import struct
import uuid
from datetime import date

# ---------------------------------------------------------------- text values

WORDS = [
    '', ' ', '  ', 'a', 'A', 'b', 'B', 'z', 'Z', 'ab', 'Ab', 'aB', 'AB', 'abc',
    'ABC', 'Abc', 'aBc', 'äbc', 'Äbc', 'ábc', 'àbc', 'âbc', 'a bc', 'a-bc',
    'a_bc', 'ab-c', 'abc ', ' abc', 'abc  ', 'ab\tc', 'ab\nc', 'co-op', 'coop',
    'co op', 'Coop', 'COOP', 'cote', 'coté', 'côte', 'côté', 'Côte', 'ß', 'ss',
    'SS', 'straße', 'strasse', 'Strasse', 'STRASSE', 'ö', 'oe', 'o', 'ø', 'å',
    'ä', 'aa', 'Aa', 'AA', 'æ', 'ae', 'Æ', 'ü', 'ue', 'y', 'v', 'w', 'W', 'é',
    'e\u0301', 'E\u0301', 'é', 'ﬁ', 'fi', 'İ', 'ı', 'i', 'I', '1', '10', '2',
    '9', '01', '001', '1.5', '-1', '١', '漢字', '日本', 'ё', 'е', 'Ω', 'ω', '😀',
    '😀a', 'a\u200bb', 'a\u00a0b', '-', '--', '.', ',', "'", '"', '\\', '!', '~',
    'x' * 20, 'Zürich', 'zurich', 'Zurich', 'Ångström', 'angstrom', 'Öl',
    'Ol', 'Ørsted', 'łódź', 'Lodz', 'ǅ', 'ǆ', 'Ǆ', '\u00ad', 'a\u00adb',
    'ﬀ', 'ff', 'Ⅻ', 'XII', '½', '1/2', '²', '2',
]

# prefixes of lengths around the key widths (7..9, 15..17, 23..25, 31..33 bytes)
PREFIXES = ['x' * 7, 'y' * 8, 'common_p', 'common_pr', 'sharedprefix_00',
            'sharedprefix_000', 'sharedprefix_0000', 'ä' * 8, 'äbcdefgh' * 2,
            'the_same_first_24_bytes_', 'the_same_first_24_bytes_X',
            'a' * 31, 'a' * 32, 'A' * 32, 'a' * 33, 'Ab' * 16, 'ab' * 20,
            'é' * 16, 'prefix with spaces     ', 'PREFIX_' + '0' * 40]

UNICODE_RANGES = [(0x20, 0x7e), (0xa0, 0xff), (0x100, 0x17f), (0x370, 0x3ff),
                  (0x400, 0x4ff), (0x300, 0x36f), (0x4e00, 0x4e80),
                  (0x1f600, 0x1f640), (0x5d0, 0x5ea), (0xe00, 0xe5b)]


def _rand_unicode(r, n):
    out = []
    for _ in range(n):
        lo, hi = r.choice(UNICODE_RANGES)
        out.append(chr(r.randint(lo, hi)))
    return ''.join(out)


def _rand_ascii(r, n, tabs=True):
    chars = [chr(c) for c in range(0x20, 0x7f)]
    if tabs:
        chars += ['\t', '\n', '\x01', '\x7f']
    return ''.join(r.choice(chars) for _ in range(n))


def _case_variant(r, s):
    return ''.join(c.upper() if r.random() < 0.5 else c.lower() for c in s)


def gen_text(r, long_share=0.08):
    m = r.random()
    if m < long_share:
        n = r.choice([300, 1100, 2100, 2600, 5000, 9000, 20000])
        if r.random() < 0.5:          # compressible
            unit = r.choice(WORDS[3:40]) or 'ab'
            s = (unit * (n // max(1, len(unit)) + 1))[:n]
        else:                         # incompressible
            s = _rand_unicode(r, n // 2) if r.random() < 0.3 else _rand_ascii(r, n, False)
        # long values that differ only at their end
        return s + r.choice(['', 'a', 'b', 'B', 'é', ' ', '0'])
    m = r.random()
    if m < 0.25:
        return r.choice(WORDS)
    if m < 0.42:
        sep = r.choice(['', ' ', '-', '_', ',', '  ', '.', "'"])
        return sep.join(r.choice(WORDS) for _ in range(r.randint(1, 4)))
    if m < 0.52:
        return _case_variant(r, r.choice(WORDS[10:60] + ['straße', 'zürich', 'côte']))
    if m < 0.62:
        return _rand_ascii(r, r.randint(0, 30))
    if m < 0.70:
        return _rand_unicode(r, r.randint(0, 12))
    if m < 0.88:
        return r.choice(PREFIXES) + r.choice(['', 'a', 'A', 'b', 'é', 'e', ' ', '-', '0', '1', 'z', 'Z',
                                              r.choice(WORDS)])
    return r.choice(['10', '9', '010', '1e3', '100', '2', '-5', '+5', '0', '00', '0.5', '.5'])


def gen_text_long(r):
    return gen_text(r, long_share=0.5)


def gen_text_short(r):
    return gen_text(r, long_share=0.0)


# ------------------------------------------------------------- numeric values

NUM_TRAILING = ['1.1', '2.5', '-1.1', '100', '0.1', '-0.001', '12345.678', '9999.9999',
                '10000', '99999999', '100000000', '0.0001', '0.00001', '1', '-1', '0',
                '123456789.123456789', '-9999', '1e-5', '0.9999', '10', '1000']
NUM_LONG = '3.14159265358979323846264338327950288419716939937510582097494459'


def gen_numeric(r, bounded=False):
    m = r.random()
    if m < 0.12:
        sp = ['NaN', '0', '0.0', '0.000', '-0', '-0.00', '0e5', '-0.0000000001']
        if not bounded:
            sp += ['Infinity', '-Infinity', 'Infinity', '-Infinity']
        return r.choice(sp)
    if m < 0.40:                       # equal values of different scale
        b = r.choice(NUM_TRAILING)
        if 'e' in b:
            return b
        k = r.randint(0, 5)
        if '.' not in b:
            return b + ('.' + '0' * k if k else '')
        return b + '0' * k
    if m < 0.55 and not bounded:      # long values sharing a prefix
        n = r.randint(2, len(NUM_LONG))
        s = NUM_LONG[:n] + str(r.randint(0, 9)) * r.randint(0, 3)
        return ('-' if r.random() < 0.3 else '') + s
    if m < 0.65 and not bounded:      # far exponents
        e = r.choice([r.randint(-400, 400), r.randint(-40, 40), 1000, -1000, 131, -131])
        return '%s%de%d' % ('-' if r.random() < 0.4 else '', r.randint(1, 99), e)
    if bounded:
        ip = str(r.randint(0, 10 ** r.randint(0, 8) - 1))
        fp = ''.join(str(r.randint(0, 9)) for _ in range(r.randint(0, 5)))
    else:
        ip = str(r.randint(0, 10 ** r.randint(0, 30) - 1))
        fp = ''.join(str(r.randint(0, 9)) for _ in range(r.randint(0, 25)))
    s = ('-' if r.random() < 0.4 else '') + ip + ('.' + fp if fp else '')
    return s


def gen_numeric_bounded(r):
    return gen_numeric(r, True)


# --------------------------------------------------------------- other types

def gen_int(bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def g(r):
        m = r.random()
        if m < 0.15:
            return str(r.choice([v for v in (lo, hi, 0, -1, 1, lo + 1, hi - 1, 255, 256, -256, 65535, 65536)
                                 if lo <= v <= hi]))
        if m < 0.5:
            return str(r.randint(-100, 100))
        return str(r.randint(lo, hi))
    return g


def gen_float8(r):
    m = r.random()
    if m < 0.25:
        return r.choice(['NaN', 'Infinity', '-Infinity', '0', '-0', '5e-324', '-5e-324',
                         '2.2250738585072014e-308', '1.7976931348623157e+308',
                         '-1.7976931348623157e+308', '1', '-1', '0.1', '0.30000000000000004',
                         '1.0000000000000002', '0.9999999999999999', '-0.0'])
    if m < 0.5:
        return str(r.randint(-1000, 1000)) + r.choice(['', '.5', '.25'])
    if m < 0.75:
        return repr(r.choice([-1, 1]) * 10 ** r.uniform(-300, 300))
    return repr(r.uniform(-1e6, 1e6))


def _f4(x):
    try:
        return struct.unpack('f', struct.pack('f', x))[0]
    except OverflowError:
        return 0.0


def gen_float4(r):
    m = r.random()
    if m < 0.25:
        return r.choice(['NaN', 'Infinity', '-Infinity', '0', '-0', '1.4e-45', '-1.4e-45',
                         '3.4028235e+38', '-3.4028235e+38', '1.1754944e-38', '1', '-1',
                         '0.1', '1.0000001', '0.99999994'])
    if m < 0.5:
        return str(r.randint(-1000, 1000))
    if m < 0.75:
        return '%.9g' % _f4(r.choice([-1, 1]) * 10 ** r.uniform(-37, 38))
    return '%.9g' % _f4(r.uniform(-1e4, 1e4))


def gen_bytea(r):
    m = r.random()
    if m < 0.15:
        b = r.choice([b'', b'\x00', b'\x00\x00', b'\x00\x01', b'\x01', b'\xff', b'\xff\xff',
                      b'\x7f', b'\x80', b'a', b'a\x00', b'a\x00\x00', b'ab', b'A'])
    elif m < 0.5:
        b = bytes(r.randint(0, 255) for _ in range(r.randint(0, 12)))
    elif m < 0.7:
        b = bytes(r.choice([0, 1, 0x7f, 0x80, 0xfe, 0xff]) for _ in range(r.randint(0, 10)))
    elif m < 0.88:
        pre = r.choice([b'\x00' * 8, b'\xff' * 16, b'prefix--' * 3, b'abcdefgh' * 4, b'\x00' * 31,
                        b'\x01' * 33])
        b = pre + bytes(r.randint(0, 255) for _ in range(r.randint(0, 2)))
    else:
        n = r.choice([100, 2100, 5000, 9000])
        if r.random() < 0.5:
            b = (b'\x00\x01abc' * (n // 5 + 1))[:n]
        else:
            b = bytes(r.getrandbits(8) for _ in range(n))
        b += bytes([r.randint(0, 255)]) if r.random() < 0.7 else b''
    return '\\x' + b.hex()


def gen_date(r):
    m = r.random()
    if m < 0.15:
        return r.choice(['infinity', '-infinity', '4713-01-01 BC', '0001-01-01', '0001-12-31 BC',
                         '2000-01-01', '1999-12-31', '5874897-12-31', '2038-01-19', '1970-01-01'])
    if r.random() < 0.05:
        # years 1..4700 BC; PostgreSQL's year N BC is astronomical year 1 - N,
        # so Python's leap days are not PostgreSQL's there: no February 29
        d = date.fromordinal(r.randint(1, 1716848))
        if d.month == 2 and d.day == 29:
            d = d.replace(day=28)
        return d.isoformat() + ' BC'
    return date.fromordinal(r.randint(1, 3652059)).isoformat()


def gen_time(r):
    if r.random() < 0.15:
        return r.choice(['24:00:00', '00:00:00', '23:59:59.999999', '12:00', '00:00:00.000001'])
    return '%02d:%02d:%02d.%06d' % (r.randint(0, 23), r.randint(0, 59), r.randint(0, 59),
                                   r.choice([0, r.randint(0, 999999)]))


def gen_timestamp(r):
    if r.random() < 0.12:
        return r.choice(['infinity', '-infinity', '294276-12-31 23:59:59.999999',
                         '4713-01-01 00:00:00 BC', '2000-01-01 00:00:00', '1970-01-01 00:00:00',
                         '2000-01-01 00:00:00.000001', '1999-12-31 23:59:59.999999'])
    d = date.fromordinal(r.randint(1, 3652059)).isoformat()
    return d + ' ' + gen_time(r).replace('24:00:00', '23:00:00')


def gen_timestamptz(r):
    if r.random() < 0.12:
        return r.choice(['infinity', '-infinity', '2000-01-01 00:00:00+00',
                         '2000-01-01 05:30:00+05:30', '1999-12-31 16:00:00-08'])
    d = date.fromordinal(r.randint(1, 3652059)).isoformat()
    return d + ' ' + gen_time(r).replace('24:00:00', '23:00:00') + r.choice(
        ['+00', '-08', '+05:30', '+14', '-03:30', ''])


def gen_interval(r):
    m = r.random()
    if m < 0.4:
        return r.choice([
            '0', '00:00:00', '1 day', '24:00:00', '1 mon', '30 days', '720:00:00', '1 year',
            '12 mons', '360 days', '-1 days +24:00:00', '1 mon -30 days', '00:00:00.000001',
            '-00:00:00.000001', '1 day 00:00:00.000001', '1 day -00:00:00.000001',
            '178000000 years', '-178000000 years', '2147483647 days', '-2147483647 days',
            '2147483647 mons', '-2147483647 mons', '2562047788:00:54.775807',
            '-2562047788:00:54.775807', '1 mon 1 day', '31 days', '1 mon 24:00:00',
            '29 days 24:00:00', '1 mon -1 day', '29 days', 'P1D', 'PT24H', 'P1M', '@ 1 hour ago',
            '1 year 1 mon', '13 mons', '395 days', '-1 year', '-360 days', '3 mons 10 days'])
    if m < 0.7:
        return '%d mons %d days %d:%02d:%02d' % (r.randint(-3, 3), r.randint(-90, 90),
                                                r.randint(-72, 72), r.randint(0, 59), r.randint(0, 59))
    return '%d mons %d days %d:%02d:%02d.%06d' % (
        r.randint(-5000, 5000), r.randint(-100000, 100000), r.randint(-100000, 100000),
        r.randint(0, 59), r.randint(0, 59), r.randint(0, 999999))


def gen_uuid(r):
    if r.random() < 0.15:
        return r.choice(['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
                         '00000000-0000-0000-0000-000000000001', '80000000-0000-0000-0000-000000000000',
                         '7fffffff-ffff-ffff-ffff-ffffffffffff'])
    return str(uuid.UUID(int=r.getrandbits(128)))


def gen_bool(r):
    return r.choice(['t', 'f'])


def gen_char(r):
    return r.choice(list('aAbBzZ09 _-~') + ['', '\\200', '\\377', '\\001'])


def gen_money(r):
    if r.random() < 0.1:
        return r.choice(['0', '-92233720368547758.08', '92233720368547758.07', '0.01', '-0.01'])
    return '%.2f' % (r.randint(-10 ** 8, 10 ** 8) / 100)


def gen_inet(r):
    m = r.random()
    if m < 0.2:
        return r.choice(['0.0.0.0/0', '::/0', '255.255.255.255', '::1', '::ffff:10.0.0.1',
                         '10.0.0.1/8', '10.0.0.1/32', '10.0.0.1', '10.0.0.0/8', '10.0.0.1/16'])
    if m < 0.75:
        return '%d.%d.%d.%d/%d' % (r.choice([10, 192, 0, 255, r.randint(0, 255)]), r.randint(0, 3),
                                   r.randint(0, 255), r.randint(0, 255), r.choice([32, 32, 24, 16, 8, 0]))
    return '%x:%x::%x/%d' % (r.randint(0, 0xffff), r.randint(0, 3), r.randint(0, 0xffff),
                            r.choice([128, 64, 48]))


def _array(r, elem, maxn=5):
    if r.random() < 0.1:
        return '{}'
    return '{' + ','.join(elem(r) for _ in range(r.randint(1, maxn))) + '}'


def gen_int4_array(r):
    m = r.random()
    if m < 0.1:
        return r.choice(['{{1,2},{3,4}}', '[0:1]={1,2}', '[2:3]={1,2}', '{NULL}', '{NULL,1}',
                         '{1,NULL}', '{1}', '{1,2}', '{1,2,3}', '{2}'])
    return _array(r, lambda r: 'NULL' if r.random() < 0.1 else str(r.choice(
        [r.randint(-3, 3), r.randint(-2 ** 31, 2 ** 31 - 1)])))


def _quote_elem(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def gen_text_array(r):
    return _array(r, lambda r: 'NULL' if r.random() < 0.1 else _quote_elem(gen_text_short(r)), 3)


def gen_numeric_array(r):
    return _array(r, lambda r: 'NULL' if r.random() < 0.1 else gen_numeric(r, True), 3)


# ------------------------------------------------------------------- columns

# name, SQL type (a {coll:NAME} placeholder for the column collation),
# category, generator
COLUMNS = [
    ('g', 'int4', 'int', lambda r: str(r.randint(0, 12))),
    ('i2', 'int2', 'int', gen_int(16)),
    ('i4', 'int4', 'int', gen_int(32)),
    ('i8', 'int8', 'int', gen_int(64)),
    ('f4', 'float4', 'float', gen_float4),
    ('f8', 'float8', 'float', gen_float8),
    ('n', 'numeric', 'numeric', gen_numeric),
    ('nb', 'numeric(12,3)', 'numeric', gen_numeric_bounded),
    ('t', 'text', 'text', gen_text),
    ('tc', 'text COLLATE "C"', 'text', gen_text),
    ('tde', 'text {coll:de}', 'text', gen_text),
    ('tsv', 'text {coll:sv}', 'text', gen_text_short),
    ('ticu', 'text {coll:icu}', 'text', gen_text),
    ('tnd', 'text {coll:nd}', 'text', gen_text),
    ('tl', 'text', 'text', gen_text_long),
    ('vc', 'varchar(40)', 'text', gen_text_short),
    ('bp', 'char(6)', 'text', gen_text_short),
    ('bx', 'bpchar', 'text', gen_text_short),
    ('nm', 'name', 'text', gen_text_short),
    ('b', 'bytea', 'bytea', gen_bytea),
    ('d', 'date', 'time', gen_date),
    ('tm', 'time', 'time', gen_time),
    ('ts', 'timestamp', 'time', gen_timestamp),
    ('tz', 'timestamptz', 'time', gen_timestamptz),
    ('iv', 'interval', 'interval', gen_interval),
    ('u', 'uuid', 'misc', gen_uuid),
    ('bo', 'bool', 'misc', gen_bool),
    ('ch', '"char"', 'misc', gen_char),
    ('m', 'money', 'misc', gen_money),
    ('ip', 'inet', 'misc', gen_inet),
    ('ai', 'int4[]', 'array', gen_int4_array),
    ('at', 'text[]', 'array', gen_text_array),
    ('an', 'numeric[]', 'array', gen_numeric_array),
]
COLMAP = {c[0]: c for c in COLUMNS}
COLLATABLE = {'t', 'tc', 'tde', 'tsv', 'ticu', 'tnd', 'tl', 'vc', 'bp', 'bx', 'nm', 'at'}


def fit(name, v):
    """Values that the column's type would reject, cut to fit."""
    if v is None:
        return v
    if name == 'bp':
        return v[:6]
    if name == 'vc':
        return v[:40]
    if name == 'nm':
        return v[:20]
    return v


def copy_escape(v):
    if v is None:
        return '\\N'
    return v.replace('\\', '\\\\').replace('\n', '\\n').replace('\r', '\\r').replace('\t', '\\t')


class Sampler:
    """One column's distribution in one table set: NULL share, and values
    uniform, from a few distinct ones, skewed (zipf-like), or constant."""

    def __init__(self, r, gen):
        self.gen = gen
        self.nullfrac = r.choice([0, 0, 0.02, 0.1, 0.3, 0.9])
        self.mode = r.choice(['uniform', 'uniform', 'uniform', 'few', 'skew', 'const'])
        if self.mode == 'few':
            self.pool = [gen(r) for _ in range(r.randint(2, 8))]
        elif self.mode == 'skew':
            self.pool = [gen(r) for _ in range(60)]
        elif self.mode == 'const':
            self.pool = [gen(r)]

    def __call__(self, r):
        if self.nullfrac and r.random() < self.nullfrac:
            return None
        if self.mode == 'uniform':
            return self.gen(r)
        if self.mode == 'skew':
            return self.pool[int(len(self.pool) * r.random() ** 3)]
        return r.choice(self.pool)


def make_tables(r, rows):
    """Rows (lists of text values, id first) for t1 and t2 and how t1 is
    physically ordered."""
    samplers = {c[0]: Sampler(r, c[3]) for c in COLUMNS}
    samplers['g'].nullfrac = min(samplers['g'].nullfrac, 0.1)
    n1 = rows
    n2 = r.choice([0, 1, 7, max(2, rows // 10), max(2, rows // 2), rows])
    t1 = []
    for i in range(n1):
        t1.append([str(i + 1)] + [fit(c[0], samplers[c[0]](r)) for c in COLUMNS])
    t2 = []
    for i in range(n2):
        row = [str(i + 1)]
        for j, c in enumerate(COLUMNS):
            if t1 and r.random() < 0.6:       # share values with t1, for joins
                row.append(t1[r.randrange(len(t1))][j + 1])
            else:
                row.append(fit(c[0], samplers[c[0]](r)))
        t2.append(row)
    r.shuffle(t1)
    r.shuffle(t2)
    order = None
    if r.random() < 0.35:
        order = '%s%s' % (r.choice(['i4', 'i8', 'id', 'f8', 't', 'n', 'd', 'ts', 'b', 'iv', 'tc']),
                          r.choice(['', ' DESC']))
    modes = {c[0]: (samplers[c[0]].mode, samplers[c[0]].nullfrac) for c in COLUMNS}
    return t1, t2, order, modes
