#!/bin/bash
# test/gpu/prepare.sh: run here, in the project root, before a call of the
# GPU host (device tool) that builds gpusort there.
#
# The shared ../shared/device/prepare.sh brings Debian's PostgreSQL 15 along
# in .device/ (git-ignored); gpusort also needs ICU's headers to build
# (PostgreSQL's pg_locale.h includes unicode/ucol.h when PostgreSQL is built
# with ICU), which the GPU host lacks, so this adds Debian 12's libicu-dev
# next to them.  test/gpu/device-run.sh points the compiler at them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
shared=${GPUSORT_SHARED_DEVICE:-$root/../shared/device}
mkdir -p "$root/.git/info"
bash "$shared/prepare.sh"
cd "$root/.device/debs"
ls libicu-dev_*.deb >/dev/null 2>&1 || apt-get download -qq libicu-dev 2>&1 | grep -v unsandboxed || true
ls libicu-dev_*.deb
