# test/server_user.sh: the unprivileged user that runs gpusort's test and
# benchmark servers when their scripts run as root (PostgreSQL refuses to
# run as root).  Source it, then:
#   server_user_add USER      # add USER unless it exists
# test/run.sh, test/core/run.sh and bench/pgserver.sh all add the same user
# and may run beside one another (CI's streams, parts of the suite started
# at once).  Two useradd calls at once race: useradd locks /etc/passwd
# itself, and the one that finds it locked, or the user just added, fails.
# So a failed useradd is tried again, a second later, until the user
# exists: no lock file of our own, which would stay behind on the machine.

server_user_add() {
  local n
  for n in 1 2 3 4 5 6 7 8 9 10; do
    id "$1" >/dev/null 2>&1 && return 0
    useradd -m "$1" 2>/dev/null && return 0
    sleep 1
  done
  # the last try's own error says why
  id "$1" >/dev/null 2>&1 || useradd -m "$1"
}
