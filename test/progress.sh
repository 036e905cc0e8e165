# test/progress.sh: no step of the scripts a user runs (test/install-deps.sh,
# test/run.sh, bench/demo.sh) stays silent for more than 30 s, so that a
# slow step can be told from a hung one.  Source it, then:
#   progress_quiet LABEL COMMAND ...   run COMMAND with its output kept in a
#                                      file, shown only if it fails; a line
#                                      "LABEL: N s" every 20 s meanwhile;
#                                      with PROGRESS_LOG set, the file is
#                                      that one, and stays
#   COMMAND | progress_watch LABEL     copy COMMAND's output as it comes and,
#                                      where nothing came for 20 s, say that
#                                      LABEL still runs, and since when
# Both check every few seconds, so that the longest silence stays under
# 25 s however the command's output falls.
# test/chroot.sh copies this file beside install-deps.sh into a new chroot.

progress_quiet() {
  local label=$1 log pid rc=0 start=$SECONDS last=$SECONDS
  shift
  log=${PROGRESS_LOG:-$(mktemp /tmp/gpusort-progress.XXXXXX)}
  "$@" > "$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ $((SECONDS - last)) -ge 20 ] && kill -0 "$pid" 2>/dev/null; then
      echo "   $label: $((SECONDS - start)) s"
      last=$SECONDS
    fi
  done
  wait "$pid" || rc=$?
  [ $rc = 0 ] || cat "$log" >&2
  [ -n "${PROGRESS_LOG:-}" ] || rm -f "$log"
  return $rc
}

progress_watch() {
  local label=$1 line rc partial=0 start=$SECONDS last=$SECONDS
  while :; do
    rc=0
    IFS= read -r -t 5 line || rc=$?
    if [ $rc = 0 ]; then
      printf '%s\n' "$line"
      partial=0
      last=$SECONDS
    elif [ $rc -gt 128 ]; then
      # a timeout: what came of an unfinished line ("test 080_spill ...",
      # whose result follows) is printed as it is
      if [ -n "$line" ]; then
        printf '%s' "$line"
        partial=1
        last=$SECONDS
      elif [ $((SECONDS - last)) -ge 20 ]; then
        [ $partial = 0 ] || echo
        partial=0
        echo "   ($label: still running, $((SECONDS - start)) s since it started)"
        last=$SECONDS
      fi
    else
      [ -z "$line" ] || printf '%s\n' "$line"
      return 0
    fi
  done
}
