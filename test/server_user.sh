# test/server_user.sh: the unprivileged user that runs gpusort's test and
# benchmark servers when their scripts run as root (PostgreSQL refuses to
# run as root).  Source it, then:
#   server_user_add USER      # add USER unless it exists
# test/run.sh, test/core/run.sh and bench/pgserver.sh all add the same user
# and may run beside one another (CI's streams, parts of the suite started
# at once); two useradd calls at once race, and all but one fail, so every
# caller adds the user under the one lock this file names.  The lock lives
# in /run/lock, the directory the FHS keeps for lock files (a tmpfs emptied
# at boot), rather than in /tmp, where it was left behind after every run.

server_user_add() {
  mkdir -p /run/lock
  flock /run/lock/gpusort-useradd.lock sh -c 'id "$1" >/dev/null 2>&1 || useradd -m "$1"' sh "$1"
}
