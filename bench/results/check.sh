#!/bin/bash
# bench/results/check.sh: every file under bench/results is cited by one of
# its reports (*.md), and every path a report cites exists.
#
# A citation is a path in backticks or in a Markdown link, relative to the
# report's folder, to bench/results or to the project root; a folder
# ("scale/write-behind/") cites every file in it, and shell globs and
# {a,b} lists are expanded.  Prints the files no report cites and the
# citations that name nothing; exits 1 if there is either.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
exec python3 - "$@" <<'PY'
import glob, os, re, sys

top = 'bench/results'
data_ext = r'\.(md|json|log|png|csv|txt|diffs|snap|sh|py|sql|cu)$'
files = sorted(os.path.relpath(f) for f in glob.glob(top + '/**/*', recursive=True)
               if os.path.isfile(f))
cited, missing = set(), []

def braces(p):
    m = re.search(r'\{([^{}]*)\}', p)
    if not m:
        return [p]
    return [q for alt in m.group(1).split(',')
            for q in braces(p[:m.start()] + alt + p[m.end():])]

for md in (f for f in files if f.endswith('.md')):
    text = open(md).read()
    # in code blocks (commands), only a path in parentheses cites a file
    tokens = re.findall(r'\(([\w.{},*-]+/[\w./{},*-]+)\)', text)
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    tokens += re.findall(r'`([^`\s]+)`', text) + re.findall(r'\]\(([^)\s]+)\)', text)
    for tok in tokens:
        tok = tok.strip('.,;:()')
        if tok.startswith(('http', '$', '/', '-')) or '<' in tok:
            continue
        if '/' not in tok and not re.search(data_ext, tok):
            continue
        found = False
        for p in braces(tok):
            for base in (os.path.dirname(md), top, '.'):
                hits = [os.path.relpath(h) for h in glob.glob(os.path.join(base, p))]
                if hits:
                    found = True
                    for h in hits:
                        if os.path.isdir(h):
                            cited.update(os.path.relpath(f) for f in
                                         glob.glob(h + '/**/*', recursive=True))
                        else:
                            cited.add(h)
                    break
        if not found and (tok.startswith(('bench/', 'test/', 'src/', 'sql/', 'cuda/'))
                          or re.search(data_ext, tok) or tok.endswith('/')):
            missing.append('%s: %s' % (md, tok))

uncited = [f for f in files if f not in cited and os.path.dirname(f) != top]
for f in uncited:
    print('not cited by any report:', f)
for m in missing:
    print('cited, but not there:', m)
if uncited or missing:
    print('%d files under %s, %d not cited, %d citations of nothing'
          % (len(files), top, len(uncited), len(missing)))
sys.exit(1 if uncited or missing else 0)
PY
