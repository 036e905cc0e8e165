# bench/load_medians.py: medians of a bench/parallel-ab.sh --mode load log,
# one line a build (or setting) and table size: the Gather against a
# parallel count(*), their ratio over the pairs, the workers' slowest load
# and the most memory the chunks held (from gpusort's DEBUG1 line).
#
#   python3 bench/load_medians.py load-ab.log
import re,statistics as st,collections,sys
rows=collections.OrderedDict()
cur=None
for line in open(sys.argv[1]):
    m=re.match(r'(\S+) (\d+): (.*)',line.strip())
    if not m: continue
    v,n,rest=m.groups()
    r=rows.setdefault((v,n),{'count':[], 'sort':[], 'gather':[], 'wk':[], 'peak':[], 'reused':[], 'pairs':[]})
    if rest=='COUNT': cur='count'
    elif rest=='SORT': cur='sort'
    elif rest.startswith('Time:'):
        r[cur].append(float(rest.split()[1]))
    elif 'parallel load' in rest:
        g=re.search(r'Gather (\d+) ms',rest); r['gather'].append(int(g.group(1)))
        r['pairs'].append(int(g.group(1))/r['count'][-1])
        w=re.search(r'loaded in (\d+) to (\d+) ms, chunks held at most (\d+) kB, (\d+) filled',rest)
        if w: r['wk'].append(int(w.group(2))); r['peak'].append(int(w.group(3))//1024); r['reused'].append(int(w.group(4)))
med=lambda x: st.median(x) if x else float('nan')
for (v,n),r in rows.items():
    if n=='0': continue
    print(f"{v:9s} {n:>9s} count {med(r['count']):7.1f} sort {med(r['sort']):7.1f} gather {med(r['gather']):7.1f} ratio-of-medians {med(r['gather'])/med(r['count']):.2f} median-pair-ratio {med(r['pairs']):.2f} peakMB {med(r['peak'])} n={len(r['gather'])}")
